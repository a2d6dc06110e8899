#include "codegen/launch_spread.h"

#include <kiln/error.h>

#include <algorithm>
#include <climits>

namespace kiln {

std::optional<std::vector<LaunchSpread>> spread_launch(const std::vector<int64_t>& groups,
                                                       const int64_t max_groups[3]) {
  if (groups.size() > 3) return std::nullopt;
  std::vector<LaunchSpread> spread(groups.size());
  int next_free = static_cast<int>(groups.size());
  for (size_t dim = 0; dim < groups.size(); ++dim) {
    const int own = static_cast<int>(dim);
    const int64_t needed = std::max<int64_t>(groups[dim], 1);
    // The fewest hardware dimensions that hold `needed` groups: its own, then free ones.
    std::vector<int> hardware{own};
    int64_t capacity = max_groups[own];
    while (capacity < needed && next_free < 3) {
      const int64_t more = max_groups[next_free];
      capacity = more > 0 && capacity > INT64_MAX / more ? INT64_MAX : capacity * more;
      hardware.push_back(next_free++);
    }
    if (capacity < needed) return std::nullopt;
    // Counts as even as the limits allow, so that few groups are surplus: the extra dimensions
    // take what the first cannot, the first the rest.
    std::vector<int64_t> counts(hardware.size(), 1);
    int64_t remaining = needed;
    for (size_t at = hardware.size(); at-- > 1;) {
      int64_t below = 1;  // what the dimensions before this one can hold
      for (size_t before = 0; before < at; ++before) {
        const int64_t limit = max_groups[hardware[before]];
        below = below > INT64_MAX / limit ? INT64_MAX : below * limit;
      }
      counts[at] = std::max<int64_t>(1, (remaining + below - 1) / below);
      remaining = (remaining + counts[at] - 1) / counts[at];
    }
    counts[0] = remaining;
    spread[dim] = {std::move(hardware), std::move(counts)};
  }
  return spread;
}

void spread_over_hardware(LinearProgram& program, const int64_t max_groups[3]) {
  std::vector<int64_t> groups;
  for (const LaunchDim& dim : program.launch)
    groups.push_back((dim.size.vmax() + dim.local - 1) / dim.local);  // the most, if symbolic
  const auto spread = spread_launch(groups, max_groups);
  if (!spread)
    throw InternalError("[lower_kernel] the launch of " + program.name +
                        " does not fit the device's workgroup counts (plan_opts let it pass)");
  for (size_t at = 0; at < program.launch.size(); ++at) {
    LaunchDim& dim = program.launch[at];
    dim.hardware = (*spread)[at].hardware;
    dim.hardware_groups = (*spread)[at].groups;
    int64_t dispatched = dim.local;
    for (int64_t count : dim.hardware_groups) dispatched *= count;
    dim.global = dispatched;
  }
}

}  // namespace kiln

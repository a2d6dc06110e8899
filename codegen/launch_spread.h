#pragma once
// Launch dimensions on hardware dimensions. Launch dimension i goes on hardware dimension i; one
// whose workgroups exceed the device's limit along it (CUDA's grid limits, Vulkan's
// maxComputeWorkGroupCount: 65535 along each on lavapipe) is spread over the hardware dimensions
// no launch dimension uses, and its workgroup id is then g0 + g1 * n0 + g2 * n0 * n1 (workgroup
// ids g and counts n along its hardware dimensions). The renderer writes that sum; the surplus
// workgroups' items are past the dimension's size and return at once.

#include <cstdint>
#include <optional>
#include <vector>

#include "codegen/linear.h"

namespace kiln {

// The hardware dimensions of one launch dimension (its own first) and the workgroups along each.
struct LaunchSpread {
  std::vector<int> hardware;
  std::vector<int64_t> groups;
};

// For the workgroups of each launch dimension (at most three), where they go; nothing where the
// launch cannot fit the device's `max_groups` per hardware dimension.
std::optional<std::vector<LaunchSpread>> spread_launch(const std::vector<int64_t>& groups,
                                                       const int64_t max_groups[3]);

// Fills each LaunchDim's hardware dimensions and workgroups (and its dispatched `global`).
// Throws InternalError where the launch does not fit: plan_opts refuses such opts first.
void spread_over_hardware(LinearProgram& program, const int64_t max_groups[3]);

}  // namespace kiln

#pragma once
// Which opts the runtime gives each kernel: the heuristics' choice (the default), none
// (KILN_NOOPT=1, for debugging), a random valid list per kernel (kiln conformance --opts random,
// which proves every opt on every device), or the heuristics' choice for a GPU on a device with
// workgroups that is not one (gpu: PoCL and lavapipe then run what a GPU would: GRID, fused rows,
// local tiles, neighbouring reads). KILN_OPTS=default|none|random:<seed>|gpu selects one from the
// environment.

#include <cstdint>
#include <string>

#include "codegen/opts.h"
#include "runtime/device.h"

namespace kiln {

enum class OptPolicy { Default, None, Random, Gpu };

struct OptSettings {
  OptPolicy policy = OptPolicy::Default;
  uint64_t seed = 0;  // Random: the same seed gives each kernel the same opts
  bool operator==(const OptSettings& other) const {
    return policy == other.policy && seed == other.seed;
  }
};

// From KILN_OPTS and KILN_NOOPT on first use (an invalid value is an Error), unless set.
OptSettings opt_settings();
void set_opt_settings(const OptSettings& settings);
std::string opt_settings_to_string(const OptSettings& settings);

// What `device` offers the optimiser.
OptTarget opt_target(const Device& device);
// What the optimiser targets on `device` under `settings`: the device's own, or under the gpu
// policy a GPU with the device's limits, where the device launches workgroups.
OptTarget opt_target(const Device& device, const OptSettings& settings);
// Whether the heuristics choose the opts (default and gpu), rather than none or a random list.
inline bool uses_heuristics(const OptSettings& settings) {
  return settings.policy == OptPolicy::Default || settings.policy == OptPolicy::Gpu;
}

}  // namespace kiln

#pragma once
// Which opts the runtime gives each kernel: the heuristics' choice (the default), none
// (KILN_NOOPT=1, for debugging), or a random valid list per kernel (kiln conformance --opts
// random, which proves every opt on every device). KILN_OPTS=default|none|random:<seed> selects
// one from the environment.

#include <cstdint>
#include <string>

#include "codegen/opts.h"
#include "runtime/device.h"

namespace kiln {

enum class OptPolicy { Default, None, Random };

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

}  // namespace kiln

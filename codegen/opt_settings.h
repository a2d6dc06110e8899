#pragma once
// Which opts a kernel gets (the policy; runtime/opt_policy.h reads it from the environment): the
// heuristics' choice, none, a random valid list, or the heuristics' choice for a GPU.

#include <cstdint>
#include <string>

namespace kiln {

enum class OptPolicy { Default, None, Random, Gpu };

struct OptSettings {
  OptPolicy policy = OptPolicy::Default;
  uint64_t seed = 0;         // Random: the same seed gives each kernel the same opts
  bool tensor_cores = true;  // false: no policy chooses TC
  bool operator==(const OptSettings& other) const {
    return policy == other.policy && seed == other.seed && tensor_cores == other.tensor_cores;
  }
};

// The policy (and seed) that "default", "none", "random[:<seed>]" or "gpu" names; an Error naming
// `source` (where the text came from: "KILN_OPTS") otherwise. Tensor cores stay allowed.
OptSettings parse_opt_settings(const std::string& text, const std::string& source);
// "default", "none", "random:<seed>" or "gpu".
std::string opt_settings_to_string(const OptSettings& settings);

// Whether the heuristics choose the opts (default and gpu), rather than none or a random list.
inline bool uses_heuristics(const OptSettings& settings) {
  return settings.policy == OptPolicy::Default || settings.policy == OptPolicy::Gpu;
}

}  // namespace kiln

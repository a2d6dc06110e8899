#include "codegen/opt_settings.h"

#include <kiln/error.h>

#include <cstdlib>

namespace kiln {

OptSettings parse_opt_settings(const std::string& text, const std::string& source) {
  OptSettings settings;
  if (text == "default") {
    settings.policy = OptPolicy::Default;
  } else if (text == "none") {
    settings.policy = OptPolicy::None;
  } else if (text == "gpu") {
    settings.policy = OptPolicy::Gpu;
  } else if (text.rfind("random", 0) == 0) {
    settings.policy = OptPolicy::Random;
    if (text.size() > 6) {
      char* end = nullptr;
      const std::string seed = text.substr(7);
      settings.seed = std::strtoull(seed.c_str(), &end, 10);
      if (text[6] != ':' || seed.empty() || *end != '\0')
        throw Error("[" + source + "] '" + text +
                    "' is not valid: random takes ':<seed>' (digits)");
    }
  } else {
    throw Error("[" + source + "] '" + text +
                "' is not valid: use default, none, random:<seed> or gpu");
  }
  return settings;
}

std::string opt_settings_to_string(const OptSettings& settings) {
  switch (settings.policy) {
    case OptPolicy::Default:
      return "default";
    case OptPolicy::None:
      return "none";
    case OptPolicy::Random:
      return "random:" + std::to_string(settings.seed);
    case OptPolicy::Gpu:
      return "gpu";
  }
  return "?";
}

}  // namespace kiln

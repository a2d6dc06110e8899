#include "runtime/environment.h"

#include <kiln/error.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <string>

namespace kiln {

bool switch_from_environment(const char* variable, const char* off, const char* on, bool unset) {
  const char* value = std::getenv(variable);
  if (!value || !*value) return unset;
  const std::string text = value;
  if (text != "0" && text != "1")
    throw Error("[" + std::string(variable) + "] '" + text + "' is not valid: use 0 (" + off +
                ") or 1 (" + on + ")");
  return text == "1";
}

int64_t integer_from_environment(const char* variable, int64_t minimum, int64_t maximum,
                                 int64_t unset, const char* meaning) {
  const char* value = std::getenv(variable);
  if (!value || !*value) return unset;
  const std::string text = value;
  int64_t parsed = 0;
  const bool digits =
      std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), parsed);
  if (!digits || error != std::errc() || end != text.data() + text.size() || parsed < minimum ||
      parsed > maximum) {
    throw Error("[" + std::string(variable) + "] '" + text + "' is not valid: use a whole number " +
                "from " + std::to_string(minimum) + " to " + std::to_string(maximum) + " (" +
                meaning + ")");
  }
  return parsed;
}

}  // namespace kiln

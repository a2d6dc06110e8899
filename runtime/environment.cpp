#include "runtime/environment.h"

#include <kiln/error.h>

#include <cstdlib>
#include <string>

namespace kiln {

bool switch_from_environment(const char* variable, const char* off, const char* on) {
  const char* value = std::getenv(variable);
  if (!value || !*value) return true;
  const std::string text = value;
  if (text != "0" && text != "1")
    throw Error("[" + std::string(variable) + "] '" + text + "' is not valid: use 0 (" + off +
                ") or 1 (" + on + ")");
  return text == "1";
}

}  // namespace kiln

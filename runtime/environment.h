#pragma once
// Settings read from the environment, one parser for all of them, so that every variable spells
// its values the same way and a typo is never silently read as some value (KILN_NOOPT=false
// meaning on, KILN_DEBUG=abc meaning 0). Anything but a valid value is an Error that names the
// variable, what it was given and what is valid. An unset or empty variable takes its default.
//
// Plugins read their variables (KILN_VULKAN_STAGING, KILN_CPU_THREADS) through here too: they
// link libkiln, so the dependency points the usual way (runtime <- devices).

#include <cstdint>

namespace kiln {

// An on/off switch: 0 or 1. `off` and `on` say what 0 and 1 do, for the error; `unset` is the
// value of an unset or empty variable.
bool switch_from_environment(const char* variable, const char* off, const char* on,
                             bool unset = true);

// A whole number in [minimum, maximum], written in decimal digits (no sign, no other text);
// `meaning` says what it sets, for the error; `unset` is the value of an unset or empty variable.
int64_t integer_from_environment(const char* variable, int64_t minimum, int64_t maximum,
                                 int64_t unset, const char* meaning);

}  // namespace kiln

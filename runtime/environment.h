#pragma once
// On/off switches read from the environment, one spelling for all of them: 0 or 1, unset meaning
// on. Anything else is an Error that names the variable and both meanings, so that a typo never
// silently leaves a switch where it was.

namespace kiln {

// Whether `variable` is on; `off` and `on` say what 0 and 1 do, for the error.
bool switch_from_environment(const char* variable, const char* off, const char* on);

}  // namespace kiln

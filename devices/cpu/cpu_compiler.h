#pragma once
// Compiles C kernels with the system C compiler (KILN_CC overrides) into shared objects.

#include <memory>

#include "runtime/device.h"

namespace kiln::cpu {

std::unique_ptr<Compiler> make_c_compiler();

// The compiler command as a list of words ("cc", or the words of KILN_CC), read once per process.
std::vector<std::string> compiler_command();
// Empty when the compiler runs; else why it does not.
std::string compiler_problem();

}  // namespace kiln::cpu

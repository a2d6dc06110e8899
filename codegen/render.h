#pragma once
// The C-style renderer: a linear program and a dialect in, kernel source out.

#include <string>

#include "codegen/dialect.h"
#include "codegen/linear.h"

namespace kiln {

// Renders the program as it is: vector loads and stores only where a pass marked them
// (codegen/vectorize.h; realize runs those passes first).
std::string render_kernel(const LinearProgram& program, const Dialect& dialect);

}  // namespace kiln

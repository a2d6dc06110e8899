#pragma once
// Loads of neighbouring elements (an UPCAST's lanes, a reduction's partial sums) become one vector
// load where the dialect has vectors: a rewrite of the linear program that renderers apply.

#include "codegen/dialect.h"
#include "codegen/linear.h"

namespace kiln {

// Marks each group of `width` unmasked loads of one buffer at index, index + 1, ... in one
// straight stretch of code (no loop boundary, barrier or store to that buffer between them) as
// one vector load of a width the dialect has. The values and their positions do not change.
LinearProgram vectorize_loads(LinearProgram program, const Dialect& dialect);

}  // namespace kiln

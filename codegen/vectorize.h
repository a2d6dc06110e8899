#pragma once
// Loads of neighbouring elements (an UPCAST's lanes, a reduction's partial sums) become one vector
// load, and stores of neighbouring outputs one vector store, where the dialect has vectors:
// rewrites of the linear program that realize applies before rendering.

#include "codegen/dialect.h"
#include "codegen/linear.h"

namespace kiln {

// Marks each group of `width` unmasked loads of one buffer at index, index + 1, ... in one
// straight stretch of code (no loop boundary, barrier or store to that buffer between them) as
// one vector load of a width the dialect has. The values and their positions do not change.
LinearProgram vectorize_loads(LinearProgram program, const Dialect& dialect);

// Marks each group of `width` unmasked stores to one buffer at index, index + 1, ... with nothing
// between them but other stores (an UPCAST's lanes, stored last) as one vector store of a width
// the dialect has: the first carries every lane's value, the others are absorbed.
LinearProgram vectorize_stores(LinearProgram program, const Dialect& dialect);

}  // namespace kiln

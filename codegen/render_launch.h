#pragma once
// The renderer's opening of a kernel's body: how each work item gets its ids. A loop-style
// dialect (the CPU) opens the loop over the flat range [begin, end) (in rows and columns where the
// program has ROWS); others declare each launch dimension's id from the dialect's ids (a spread
// dimension's from several) and return the surplus work items of a launch rounded up.

#include <sstream>

#include "codegen/dialect.h"
#include "codegen/linear.h"

namespace kiln {

// Writes the ids; returns the indentation level the body continues at.
int render_work_item_ids(std::ostringstream& out, const LinearProgram& program,
                         const Dialect& dialect);

// A size: a literal, or an expression over the kernel's variables.
std::string size_text(const Sym& size, const Dialect& dialect);

}  // namespace kiln

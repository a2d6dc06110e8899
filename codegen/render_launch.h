#pragma once
// The renderer's opening of a kernel's body: how each work item gets its ids. A loop-style
// dialect (the CPU) opens the loop over the flat range [begin, end) (in rows and columns where the
// program has ROWS); others declare each launch dimension's id from the dialect's ids (a spread
// dimension's from several) and return the surplus work items of a launch rounded up.

#include <functional>
#include <sstream>
#include <vector>

#include "codegen/dialect.h"
#include "codegen/linear.h"

namespace kiln {

// Writes the ids; returns the indentation level the body continues at. In a loop-style dialect's
// ROWS program, `row_prologue` is called (with the indentation level) inside the loop over rows,
// before the loop over columns opens: where the row's invariant instructions go.
int render_work_item_ids(std::ostringstream& out, const LinearProgram& program,
                         const Dialect& dialect,
                         const std::function<void(int indent)>& row_prologue = {});

// In a ROWS program, the instructions before any loop whose value is the same for every column
// of a row (their indices and operands name neither the column nor a value that depends on it),
// which a loop-style dialect computes once per row: a gathered row's index and its check, a
// row's scale. A store is among them only where nothing else in the kernel reads or writes its
// buffer. Empty where the program has no rows.
std::vector<bool> row_invariant_instructions(const LinearProgram& program);

// A size: a literal, or an expression over the kernel's variables.
std::string size_text(const Sym& size, const Dialect& dialect);

}  // namespace kiln

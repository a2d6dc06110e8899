#pragma once
// kiln's semantics as instructions: the pass between vectorizing and rendering.
//
// Some of a linear program's instructions mean what kiln promises rather than what a target's
// operator does: an integer division by zero gives 0 and MIN / -1 wraps, max and min propagate
// a float NaN, signed + - * << and negation wrap, a float converted to an integer saturates (NaN
// gives 0), a half-typed value (computed in float) is rounded to its type where it is compared
// or converted; others stand for more than one statement: a vector of 16-bit elements is 32-bit
// words holding two each (where the dialect has Dialect::word_buffer), and TC's fragment ops
// are the products of matrix units (which a dialect without them emulates). decompose_semantics
// rewrites each into instructions whose meaning every target shares: comparisons, selects (Alu
// Where), conversions, bit casts, shifts, masks and ors, loads and stores of words,
// accumulators and loops, and operators on operands where the target defines them (a division
// by a divisor that is never 0 nor -1; signed arithmetic in the unsigned type of its width
// where the dialect's signed overflow is undefined). Where the rewritten op is the same as the
// one it stands for (an integer Div, a float-to-int Cast, an AccUpdate), the new instruction
// carries LinInstr::primitive. The renderer then prints one instruction as one statement and
// refuses an instruction that still needs decomposing.

#include "codegen/dialect.h"
#include "codegen/linear.h"

namespace kiln {

// The program with every instruction that needs_decomposition rewritten; values keep their
// meaning (instructions are added before the ones that use them, and references renumbered).
// Running it on its own result changes nothing.
LinearProgram decompose_semantics(LinearProgram program, const Dialect& dialect);

// Whether instruction `index` means kiln's semantics in a way the `dialect`'s operator does not
// (decompose_semantics rewrites it; render_kernel refuses it).
bool needs_decomposition(const LinearProgram& program, int index, const Dialect& dialect);

}  // namespace kiln

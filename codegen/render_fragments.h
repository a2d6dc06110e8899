#pragma once
// The renderer's text for TC's fragment ops (LinOp::FragmentDefine, FragmentLoad, Mma,
// FragmentStore): the dialect's matrix units where it has them (Dialect::mma), else an emulation
// in which each work item computes its own 8 elements of every 16x16 result (row lane / 2,
// columns (lane % 2) * 8 and the next 7), reading A and B from their local arrays. The
// emulation runs the lowering's whole TC kernel (chunks, warps' tiles, results through local
// memory) on devices without matrix units, which is how it is tested there.

#include <string>
#include <vector>

#include "codegen/dialect.h"
#include "codegen/linear.h"

namespace kiln {

// The statements of fragment op `index` of `program`, in order; `names` are the names of the
// program's values so far (a fragment's own name is "frag" + its index).
std::vector<std::string> render_fragment_op(const LinearProgram& program, int index,
                                            const std::vector<std::string>& names,
                                            const Dialect& dialect);

}  // namespace kiln

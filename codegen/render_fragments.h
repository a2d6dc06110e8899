#pragma once
// The renderer's text for TC's fragment ops (LinOp::FragmentDefine, FragmentLoad, Mma,
// FragmentStore) on the dialect's matrix units (Dialect::mma). Where a dialect has none,
// decompose_semantics has emulated them with loads, multiplies, accumulators and a loop.

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

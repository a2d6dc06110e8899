#pragma once
// The linear program: one kernel as a straight list of instructions, ready to render.
//
// Values are referred to by their position in the list. Index arithmetic stays symbolic (Sym)
// until rendering, so it is simplified with the loop variables' ranges. The kernel computes one
// output element per value of the flat index `gid` in [0, global_size); how `gid` is produced (a
// CPU loop over a range, or a GPU work-item id) is the dialect's business.

#include <cstdint>
#include <string>
#include <vector>

#include <kiln/dtype.h>

#include "core/symbolic.h"
#include "core/uop.h"

namespace kiln {

enum class LinOp : uint8_t {
  Const,      // value
  Index,      // the integer value of `index` (a Sym over loop variables)
  Load,       // buffer[index] where valid, else `value` (the pad value)
  Store,      // buffer[index] = srcs[0]
  Alu,        // alu(srcs...), computed in `dtype` (the result type)
  Cast,       // srcs[0] converted to `dtype`
  AccDefine,  // an accumulator of `dtype`, initialised to `value`
  AccUpdate,  // srcs[0] (an AccDefine) = reduce(srcs[0], srcs[1])
  LoopBegin,  // for loop_var in [0, loop_end)
  LoopEnd,
};

struct LinInstr {
  LinInstr(LinOp op_in, DType dtype_in) : op(op_in), dtype(dtype_in) {}
  LinOp op;
  DType dtype;
  std::vector<int> srcs;
  Op alu = Op::Add;
  ReduceOp reduce = ReduceOp::Sum;
  int buffer = -1;
  Sym index;
  Sym valid = Sym(1);
  ConstArg value;
  std::string loop_var;
  int64_t loop_end = 0;
  // LoopBegin: an accumulator that is this loop's only state and whose update may be
  // reassociated (a float sum, max or min; the op is in `reduce`), so the renderer may vectorize
  // the loop. -1 when not.
  int reduction_acc = -1;
  // LoopBegin: how many iterations the renderer should unroll (1: leave it to the compiler).
  int unroll = 1;
};

struct KernelParam {
  DType dtype;
  int64_t numel = 0;
  bool is_output = false;
};

struct LinearProgram {
  std::string name;
  std::vector<KernelParam> params;  // output first, then inputs
  std::vector<LinInstr> instrs;
  int64_t global_size = 0;  // number of output elements
  std::string global_var = "gid";
  // Above 0: work item gid is split into gid_row = gid / row_length and gid_col = gid % row_length,
  // and indices are written in those two. A loop-style renderer then runs a loop over columns
  // inside a loop over rows, so whatever depends only on the row (a broadcast operand) is computed
  // once per row and the column loop reads memory contiguously.
  int64_t row_length = 0;
  std::string row_var = "gid_row";
  std::string column_var = "gid_col";
  // Every element computed is stored by exactly one work item.
  std::string to_string() const;
};

}  // namespace kiln

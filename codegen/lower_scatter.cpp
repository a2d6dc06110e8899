// Lowering a Scatter: stores to computed addresses, without atomics and without races. The
// kernel updates its output in place (the schedule's item before it wrote the destination's
// values there). A work item owns lines of the output along the Scatter's axis (every other
// coordinate fixed): it walks the index's lines in ascending order and stores (or reduces) each
// value where its index points. Only that work item writes the lines, and its stores happen in
// program order, so duplicates resolve the same way on every device and run: a later index wins
// a replace, and a float reduction combines in index order. The cost is the values written, not
// their product with the axis.

#include <kiln/error.h>

#include "codegen/launch_index.h"
#include "codegen/lowerer.h"

namespace kiln {

void Lowerer::lower_scatter() {
  const UOpRef& scatter = item_.ast;
  const ScatterArg& arg = scatter->scatter_arg();
  const size_t axis = static_cast<size_t>(arg.axis);
  if (scatter->src(0) != item_.output)
    throw InternalError(
        "[lower_kernel] a Scatter's kernel updates its output in place: its "
        "destination must be parameter 0");
  const UOpRef& index = scatter->src(1);
  const UOpRef& values = scatter->src(2);
  const DType dtype = scatter->dtype();
  const SymShape shape = scatter->sym_shape();
  const SymShape index_shape = index->sym_shape();

  // A work item's lanes are neighbouring lines (an UPCAST of another axis): their loads and
  // stores at one step are neighbours in memory.
  SymShape lines = shape;
  lines[axis] = Sym(1);
  const LaunchIndex launched = index_launch(plan_, tile_counts(lines), program_);
  store_guard_ = launched.store_guard;
  Lanes lanes, store_lanes;
  std::vector<Sym> lane_guards;
  tile_lanes(launched.tile, lines, lanes, store_lanes, lane_guards);
  const SymShape strides = View::contiguous_strides(shape);
  const auto flat_of = [&](const Index& at) {
    Sym flat(0);
    for (size_t dim = 0; dim < at.size(); ++dim) flat = flat + at[dim] * strides[dim];
    return flat;
  };
  const auto store = [&](int value, const Index& at, const Sym& valid) {
    LinInstr instr{LinOp::Store, dtype};
    instr.srcs = {cast_to(value, dtype)};
    instr.buffer = 0;
    instr.index = flat_of(at);
    instr.valid = valid;
    emit(std::move(instr));
  };
  const auto along = [&](Index at, const Sym& position) {
    at[axis] = position;
    return at;
  };
  std::vector<int> loops;

  // Each step of the index's lines: where each lane's index points (an index outside the axis
  // is reported, and stores nothing). A line past the index's extent along another axis keeps
  // the destination's values.
  {
    const Sym step = open_loop(loops, index_shape[axis]);
    for (size_t lane = 0; lane < lanes.size(); ++lane) {
      Sym inside_index(1);
      for (size_t dim = 0; dim < shape.size(); ++dim) {
        if (dim != axis && !(index_shape[dim] == shape[dim]))
          inside_index = logical_and(inside_index, lt(lanes[lane][dim], index_shape[dim]));
      }
      gated(inside_index, [&] {
        const Index at = along(lanes[lane], step);
        Sym inside(1);
        const Sym target = gathered_position(scatter, lower_one(index, at), &inside);
        const Sym valid = logical_and(logical_and(store_guard_, lane_guards[lane]),
                                      logical_and(inside_index, inside));
        const Index stored_at = along(store_lanes[lane], target);
        int value = lower_one(values, at);
        if (arg.reduce) {
          // The element as this work item last stored it: a load of the output, never shared
          // with another step's (each step stores before the next one reads).
          LinInstr old{LinOp::Load, dtype};
          old.buffer = 0;
          old.index = flat_of(stored_at);
          old.valid = valid;
          value = alu(reduce_alu_op(*arg.reduce), dtype, {emit(std::move(old)), value});
        }
        store(value, stored_at, valid);
        return 0;
      });
    }
    close_loop(loops);
  }
}

}  // namespace kiln

// TC: a TILE reduction lowered through matrix fragments (codegen/tensor_cores.h).

#include <map>

#include "codegen/lowerer.h"

namespace kiln {

std::vector<int> Lowerer::lower_tensor_core_reduce(const UOpRef& node, const Lanes& lanes) {
  const TensorCorePlan& plan = *plan_.tensor_cores;
  const UOpRef& src = node->src();
  const int reduce_axis = node->reduce_arg().axes[0];
  const Sym item = workgroup_item();
  // A GPU makes warps of neighbouring work items, in the numbering workgroup_item gives.
  const Sym warp = floordiv(item, Sym(kWarp));
  const Sym lane = mod(item, Sym(kWarp));
  define_chunks(reduce_axis);
  const StagedInput& a = staged_.at(axes_.reduce_inputs[plan.a_input].node.get());
  const StagedInput& b = staged_.at(axes_.reduce_inputs[plan.b_input].node.get());

  // The warp's tiles of the workgroup's outputs, consecutive in row-major order (part of one row
  // of tiles, or whole rows: the plan sees to it), and an accumulator for each. Each tile's row
  // and column are written from the first's, so that equal ones are equal expressions and their
  // fragments are loaded once.
  const int64_t per_row = plan.column_tiles();
  const Sym first = warp * Sym(plan.tiles_per_warp);
  const Sym first_tile_row = floordiv(first, Sym(per_row));
  const Sym first_tile_column = mod(first, Sym(per_row));
  std::vector<Sym> tile_rows, tile_columns;
  std::vector<int> accumulators;
  for (int64_t tile = 0; tile < plan.tiles_per_warp; ++tile) {
    if (plan.tiles_per_warp <= per_row) {
      tile_rows.push_back(first_tile_row);
      tile_columns.push_back(first_tile_column + Sym(tile));
    } else {
      tile_rows.push_back(first_tile_row + Sym(tile / per_row));
      tile_columns.push_back(Sym(tile % per_row));
    }
    accumulators.push_back(emit(LinInstr{LinOp::FragmentDefine, dtypes::float32}));
  }

  std::vector<int> loops;
  chunk_start_ =
      open_loop(loops, Sym(src->shape()[reduce_axis] / plan_.tile_chunk)) * Sym(plan_.tile_chunk);
  copy_chunks(reduce_axis);
  emit(LinInstr{LinOp::Barrier, dtypes::int64});
  const Sym step = open_loop(loops, Sym(plan_.tile_chunk / kFragment)) * Sym(kFragment);
  // A fragment that several of the warp's tiles multiply is loaded once per step.
  std::map<std::pair<bool, Sym>, int> fragments;  // (matrix B, index) -> fragment
  auto fragment = [&](const StagedInput& staged, bool matrix_b, const Sym& tile) {
    const Sym index = step * Sym(staged.row) + tile * Sym(kFragment);
    const std::pair<bool, Sym> key{matrix_b, index};
    if (auto known = fragments.find(key); known != fragments.end()) return known->second;
    LinInstr load{LinOp::FragmentLoad, src->dtype()};
    load.buffer = staged.local;
    load.local = true;
    load.index = index;
    load.stride = staged.row;
    load.matrix_b = matrix_b;
    return fragments[key] = emit(std::move(load));
  };
  for (int64_t tile = 0; tile < plan.tiles_per_warp; ++tile) {
    LinInstr mma{LinOp::Mma, src->dtype()};
    mma.srcs = {accumulators[tile], fragment(a, false, tile_rows[tile]),
                fragment(b, true, tile_columns[tile])};
    mma.lane = lane;
    emit(std::move(mma));
  }
  close_loop(loops);
  emit(LinInstr{LinOp::Barrier, dtypes::int64});
  close_loop(loops);
  staged_.clear();

  // The workgroup's results, row-major in local memory, in float32 (kiln's half types compute
  // in float: the kernel rounds them where it stores them).
  LinInstr define{LinOp::DefineLocal, node->dtype()};
  define.local_size = plan.rows * plan.c_row;
  define.fragments = true;
  const int results = emit(std::move(define));
  for (int64_t tile = 0; tile < plan.tiles_per_warp; ++tile) {
    LinInstr store{LinOp::FragmentStore, dtypes::float32};
    store.srcs = {accumulators[tile]};
    store.buffer = results;
    store.local = true;
    store.index =
        tile_rows[tile] * Sym(kFragment * plan.c_row) + tile_columns[tile] * Sym(kFragment);
    store.stride = plan.c_row;
    store.lane = lane;
    emit(std::move(store));
  }
  emit(LinInstr{LinOp::Barrier, dtypes::int64});

  // Each lane's output, at its place relative to the workgroup's first.
  const Sym first_output_row = workgroup_base(plan.row_axis);
  const Sym first_output_column = workgroup_base(plan.column_axis);
  const int row_source = axes_.source_axis[plan.row_axis];
  const int column_source = axes_.source_axis[plan.column_axis];
  std::vector<int> values;
  for (const Index& index : lanes) {
    LinInstr load{LinOp::Load, node->dtype()};
    load.buffer = results;
    load.local = true;
    load.index = (index[row_source] - first_output_row) * Sym(plan.c_row) + index[column_source] -
                 first_output_column;
    values.push_back(emit(std::move(load)));
  }
  return values;
}

}  // namespace kiln

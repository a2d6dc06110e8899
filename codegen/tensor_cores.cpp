#include "codegen/tensor_cores.h"

#include <algorithm>

namespace kiln {
namespace {

bool contains(const std::vector<int>& axes, int axis) {
  return std::find(axes.begin(), axes.end(), axis) != axes.end();
}

// The output axes that reduce input `input` is indexed by and the other one is not: A's rows,
// or B's columns.
std::vector<int> own_axes(const KernelAxes& axes, int input) {
  const std::vector<int>& other = axes.reduce_inputs[1 - input].output_axes;
  std::vector<int> own;
  for (int axis : axes.reduce_inputs[input].output_axes) {
    if (!contains(other, axis)) own.push_back(axis);
  }
  return own;
}

}  // namespace

std::optional<TensorCorePlan> plan_tensor_cores(const KernelAxes& axes,
                                                const std::vector<int64_t>& extent,
                                                int64_t workgroup, int64_t chunk,
                                                std::string& why) {
  auto fail = [&why](std::string reason) {
    why = std::move(reason);
    return std::optional<TensorCorePlan>();
  };
  if (!axes.products_of_halves || axes.reduce_op != ReduceOp::Sum)
    return fail(
        "TC sums products of two float16 or two bfloat16 inputs, and this kernel's reduction is "
        "not such a sum");
  TensorCorePlan plan;
  plan.workgroup = workgroup;
  plan.chunk = chunk;
  if (plan.chunk == 0) return fail("TC multiplies TILE's chunks: the reduce axis needs a TILE");
  if (plan.chunk % kFragment != 0)
    return fail("the TILE's chunk of " + std::to_string(plan.chunk) +
                " steps must be whole fragments of 16");
  const std::vector<int> own[2] = {own_axes(axes, 0), own_axes(axes, 1)};
  int axis_of[2] = {-1, -1};
  for (int axis = 0; axis < static_cast<int>(extent.size()); ++axis) {
    if (extent[axis] == 1) continue;
    const int owner = contains(own[0], axis) ? 0 : contains(own[1], axis) ? 1 : -1;
    if (owner < 0 || axis_of[owner] >= 0)
      return fail(
          "the workgroup's outputs must lie along one axis that only A reads and one "
          "that only B reads; axis " +
          std::to_string(axis) + " is another");
    axis_of[owner] = axis;
  }
  if (axis_of[0] < 0 || axis_of[1] < 0)
    return fail(
        "the workgroup's outputs must span an axis that only A reads and one that only B "
        "reads");
  plan.a_input = axis_of[0] < axis_of[1] ? 0 : 1;
  plan.b_input = 1 - plan.a_input;
  plan.row_axis = std::min(axis_of[0], axis_of[1]);
  plan.column_axis = std::max(axis_of[0], axis_of[1]);
  plan.rows = extent[plan.row_axis];
  plan.columns = extent[plan.column_axis];
  const std::string block = std::to_string(plan.rows) + "x" + std::to_string(plan.columns);
  if (plan.rows % kFragment != 0 || plan.columns % kFragment != 0)
    return fail("the workgroup's " + block + " outputs must be whole 16x16 tiles");
  if (plan.workgroup % kWarp != 0)
    return fail("the workgroup's " + std::to_string(plan.workgroup) +
                " work items must be whole warps of 32");
  plan.warps = plan.workgroup / kWarp;
  const int64_t tiles = plan.rows / kFragment * plan.column_tiles();
  if (tiles % plan.warps != 0)
    return fail("the " + std::to_string(tiles) + " 16x16 tiles of " + block +
                " outputs must split evenly among the workgroup's " + std::to_string(plan.warps) +
                " warps");
  plan.tiles_per_warp = tiles / plan.warps;
  // A warp's tiles are consecutive in row-major order: part of one row of tiles (their A
  // fragment shared), or whole rows (their B fragments shared).
  if (plan.tiles_per_warp % plan.column_tiles() != 0 &&
      plan.column_tiles() % plan.tiles_per_warp != 0)
    return fail("each warp's " + std::to_string(plan.tiles_per_warp) +
                " tiles must be part of one row of " + std::to_string(plan.column_tiles()) +
                " tiles, or whole rows");
  if (plan.tiles_per_warp > 8)
    return fail("a warp would hold " + std::to_string(plan.tiles_per_warp) +
                " tiles' accumulators; at most 8 (64 floats per work item)");
  plan.a_row = plan.rows + 8;
  plan.b_row = plan.columns + 8;
  plan.c_row = plan.columns + 4;
  return plan;
}

std::vector<Opt> tensor_core_opts(const KernelAxes& axes, const TensorCoreLayout& layout) {
  const int64_t rows = layout.rows, columns = layout.columns, workgroup = layout.workgroup;
  if (!axes.products_of_halves) return {};
  const std::vector<int> own_a = own_axes(axes, 0), own_b = own_axes(axes, 1);
  if (own_a.empty() || own_b.empty()) return {};
  const int row = std::min(own_a.back(), own_b.back());
  const int column = std::max(own_a.back(), own_b.back());
  // Each work item's outputs: 4 neighbouring columns (vector stores), in as many rows as it
  // takes.
  const int64_t column_upcast = 4;
  const int64_t column_items = columns / column_upcast;
  if (columns % column_upcast != 0 || workgroup % column_items != 0) return {};
  const int64_t row_items = workgroup / column_items;
  if (row_items > rows || rows % row_items != 0) return {};
  std::vector<Opt> opts{{OptKind::Upcast, column, column_upcast}};
  if (rows / row_items > 1) opts.push_back({OptKind::Upcast, row, rows / row_items});
  opts.push_back({OptKind::Local, column, column_items});
  if (row_items > 1) opts.push_back({OptKind::Local, row, row_items});
  const int reduce_axis = static_cast<int>(axes.output.size());
  opts.push_back({OptKind::Tile, reduce_axis, layout.chunk});
  opts.push_back({OptKind::TensorCore, reduce_axis, kFragment});
  return opts;
}

}  // namespace kiln

#include "codegen/launch_index.h"

#include <algorithm>

namespace kiln {

LaunchIndex index_launch(const KernelPlan& plan, const SymShape& tiles, LinearProgram& program) {
  LaunchIndex result;
  const size_t ndim = tiles.size();
  std::vector<Sym>& tile = result.tile;
  tile.assign(ndim, Sym(0));
  program.global_size = Sym(1);
  for (const LaunchAxis& axis : plan.launch) {
    LaunchDim dim;
    const std::string number = std::to_string(program.launch.size());
    dim.local = axis.local;
    if (axis.role == LaunchAxis::Role::GroupLanes && axis.groups > 1) {
      // GRID: the group's lanes in `groups` workgroups, numbered by a global id.
      dim.var = "gidx" + number;
      dim.size = axis.local * axis.groups;
      result.grid_item = Sym::var(dim.var, 0, axis.local * axis.groups - 1);
      result.group_lane = mod(result.grid_item, Sym(axis.local));
      result.grid_group = floordiv(result.grid_item, Sym(axis.local));
      result.store_guard = lt(result.group_lane, Sym(1));
    } else if (axis.role == LaunchAxis::Role::GroupLanes) {
      dim.var = "lidx" + number;
      dim.local_id = true;
      dim.size = axis.local;
      result.group_lane = Sym::var(dim.var, 0, axis.local - 1);
      // The group's partial results are combined by every work item; one stores them.
      result.store_guard = lt(result.group_lane, Sym(1));
    } else {
      dim.var = "gidx" + number;
      std::vector<size_t> covered;
      if (axis.role == LaunchAxis::Role::Axis) {
        covered.push_back(static_cast<size_t>(axis.axis));
      } else {
        for (size_t output = 0; output < ndim; ++output) {
          if (!plan.local.count(static_cast<int>(output))) covered.push_back(output);
        }
      }
      dim.size = Sym(1);
      for (size_t output : covered) dim.size = dim.size * tiles[output];
      const Sym id = Sym::var(dim.var, 0, std::max<int64_t>(dim.size.vmax(), 1) - 1);
      if (program.row_length > 0) {
        // ROWS: the flat index as a row index and a column index of the last axis.
        const int64_t row_length = program.row_length;
        SymShape rows;
        for (size_t output = 0; output + 1 < ndim; ++output) rows.push_back(tiles[output]);
        const std::vector<Sym> row_index = unravel_index(
            Sym::var(kRowVar, 0, std::max<int64_t>(dim.size.vmax() / row_length, 1) - 1), rows);
        for (size_t output = 0; output + 1 < ndim; ++output) tile[output] = row_index[output];
        tile[ndim - 1] = Sym::var(kColumnVar, 0, row_length - 1);
      } else {
        SymShape sizes;
        for (size_t output : covered) sizes.push_back(tiles[output]);
        const std::vector<Sym> unravelled = unravel_index(id, sizes);
        for (size_t at = 0; at < covered.size(); ++at) tile[covered[at]] = unravelled[at];
      }
    }
    dim.global = (dim.size.vmax() + dim.local - 1) / dim.local * dim.local;
    program.global_size = program.global_size * dim.size;
    program.launch.push_back(std::move(dim));
  }
  return result;
}

}  // namespace kiln

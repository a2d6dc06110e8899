#pragma once
// A kernel's launch dimensions and the index arithmetic of its work items: lowering's first step.
// The dimensions are the plan's (KernelPlan::launch: a GROUP's lanes, each LOCAL output axis, the
// flat index over the others); each output axis' tile index is written in their id variables.

#include <vector>

#include "codegen/linear.h"
#include "codegen/opts.h"
#include "core/view.h"

namespace kiln {

struct LaunchIndex {
  std::vector<Sym> tile;    // each output axis' tile index
  Sym group_lane = Sym(0);  // GROUP: the work item's place in its group
  // GRID: the work item's place among all the grid's work items, and its workgroup.
  Sym grid_item = Sym(0);
  Sym grid_group = Sym(0);
  Sym store_guard = Sym(1);  // which work items store the outputs
};

// Adds the launch dimensions to `program` (launch, global_size; ROWS where program.row_length
// is set) for outputs in tiles of sizes `tiles`, and returns the tile index in their variables.
LaunchIndex index_launch(const KernelPlan& plan, const SymShape& tiles, LinearProgram& program);

}  // namespace kiln

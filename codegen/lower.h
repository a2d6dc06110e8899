#pragma once
// Lowering: one scheduled kernel (an ast over Buffer, Const and Iota leaves) to a linear program.
//
// Every node can be evaluated at any symbolic index: a View maps the index through its
// ShapeTracker (unravelling into the source's shape when the source is computed, not loaded),
// and a Reduce opens a loop per reduced axis around its source. Equal (node, index) pairs within
// a loop scope are lowered once.

#include <string>

#include <vector>

#include "codegen/linear.h"
#include "codegen/opts.h"
#include "codegen/schedule.h"

namespace kiln {

// Lowers the kernel with `opts` applied (see opts.h; choose_opts picks them). Throws OptError,
// before building anything, where they do not fit the kernel or `target`.
LinearProgram lower_kernel(const ScheduleItem& item, const std::vector<Opt>& opts,
                           const OptTarget& target);

}  // namespace kiln

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

// Lowers the kernel with its plan applied (plan_opts checks a list of opts into one; choose_opts
// picks them).
LinearProgram lower_kernel(const ScheduleItem& item, const KernelPlan& plan,
                           const OptTarget& target);

}  // namespace kiln

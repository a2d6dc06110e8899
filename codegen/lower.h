#pragma once
// Lowering: one scheduled kernel (an ast over Buffer, Const and Iota leaves) to a linear program.
//
// Every node can be evaluated at any symbolic index: a View maps the index through its
// ShapeTracker (unravelling into the source's shape when the source is computed, not loaded),
// and a Reduce opens a loop per reduced axis around its source. Equal (node, index) pairs within
// a loop scope are lowered once.

#include <string>

#include "codegen/dialect.h"
#include "codegen/linear.h"
#include "codegen/schedule.h"

namespace kiln {

// `dialect` is the target's: some choices depend on how it runs work items (a loop on the CPU,
// one work item per index elsewhere).
LinearProgram lower_kernel(const ScheduleItem& item, const Dialect& dialect);

}  // namespace kiln

#pragma once
// Builders of graph nodes shared by the Tensor front end and the scheduler's rewrites. Each
// assumes valid arguments (the Tensor API checks them first).

#include <functional>
#include <vector>

#include "core/uop.h"
#include "core/view.h"

namespace kiln {

// A node of `shape` whose every element is `value` in `dtype`.
UOpRef const_node(double value, DType dtype, const Shape& shape);
// Reduces `axes` (sorted) of the node with `op`; the reduced axes keep size 1.
UOpRef reduce_node(const UOpRef& node, ReduceOp op, const std::vector<int>& axes);
// A movement op: applies `change` to the node's tracker (merging with an existing View).
UOpRef movement_node(const UOpRef& node, const Shape& new_shape,
                     const std::function<ShapeTracker(const ShapeTracker&)>& change);
UOpRef reshape_node(const UOpRef& node, const Shape& shape);
UOpRef expand_node(const UOpRef& node, const Shape& shape);  // same rank

}  // namespace kiln

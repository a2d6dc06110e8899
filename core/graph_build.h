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
UOpRef symbolic_const_node(double value, DType dtype, const SymShape& shape);
// A constant of the node's shape (symbolic where the node's is).
UOpRef const_like(double value, DType dtype, const UOpRef& node);
// Reduces `axes` (sorted) of the node with `op`; the reduced axes keep size 1.
UOpRef reduce_node(const UOpRef& node, ReduceOp op, const std::vector<int>& axes);
// A movement op: applies `change` to the node's tracker (merging with an existing View). The
// result's shape is the changed tracker's; `new_shape` is its value.
UOpRef movement_node(const UOpRef& node, const Shape& new_shape,
                     const std::function<ShapeTracker(const ShapeTracker&)>& change);
UOpRef reshape_node(const UOpRef& node, const Shape& shape);
UOpRef reshape_node(const UOpRef& node, const SymShape& shape);
UOpRef expand_node(const UOpRef& node, const Shape& shape);  // same rank
UOpRef expand_node(const UOpRef& node, const SymShape& shape);

}  // namespace kiln

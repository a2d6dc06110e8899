#include "core/graph_build.h"

#include <algorithm>

#include "core/const_fold.h"

namespace kiln {

UOpRef const_node(double value, DType dtype, const Shape& shape) {
  return UOp::make(Op::Const, dtype, {}, make_const(value, dtype), shape);
}

UOpRef symbolic_const_node(double value, DType dtype, const SymShape& shape) {
  return UOp::make_symbolic(Op::Const, dtype, {}, make_const(value, dtype), shape);
}

UOpRef const_like(double value, DType dtype, const UOpRef& node) {
  return node->is_symbolic() ? symbolic_const_node(value, dtype, node->sym_shape())
                             : const_node(value, dtype, node->shape());
}

UOpRef reduce_node(const UOpRef& node, ReduceOp op, const std::vector<int>& axes) {
  if (axes.empty()) return node;
  Shape shape = node->shape();
  for (int axis : axes) shape[axis] = 1;
  return UOp::make(Op::Reduce, node->dtype(), {node}, ReduceArg{op, axes}, shape);
}

UOpRef movement_node(const UOpRef& node, const Shape& new_shape,
                     const std::function<ShapeTracker(const ShapeTracker&)>& change) {
  const bool on_view = node->op() == Op::View;
  const UOpRef& base = on_view ? node->src() : node;
  const ShapeTracker before =
      on_view ? node->tracker() : ShapeTracker::contiguous(node->sym_shape());
  const ShapeTracker after = change(before);
  const bool symbolic = std::any_of(after.shape().begin(), after.shape().end(),
                                    [](const Sym& size) { return !size.is_const(); });
  if (after.is_contiguous() && (symbolic || base->is_symbolic() ? after.shape() == base->sym_shape()
                                                                : new_shape == base->shape()))
    return base;
  // A constant has the same value everywhere: only a mask (padding) needs a View.
  bool masked = false;
  for (const View& view : after.views()) masked |= view.mask.has_value();
  if (base->op() == Op::Const && !masked) {
    if (symbolic)
      return UOp::make_symbolic(Op::Const, base->dtype(), {}, base->arg(), after.shape());
    return UOp::make(Op::Const, base->dtype(), {}, base->arg(), new_shape);
  }
  return UOp::make(Op::View, base->dtype(), {base}, after, new_shape);
}

UOpRef reshape_node(const UOpRef& node, const Shape& shape) {
  if (node->shape() == shape) return node;
  return movement_node(node, shape, [&](const ShapeTracker& tracker) {
    return tracker.reshape(to_sym_shape(shape));
  });
}

UOpRef reshape_node(const UOpRef& node, const SymShape& shape) {
  if (node->sym_shape() == shape) return node;
  return movement_node(node, shape_values(shape),
                       [&](const ShapeTracker& tracker) { return tracker.reshape(shape); });
}

UOpRef expand_node(const UOpRef& node, const SymShape& shape) {
  if (node->sym_shape() == shape) return node;
  return movement_node(node, shape_values(shape),
                       [&](const ShapeTracker& tracker) { return tracker.expand(shape); });
}

UOpRef expand_node(const UOpRef& node, const Shape& shape) {
  if (node->shape() == shape) return node;
  return movement_node(node, shape, [&](const ShapeTracker& tracker) {
    return tracker.expand(to_sym_shape(shape));
  });
}

}  // namespace kiln

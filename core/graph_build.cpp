#include "core/graph_build.h"

#include "core/const_fold.h"

namespace kiln {

UOpRef const_node(double value, DType dtype, const Shape& shape) {
  return UOp::make(Op::Const, dtype, {}, make_const(value, dtype), shape);
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
      on_view ? node->tracker() : ShapeTracker::contiguous(to_sym_shape(node->shape()));
  const ShapeTracker after = change(before);
  if (after.is_contiguous() && new_shape == base->shape()) return base;
  // A constant has the same value everywhere: only a mask (padding) needs a View.
  bool masked = false;
  for (const View& view : after.views()) masked |= view.mask.has_value();
  if (base->op() == Op::Const && !masked)
    return UOp::make(Op::Const, base->dtype(), {}, base->arg(), new_shape);
  return UOp::make(Op::View, base->dtype(), {base}, after, new_shape);
}

UOpRef reshape_node(const UOpRef& node, const Shape& shape) {
  if (node->shape() == shape) return node;
  return movement_node(node, shape, [&](const ShapeTracker& tracker) {
    return tracker.reshape(to_sym_shape(shape));
  });
}

UOpRef expand_node(const UOpRef& node, const Shape& shape) {
  if (node->shape() == shape) return node;
  return movement_node(node, shape, [&](const ShapeTracker& tracker) {
    return tracker.expand(to_sym_shape(shape));
  });
}

}  // namespace kiln

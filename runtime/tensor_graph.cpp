// Graph builders and argument checks shared by the Tensor ops.

#include <algorithm>
#include <cmath>
#include <set>

#include "runtime/tensor_internal.h"

namespace kiln {

std::string shape_string(const Shape& shape) {
  std::string text = "(";
  for (size_t dim = 0; dim < shape.size(); ++dim)
    text += (dim ? ", " : "") + std::to_string(shape[dim]);
  if (shape.size() == 1) text += ",";
  return text + ")";
}

std::string describe(const Tensor& tensor) {
  return std::string(tensor.dtype().name()) + shape_string(tensor.shape()) + " on " +
         tensor.device();
}

int normalize_axis(int64_t axis, int64_t ndim, const char* op) {
  const int64_t normalized = axis < 0 ? axis + ndim : axis;
  if (normalized < 0 || normalized >= ndim) {
    throw ShapeError(std::string("[") + op + "] axis " + std::to_string(axis) +
                     " is out of range for " + std::to_string(ndim) + " dimension(s); valid: " +
                     std::to_string(-ndim) + " to " + std::to_string(ndim - 1));
  }
  return static_cast<int>(normalized);
}

std::vector<int> normalize_axes(const std::vector<int64_t>& axes, int64_t ndim, const char* op) {
  std::set<int> unique;
  for (int64_t axis : axes) {
    if (!unique.insert(normalize_axis(axis, ndim, op)).second) {
      throw ShapeError(std::string("[") + op + "] axis " + std::to_string(axis) + " is repeated");
    }
  }
  return {unique.begin(), unique.end()};
}

void check_same_device(const Tensor& a, const Tensor& b, const char* op) {
  if (a.device() != b.device()) {
    throw DeviceError(std::string("[") + op +
                      "] operands are on different devices: " + describe(a) + " and " +
                      describe(b) + "; move one with .to(\"" + a.device() + "\")");
  }
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const size_t ndim = std::max(a.size(), b.size());
  Shape result(ndim);
  for (size_t dim = 0; dim < ndim; ++dim) {
    const int64_t size_a = dim + a.size() >= ndim ? a[dim + a.size() - ndim] : 1;
    const int64_t size_b = dim + b.size() >= ndim ? b[dim + b.size() - ndim] : 1;
    if (size_a != size_b && size_a != 1 && size_b != 1) {
      throw ShapeError(std::string("[") + op + "] shapes " + shape_string(a) + " and " +
                       shape_string(b) + " cannot be broadcast: dimension " + std::to_string(dim) +
                       " is " + std::to_string(size_a) + " vs " + std::to_string(size_b) +
                       " (sizes must match or be 1)");
    }
    result[dim] = size_a == 1 ? size_b : size_a;
  }
  return result;
}

UOpRef const_node(double value, DType dtype, const Shape& shape) {
  ConstArg arg;
  if (dtype.is_bool()) {
    arg.int_value = value != 0 ? 1 : 0;
    arg.float_value = static_cast<double>(arg.int_value);
  } else if (dtype.is_int()) {
    // Integers wrap like a cast would: the value modulo 2^64, as two's complement.
    constexpr double kTwo63 = 9223372036854775808.0, kTwo64 = 18446744073709551616.0;
    if (std::isfinite(value)) {
      double whole = std::trunc(value);
      if (whole < -kTwo63 || whole >= kTwo64) {
        whole = std::fmod(whole, kTwo64);
        if (whole < 0) whole += kTwo64;
        if (whole >= kTwo64) whole = 0;
      }
      arg.int_value = whole >= kTwo63 ? static_cast<int64_t>(static_cast<uint64_t>(whole))
                                      : static_cast<int64_t>(whole);
    }
    arg.float_value = value;
  } else {
    arg.float_value = value;
    arg.int_value = 0;
  }
  return UOp::make(Op::Const, dtype, {}, arg, shape);
}

UOpRef cast_node(const UOpRef& node, DType dtype) {
  if (node->dtype() == dtype) return node;
  return UOp::make(Op::Cast, dtype, {node}, {}, node->shape());
}

UOpRef alu_node(Op op, DType dtype, std::vector<UOpRef> srcs) {
  Shape shape = srcs[0]->shape();
  return UOp::make(op, dtype, std::move(srcs), {}, std::move(shape));
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

UOpRef broadcast_node(const UOpRef& node, const Shape& shape) {
  Shape padded(shape.size() - node->shape().size(), 1);
  padded.insert(padded.end(), node->shape().begin(), node->shape().end());
  return expand_node(reshape_node(node, padded), shape);
}

DType float_dtype_for(DType dtype) {
  return dtype.is_float() ? dtype : dtypes::float32;
}

}  // namespace kiln

#pragma once
// Shared by the Tensor front end's files: the state behind a handle and the graph builders that
// every op uses. Each builder assumes its arguments were checked by the public op.

#include <kiln/tensor.h>

#include <functional>
#include <string>
#include <vector>

#include "core/uop.h"

namespace kiln {

struct TensorState {
  UOpRef node;
  std::string device;
};

Tensor make_tensor(UOpRef node, const std::string& device);
inline UOpRef node_of(const Tensor& tensor) {
  return tensor.node();
}

// "(2, 3)", "float32[2, 3]" for messages.
std::string shape_string(const Shape& shape);
std::string describe(const Tensor& tensor);

// Negative axes count from the end; throws ShapeError naming `op` when out of range.
int normalize_axis(int64_t axis, int64_t ndim, const char* op);
std::vector<int> normalize_axes(const std::vector<int64_t>& axes, int64_t ndim, const char* op);
void check_same_device(const Tensor& a, const Tensor& b, const char* op);

// Graph builders.
UOpRef const_node(double value, DType dtype, const Shape& shape);
UOpRef cast_node(const UOpRef& node, DType dtype);
UOpRef alu_node(Op op, DType dtype, std::vector<UOpRef> srcs);
UOpRef reduce_node(const UOpRef& node, ReduceOp op, const std::vector<int>& axes);
// A movement op: applies `change` to the node's tracker (merging with an existing View).
UOpRef movement_node(const UOpRef& node, const Shape& new_shape,
                     const std::function<ShapeTracker(const ShapeTracker&)>& change);
UOpRef reshape_node(const UOpRef& node, const Shape& shape);
UOpRef expand_node(const UOpRef& node, const Shape& shape);  // same rank
// Reshapes (prepending 1s) and expands to a broadcast shape.
UOpRef broadcast_node(const UOpRef& node, const Shape& shape);

// A binary op with NumPy broadcasting and dtype promotion; `result` overrides the result dtype
// (comparisons give bool).
Tensor binary_op(Op op, const Tensor& a, const Tensor& b, const char* name);
// The dtype a tensor and a host scalar compute in: the tensor's, except that a non-integral
// scalar with an integer or bool tensor gives float32.
DType scalar_result_dtype(DType tensor_dtype, double scalar);
// A tensor-scalar op; the scalar takes the tensor's dtype.
Tensor scalar_op(Op op, const Tensor& a, double scalar, bool scalar_first, const char* name);
// The dtype that float-only ops compute in: float inputs keep theirs, others become float32.
DType float_dtype_for(DType dtype);

}  // namespace kiln

#pragma once
// Shared by the Tensor front end's files: the state behind a handle and the graph builders that
// every op uses. Each builder assumes its arguments were checked by the public op.

#include <kiln/tensor.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "core/graph_build.h"
#include "core/rewrite.h"
#include "core/uop.h"

namespace kiln {

struct GradNode;  // runtime/autograd.h

// What a handle and its copies share. The node changes once, when the value is realized (from
// the graph to its buffer), possibly while another thread reads it through a copy of the handle:
// it is read and written under the lock. Shape, dtype and device never change.
class TensorState {
 public:
  TensorState(UOpRef node, std::string device)
      : shape_(node->shape()),
        sym_shape_(node->is_symbolic() ? std::make_shared<const SymShape>(node->sym_shape())
                                       : nullptr),
        dtype_(node->dtype()),
        device_(std::move(device)),
        node_(std::move(node)) {}

  // A buffer written in place (Tensor::assign) after this tensor took it, or a view of one (what
  // a read may take without a realize), reads as it was.
  UOpRef node() const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (UOpRef contents = node_->snapshot()) {
      node_ = std::move(contents);
    } else if (node_->op() == Op::View && node_->src()->op() == Op::Buffer) {
      if (UOpRef source = node_->src()->snapshot()) node_ = with_srcs(node_, {std::move(source)});
    }
    return node_;
  }
  // The realized form of the same value.
  void set_node(UOpRef node) {
    std::lock_guard<std::mutex> lock(mutex_);
    node_ = std::move(node);
  }
  const Shape& shape() const { return shape_; }
  // Null where every size is a number.
  const SymShape* sym_shape() const { return sym_shape_.get(); }
  DType dtype() const { return dtype_; }
  const std::string& device() const { return device_; }

  // Gradients (runtime/autograd.cpp). `requires_grad` is read by every op, without the lock.
  bool requires_grad() const { return requires_grad_.load(std::memory_order_relaxed); }
  void set_requires_grad(bool on) { requires_grad_.store(on); }
  // The recorded op that made this tensor; null for a leaf (and once a backward freed it).
  std::shared_ptr<GradNode> grad_fn() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return grad_fn_;
  }
  void set_grad_fn(std::shared_ptr<GradNode> node) {
    std::lock_guard<std::mutex> lock(mutex_);
    grad_fn_ = std::move(node);
  }
  // A backward pass freed the recorded op that made this tensor.
  bool graph_freed() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return graph_freed_;
  }
  void free_graph() {
    std::lock_guard<std::mutex> lock(mutex_);
    grad_fn_.reset();
    graph_freed_ = true;
  }
  Tensor grad() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return grad_;
  }
  void set_grad(Tensor gradient) {
    std::lock_guard<std::mutex> lock(mutex_);
    grad_ = std::move(gradient);
  }
  // Adds to the gradient under the lock: backward passes in two threads both count.
  void add_grad(const Tensor& gradient) {
    std::lock_guard<std::mutex> lock(mutex_);
    grad_ = grad_.defined() ? grad_ + gradient : gradient;
  }

 private:
  const Shape shape_;
  const std::shared_ptr<const SymShape> sym_shape_;
  const DType dtype_;
  const std::string device_;
  mutable std::mutex mutex_;
  mutable UOpRef node_;
  std::atomic<bool> requires_grad_{false};
  std::shared_ptr<GradNode> grad_fn_;
  bool graph_freed_ = false;
  Tensor grad_;
};

Tensor make_tensor(UOpRef node, const std::string& device);
// The device a creation function runs on: `device` by its canonical name (opened: a DeviceError
// says what is available), or the default device for "".
std::string resolve_device(const std::string& device);
inline UOpRef node_of(const Tensor& tensor) {
  return tensor.node();
}

// "(2, 3)", "(n=5, 3)", "float32(2, 3) on CPU" for messages.
std::string shape_string(const Shape& shape);
std::string shape_string(const SymShape& shape);
std::string describe(const Tensor& tensor);

// The most elements a tensor may hold: flat indices and byte sizes of every dtype then fit in
// int64, with room for index arithmetic.
constexpr int64_t kMaxElements = int64_t{1} << 60;
// The element count of `shape`; throws ShapeError naming `op` for a negative size or a count
// above kMaxElements.
int64_t check_numel(const Shape& shape, const char* op);
// A symbolic shape must hold at most kMaxElements at every value its variables may take (a
// kernel is compiled for all of them, with int64 index arithmetic): throws ShapeError naming
// `op`, the sizes and their largest values otherwise.
void check_symbolic_numel(const SymShape& shape, const char* op);

// A value that fills part of a tensor (pad) keeps the tensor's dtype: for integers and bool it
// must be a whole number, converted as a cast would (wrapping; non-zero is true); floats take any
// value. Throws DTypeError naming `op` and `operand` otherwise.
void check_fill_value(double value, DType dtype, const char* op, const std::string& operand);

// 0, 1, ..., n - 1 (int32) along `axis` of the tensor's shape, the other sizes 1: an iota over
// the axis' (possibly symbolic) size.
Tensor index_along(const Tensor& tensor, int axis);
// What the scans (cumsum, cumprod, cummax, ...) reduce over: `moved` (..., n), the scanned axis
// last, expanded to rows (..., n, n) whose element [..., i, j] is moved[..., j], and `prefix`,
// true where j <= i (sizes symbolic where the axis is).
struct PrefixRows {
  Tensor rows, prefix;
};
PrefixRows prefix_rows(const Tensor& moved);
// Sums and products of bool and integers accumulate in 64 bits, as in PyTorch.
DType accumulate_dtype(DType dtype);

// Negative axes count from the end; throws ShapeError naming `op` when out of range.
int normalize_axis(int64_t axis, int64_t ndim, const char* op);
std::vector<int> normalize_axes(const std::vector<int64_t>& axes, int64_t ndim, const char* op);
// Throws an Error naming `op` when `tensor` is empty (default-constructed).
void check_defined(const Tensor& tensor, const char* op);
// Both operands defined and on one device; throws naming `op` otherwise.
void check_same_device(const Tensor& a, const Tensor& b, const char* op);
// A ValueError naming `op` unless x is realized into a buffer of its own (what an in-place write
// needs).
void check_writable(const Tensor& x, const char* op);
// A Buffer node like `like` (its shape, symbolic or not) over `storage`: a tensor written in
// place under a node of its own (runtime/tensor_assign.cpp, runtime/capture.cpp).
UOpRef buffer_node(const UOp& like, std::shared_ptr<Storage> storage);

// An op built from other ops (cat from pad and where, matmul from a multiply and a sum) checks
// its operands itself, but an inner op may still refuse what it is given (two variables of one
// name with different bounds). Runs `build` and rethrows such an error labelled with `op`, the op
// the user called, and the operands as the user gave them (`operands()`), since neither the
// inner op's name nor its internal shapes are anything the user wrote.
std::string relabel_error(const Error& error, const char* op, const std::string& operands);
template <typename Build, typename Describe>
Tensor built_from_ops(const char* op, const Describe& operands, const Build& build) {
  try {
    return build();
  } catch (const ShapeError& error) {
    throw ShapeError(relabel_error(error, op, operands()));
  } catch (const UnsupportedDTypeError& error) {
    throw UnsupportedDTypeError(relabel_error(error, op, operands()), *error.dtype());
  } catch (const DTypeError& error) {
    throw DTypeError(relabel_error(error, op, operands()), error.dtype());
  }
}

// The source's `axis` replaced by the axes of `index` (integer, checked by the caller): the one
// Gather behind take, index_select, embedding and Tensor::index; `op` names it in IndexErrors.
Tensor taken(const Tensor& source, int axis, const Tensor& index, const char* op);
// `destination` with `src` stored where `index` points along `axis` (reduced into the element
// where `reduce` is set): the one Scatter behind scatter, scatter_reduce and index_put, checked
// by the caller; `op` names it in IndexErrors.
Tensor scattered(const Tensor& destination, int axis, const Tensor& index, const Tensor& src,
                 std::optional<ReduceOp> reduce, const char* op);

// Graph builders.
UOpRef cast_node(const UOpRef& node, DType dtype);
UOpRef alu_node(Op op, DType dtype, std::vector<UOpRef> srcs);
// const_node, reduce_node, movement_node, reshape_node and expand_node: core/graph_build.h.
// Reshapes (prepending 1s) and expands to a broadcast shape.
UOpRef broadcast_node(const UOpRef& node, const Shape& shape);
UOpRef broadcast_node(const UOpRef& node, const SymShape& shape);
// The symbolic form of `shape` (the broadcast of the operands' values): each size is an operand's
// symbolic size where one has that value there, else the number. Null where no operand is
// symbolic. Two variables of one name with different bounds are a ShapeError naming `op`.
std::shared_ptr<const SymShape> broadcast_sym_shape(const Shape& shape,
                                                    const std::vector<UOpRef>& operands,
                                                    const char* op);

// A float-only math function of one operand (exp, asin, ...): integer and bool inputs compute
// in float32.
Tensor float_unary(Op op, const Tensor& tensor);
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

// Stores to computed addresses: scatter, scatter_add and scatter_reduce. Each is built of Scatter
// nodes (core/uop.h: one, or an identity's then the values' without x's own values, and a
// count's for a mean), whose kernel gives each line along the axis to one work item that writes it
// in index order (codegen/lower_scatter.cpp): deterministic on every device, no atomics, and the
// work is the output plus the values written.

#include <kiln/error.h>
#include <kiln/tensor.h>

#include "codegen/linear_builder.h"
#include "runtime/autograd.h"
#include "runtime/tensor_internal.h"

namespace kiln {

namespace {

// reduce names as PyTorch's scatter_reduce takes them; `mean` is a sum divided afterwards.
ReduceOp parse_reduce(const std::string& name, const Tensor& self, bool& mean, const char* op) {
  mean = name == "mean";
  if (name == "sum" || mean) return ReduceOp::Sum;
  if (name == "prod") return ReduceOp::Prod;
  if (name == "amax") return ReduceOp::Max;
  if (name == "amin") return ReduceOp::Min;
  throw ValueError(std::string("[") + op +
                   "] reduce must be \"sum\", \"prod\", \"mean\", \"amax\" or \"amin\", got \"" +
                   name + "\" for " + describe(self));
}

// The checks every scatter shares: devices, the index's dtype, and the three shapes.
void check_scatter(const Tensor& self, int axis, const Tensor& index, const Tensor& src,
                   const char* op) {
  check_same_device(self, index, op);
  check_same_device(self, src, op);
  if (!index.dtype().is_int())
    throw DTypeError(std::string("[") + op + "] the index must be an integer tensor, got " +
                     describe(index) + " for " + describe(self));
  if (index.ndim() != self.ndim() || src.ndim() != self.ndim())
    throw ShapeError(std::string("[") + op + "] the index " + describe(index) + " and src " +
                     describe(src) + " need the " + std::to_string(self.ndim()) +
                     " dimensions of " + describe(self));
  for (int other = 0; other < self.ndim(); ++other) {
    const int64_t extent = index.shape()[other];
    if (extent > src.shape()[other])
      throw ShapeError(std::string("[") + op + "] the index " + describe(index) +
                       " is larger than src " + describe(src) + " along dimension " +
                       std::to_string(other) + " (src is read at the index's positions)");
    if (other != axis && extent > self.shape()[other])
      throw ShapeError(std::string("[") + op + "] the index " + describe(index) +
                       " is larger than " + describe(self) + " along dimension " +
                       std::to_string(other) + " (only the scattered axis " + std::to_string(axis) +
                       " may differ)");
  }
}

// What a floor division by a positive count gives, where integer `/` truncates.
Tensor floor_divided(const Tensor& sum, const Tensor& count) {
  const Tensor quotient = sum / count;
  return where((sum % count) < 0, quotient - 1, quotient);
}

}  // namespace

Tensor scattered(const Tensor& destination, int axis, const Tensor& index, const Tensor& src,
                 std::optional<ReduceOp> reduce, const char* op) {
  const DimShape own = destination.dims(), index_dims = index.dims();
  bool symbolic = false;
  std::vector<std::pair<Dim, Dim>> extent;
  for (size_t other = 0; other < own.size(); ++other) {
    extent.emplace_back(0, index_dims[other]);
    symbolic |= own[other].is_symbolic() || index_dims[other].is_symbolic();
  }
  if (!symbolic && index.numel() == 0) return destination;
  const Dim& size = own[static_cast<size_t>(axis)];
  if (!size.is_symbolic() && size.value() == 0)
    throw IndexError(std::string("[") + op + "] every index is out of range: axis " +
                     std::to_string(axis) + " of " + describe(destination) +
                     " is empty, and the index " + describe(index) + " is not");
  // Narrow integers are read as int32, which holds every value they take.
  Tensor position = index;
  if (index.dtype().itemsize() < 4) position = index.cast(dtypes::int32);
  const Tensor values = src.shrink(extent).cast(destination.dtype());
  UOpRef node = UOp::make(Op::Scatter, destination.dtype(),
                          {node_of(destination), node_of(position), node_of(values)},
                          ScatterArg{axis, reduce, op}, destination.shape());
  // A stored value's gradient is read back from where it went (for a replacing store, every
  // value pointed at one place gets it, as PyTorch's); the destination keeps its gradient where
  // it was added to and loses it where it was replaced.
  return recorded(
      make_tensor(std::move(node), destination.device()), op,
      [axis, position, reduce, op](const Tensor& gradient) {
        if (reduce && *reduce != ReduceOp::Sum) {
          throw ValueError(std::string("[backward] the gradient of ") + op + " with \"" +
                           reduce_op_name(*reduce) +
                           "\" is not implemented yet; only replacing stores and sums "
                           "(scatter, scatter_add, index_put, scatter_reduce \"sum\" and "
                           "\"mean\") take gradients");
        }
        const Tensor kept = reduce ? gradient : gradient.scatter(axis, position, 0.0);
        return std::vector<Tensor>{kept, gradient.gather(axis, position)};
      },
      destination, values);
}

namespace {

// scatter_add and scatter_reduce, named `op_name` in errors.
Tensor reduce_scattered(const Tensor& self, int64_t axis, const Tensor& index, const Tensor& src,
                        const std::string& reduce, bool include_self, const char* op_name) {
  const int dim = normalize_axis(axis, self.ndim(), op_name);
  bool mean = false;
  const ReduceOp op = parse_reduce(reduce, self, mean, op_name);
  check_scatter(self, dim, index, src, op_name);
  if (self.dtype() == dtypes::bool_ && op != ReduceOp::Max && op != ReduceOp::Min)
    throw DTypeError(std::string("[") + op_name + "] \"" + reduce + "\" does not apply to " +
                     describe(self) + ": bool takes \"amax\" (any) or \"amin\" (all)");
  // Without x's own value, each element an index points at first takes the reduction's
  // identity (as PyTorch's fill: a lone -0 summed gives +0), then the values combine into it.
  Tensor start = self;
  if (!include_self) {
    const UOpRef identity =
        UOp::make_symbolic(Op::Const, self.dtype(), {}, reduce_identity(op, self.dtype()),
                           node_of(index)->sym_shape());
    start =
        scattered(self, dim, index, make_tensor(identity, self.device()), std::nullopt, op_name);
  }
  const Tensor reduced = scattered(start, dim, index, src, op, op_name);
  if (!mean) return reduced;
  // The mean divides the sum by the values that met in each element (and the element's own,
  // where it takes part), counted in a wide type; integers divide rounding down, as PyTorch's.
  const DType wide = self.dtype().is_float()
                         ? (self.dtype() == dtypes::float64 ? dtypes::float64 : dtypes::float32)
                     : self.dtype() == dtypes::uint64 ? dtypes::uint64
                                                      : dtypes::int64;
  const Tensor start_count = Tensor::full(self.dims(), include_self ? 1 : 0, wide, self.device());
  const Tensor ones = Tensor::full(index.dims(), 1, wide, self.device());
  Tensor count = scattered(start_count, dim, index, ones, ReduceOp::Sum, op_name);
  count = where(count == 0, 1.0, count);
  const Tensor sum = reduced.cast(wide);
  const Tensor quotient = wide.is_signed_int() ? floor_divided(sum, count) : sum / count;
  return quotient.cast(self.dtype());
}

}  // namespace

Tensor Tensor::scatter(int64_t axis, const Tensor& index, const Tensor& src) const {
  const int dim = normalize_axis(axis, ndim(), "scatter");
  check_scatter(*this, dim, index, src, "scatter");
  return scattered(*this, dim, index, src, std::nullopt, "scatter");
}

Tensor Tensor::scatter(int64_t axis, const Tensor& index, double value) const {
  const int dim = normalize_axis(axis, ndim(), "scatter");
  const Tensor src = Tensor::full(index.dims(), value, dtype(), device());
  check_scatter(*this, dim, index, src, "scatter");
  return scattered(*this, dim, index, src, std::nullopt, "scatter");
}

Tensor Tensor::scatter_add(int64_t axis, const Tensor& index, const Tensor& src) const {
  return reduce_scattered(*this, axis, index, src, "sum", true, "scatter_add");
}

Tensor Tensor::scatter_reduce(int64_t axis, const Tensor& index, const Tensor& src,
                              const std::string& reduce, bool include_self) const {
  return reduce_scattered(*this, axis, index, src, reduce, include_self, "scatter_reduce");
}

}  // namespace kiln

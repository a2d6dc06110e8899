// Reductions and the ops composed from them: mean, var, softmax, argmax, cumsum, matmul.

#include <algorithm>
#include <cmath>
#include <numeric>

#include "runtime/autograd.h"
#include "runtime/tensor_internal.h"

namespace kiln {
namespace {

std::vector<int> reduce_axes(const Tensor& tensor, const std::vector<int64_t>& axes,
                             const char* op) {
  if (axes.empty()) {
    std::vector<int> all(tensor.ndim());
    std::iota(all.begin(), all.end(), 0);
    return all;
  }
  return normalize_axes(axes, tensor.ndim(), op);
}

Shape reduced_shape(const Shape& shape, const std::vector<int>& axes, bool keepdim) {
  Shape result;
  for (size_t dim = 0; dim < shape.size(); ++dim) {
    const bool reduced = std::find(axes.begin(), axes.end(), static_cast<int>(dim)) != axes.end();
    if (!reduced) {
      result.push_back(shape[dim]);
    } else if (keepdim) {
      result.push_back(1);
    }
  }
  return result;
}

// The reduced node with its reduced axes dropped unless keepdim (symbolic sizes kept).
UOpRef drop_reduced_axes(const UOpRef& reduced, const std::vector<int>& axes, bool keepdim) {
  if (!reduced->is_symbolic())
    return reshape_node(reduced, reduced_shape(reduced->shape(), axes, keepdim));
  if (keepdim) return reduced;
  const SymShape sizes = reduced->sym_shape();
  SymShape kept;
  for (size_t dim = 0; dim < sizes.size(); ++dim) {
    if (std::find(axes.begin(), axes.end(), static_cast<int>(dim)) == axes.end())
      kept.push_back(sizes[dim]);
  }
  return reshape_node(reduced, kept);
}

Tensor reduce(const Tensor& tensor, ReduceOp op, const std::vector<int>& axes, bool keepdim,
              DType dtype);

// The gradient of a reduction of `tensor` (computed in `dtype`) over `axes`.
Tensor reduce_gradient(const Tensor& tensor, ReduceOp op, const std::vector<int>& axes, DType dtype,
                       const Tensor& gradient) {
  DimShape kept = tensor.dims();
  for (int axis : axes) kept[static_cast<size_t>(axis)] = Dim(1);
  const Tensor spread = gradient.reshape(kept);
  const std::vector<int64_t> axes64(axes.begin(), axes.end());
  const Tensor x = tensor.cast(dtype);
  switch (op) {
    case ReduceOp::Sum:
      return spread.expand(tensor.dims()).cast(tensor.dtype());
    case ReduceOp::Max:
    case ReduceOp::Min: {
      // The elements equal to the extreme share its gradient (as PyTorch's amax and amin).
      const Tensor extreme = reduce(x, op, axes, /*keepdim=*/true, dtype);
      const Tensor hits = (x == extreme).cast(dtype);
      return (spread * hits / hits.sum(axes64, true)).cast(tensor.dtype());
    }
    case ReduceOp::Prod: {
      // The product of the other elements, without dividing by a zero: with no zero it is
      // product / x; with one, the zero's is the product of the rest and the others' 0; with
      // more, every one is 0.
      const Tensor zero = x == 0.0;
      const Tensor rest = reduce(where(zero, 1.0, x), ReduceOp::Prod, axes, true, dtype);
      const Tensor zeros = reduce(zero.cast(dtype), ReduceOp::Sum, axes, true, dtype);
      const Tensor others = where(zeros == 0.0, rest / x, where(zero & (zeros == 1.0), rest, 0.0));
      return (spread * others).cast(tensor.dtype());
    }
  }
  return Tensor();
}

// Reduces in `dtype`, then drops the reduced axes unless keepdim.
Tensor reduce(const Tensor& tensor, ReduceOp op, const std::vector<int>& axes, bool keepdim,
              DType dtype) {
  const UOpRef node = reduce_node(cast_node(node_of(tensor), dtype), op, axes);
  return recorded(
      make_tensor(drop_reduced_axes(node, axes, keepdim), tensor.device()), reduce_op_name(op),
      [tensor, op, axes, dtype](const Tensor& gradient) {
        return std::vector<Tensor>{reduce_gradient(tensor, op, axes, dtype, gradient)};
      },
      tensor);
}

int64_t count_of(const Tensor& tensor, const std::vector<int>& axes) {
  int64_t count = 1;
  for (int axis : axes) count *= tensor.shape()[axis];
  return count;
}

bool any_symbolic(const Tensor& tensor, const std::vector<int>& axes) {
  const UOpRef node = node_of(tensor);
  if (!node->is_symbolic()) return false;
  const SymShape sizes = node->sym_shape();
  return std::any_of(axes.begin(), axes.end(),
                     [&](int axis) { return !sizes[static_cast<size_t>(axis)].is_const(); });
}

// The element count of `axes` as a tensor the kernel computes (a sum of ones): where a size is a
// variable, a number would make the kernel hold one value of it.
Tensor symbolic_count(const Tensor& tensor, const std::vector<int>& axes, bool keepdim,
                      DType dtype) {
  const Tensor ones = make_tensor(const_like(1, dtype, node_of(tensor)), tensor.device());
  return reduce(ones, ReduceOp::Sum, axes, keepdim, dtype);
}

Tensor check_not_empty(const Tensor& tensor, const std::vector<int>& axes, const char* op) {
  for (int axis : axes) {
    if (tensor.shape()[axis] == 0) {
      throw ShapeError(std::string("[") + op + "] cannot reduce over empty axis " +
                       std::to_string(axis) + " of " + describe(tensor) +
                       ": the result has no identity");
    }
  }
  return tensor;
}

// Index of the first element along `axis` that `matches` (bool, same shape as `tensor`).
Tensor first_index(const Tensor& matches, int axis, bool keepdim) {
  if (any_symbolic(matches, {axis})) {
    // The least index that matches, the axis' size where none does.
    const Tensor size = symbolic_count(matches, {axis}, true, dtypes::int32);
    return where(matches, index_along(matches, axis), size).min({axis}, keepdim);
  }
  const int64_t size = matches.shape()[axis];
  Shape index_shape(matches.ndim(), 1);
  index_shape[axis] = size;
  // size - i is largest for the first match; 0 where nothing matches.
  const Tensor countdown = (Tensor::arange(size, matches.device()) * -1 + static_cast<double>(size))
                               .reshape(index_shape);
  const Tensor candidates = where(matches, countdown, 0.0);
  return (candidates.max({axis}, keepdim) * -1 + static_cast<double>(size)).cast(dtypes::int32);
}

}  // namespace

DType accumulate_dtype(DType dtype) {
  if (dtype.is_bool() || dtype.is_signed_int()) return dtypes::int64;
  if (dtype.is_unsigned()) return dtypes::uint64;
  return dtype;
}

Tensor index_along(const Tensor& tensor, int axis) {
  const Sym size = node_of(tensor)->sym_shape()[static_cast<size_t>(axis)];
  const Tensor index = make_tensor(
      UOp::make_symbolic(Op::Iota, dtypes::int32, {}, {}, SymShape{size}), tensor.device());
  DimShape shape(static_cast<size_t>(tensor.ndim()), Dim(1));
  shape[static_cast<size_t>(axis)] = Dim(size);
  return index.reshape(shape);
}

PrefixRows prefix_rows(const Tensor& moved) {
  DimShape expanded = moved.dims();
  expanded.insert(expanded.end() - 1, expanded.back());
  PrefixRows result;
  result.rows = moved.unsqueeze(-2).expand(expanded);
  const int last = static_cast<int>(result.rows.ndim()) - 1;
  result.prefix = index_along(result.rows, last) <= index_along(result.rows, last - 1);
  return result;
}

Tensor Tensor::sum(std::vector<int64_t> axes, bool keepdim) const {
  const std::vector<int> normalized = reduce_axes(*this, axes, "sum");
  return reduce(*this, ReduceOp::Sum, normalized, keepdim, accumulate_dtype(dtype()));
}

Tensor Tensor::prod(std::vector<int64_t> axes, bool keepdim) const {
  const std::vector<int> normalized = reduce_axes(*this, axes, "prod");
  return reduce(*this, ReduceOp::Prod, normalized, keepdim, accumulate_dtype(dtype()));
}

// any and all are the maximum and minimum of x != 0 in bool, whose identities (false, true) are
// the answers over no elements; bool keeps them on devices without 64-bit integers.
Tensor Tensor::any(std::vector<int64_t> axes, bool keepdim) const {
  const std::vector<int> normalized = reduce_axes(*this, axes, "any");
  return reduce(*this != 0.0, ReduceOp::Max, normalized, keepdim, dtypes::bool_);
}

Tensor Tensor::all(std::vector<int64_t> axes, bool keepdim) const {
  const std::vector<int> normalized = reduce_axes(*this, axes, "all");
  return reduce(*this != 0.0, ReduceOp::Min, normalized, keepdim, dtypes::bool_);
}

Tensor Tensor::max(std::vector<int64_t> axes, bool keepdim) const {
  const std::vector<int> normalized = reduce_axes(*this, axes, "max");
  check_not_empty(*this, normalized, "max");
  return reduce(*this, ReduceOp::Max, normalized, keepdim, dtype());
}

Tensor Tensor::min(std::vector<int64_t> axes, bool keepdim) const {
  const std::vector<int> normalized = reduce_axes(*this, axes, "min");
  check_not_empty(*this, normalized, "min");
  return reduce(*this, ReduceOp::Min, normalized, keepdim, dtype());
}

Tensor Tensor::mean(std::vector<int64_t> axes, bool keepdim) const {
  const std::vector<int> normalized = reduce_axes(*this, axes, "mean");
  const DType dtype = float_dtype_for(this->dtype());
  const Tensor total = reduce(*this, ReduceOp::Sum, normalized, keepdim, dtype);
  if (any_symbolic(*this, normalized))
    return total / symbolic_count(*this, normalized, keepdim, dtype);
  return total / static_cast<double>(count_of(*this, normalized));
}

Tensor Tensor::var(std::vector<int64_t> axes, bool keepdim, int64_t correction) const {
  const std::vector<int> normalized = reduce_axes(*this, axes, "var");
  const std::vector<int64_t> axes64(normalized.begin(), normalized.end());
  const Tensor x = cast(float_dtype_for(dtype()));
  const Tensor centered = x - x.mean(axes64, true);
  const Tensor squares = (centered * centered).sum(axes64, keepdim);
  if (any_symbolic(*this, normalized)) {
    const Tensor divisor =
        symbolic_count(*this, normalized, keepdim, x.dtype()) - static_cast<double>(correction);
    return squares / where(divisor > 0.0, divisor, 0.0);
  }
  const double divisor = static_cast<double>(count_of(*this, normalized) - correction);
  return squares / std::max(divisor, 0.0);
}

Tensor Tensor::std(std::vector<int64_t> axes, bool keepdim, int64_t correction) const {
  return var(std::move(axes), keepdim, correction).sqrt();
}

Tensor Tensor::argmax(int64_t axis, bool keepdim) const {
  const int dim = normalize_axis(axis, ndim(), "argmax");
  check_not_empty(*this, {dim}, "argmax");
  const Tensor peak = max({dim}, true);
  // NaN is the maximum, as in PyTorch: match NaN where the peak is NaN.
  Tensor matches = *this == peak;
  if (dtype().is_float()) matches = matches | ((*this != *this) & (peak != peak));
  return first_index(matches, dim, keepdim);
}

Tensor Tensor::argmin(int64_t axis, bool keepdim) const {
  const int dim = normalize_axis(axis, ndim(), "argmin");
  check_not_empty(*this, {dim}, "argmin");
  const Tensor low = min({dim}, true);
  Tensor matches = *this == low;
  if (dtype().is_float()) matches = matches | ((*this != *this) & (low != low));
  return first_index(matches, dim, keepdim);
}

// softmax, log_softmax and logsumexp record their own rules: the shift by the maximum, which
// their values do not depend on, would otherwise send a gradient through max() that cancels
// only up to rounding.
Tensor Tensor::softmax(int64_t axis) const {
  const int dim = normalize_axis(axis, ndim(), "softmax");
  Tensor result;
  {
    NoGradGuard recorded_below;
    const Tensor x = cast(float_dtype_for(dtype()));
    const Tensor shifted = x - x.max({dim}, true);
    const Tensor exponent = shifted.exp();
    result = exponent / exponent.sum({dim}, true);
  }
  const Tensor& input = *this;
  return recorded(
      std::move(result), "softmax",
      [input, dim](const Tensor& gradient) {
        const Tensor value = input.softmax(dim);  // the forward pass's nodes again
        const Tensor inner = (gradient * value).sum({dim}, true);
        return std::vector<Tensor>{(value * (gradient - inner)).cast(input.dtype())};
      },
      input);
}

Tensor Tensor::log_softmax(int64_t axis) const {
  const int dim = normalize_axis(axis, ndim(), "log_softmax");
  Tensor result;
  {
    NoGradGuard recorded_below;
    const Tensor x = cast(float_dtype_for(dtype()));
    const Tensor shifted = x - x.max({dim}, true);
    result = shifted - shifted.exp().sum({dim}, true).log();
  }
  const Tensor& input = *this;
  return recorded(
      std::move(result), "log_softmax",
      [input, dim](const Tensor& gradient) {
        const Tensor total = gradient.sum({dim}, true);
        return std::vector<Tensor>{(gradient - input.softmax(dim) * total).cast(input.dtype())};
      },
      input);
}

Tensor Tensor::logsumexp(int64_t axis, bool keepdim) const {
  const int dim = normalize_axis(axis, ndim(), "logsumexp");
  Tensor result;
  {
    NoGradGuard recorded_below;
    const Tensor x = cast(float_dtype_for(dtype()));
    const Tensor peak = x.max({dim}, true);
    // An infinite peak would make x - peak NaN; shifting by 0 there gives the right inf.
    const Tensor shift = where(peak.abs() == INFINITY, 0.0, peak);
    result = (x - shift).exp().sum({dim}, true).log() + shift;
    if (!keepdim) result = result.squeeze(dim);
  }
  const Tensor& input = *this;
  return recorded(
      std::move(result), "logsumexp",
      [input, dim, keepdim](const Tensor& gradient) {
        const Tensor spread = keepdim ? gradient : gradient.unsqueeze(dim);
        return std::vector<Tensor>{(spread * input.softmax(dim)).cast(input.dtype())};
      },
      input);
}

Tensor Tensor::cumsum(int64_t axis) const {
  const int dim = normalize_axis(axis, ndim(), "cumsum");
  // out[..., i] = sum_j x[..., j] * (j <= i): a masked sum over an expanded copy, its sizes and
  // indices symbolic where the axis is.
  const PrefixRows scan = prefix_rows(transpose(dim, -1));
  const Tensor result =
      where(scan.prefix, scan.rows.cast(accumulate_dtype(dtype())), 0.0).sum({-1});
  return result.transpose(dim, -1);
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  check_same_device(a, b, "matmul");
  if (a.ndim() == 0 || b.ndim() == 0) {
    throw ShapeError("[matmul] operands must have at least one dimension, got " + describe(a) +
                     " and " + describe(b));
  }
  const Tensor left = a.ndim() == 1 ? a.unsqueeze(0) : a;
  const Tensor right = b.ndim() == 1 ? b.unsqueeze(1) : b;
  const int64_t inner = left.shape().back();
  if (right.shape()[right.ndim() - 2] != inner) {
    throw ShapeError("[matmul] inner dimensions differ: " + describe(a) + " @ " + describe(b) +
                     " (" + std::to_string(inner) + " vs " +
                     std::to_string(right.shape()[right.ndim() - 2]) + ")");
  }
  const Shape left_batch(left.shape().begin(), left.shape().end() - 2);
  const Shape right_batch(right.shape().begin(), right.shape().end() - 2);
  broadcast_shapes(left_batch, right_batch, "matmul");
  const DType dtype = promote_types(a.dtype(), b.dtype());
  Tensor product;
  {
    NoGradGuard recorded_below;  // matmul's own rule, not the multiply's and the sum's
    product = built_from_ops(
        "matmul", [&] { return describe(a) + " @ " + describe(b); },
        [&] {
          // (..., m, k, 1) * (..., 1, k, n) summed over k.
          const Tensor products = left.cast(dtype).unsqueeze(-1) * right.cast(dtype).unsqueeze(-3);
          const int last = static_cast<int>(products.ndim()) - 2;
          Tensor result =
              make_tensor(drop_reduced_axes(reduce_node(node_of(products), ReduceOp::Sum, {last}),
                                            {last}, false),
                          a.device());
          if (a.ndim() == 1) result = result.squeeze(-2);
          if (b.ndim() == 1) result = result.squeeze(-1);
          return result;
        });
  }
  return recorded(
      std::move(product), "matmul",
      [a, b, dtype](const Tensor& gradient) {
        const Tensor left = (a.ndim() == 1 ? a.unsqueeze(0) : a).cast(dtype);
        const Tensor right = (b.ndim() == 1 ? b.unsqueeze(1) : b).cast(dtype);
        // The forward pass's squeezes undone, in reverse order: (..., m, n).
        Tensor spread = gradient;
        if (b.ndim() == 1) spread = spread.unsqueeze(-1);
        if (a.ndim() == 1) spread = spread.unsqueeze(-2);
        const Tensor to_left = gradient_for(left, matmul(spread, right.transpose(-1, -2)));
        const Tensor to_right = gradient_for(right, matmul(left.transpose(-1, -2), spread));
        return std::vector<Tensor>{to_left.reshape(a.dims()).cast(a.dtype()),
                                   to_right.reshape(b.dims()).cast(b.dtype())};
      },
      a, b);
}

Tensor Tensor::matmul(const Tensor& other) const {
  return kiln::matmul(*this, other);
}

}  // namespace kiln

// cumprod, cummax, cummin and logcumsumexp (kiln/sort.h): as cumsum, a reduction over an (n, n)
// expansion of the axis, masked to each position's prefix.

#include <kiln/sort.h>

#include <cmath>
#include <string>

#include "runtime/tensor_internal.h"

namespace kiln {
namespace {

// x with `axis` moved last and expanded to (..., n, n): element [..., i, j] is x[..., j], and
// `prefix` is true where j <= i.
struct Prefixes {
  Tensor rows, prefix;
  int dim = 0;
  Tensor result(const Tensor& moved_result) const {
    const int last = static_cast<int>(moved_result.ndim()) - 1;
    return dim == last ? moved_result : moved_result.transpose(dim, last);
  }
};

Prefixes prefixes(const Tensor& x, int64_t axis, const char* op) {
  check_defined(x, op);
  if (x.ndim() == 0)
    throw ShapeError(std::string("[") + op + "] needs at least one axis, got " + describe(x));
  Prefixes result;
  result.dim = normalize_axis(axis, x.ndim(), op);
  if (x.dims()[static_cast<size_t>(result.dim)].is_symbolic())
    throw ShapeError(std::string("[") + op + "] axis " + std::to_string(axis) + " of " +
                     describe(x) + " must have a fixed size");
  const int last = static_cast<int>(x.ndim()) - 1;
  const Tensor moved = result.dim == last ? x : x.transpose(result.dim, last);
  const int64_t size = moved.shape().back();
  DimShape expanded = moved.dims();
  expanded.insert(expanded.end() - 1, Dim(size));
  result.rows = moved.unsqueeze(-2).expand(expanded);
  const Tensor index = Tensor::arange(0, size, 1, dtypes::int64, x.device());
  result.prefix = index.reshape({1, size}) <= index.reshape({size, 1});
  return result;
}

std::pair<Tensor, Tensor> running_extreme(const Tensor& x, int64_t axis, bool maximum,
                                          const char* op) {
  const Prefixes scan = prefixes(x, axis, op);
  const int64_t size = scan.rows.shape().back();
  // An empty axis has no extreme to find (and max over it no identity): nothing to compute.
  if (size == 0) return {x, x.cast(dtypes::int64)};
  // Outside the prefix, the first element stands in: it is in every prefix, so the extreme
  // is unchanged, with no identity to choose per dtype.
  const Tensor first = scan.rows.slice(-1, 0, 1);
  const Tensor masked = where(scan.prefix, scan.rows, first);
  const Tensor values = maximum ? masked.max({-1}) : masked.min({-1});
  // The last position holding it: keyed by position, a NaN's above any other.
  const Tensor column = Tensor::arange(0, size, 1, dtypes::int64, x.device());
  const Tensor holds = scan.prefix & (scan.rows == values.unsqueeze(-1));
  Tensor keys = where(holds, column, -1.0);
  if (x.dtype().is_float())
    keys = where(scan.prefix & scan.rows.isnan(), column + static_cast<double>(size), keys);
  const Tensor key = keys.max({-1});
  const Tensor positions =
      where(key >= static_cast<double>(size), key - static_cast<double>(size), key);
  // The value at that position itself: the extreme with its own sign of zero (0.0 after -0.0
  // is PyTorch's running maximum, where a max of the two may give either).
  const Tensor moved = scan.rows.select(-2, 0);
  return {scan.result(moved.gather(-1, positions)), scan.result(positions)};
}

}  // namespace

Tensor cumprod(const Tensor& x, int64_t axis) {
  const Prefixes scan = prefixes(x, axis, "cumprod");
  DType dtype = x.dtype();
  if (dtype.is_bool() || dtype.is_signed_int())
    dtype = dtypes::int64;
  else if (dtype.is_unsigned())
    dtype = dtypes::uint64;
  return scan.result(where(scan.prefix, scan.rows.cast(dtype), 1.0).prod({-1}));
}

std::pair<Tensor, Tensor> cummax(const Tensor& x, int64_t axis) {
  return running_extreme(x, axis, true, "cummax");
}

std::pair<Tensor, Tensor> cummin(const Tensor& x, int64_t axis) {
  return running_extreme(x, axis, false, "cummin");
}

Tensor logcumsumexp(const Tensor& x, int64_t axis) {
  if (x.defined() && !x.dtype().is_float())
    throw DTypeError("[logcumsumexp] needs a float tensor, got " + describe(x) +
                     "; cast it first, e.g. x.cast(dtypes::float32)");
  const Prefixes scan = prefixes(x, axis, "logcumsumexp");
  if (scan.rows.shape().back() == 0) return x;  // logsumexp over no terms has no peak to shift by
  return scan.result(where(scan.prefix, scan.rows, -INFINITY).logsumexp(-1));
}

}  // namespace kiln

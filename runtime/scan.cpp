// cumprod, cummax, cummin and logcumsumexp (kiln/sort.h): as cumsum, a reduction over an (n, n)
// expansion of the axis, masked to each position's prefix (prefix_rows).

#include <kiln/sort.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "runtime/tensor_internal.h"

namespace kiln {
namespace {

// x's scanned axis moved last and expanded into prefixes; `result` moves it back.
struct Scan {
  Tensor line, rows, prefix;  // line: x with the axis last
  int dim = 0;
  Tensor result(const Tensor& moved_result) const {
    const int last = static_cast<int>(moved_result.ndim()) - 1;
    return dim == last ? moved_result : moved_result.transpose(dim, last);
  }
};

Scan scan_of(const Tensor& x, int64_t axis, const char* op) {
  check_defined(x, op);
  if (x.ndim() == 0)
    throw ShapeError(std::string("[") + op + "] needs at least one axis, got " + describe(x));
  Scan scan;
  scan.dim = normalize_axis(axis, x.ndim(), op);
  const int last = static_cast<int>(x.ndim()) - 1;
  scan.line = scan.dim == last ? x : x.transpose(scan.dim, last);
  const PrefixRows prefixes = prefix_rows(scan.line);
  scan.rows = prefixes.rows;
  scan.prefix = prefixes.prefix;
  return scan;
}

std::pair<Tensor, Tensor> running_extreme(const Tensor& x, int64_t axis, bool maximum,
                                          const char* op) {
  const Scan scan = scan_of(x, axis, op);
  // An empty axis has no extreme to find (and max over it no identity): nothing to compute.
  if (scan.rows.shape().back() == 0) return {x, x.cast(dtypes::int64)};
  // Outside the prefix, the first element stands in: it is in every prefix, so the extreme
  // is unchanged, with no identity to choose per dtype.
  std::vector<std::pair<Dim, Dim>> first_column;
  for (const Dim& size : scan.rows.dims()) first_column.emplace_back(Dim(0), size);
  first_column.back().second = Dim(1);
  const Tensor first = scan.rows.shrink(first_column);
  const Tensor masked = where(scan.prefix, scan.rows, first);
  const Tensor values = maximum ? masked.max({-1}) : masked.min({-1});
  // The last position holding it: keyed by position, a NaN's above any other (positions are
  // below 2^60, kiln's largest size).
  constexpr double kNanKey = 4611686018427387904.0;  // 2^62
  const int last = static_cast<int>(scan.rows.ndim()) - 1;
  const Tensor column = index_along(scan.rows, last).cast(dtypes::int64);
  const Tensor holds = scan.prefix & (scan.rows == values.unsqueeze(-1));
  Tensor keys = where(holds, column, -1.0);
  if (x.dtype().is_float()) keys = where(scan.prefix & scan.rows.isnan(), column + kNanKey, keys);
  const Tensor key = keys.max({-1});
  const Tensor positions = where(key >= kNanKey, key - kNanKey, key);
  // The value at that position itself: the extreme with its own sign of zero (0.0 after -0.0
  // is PyTorch's running maximum, where a max of the two may give either).
  return {scan.result(scan.line.gather(-1, positions)), scan.result(positions)};
}

}  // namespace

Tensor cumprod(const Tensor& x, int64_t axis) {
  const Scan scan = scan_of(x, axis, "cumprod");
  const DType dtype = accumulate_dtype(x.dtype());
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
  const Scan scan = scan_of(x, axis, "logcumsumexp");
  if (scan.rows.shape().back() == 0) return x;  // logsumexp over no terms has no peak to shift by
  return scan.result(where(scan.prefix, scan.rows, -INFINITY).logsumexp(-1));
}

}  // namespace kiln

// sort, argsort and topk (kiln/sort.h): a bitonic network over the axis padded to a power of
// two. Each element carries its position, which breaks ties (stability) and marks the padding
// (positions past the axis), which sorts after every element in either direction.

#include <kiln/sort.h>

#include <string>
#include <vector>

#include "runtime/tensor_internal.h"

namespace kiln {
namespace {

int sort_axis(const Tensor& x, int64_t axis, const char* op) {
  check_defined(x, op);
  const int dim = normalize_axis(axis, x.ndim(), op);
  if (x.dims()[static_cast<size_t>(dim)].is_symbolic())
    throw ShapeError(std::string("[") + op + "] axis " + std::to_string(axis) + " of " +
                     describe(x) + " must have a fixed size");
  return dim;
}

// Whether element a comes before element b in the sorted order (keys, then positions).
Tensor comes_before(const Tensor& key_a, const Tensor& at_a, const Tensor& key_b,
                    const Tensor& at_b, int64_t length, bool descending) {
  Tensor key_first = descending ? key_a > key_b : key_a < key_b;
  Tensor key_equal = key_a == key_b;
  if (key_a.dtype().is_float()) {
    // NaN is the largest value, and equal to itself.
    const Tensor nan_a = key_a.isnan(), nan_b = key_b.isnan();
    key_first = key_first | (descending ? nan_a & ~nan_b : ~nan_a & nan_b);
    key_equal = key_equal | (nan_a & nan_b);
  }
  const Tensor real_a = at_a < static_cast<double>(length);
  const Tensor real_b = at_b < static_cast<double>(length);
  const Tensor by_position = at_a < at_b;
  // Two real elements by key, ties by position; the padding after them, in position order.
  return where(
      real_a & real_b, key_first | (key_equal & by_position),
      where(real_a, Tensor::full({}, 1, dtypes::bool_, key_a.device()), ~real_b & by_position));
}

// (values, positions) of x (..., n) sorted along its last axis.
std::pair<Tensor, Tensor> sort_last(const Tensor& x, bool descending) {
  const DimShape& dims = x.dims();
  const int64_t length = x.shape().back();
  const DimShape lead(dims.begin(), dims.end() - 1);
  auto with_lead = [&](std::vector<int64_t> tail) {
    DimShape shape = lead;
    for (int64_t size : tail) shape.emplace_back(size);
    return shape;
  };
  int64_t padded = 1;
  while (padded < length) padded *= 2;
  DimShape full = with_lead({padded});
  Tensor keys = x;
  if (padded > length) {
    std::vector<std::pair<Dim, Dim>> pads(dims.size(), {Dim(0), Dim(0)});
    pads.back() = {Dim(0), Dim(padded - length)};
    keys = x.pad(pads);
  }
  DimShape ones(lead.size(), Dim(1));
  ones.emplace_back(padded);
  Tensor positions =
      Tensor::arange(0, padded, 1, dtypes::int64, x.device()).reshape(ones).expand(full);
  // Each step pairs element t with t ^ half and keeps the one that belongs at t: the first of
  // the two in the order where t is the lower of the pair in a block of `block` sorted upward
  // (or the higher in one sorted downward), else the other. half and block are read from
  // buffers (Tensor::scalar), so every step after the first (which reads the input itself) runs
  // the same two compiled kernels.
  const Tensor self = positions;
  for (int64_t block = 2; block <= padded; block *= 2) {
    const Tensor block_bit = Tensor::scalar(static_cast<double>(block), dtypes::int64, x.device());
    for (int64_t half = block / 2; half >= 1; half /= 2) {
      const Tensor half_bit = Tensor::scalar(static_cast<double>(half), dtypes::int64, x.device());
      const Tensor partner = self ^ half_bit;
      const Tensor partner_key = keys.gather(-1, partner);
      const Tensor partner_at = positions.gather(-1, partner);
      const Tensor lower = (self & half_bit) == 0.0;
      const Tensor upward = (self & block_bit) == 0.0;
      const Tensor self_first =
          comes_before(keys, positions, partner_key, partner_at, length, descending);
      const Tensor take_partner = (lower == upward) ^ self_first;
      keys = where(take_partner, partner_key, keys).contiguous();
      positions = where(take_partner, partner_at, positions).contiguous();
    }
  }
  if (padded > length) {
    std::vector<std::pair<Dim, Dim>> kept;
    for (const Dim& size : lead) kept.emplace_back(Dim(0), size);
    kept.emplace_back(Dim(0), Dim(length));
    keys = keys.shrink(kept);
    positions = positions.shrink(kept);
  }
  return {keys, positions};
}

std::pair<Tensor, Tensor> sorted(const Tensor& x, int64_t axis, bool descending, const char* op) {
  if (x.ndim() == 0) {
    normalize_axis(axis, 1, op);  // 0 or -1, as for a vector
    const auto [values, positions] = sorted(x.reshape({1}), 0, descending, op);
    return {values.reshape(Shape{}), positions.reshape(Shape{})};
  }
  const int dim = sort_axis(x, axis, op);
  const int last = static_cast<int>(x.ndim()) - 1;
  const Tensor moved = dim == last ? x : x.transpose(dim, last);
  auto [values, positions] = sort_last(moved, descending);
  if (dim != last) {
    values = values.transpose(dim, last);
    positions = positions.transpose(dim, last);
  }
  return {values, positions};
}

}  // namespace

std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t axis, bool descending) {
  return sorted(x, axis, descending, "sort");
}

Tensor argsort(const Tensor& x, int64_t axis, bool descending) {
  return sorted(x, axis, descending, "argsort").second;
}

std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t axis, bool largest) {
  check_defined(x, "topk");
  const int dim = x.ndim() == 0 ? normalize_axis(axis, 1, "topk") : sort_axis(x, axis, "topk");
  const int64_t size = x.ndim() == 0 ? 1 : x.shape()[static_cast<size_t>(dim)];
  if (k < 0 || k > size)
    throw ValueError("[topk] k = " + std::to_string(k) + " for axis " + std::to_string(axis) +
                     " of " + describe(x) + ": it must lie in [0, " + std::to_string(size) + "]");
  auto [values, positions] = sorted(x, axis, largest, "topk");
  if (x.ndim() == 0) return {values, positions};
  return {values.slice(dim, 0, k), positions.slice(dim, 0, k)};
}

}  // namespace kiln

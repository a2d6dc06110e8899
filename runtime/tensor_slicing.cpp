// Slicing: Python's start:stop:step per axis, integer selection and Tensor::index, all views
// (a strided slice is a shrink, a pad and a reshape: no data moves until a kernel reads it).

#include <kiln/error.h>
#include <kiln/tensor.h>

#include <algorithm>
#include <limits>

#include "runtime/tensor_internal.h"

namespace kiln {

namespace {

// Python's slice.indices(size): the first position, and how many positions the slice takes.
struct SliceRange {
  int64_t first = 0;
  int64_t count = 0;
};

SliceRange resolve(std::optional<int64_t> start, std::optional<int64_t> stop, int64_t step,
                   int64_t size) {
  const int64_t lower = step > 0 ? 0 : -1, upper = step > 0 ? size : size - 1;
  auto bound = [&](std::optional<int64_t> given, int64_t omitted) {
    if (!given) return omitted;
    const int64_t position = *given < 0 ? *given + size : *given;
    return std::clamp(position, lower, upper);
  };
  const int64_t first = bound(start, step > 0 ? lower : upper);
  const int64_t last = bound(stop, step > 0 ? upper : lower);
  const int64_t span = step > 0 ? last - first : first - last;
  const int64_t stride = step > 0 ? step : -step;
  return {first, span <= 0 ? 0 : 1 + (span - 1) / stride};
}

}  // namespace

Tensor Tensor::slice(int64_t axis, std::optional<int64_t> start, std::optional<int64_t> stop,
                     int64_t step) const {
  const int dim = normalize_axis(axis, ndim(), "slice");
  if (step == 0 || step == std::numeric_limits<int64_t>::min())
    throw ShapeError("[slice] the step must be a nonzero integer above -2^63, got " +
                     std::to_string(step) + " (slicing " + describe(*this) + ")");
  const size_t at = static_cast<size_t>(dim);
  if (dims()[at].is_symbolic()) {
    if (!start && !stop && step == 1) return *this;
    throw ShapeError("[slice] axis " + std::to_string(dim) + " of " + describe(*this) +
                     " has a variable size: only its whole range (Slice()) can be taken; "
                     "use shrink with Dims for a part of it");
  }
  const int64_t size = shape()[at];
  const SliceRange range = resolve(start, stop, step, size);
  // A negative step reads the flipped axis forwards.
  const Tensor source = step > 0 ? *this : flip({dim});
  const int64_t first = step > 0 ? range.first : size - 1 - range.first;
  const int64_t stride = step > 0 ? step : -step;
  // Other axes whole, as given (a variable size stays one).
  std::vector<std::pair<Dim, Dim>> whole;
  for (const Dim& size_of : dims()) whole.emplace_back(Dim(0), size_of);
  auto along = [&](int64_t begin, int64_t end) {
    std::vector<std::pair<Dim, Dim>> ranges = whole;
    ranges[at] = {Dim(begin), Dim(end)};
    return ranges;
  };
  if (range.count == 0) return source.shrink(along(0, 0));
  const int64_t span = (range.count - 1) * stride + 1;
  const Tensor cut = source.shrink(along(first, first + span));
  if (stride == 1 || range.count == 1) return cut;
  // Every stride-th element: padded to count * stride, split into (count, stride), the first
  // of each.
  std::vector<std::pair<Dim, Dim>> pads(whole.size(), {Dim(0), Dim(0)});
  pads[at] = {Dim(0), Dim(stride - 1)};
  DimShape split = cut.dims();
  split[at] = Dim(range.count);
  split.insert(split.begin() + dim + 1, Dim(stride));
  std::vector<std::pair<Dim, Dim>> firsts;
  for (const Dim& size_of : split) firsts.emplace_back(Dim(0), size_of);
  firsts[at + 1] = {Dim(0), Dim(1)};
  DimShape result = cut.dims();
  result[at] = Dim(range.count);
  return cut.pad(pads).reshape(split).shrink(firsts).reshape(result);
}

Tensor Tensor::select(int64_t axis, int64_t index) const {
  const int dim = normalize_axis(axis, ndim(), "select");
  const size_t at = static_cast<size_t>(dim);
  const int64_t size = shape()[at];
  if (dims()[at].is_symbolic())
    throw ShapeError("[select] axis " + std::to_string(dim) + " of " + describe(*this) +
                     " has a variable size: select a position with shrink and reshape");
  if (index < -size || index >= size)
    throw IndexError("[select] index " + std::to_string(index) + " is out of range for axis " +
                     std::to_string(dim) + " of " + describe(*this) +
                     " (valid: " + std::to_string(-size) + " to " + std::to_string(size - 1) + ")");
  const int64_t position = index < 0 ? index + size : index;
  std::vector<std::pair<Dim, Dim>> ranges;
  DimShape kept;
  const DimShape sizes = dims();
  for (size_t other = 0; other < sizes.size(); ++other) {
    ranges.emplace_back(other == at ? Dim(position) : Dim(0),
                        other == at ? Dim(position + 1) : sizes[other]);
    if (other != at) kept.push_back(sizes[other]);
  }
  return shrink(ranges).reshape(kept);
}

Tensor Tensor::index(const std::vector<indexing::TensorIndex>& indices) const {
  int64_t consumed = 0, ellipses = 0, tensors = 0;
  for (const indexing::TensorIndex& entry : indices) {
    if (entry.is_ellipsis()) {
      ellipses += 1;
    } else {
      consumed += 1;
      if (entry.is_tensor()) tensors += 1;
    }
  }
  if (ellipses > 1)
    throw ShapeError("[index] at most one Ellipsis, got " + std::to_string(ellipses) + " for " +
                     describe(*this));
  if (consumed > ndim())
    throw ShapeError("[index] " + std::to_string(consumed) + " indices for the " +
                     std::to_string(ndim()) + " dimensions of " + describe(*this));
  if (tensors > 1)
    throw ShapeError("[index] one Tensor index at a time, got " + std::to_string(tensors) +
                     " for " + describe(*this) + " (index with one, then the next)");
  Tensor result = *this;
  int64_t axis = 0;  // of `result`
  for (const indexing::TensorIndex& entry : indices) {
    if (entry.is_ellipsis()) {
      axis += ndim() - consumed;
    } else if (entry.is_integer()) {
      result = result.select(axis, entry.integer());
    } else if (entry.is_slice()) {
      const indexing::Slice& range = entry.slice();
      result = result.slice(axis, range.start, range.stop, range.step);
      axis += 1;
    } else {
      const Tensor& positions = entry.tensor();
      check_same_device(result, positions, "index");
      if (!positions.dtype().is_int())
        throw DTypeError("[index] a Tensor index must be of an integer dtype, got " +
                         describe(positions) + " for " + describe(*this));
      result = taken(result, static_cast<int>(axis), positions, "index");
      axis += positions.ndim();
    }
  }
  return result;
}

}  // namespace kiln

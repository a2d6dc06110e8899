// Slicing: Python's start:stop:step per axis, integer selection and Tensor::index, all views
// (a strided slice is a shrink, a pad and a reshape: no data moves until a kernel reads it).

#include <kiln/error.h>
#include <kiln/tensor.h>

#include <algorithm>
#include <limits>

#include "core/symbolic.h"
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

// What Tensor::index takes along one axis of x: the whole axis (a Tensor entry's axis counts as
// whole), a slice, or one position.
struct AxisSelection {
  enum class Kind { Whole, Range, Position } kind = Kind::Whole;
  indexing::Slice range;
  Dim position = 0;  // a bound variable's expression where the entry was one
};

// Each axis' selection, for entries that x.index accepted; `tensor_axis` is set to the axis of
// x that a Tensor entry indexes.
std::vector<AxisSelection> axis_selections(const Tensor& x,
                                           const std::vector<indexing::TensorIndex>& indices,
                                           std::optional<int>& tensor_axis) {
  int64_t consumed = 0;
  for (const indexing::TensorIndex& entry : indices) consumed += entry.is_ellipsis() ? 0 : 1;
  std::vector<AxisSelection> selections(static_cast<size_t>(x.ndim()));
  size_t axis = 0;
  for (const indexing::TensorIndex& entry : indices) {
    if (entry.is_ellipsis()) {
      axis += static_cast<size_t>(x.ndim() - consumed);
      continue;
    }
    AxisSelection& selection = selections[axis];
    if (entry.is_integer()) {
      const int64_t size = x.shape()[axis];
      selection.kind = AxisSelection::Kind::Position;
      selection.position = entry.integer() < 0 ? entry.integer() + size : entry.integer();
    } else if (entry.is_variable()) {
      selection.kind = AxisSelection::Kind::Position;
      selection.position = entry.variable();
    } else if (entry.is_slice()) {
      const indexing::Slice& range = entry.slice();
      if (range.start || range.stop || range.step != 1) selection.kind = AxisSelection::Kind::Range;
      selection.range = range;
    } else {
      tensor_axis = static_cast<int>(axis);
    }
    axis += 1;
  }
  return selections;
}

// Values as they broadcast to a selection of `rank` axes: leading size-1 axes beyond it go, as in
// PyTorch.
Tensor without_leading_ones(const Tensor& values, int64_t rank) {
  Tensor given = values;
  while (given.ndim() > rank && !given.dims()[0].is_symbolic() && given.shape()[0] == 1) {
    const DimShape sizes = given.dims();
    given = given.reshape(DimShape(sizes.begin() + 1, sizes.end()));
  }
  return given;
}

// The IndexError an out-of-range position among `indices` would raise, thrown before anything is
// written: index_put_ stores in place, where a Scatter's own check comes after its stores.
void check_positions_first(const Tensor& x, const std::vector<indexing::TensorIndex>& indices) {
  std::optional<int> tensor_axis;
  axis_selections(x, indices, tensor_axis);
  if (!tensor_axis) return;
  const Tensor& positions = std::find_if(indices.begin(), indices.end(), [](const auto& entry) {
                              return entry.is_tensor();
                            })->tensor();
  const int64_t size = x.shape()[static_cast<size_t>(*tensor_axis)];
  const DType dtype = positions.dtype();
  const bool is_unsigned = dtype.is_unsigned();
  // Compared in the positions' own dtype (a device may lack 64-bit integers); a bound outside
  // that dtype's range cannot be crossed.
  const double size_value = static_cast<double>(size);
  const bool above = size_value <= dtype.max_value();
  const bool below = !is_unsigned && -size_value - 1 >= dtype.min_value();
  if (positions.numel() == 0 || (!above && !below)) return;
  Tensor outside;
  if (above) outside = positions >= size_value;
  if (below) {
    const Tensor under = positions < -size_value;
    outside = above ? outside | under : under;
  }
  if (!outside.any().item<bool>()) return;
  std::string first;
  if (is_unsigned) {
    for (uint64_t position : positions.cast(dtypes::uint64).to_vector<uint64_t>()) {
      if (position >= static_cast<uint64_t>(size)) {
        first = std::to_string(position);
        break;
      }
    }
  } else {
    for (int64_t position : positions.cast(dtypes::int64).to_vector<int64_t>()) {
      if (position < -size || position >= size) {
        first = std::to_string(position);
        break;
      }
    }
  }
  throw IndexError("[index_put_] index " + first + " is out of range for axis " +
                   std::to_string(*tensor_axis) + " of size " + std::to_string(size) +
                   " (valid: " + (is_unsigned ? "0" : std::to_string(-size)) + " to " +
                   std::to_string(size - 1) + "); " + describe(x) + " is unchanged");
}

// The inverse of the selection's views: `selected` (the shape x.index gives for `selections`)
// placed where it was selected in a tensor of x's shape (`sizes`), zero (false) elsewhere.
Tensor unselect(const Tensor& selected, const std::vector<AxisSelection>& selections,
                const DimShape& sizes) {
  // The axes a position dropped come back, of size 1.
  DimShape with_axes;
  size_t from = 0;
  for (const AxisSelection& selection : selections) {
    with_axes.push_back(selection.kind == AxisSelection::Kind::Position ? Dim(1)
                                                                        : selected.dims()[from++]);
  }
  Tensor placed = selected.reshape(with_axes);
  for (size_t axis = 0; axis < selections.size(); ++axis) {
    const AxisSelection& selection = selections[axis];
    if (selection.kind == AxisSelection::Kind::Whole) continue;
    const int64_t size = sizes[axis].value();
    std::vector<std::pair<Dim, Dim>> pads(selections.size(), {Dim(0), Dim(0)});
    if (selection.kind == AxisSelection::Kind::Position) {
      pads[axis] = {selection.position, Dim(size - 1) - selection.position};
      placed = placed.pad(pads);
      continue;
    }
    const int64_t step = selection.range.step;
    const SliceRange range = resolve(selection.range.start, selection.range.stop, step, size);
    const int64_t stride = step > 0 ? step : -step;
    const int64_t first = step > 0 ? range.first : size - 1 - range.first;  // in the flipped axis
    int64_t span = range.count;
    if (stride > 1 && range.count > 1) {
      // Each element followed by stride - 1 gaps: (count, 1) padded to (count, stride), the
      // last element's gaps cut.
      DimShape split = placed.dims();
      split.insert(split.begin() + static_cast<std::ptrdiff_t>(axis) + 1, Dim(1));
      std::vector<std::pair<Dim, Dim>> gaps(split.size(), {Dim(0), Dim(0)});
      gaps[axis + 1] = {Dim(0), Dim(stride - 1)};
      DimShape joined = placed.dims();
      joined[axis] = Dim(range.count * stride);
      span = (range.count - 1) * stride + 1;
      std::vector<std::pair<Dim, Dim>> cut;
      for (const Dim& extent : joined) cut.emplace_back(Dim(0), extent);
      cut[axis] = {Dim(0), Dim(span)};
      placed = placed.reshape(split).pad(gaps).reshape(joined).shrink(cut);
    }
    pads[axis] = {Dim(first), Dim(size - first - span)};
    placed = placed.pad(pads);
    if (step < 0) placed = placed.flip({static_cast<int64_t>(axis)});
  }
  return placed;
}

}  // namespace

Tensor Tensor::index_put(const std::vector<indexing::TensorIndex>& indices, const Tensor& values,
                         bool accumulate) const {
  check_same_device(*this, values, "index_put");
  const auto operands = [&] { return describe(*this) + " and values " + describe(values); };
  return built_from_ops("index_put", operands, [&]() -> Tensor {
    Tensor selection;
    try {
      selection = index(indices);  // checks the entries
    } catch (const IndexError& error) {
      throw IndexError(relabel_error(error, "index_put", operands()));
    }
    const Tensor given = without_leading_ones(values, selection.ndim());
    if (given.ndim() > selection.ndim() ||
        broadcast_shapes(given.shape(), selection.shape(), "index_put") != selection.shape())
      throw ShapeError("[index_put] values " + describe(values) +
                       " do not broadcast to the selection's shape " + describe(selection));
    const Tensor placed = given.cast(dtype()).expand(selection.dims());
    std::optional<int> tensor_axis;
    const std::vector<AxisSelection> selections = axis_selections(*this, indices, tensor_axis);
    const bool whole =
        std::all_of(selections.begin(), selections.end(), [](const AxisSelection& selection) {
          return selection.kind == AxisSelection::Kind::Whole;
        });
    Tensor written;  // the region the selection covers (outside a Tensor entry's axis), written
    if (!tensor_axis) {
      written = accumulate ? selection + placed : placed;
    } else {
      // The region as index would take it with the Tensor entry's axis whole, and the values
      // scattered along that axis: the index's axes flattened into one, the index broadcast
      // over the region's other axes.
      std::vector<indexing::TensorIndex> region_entries;
      for (const indexing::TensorIndex& entry : indices)
        region_entries.push_back(entry.is_tensor() ? indexing::TensorIndex(indexing::Slice())
                                                   : entry);
      const Tensor region = index(region_entries);
      int region_axis = 0;
      for (int axis = 0; axis < *tensor_axis; ++axis)
        region_axis += selections[axis].kind == AxisSelection::Kind::Position ? 0 : 1;
      const Tensor& positions = std::find_if(indices.begin(), indices.end(), [](const auto& entry) {
                                  return entry.is_tensor();
                                })->tensor();
      const DimShape region_dims = region.dims();
      // (A 1-D index keeps a variable length.)
      const Dim count = positions.ndim() == 1 ? positions.dims()[0] : Dim(positions.numel());
      DimShape lined(region_dims.begin(), region_dims.begin() + region_axis);
      lined.push_back(count);
      lined.insert(lined.end(), region_dims.begin() + region_axis + 1, region_dims.end());
      DimShape index_view(lined.size(), Dim(1));
      index_view[static_cast<size_t>(region_axis)] = count;
      const Tensor lined_index = positions.reshape(index_view).expand(lined);
      written = scattered(region, region_axis, lined_index, placed.reshape(lined),
                          accumulate ? std::optional<ReduceOp>(ReduceOp::Sum) : std::nullopt,
                          "index_put");
      if (whole) return written;
    }
    const Tensor mask =
        unselect(Tensor::full(written.dims(), 1, dtypes::bool_, device()), selections, dims());
    return where(mask, unselect(written, selections, dims()), *this);
  });
}

Tensor& Tensor::index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& values,
                           bool accumulate) {
  Tensor updated = index_put(indices, values, accumulate);  // checks the input
  check_writable(*this, "index_put_");
  const bool by_tensor =
      std::any_of(indices.begin(), indices.end(),
                  [](const indexing::TensorIndex& entry) { return entry.is_tensor(); });
  if (!by_tensor) {
    // Slices and positions: the values stored through the selection's view of x, and nothing
    // else written.
    updated = Tensor();
    Tensor selection = index(indices);
    UOpRef region = node_of(selection);
    if (region->op() == Op::View && region->src() == node_of(*this)) {
      Tensor value = without_leading_ones(values, selection.ndim());
      if (accumulate) value = selection + value;
      selection = Tensor();
      return write_in_place(std::move(value), "index_put_", false, std::move(region));
    }
    updated = index_put(indices, values, accumulate);  // the whole of x, or a view it cannot write
  }
  check_positions_first(*this, indices);
  return write_in_place(std::move(updated), "index_put_", true);
}

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

Tensor Tensor::select(int64_t axis, const Dim& index) const {
  if (!index.is_symbolic()) return select(axis, index.value());
  const int dim = normalize_axis(axis, ndim(), "select");
  const size_t at = static_cast<size_t>(dim);
  if (dims()[at].is_symbolic())
    throw ShapeError("[select] axis " + std::to_string(dim) + " of " + describe(*this) +
                     " has a variable size: select a position with shrink and reshape");
  const int64_t size = shape()[at];
  const Sym position = index.sym();
  // The kernel serves every value the bounds allow, so every one must be inside the axis.
  if (position.vmin() < 0 || position.vmax() >= size)
    throw IndexError("[select] position " + index.to_string() + " may be any of " +
                     std::to_string(position.vmin()) + " to " + std::to_string(position.vmax()) +
                     " (its variable's bounds), outside axis " + std::to_string(dim) + " of " +
                     describe(*this) + " (valid: 0 to " + std::to_string(size - 1) +
                     "): bound the variable within the axis");
  std::vector<std::pair<Dim, Dim>> ranges;
  DimShape kept;
  const DimShape sizes = dims();
  for (size_t other = 0; other < sizes.size(); ++other) {
    ranges.emplace_back(other == at ? index : Dim(0), other == at ? index + Dim(1) : sizes[other]);
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
    } else if (entry.is_variable()) {
      result = result.select(axis, entry.variable());
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

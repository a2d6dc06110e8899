// Shape helpers (kiln/shape_ops.h), each composed of movement ops and selects: they stay lazy and
// fuse into their readers.

#include <kiln/error.h>
#include <kiln/shape_ops.h>

#include <algorithm>
#include <string>

#include "runtime/tensor_internal.h"

namespace kiln {
namespace {

// The axis, normalized, after checking that its size is fixed.
int fixed_axis(const Tensor& x, int64_t axis, const char* op) {
  check_defined(x, op);
  const int dim = normalize_axis(axis, x.ndim(), op);
  if (x.dims()[static_cast<size_t>(dim)].is_symbolic())
    throw ShapeError("[" + std::string(op) + "] axis " + std::to_string(dim) + " of " +
                     describe(x) + " has a symbolic size; " + op + " needs a fixed one");
  return dim;
}

std::string list_string(const std::vector<int64_t>& values) {
  std::string text;
  for (int64_t value : values) text += (text.empty() ? "" : ", ") + std::to_string(value);
  return "[" + text + "]";
}

// x from `start` to `stop` along `axis`, every other axis whole.
Tensor part_of(const Tensor& x, int axis, int64_t start, int64_t stop) {
  std::vector<std::pair<Dim, Dim>> bounds;
  for (const Dim& size : x.dims()) bounds.push_back({Dim(0), size});
  bounds[static_cast<size_t>(axis)] = {Dim(start), Dim(stop)};
  return x.shrink(bounds);
}

void check_whole_shape_fixed(const Tensor& x, const char* op) {
  for (const Dim& size : x.dims()) {
    if (size.is_symbolic())
      throw ShapeError("[" + std::string(op) + "] " + describe(x) + " has a symbolic size; " + op +
                       " needs fixed sizes");
  }
}

// Whether each element's column minus its row, over the last two axes, satisfies the triangle.
Tensor triangle(const Tensor& x, int64_t diagonal, bool lower, const char* op) {
  check_defined(x, op);
  if (x.ndim() < 2)
    throw ShapeError("[" + std::string(op) + "] needs a tensor of at least two axes (matrices in " +
                     "the last two), got " + describe(x));
  const DimShape& dims = x.dims();
  const Dim rows = dims[dims.size() - 2], columns = dims[dims.size() - 1];
  return built_from_ops(
      op, [&] { return describe(x); },
      [&] {
        // Positions in int32 where they fit (in int64 past that): j - i then fits too, and a
        // diagonal clamped to the dtype's range keeps all or nothing beyond it, whatever the
        // sizes (a variable's value must not change the kernel).
        const bool wide = std::max(rows.value(), columns.value()) > (int64_t{1} << 30);
        const DType positions = wide ? dtypes::int64 : dtypes::int32;
        const int64_t bound = wide ? (int64_t{1} << 62) : (int64_t{1} << 31) - 1;
        const double at = static_cast<double>(std::clamp(diagonal, -bound, bound));
        const Tensor row = Tensor::arange(rows, positions, x.device()).reshape({rows, Dim(1)});
        const Tensor column =
            Tensor::arange(columns, positions, x.device()).reshape({Dim(1), columns});
        const Tensor offset = column - row;
        const Tensor keep = lower ? offset <= at : offset >= at;
        return where(keep, x, Tensor::zeros(dims, x.dtype(), x.device()));
      });
}

}  // namespace

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t axis) {
  const int dim = fixed_axis(x, axis, "split");
  const int64_t length = x.shape()[static_cast<size_t>(dim)];
  if (sizes.empty())
    throw ShapeError("[split] no sizes for axis " + std::to_string(dim) + " of " + describe(x) +
                     ": give at least one");
  for (int64_t size : sizes) {
    if (size < 0)
      throw ShapeError("[split] sizes " + list_string(sizes) + " of " + describe(x) +
                       " along axis " + std::to_string(dim) + ": each size must be >= 0");
  }
  int64_t total = 0;
  for (int64_t size : sizes) {
    if (size > length - total)
      throw ShapeError("[split] sizes " + list_string(sizes) + " of " + describe(x) +
                       " along axis " + std::to_string(dim) +
                       " add up to more than the axis' size " + std::to_string(length));
    total += size;
  }
  if (total != length)
    throw ShapeError("[split] sizes " + list_string(sizes) + " of " + describe(x) + " along axis " +
                     std::to_string(dim) + " add up to " + std::to_string(total) +
                     "; they must add up to the axis' size " + std::to_string(length));
  std::vector<Tensor> parts;
  int64_t start = 0;
  for (int64_t size : sizes) {
    parts.push_back(part_of(x, dim, start, start + size));
    start += size;
  }
  return parts;
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t axis) {
  const int dim = fixed_axis(x, axis, "split");
  if (split_size < 1)
    throw ShapeError("[split] split size " + std::to_string(split_size) + " of " + describe(x) +
                     ": it must be at least 1");
  const int64_t length = x.shape()[static_cast<size_t>(dim)];
  if (length == 0) return {x};
  std::vector<int64_t> sizes;
  for (int64_t start = 0; start < length; start += split_size)
    sizes.push_back(std::min(split_size, length - start));
  return split(x, sizes, dim);
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t axis) {
  const int dim = fixed_axis(x, axis, "chunk");
  if (chunks < 1)
    throw ShapeError("[chunk] " + std::to_string(chunks) + " chunks of " + describe(x) +
                     ": there must be at least 1");
  const int64_t length = x.shape()[static_cast<size_t>(dim)];
  // An empty axis gives `chunks` empty parts, as torch.chunk does.
  if (length == 0) {
    if (chunks > (int64_t{1} << 24))
      throw ShapeError("[chunk] " + std::to_string(chunks) + " empty chunks of " + describe(x) +
                       ": at most 2^24");
    return std::vector<Tensor>(static_cast<size_t>(chunks), x);
  }
  return split(x, length / chunks + (length % chunks != 0 ? 1 : 0), dim);
}

Tensor unflatten(const Tensor& x, int64_t axis, const Shape& sizes) {
  const int dim = fixed_axis(x, axis, "unflatten");
  const int64_t length = x.shape()[static_cast<size_t>(dim)];
  const auto refuse = [&](const std::string& rule) {
    return ShapeError("[unflatten] axis " + std::to_string(dim) + " of " + describe(x) +
                      " into sizes " + list_string(sizes) + ": " + rule);
  };
  if (sizes.empty()) throw refuse("give at least one size");
  int64_t known = 1;
  int inferred = -1;
  for (size_t at = 0; at < sizes.size(); ++at) {
    if (sizes[at] == -1) {
      if (inferred >= 0) throw refuse("at most one size may be -1");
      inferred = static_cast<int>(at);
    } else if (sizes[at] < 0) {
      throw refuse("sizes are >= 0, or -1 for the one inferred");
    } else {
      // Past the axis' size (or 2^60 for an empty axis) the product can only be wrong.
      const int64_t most = std::max<int64_t>(length, int64_t{1} << 60);
      if (sizes[at] != 0 && known > most / sizes[at])
        throw refuse("their product must be the axis' size " + std::to_string(length));
      known *= sizes[at];
    }
  }
  Shape resolved = sizes;
  if (inferred >= 0) {
    if (known == 0 || length % known != 0)
      throw refuse("the other sizes' product " + std::to_string(known) +
                   " does not divide the axis' size " + std::to_string(length));
    resolved[static_cast<size_t>(inferred)] = length / known;
  } else if (known != length) {
    throw refuse("their product " + std::to_string(known) + " must be the axis' size " +
                 std::to_string(length));
  }
  DimShape shape;
  const DimShape& dims = x.dims();
  for (int at = 0; at < dim; ++at) shape.push_back(dims[static_cast<size_t>(at)]);
  for (int64_t size : resolved) shape.push_back(Dim(size));
  for (size_t at = static_cast<size_t>(dim) + 1; at < dims.size(); ++at) shape.push_back(dims[at]);
  return x.reshape(shape);
}

Tensor repeat(const Tensor& x, const Shape& repeats) {
  check_defined(x, "repeat");
  check_whole_shape_fixed(x, "repeat");
  if (repeats.size() < static_cast<size_t>(x.ndim()))
    throw ShapeError("[repeat] repeats " + list_string(repeats) + " for " + describe(x) +
                     ": give one per axis (" + std::to_string(x.ndim()) + ") or more");
  for (size_t axis = 0; axis < repeats.size(); ++axis) {
    const int64_t count = repeats[axis];
    const size_t lead = repeats.size() - static_cast<size_t>(x.ndim());
    const int64_t size = axis < lead ? 1 : x.shape()[axis - lead];
    if (count > kMaxElements / std::max<int64_t>(size, 1))
      throw ShapeError("[repeat] repeats " + list_string(repeats) + " for " + describe(x) +
                       ": the result would hold more than 2^60 elements");
    if (count < 0)
      throw ShapeError("[repeat] repeats " + list_string(repeats) + " for " + describe(x) +
                       ": each must be >= 0");
  }
  return built_from_ops(
      "repeat", [&] { return describe(x); },
      [&] {
        // Leading axes of size 1, then each axis behind a new one of its repeats: expanded, merged.
        Shape shape(repeats.size() - static_cast<size_t>(x.ndim()), 1);
        shape.insert(shape.end(), x.shape().begin(), x.shape().end());
        Shape spread, expanded, merged;
        for (size_t axis = 0; axis < shape.size(); ++axis) {
          spread.insert(spread.end(), {1, shape[axis]});
          expanded.insert(expanded.end(), {repeats[axis], shape[axis]});
          merged.push_back(repeats[axis] * shape[axis]);
        }
        return x.reshape(spread).expand(expanded).reshape(merged);
      });
}

Tensor repeat_interleave(const Tensor& x, int64_t repeats, int64_t axis) {
  const int dim = fixed_axis(x, axis, "repeat_interleave");
  if (repeats < 0)
    throw ShapeError("[repeat_interleave] " + std::to_string(repeats) + " repeats of " +
                     describe(x) + ": they must be >= 0");
  if (repeats > kMaxElements / std::max<int64_t>(x.shape()[static_cast<size_t>(dim)], 1))
    throw ShapeError("[repeat_interleave] " + std::to_string(repeats) + " repeats of " +
                     describe(x) + ": the result would hold more than 2^60 elements");
  return built_from_ops(
      "repeat_interleave", [&] { return describe(x); },
      [&] {
        DimShape expanded = x.dims(), merged = x.dims();
        expanded.insert(expanded.begin() + dim + 1, Dim(repeats));
        merged[static_cast<size_t>(dim)] = Dim(x.shape()[static_cast<size_t>(dim)] * repeats);
        return x.unsqueeze(dim + 1).expand(expanded).reshape(merged);
      });
}

Tensor roll(const Tensor& x, const std::vector<int64_t>& shifts, const std::vector<int64_t>& axes) {
  check_defined(x, "roll");
  if (shifts.size() != axes.size())
    throw ShapeError("[roll] " + std::to_string(shifts.size()) + " shifts " + list_string(shifts) +
                     " for " + std::to_string(axes.size()) + " axes " + list_string(axes) + " of " +
                     describe(x) + ": give one shift per axis");
  if (axes.empty())
    throw ShapeError("[roll] no axes given for " + describe(x) + ": give one or more");
  // An axis named twice is rolled by each of its shifts in turn, as torch.roll does.
  std::vector<int> dims;
  for (int64_t axis : axes) dims.push_back(fixed_axis(x, axis, "roll"));
  return built_from_ops(
      "roll", [&] { return describe(x); },
      [&] {
        Tensor result = x;
        for (size_t at = 0; at < dims.size(); ++at) {
          const int dim = dims[at];
          const int64_t length = x.shape()[static_cast<size_t>(dim)];
          if (length == 0) continue;
          const int64_t shift = ((shifts[at] % length) + length) % length;
          if (shift == 0) continue;
          // The last `shift` elements move to the front.
          result = cat({part_of(result, dim, length - shift, length),
                        part_of(result, dim, 0, length - shift)},
                       dim);
        }
        return result;
      });
}

Tensor roll(const Tensor& x, int64_t shift, int64_t axis) {
  return roll(x, std::vector<int64_t>{shift}, std::vector<int64_t>{axis});
}

Tensor diagonal(const Tensor& x, int64_t offset, int64_t axis1, int64_t axis2) {
  const int first = fixed_axis(x, axis1, "diagonal"), second = fixed_axis(x, axis2, "diagonal");
  if (first == second)
    throw ShapeError("[diagonal] axes " + std::to_string(axis1) + " and " + std::to_string(axis2) +
                     " of " + describe(x) + " are the same axis; give two distinct ones");
  return built_from_ops(
      "diagonal", [&] { return describe(x); },
      [&] {
        // The two axes last, then the diagonal's part of them: its elements lie at i * (columns +
        // 1) of the flattened part, so padding it to rows * (columns + 1) lines them up in column
        // 0.
        std::vector<int64_t> order;
        for (int64_t axis = 0; axis < x.ndim(); ++axis) {
          if (axis != first && axis != second) order.push_back(axis);
        }
        order.push_back(first);
        order.push_back(second);
        Tensor matrices = x.permute(order);
        const int64_t rows = x.shape()[static_cast<size_t>(first)];
        const int64_t columns = x.shape()[static_cast<size_t>(second)];
        const int64_t skip_rows = offset < 0 ? std::min(-offset, rows) : 0;
        const int64_t skip_columns = offset > 0 ? std::min(offset, columns) : 0;
        const int64_t width = columns - skip_columns;
        const int64_t length = std::min(rows - skip_rows, width);
        const int batch = static_cast<int>(order.size()) - 2;
        matrices = part_of(part_of(matrices, batch, skip_rows, skip_rows + length), batch + 1,
                           skip_columns, columns);
        const DimShape matrix_dims = matrices.dims();
        DimShape flat(matrix_dims.begin(), matrix_dims.begin() + batch);
        DimShape lined = flat;
        flat.push_back(Dim(length * width));
        lined.push_back(Dim(length));
        lined.push_back(Dim(width + 1));
        std::vector<std::pair<Dim, Dim>> padding(static_cast<size_t>(batch) + 1, {Dim(0), Dim(0)});
        padding.back().second = Dim(length);
        const Tensor columned = matrices.reshape(flat).pad(padding).reshape(lined);
        return part_of(columned, batch + 1, 0, 1).squeeze(batch + 1);
      });
}

Tensor diag(const Tensor& x, int64_t offset) {
  check_defined(x, "diag");
  if (x.ndim() == 2) return diagonal(x, offset, 0, 1);
  if (x.ndim() != 1)
    throw ShapeError("[diag] takes a vector (to make a matrix) or a matrix (to take its " +
                     std::string("diagonal), got ") + describe(x));
  const int dim = fixed_axis(x, 0, "diag");
  return built_from_ops(
      "diag", [&] { return describe(x); },
      [&] {
        // Each element followed by k zeros, flattened: element i lands at i * (k + 1), which is
        // (i, i) of the k x k matrix the first k * k of them make.
        const int64_t k = x.shape()[static_cast<size_t>(dim)];
        const Tensor square = x.reshape({k, 1})
                                  .pad({{0, 0}, {0, k}})
                                  .reshape({k * (k + 1)})
                                  .shrink({{0, k * k}})
                                  .reshape({k, k});
        const int64_t shift = offset < 0 ? -offset : offset;
        return offset >= 0 ? square.pad({{0, shift}, {shift, 0}})
                           : square.pad({{shift, 0}, {0, shift}});
      });
}

Tensor tril(const Tensor& x, int64_t diagonal) {
  return triangle(x, diagonal, true, "tril");
}

Tensor triu(const Tensor& x, int64_t diagonal) {
  return triangle(x, diagonal, false, "triu");
}

}  // namespace kiln

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
        // j - i ranges over [-(rows - 1), columns - 1]: a diagonal past it keeps all or nothing,
        // and clamped it fits int32 positions.
        const int64_t low = -std::max<int64_t>(rows.value(), 1),
                      high = std::max<int64_t>(columns.value(), 1);
        const double at = static_cast<double>(std::clamp(diagonal, low, high));
        const Tensor row = Tensor::arange(rows, dtypes::int32, x.device()).reshape({rows, Dim(1)});
        const Tensor column =
            Tensor::arange(columns, dtypes::int32, x.device()).reshape({Dim(1), columns});
        const Tensor offset = column - row;
        const Tensor keep = lower ? offset <= at : offset >= at;
        return where(keep, x, Tensor::zeros(dims, x.dtype(), x.device()));
      });
}

}  // namespace

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t axis) {
  const int dim = fixed_axis(x, axis, "split");
  const int64_t length = x.shape()[static_cast<size_t>(dim)];
  int64_t total = 0;
  for (int64_t size : sizes) {
    if (size < 0)
      throw ShapeError("[split] sizes " + list_string(sizes) + " of " + describe(x) +
                       " along axis " + std::to_string(dim) + ": each size must be >= 0");
    total += size;
  }
  if (total != length || sizes.empty())
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
  return split(x, std::max<int64_t>((length + chunks - 1) / chunks, 1), dim);
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
  for (int64_t count : repeats) {
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
  std::vector<int> dims;
  for (int64_t axis : axes) {
    const int dim = fixed_axis(x, axis, "roll");
    if (std::find(dims.begin(), dims.end(), dim) != dims.end())
      throw ShapeError("[roll] axes " + list_string(axes) + " of " + describe(x) + " name axis " +
                       std::to_string(dim) + " twice");
    dims.push_back(dim);
  }
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

Tensor tril(const Tensor& x, int64_t diagonal) {
  return triangle(x, diagonal, true, "tril");
}

Tensor triu(const Tensor& x, int64_t diagonal) {
  return triangle(x, diagonal, false, "triu");
}

}  // namespace kiln

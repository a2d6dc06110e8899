// References for the shape helpers (kiln/shape_ops.h): each output element found by its
// coordinates in the input, without kiln's movement ops.

#include <algorithm>

#include "tools/conformance/reference.h"

namespace kiln::conformance::ref {

HostTensor repeat(const HostTensor& x, const Shape& repeats) {
  Shape shape(repeats.size() - x.shape.size(), 1);
  shape.insert(shape.end(), x.shape.begin(), x.shape.end());
  Shape out_shape;
  for (size_t axis = 0; axis < shape.size(); ++axis)
    out_shape.push_back(shape[axis] * repeats[axis]);
  HostTensor result(x.dtype, out_shape);
  for (int64_t index = 0; index < result.numel(); ++index) {
    std::vector<int64_t> coords = unravel(index, out_shape);
    for (size_t axis = 0; axis < coords.size(); ++axis) coords[axis] %= shape[axis];
    const std::vector<int64_t> source(coords.end() - static_cast<int64_t>(x.shape.size()),
                                      coords.end());
    result.data[static_cast<size_t>(index)] = x.data[static_cast<size_t>(ravel(source, x.shape))];
  }
  return result;
}

HostTensor repeat_interleave(const HostTensor& x, int64_t repeats, int64_t axis) {
  const size_t dim = static_cast<size_t>(normalize_axis(axis, x.shape.size()));
  Shape out_shape = x.shape;
  out_shape[dim] *= repeats;
  HostTensor result(x.dtype, out_shape);
  for (int64_t index = 0; index < result.numel(); ++index) {
    std::vector<int64_t> coords = unravel(index, out_shape);
    coords[dim] /= repeats;
    result.data[static_cast<size_t>(index)] = x.data[static_cast<size_t>(ravel(coords, x.shape))];
  }
  return result;
}

HostTensor roll(const HostTensor& x, const std::vector<int64_t>& shifts,
                const std::vector<int64_t>& axes) {
  HostTensor result(x.dtype, x.shape);
  for (int64_t index = 0; index < result.numel(); ++index) {
    std::vector<int64_t> coords = unravel(index, x.shape);
    // Output position p holds input position p - shift (mod the size).
    for (size_t at = 0; at < axes.size(); ++at) {
      const size_t dim = static_cast<size_t>(normalize_axis(axes[at], x.shape.size()));
      const int64_t size = x.shape[dim];
      coords[dim] = (((coords[dim] - shifts[at]) % size) + size) % size;
    }
    result.data[static_cast<size_t>(index)] = x.data[static_cast<size_t>(ravel(coords, x.shape))];
  }
  return result;
}

HostTensor triangle(const HostTensor& x, int64_t diagonal, bool lower) {
  HostTensor result(x.dtype, x.shape);
  const size_t rank = x.shape.size();
  for (int64_t index = 0; index < result.numel(); ++index) {
    const std::vector<int64_t> coords = unravel(index, x.shape);
    const int64_t offset = coords[rank - 1] - coords[rank - 2];
    const bool keep = lower ? offset <= diagonal : offset >= diagonal;
    result.data[static_cast<size_t>(index)] = keep ? x.data[static_cast<size_t>(index)] : Scalar{};
  }
  return result;
}

HostTensor diagonal(const HostTensor& x, int64_t offset, int64_t axis1, int64_t axis2) {
  const size_t first = static_cast<size_t>(normalize_axis(axis1, x.shape.size()));
  const size_t second = static_cast<size_t>(normalize_axis(axis2, x.shape.size()));
  Shape shape;
  std::vector<size_t> kept;
  for (size_t axis = 0; axis < x.shape.size(); ++axis) {
    if (axis != first && axis != second) {
      kept.push_back(axis);
      shape.push_back(x.shape[axis]);
    }
  }
  // Elements (i, i + offset) inside the matrix.
  int64_t length = 0;
  while (length - std::min<int64_t>(offset, 0) < x.shape[first] &&
         length + std::max<int64_t>(offset, 0) < x.shape[second])
    ++length;
  shape.push_back(length);
  HostTensor result(x.dtype, shape);
  for (int64_t index = 0; index < result.numel(); ++index) {
    const std::vector<int64_t> coords = unravel(index, shape);
    std::vector<int64_t> source(x.shape.size());
    for (size_t at = 0; at < kept.size(); ++at) source[kept[at]] = coords[at];
    const int64_t position = coords.back();
    source[first] = offset < 0 ? position - offset : position;
    source[second] = offset > 0 ? position + offset : position;
    result.data[static_cast<size_t>(index)] = x.data[static_cast<size_t>(ravel(source, x.shape))];
  }
  return result;
}

HostTensor diag_matrix(const HostTensor& x, int64_t offset) {
  const int64_t side = x.shape[0] + (offset < 0 ? -offset : offset);
  HostTensor result(x.dtype, {side, side});
  for (int64_t at = 0; at < x.shape[0]; ++at) {
    const int64_t row = offset < 0 ? at - offset : at, column = offset > 0 ? at + offset : at;
    result.data[static_cast<size_t>(row * side + column)] = x.data[static_cast<size_t>(at)];
  }
  return result;
}

}  // namespace kiln::conformance::ref

// Max, average and adaptive average pooling (kiln/conv.h): the padded input's sliding windows
// reduced over the kernel axes.

#include <kiln/conv.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "runtime/nn_checks.h"
#include "runtime/nn_window.h"
#include "runtime/tensor_internal.h"

namespace kiln::nn {
namespace {

using detail::check_at_least;
using detail::list_of;
using detail::per_axis;
using detail::shape_error;

// A pooling's windows on each spatial axis: the padding in front and behind (behind includes
// ceil_mode's overhang, which `overhang` holds alone).
struct PoolGeometry {
  std::vector<int64_t> kernel, stride, dilation, padding, overhang;
  size_t spatial = 0;
  std::vector<int64_t> after() const {
    std::vector<int64_t> result;
    for (size_t axis = 0; axis < spatial; ++axis) result.push_back(padding[axis] + overhang[axis]);
    return result;
  }
  std::vector<int64_t> kernel_axes() const { return detail::last_axes(spatial); }
};

PoolGeometry pool_geometry(const Tensor& batched, const Tensor& input, const PoolOptions& options,
                           size_t spatial, bool dilated, const char* op) {
  PoolGeometry geometry;
  geometry.spatial = spatial;
  if (options.kernel_size.empty()) shape_error(op, "kernel_size is required");
  geometry.kernel = per_axis(options.kernel_size, spatial, op, "kernel_size");
  geometry.stride =
      options.stride.empty() ? geometry.kernel : per_axis(options.stride, spatial, op, "stride");
  geometry.padding = per_axis(options.padding, spatial, op, "padding");
  geometry.dilation = per_axis(options.dilation, spatial, op, "dilation");
  check_at_least(geometry.kernel, 1, op, "kernel_size");
  check_at_least(geometry.stride, 1, op, "stride");
  check_at_least(geometry.padding, 0, op, "padding");
  check_at_least(geometry.dilation, 1, op, "dilation");
  for (size_t axis = 0; axis < spatial; ++axis) {
    if (!dilated && geometry.dilation[axis] != 1)
      shape_error(op, "dilation " + list_of(geometry.dilation) + " must be 1");
    const int64_t reach = geometry.dilation[axis] * (geometry.kernel[axis] - 1) + 1;
    // PyTorch's rule: every window then holds an input element.
    if (2 * geometry.padding[axis] > (dilated ? reach : geometry.kernel[axis]))
      shape_error(op, "padding " + list_of(geometry.padding) + " must be at most half the kernel " +
                          list_of(geometry.kernel) + (dilated ? " (dilated)" : ""));
    const int64_t in = batched.shape()[2 + axis];
    if (in == 0)
      shape_error(op, "the input " + input.shape_string() + " has an empty spatial axis");
    // PyTorch's output size: floor (or under ceil_mode, ceil) of span / stride, plus one, where a
    // last window that would start in the far padding is dropped; at least 1.
    const int64_t span = in + 2 * geometry.padding[axis] - reach;
    const int64_t step = geometry.stride[axis];
    const int64_t rounded = span + (options.ceil_mode ? step - 1 : 0);
    int64_t out = (rounded >= 0 ? rounded / step : -((-rounded + step - 1) / step)) + 1;
    if (options.ceil_mode && (out - 1) * step >= in + geometry.padding[axis]) --out;
    if (out < 1)
      shape_error(op, "the kernel " + list_of(geometry.kernel) + " spans " + std::to_string(reach) +
                          " elements on spatial axis " + std::to_string(axis) +
                          ", more than the padded input's " +
                          std::to_string(in + 2 * geometry.padding[axis]) + " (input " +
                          input.shape_string() + "): no window fits");
    geometry.overhang.push_back(
        std::max<int64_t>((out - 1) * step + reach - in - 2 * geometry.padding[axis], 0));
  }
  return geometry;
}

Shape spatial_shape(const Tensor& batched, size_t spatial) {
  return Shape(batched.shape().end() - static_cast<std::ptrdiff_t>(spatial), batched.shape().end());
}

std::pair<Tensor, Tensor> max_pool(const Tensor& input, const PoolOptions& options, size_t spatial,
                                   bool with_indices, const char* op) {
  const detail::SpatialInput in = detail::spatial_input(input, spatial, op);
  const PoolGeometry geometry = pool_geometry(in.batched, input, options, spatial, true, op);
  const double lowest = -std::numeric_limits<double>::infinity();
  const Tensor windows = detail::sliding_windows(
      detail::pad_trailing(in.batched, geometry.padding, geometry.after(), lowest), geometry.kernel,
      geometry.stride, geometry.dilation);
  const Tensor values = windows.max(geometry.kernel_axes());
  if (!with_indices) return {in.result(values), Tensor()};
  // Each window's positions in the input (-1 in the padding). As PyTorch's loop: the last NaN
  // where there is one, else the first position that holds the maximum. One min finds either:
  // a NaN at p is keyed -1 - p (below every other key, the later NaN lower), the maximum at p
  // is keyed p, anything else `count`.
  const Shape sizes = spatial_shape(in.batched, spatial);
  int64_t count = 1;
  for (int64_t size : sizes) count *= size;
  const Tensor positions = detail::sliding_windows(
      detail::pad_trailing(
          Tensor::arange(0, count, 1, dtypes::int64, input.device()).reshape(sizes),
          geometry.padding, geometry.after(), -1),
      geometry.kernel, geometry.stride, geometry.dilation);
  Tensor peak = values;
  for (size_t axis = 0; axis < spatial; ++axis) peak = peak.unsqueeze(-1);
  const Tensor inside = positions >= 0;
  const Tensor keys =
      where(windows.isnan() & inside, -1 - positions,
            where((windows == peak) & inside, positions, static_cast<double>(count)));
  const Tensor lowest_key = keys.min(geometry.kernel_axes());
  const Tensor indices = where(lowest_key < 0, -1 - lowest_key, lowest_key);
  return {in.result(values), in.result(indices)};
}

Tensor avg_pool(const Tensor& input, const PoolOptions& options, size_t spatial, const char* op) {
  const detail::SpatialInput in = detail::spatial_input(input, spatial, op);
  const PoolGeometry geometry = pool_geometry(in.batched, input, options, spatial, false, op);
  const Tensor value = detail::widened(in.batched);
  const Tensor sums =
      detail::sliding_windows(detail::pad_trailing(value, geometry.padding, geometry.after(), 0),
                              geometry.kernel, geometry.stride, geometry.dilation)
          .sum(geometry.kernel_axes());
  // Each window's divisor: its elements in the input, and in the padding where counted (never
  // those in ceil_mode's overhang).
  const Tensor ones =
      Tensor::ones(spatial_shape(in.batched, spatial), value.dtype(), input.device());
  const std::vector<int64_t> none(spatial, 0);
  Tensor counted = options.count_include_pad
                       ? detail::pad_trailing(ones, geometry.padding, geometry.padding, 1)
                       : ones;
  const std::vector<int64_t> rest_before = options.count_include_pad ? none : geometry.padding;
  std::vector<int64_t> rest_after = geometry.overhang;
  if (!options.count_include_pad) rest_after = geometry.after();
  counted = detail::pad_trailing(counted, rest_before, rest_after, 0);
  const Tensor divisor =
      detail::sliding_windows(counted, geometry.kernel, geometry.stride, geometry.dilation)
          .sum(geometry.kernel_axes());
  return in.result((sums / divisor).cast(input.dtype()));
}

// x averaged along `axis` (size in) into `out` windows [floor(i in / out), ceil((i + 1) in /
// out)): each window's elements gathered into a row as long as the longest window (the rest
// masked), summed and divided by its length. Work and memory grow with in + out, not in x out.
Tensor adaptive_axis(const Tensor& x, int64_t axis, int64_t out) {
  const int64_t in = x.shape()[static_cast<size_t>(axis)];
  const int64_t longest = (in + out - 1) / out + 1;
  std::vector<int64_t> positions;
  std::vector<double> taken, lengths;
  for (int64_t window = 0; window < out; ++window) {
    const int64_t start = window * in / out, stop = ((window + 1) * in + out - 1) / out;
    for (int64_t at = 0; at < longest; ++at) {
      positions.push_back(std::min(start + at, in - 1));
      taken.push_back(start + at < stop ? 1.0 : 0.0);
    }
    lengths.push_back(static_cast<double>(stop - start));
  }
  // (..., out, longest, ...) in place of the axis.
  DimShape rows = x.dims();
  rows[static_cast<size_t>(axis)] = Dim(out);
  rows.insert(rows.begin() + axis + 1, Dim(longest));
  Shape mask_shape(rows.size(), 1), length_shape(x.dims().size(), 1);
  mask_shape[static_cast<size_t>(axis)] = out;
  mask_shape[static_cast<size_t>(axis) + 1] = longest;
  length_shape[static_cast<size_t>(axis)] = out;
  const Tensor gathered =
      x.index_select(axis, Tensor::from_vector(positions, {out * longest}, x.device()))
          .reshape(rows);
  const Tensor mask = Tensor::from_vector(taken, mask_shape, x.device()).cast(x.dtype());
  const Tensor length = Tensor::from_vector(lengths, length_shape, x.device()).cast(x.dtype());
  return (gathered * mask).sum(axis + 1) / length;
}

Tensor adaptive_avg_pool(const Tensor& input, const AxisValues& output_size, size_t spatial,
                         const char* op) {
  const detail::SpatialInput in = detail::spatial_input(input, spatial, op);
  const std::vector<int64_t> out = per_axis(output_size, spatial, op, "output_size");
  check_at_least(out, 1, op, "output_size");
  for (int64_t size : out)
    if (size >= (int64_t{1} << 31))
      shape_error(op, "output_size " + list_of(out) + " must be below 2^31 on each axis");
  const Shape sizes = spatial_shape(in.batched, spatial);
  bool divides = true;
  for (size_t axis = 0; axis < spatial; ++axis) {
    if (sizes[axis] == 0)
      shape_error(op, "the input " + input.shape_string() + " has an empty spatial axis");
    divides = divides && sizes[axis] % out[axis] == 0;
  }
  const Tensor value = detail::widened(in.batched);
  Tensor result;
  if (divides) {
    // Windows of in / out that do not overlap: a plain average pool.
    std::vector<int64_t> kernel;
    for (size_t axis = 0; axis < spatial; ++axis) kernel.push_back(sizes[axis] / out[axis]);
    result = detail::sliding_windows(value, kernel, kernel, std::vector<int64_t>(spatial, 1))
                 .mean(detail::last_axes(spatial));
  } else {
    // Windows of different sizes: an averaging matrix on each axis in turn.
    result = value;
    for (size_t axis = 0; axis < spatial; ++axis)
      result = adaptive_axis(result, static_cast<int64_t>(2 + axis), out[axis]);
  }
  return in.result(result.cast(input.dtype()));
}

}  // namespace

Tensor max_pool1d(const Tensor& input, const PoolOptions& options) {
  return max_pool(input, options, 1, false, "max_pool1d").first;
}
Tensor max_pool2d(const Tensor& input, const PoolOptions& options) {
  return max_pool(input, options, 2, false, "max_pool2d").first;
}
Tensor max_pool3d(const Tensor& input, const PoolOptions& options) {
  return max_pool(input, options, 3, false, "max_pool3d").first;
}
std::pair<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, const PoolOptions& options) {
  return max_pool(input, options, 1, true, "max_pool1d_with_indices");
}
std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, const PoolOptions& options) {
  return max_pool(input, options, 2, true, "max_pool2d_with_indices");
}
std::pair<Tensor, Tensor> max_pool3d_with_indices(const Tensor& input, const PoolOptions& options) {
  return max_pool(input, options, 3, true, "max_pool3d_with_indices");
}
Tensor avg_pool1d(const Tensor& input, const PoolOptions& options) {
  return avg_pool(input, options, 1, "avg_pool1d");
}
Tensor avg_pool2d(const Tensor& input, const PoolOptions& options) {
  return avg_pool(input, options, 2, "avg_pool2d");
}
Tensor avg_pool3d(const Tensor& input, const PoolOptions& options) {
  return avg_pool(input, options, 3, "avg_pool3d");
}
Tensor adaptive_avg_pool1d(const Tensor& input, const AxisValues& output_size) {
  return adaptive_avg_pool(input, output_size, 1, "adaptive_avg_pool1d");
}
Tensor adaptive_avg_pool2d(const Tensor& input, const AxisValues& output_size) {
  return adaptive_avg_pool(input, output_size, 2, "adaptive_avg_pool2d");
}
Tensor adaptive_avg_pool3d(const Tensor& input, const AxisValues& output_size) {
  return adaptive_avg_pool(input, output_size, 3, "adaptive_avg_pool3d");
}

}  // namespace kiln::nn

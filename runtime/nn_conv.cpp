// Convolution and transposed convolution (kiln/conv.h): the input's sliding windows times the
// weight, summed over each group's input channels and the kernel.

#include <kiln/conv.h>

#include <algorithm>
#include <optional>
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

struct ConvGeometry {
  std::vector<int64_t> stride, dilation, pad_before, pad_after;
  int64_t groups = 1;
};

// The weight's, bias's and groups' rules shared by conv and conv_transpose: same dtype and
// device as the input, weight (A, B, *kernel) with `spatial` kernel axes.
void check_parameters(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                      size_t spatial, int64_t groups, const char* op) {
  detail::check_float(weight, op, "the weight");
  if (weight.dtype() != input.dtype() || (bias && bias->dtype() != input.dtype()))
    throw DTypeError(std::string("[") + op +
                     "] the input, weight and bias must have one dtype, got " + describe(input) +
                     ", " + describe(weight) + (bias ? ", " + describe(*bias) : std::string()));
  check_same_device(input, weight, op);
  if (bias) check_same_device(input, *bias, op);
  if (weight.ndim() != static_cast<int64_t>(spatial) + 2)
    shape_error(op, "the weight must have " + std::to_string(spatial + 2) +
                        " axes (channels, channels, *kernel), got " + weight.shape_string());
  for (const Dim& size : weight.dims())
    if (size.is_symbolic())
      shape_error(op, "the weight must have a fixed shape, got " + weight.shape_string());
  for (int64_t size : weight.shape())
    if (size == 0) shape_error(op, "the weight " + weight.shape_string() + " is empty");
  if (groups < 1) shape_error(op, "groups " + std::to_string(groups) + " must be >= 1");
}

// input (N, Cin, *in) windowed and multiplied by weight (Cout, Cin / groups, *kernel).
Tensor convolve(const Tensor& batched, const Tensor& weight, const std::optional<Tensor>& bias,
                const ConvGeometry& geometry) {
  const size_t spatial = static_cast<size_t>(weight.ndim()) - 2;
  const std::vector<int64_t> kernel(weight.shape().begin() + 2, weight.shape().end());
  const Tensor padded = detail::pad_trailing(batched, geometry.pad_before, geometry.pad_after, 0);
  const Tensor windows =
      detail::sliding_windows(padded, kernel, geometry.stride, geometry.dilation);
  const int64_t groups = geometry.groups;
  const int64_t in_per_group = weight.shape()[1], out_channels = weight.shape()[0];
  // (N, groups, 1, *out, Cin / groups, *kernel) times (1, groups, Cout / groups, 1..., Cin /
  // groups, *kernel), summed over the last 1 + spatial axes.
  DimShape grouped = {windows.dims()[0], Dim(groups), Dim(in_per_group), Dim(1)};
  Shape weight_shape = {1, groups, out_channels / groups};
  std::vector<int64_t> order = {0, 1, 3};
  for (size_t axis = 0; axis < spatial; ++axis) {
    grouped.push_back(windows.dims()[2 + axis]);
    order.push_back(static_cast<int64_t>(4 + axis));
    weight_shape.push_back(1);
  }
  order.push_back(2);
  weight_shape.push_back(in_per_group);
  for (size_t axis = 0; axis < spatial; ++axis) {
    grouped.emplace_back(kernel[axis]);
    order.push_back(static_cast<int64_t>(4 + spatial + axis));
    weight_shape.push_back(kernel[axis]);
  }
  const Tensor products = windows.reshape(grouped).permute(order) * weight.reshape(weight_shape);
  DimShape result_shape = {windows.dims()[0], Dim(out_channels)};
  for (size_t axis = 0; axis < spatial; ++axis) result_shape.push_back(windows.dims()[2 + axis]);
  Tensor result = products.sum(detail::last_axes(spatial + 1)).reshape(result_shape);
  if (bias) {
    Shape per_channel(result_shape.size(), 1);
    per_channel[1] = out_channels;
    result = result + bias->reshape(per_channel);
  }
  return result;
}

Tensor conv_nd(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
               const ConvOptions& options, size_t spatial, const char* op) {
  const detail::SpatialInput in = detail::spatial_input(input, spatial, op);
  check_parameters(input, weight, bias, spatial, options.groups, op);
  const int64_t channels = in.batched.shape()[1];
  const int64_t groups = options.groups;
  if (channels % groups != 0 || weight.shape()[0] % groups != 0 ||
      weight.shape()[1] * groups != channels)
    shape_error(op, "groups " + std::to_string(groups) +
                        " must divide the input channels and the weight's output channels, "
                        "with weight (Cout, Cin / groups, *kernel): got input " +
                        input.shape_string() + " and weight " + weight.shape_string());
  if (bias && bias->shape() != Shape{weight.shape()[0]})
    shape_error(op, "bias must be (" + std::to_string(weight.shape()[0]) + "), got " +
                        bias->shape_string());
  ConvGeometry geometry;
  geometry.groups = groups;
  geometry.stride = per_axis(options.stride, spatial, op, "stride");
  geometry.dilation = per_axis(options.dilation, spatial, op, "dilation");
  check_at_least(geometry.stride, 1, op, "stride");
  check_at_least(geometry.dilation, 1, op, "dilation");
  for (size_t axis = 0; axis < spatial; ++axis) {
    const int64_t reach = geometry.dilation[axis] * (weight.shape()[2 + axis] - 1);
    if (options.padding.is_same) {
      geometry.pad_before.push_back(reach / 2);
      geometry.pad_after.push_back(reach - reach / 2);
    }
  }
  if (options.padding.is_same) {
    for (int64_t step : geometry.stride)
      if (step != 1)
        shape_error(op, "padding \"same\" needs stride 1, got stride " + list_of(geometry.stride));
  } else {
    geometry.pad_before = per_axis(options.padding.values, spatial, op, "padding");
    check_at_least(geometry.pad_before, 0, op, "padding");
    geometry.pad_after = geometry.pad_before;
  }
  for (size_t axis = 0; axis < spatial; ++axis) {
    const int64_t padded =
        in.batched.shape()[2 + axis] + geometry.pad_before[axis] + geometry.pad_after[axis];
    const int64_t reach = geometry.dilation[axis] * (weight.shape()[2 + axis] - 1) + 1;
    if (reach > padded)
      shape_error(op, "the kernel " + weight.shape_string() + " with dilation " +
                          list_of(geometry.dilation) + " spans " + std::to_string(reach) +
                          " elements on spatial axis " + std::to_string(axis) +
                          ", more than the padded input's " + std::to_string(padded) + " (input " +
                          input.shape_string() + ", padding " + list_of(geometry.pad_before) + ")");
  }
  return in.result(convolve(in.batched, weight, bias, geometry));
}

Tensor conv_transpose_nd(const Tensor& input, const Tensor& weight,
                         const std::optional<Tensor>& bias, const ConvTransposeOptions& options,
                         size_t spatial, const char* op) {
  const detail::SpatialInput in = detail::spatial_input(input, spatial, op);
  check_parameters(input, weight, bias, spatial, options.groups, op);
  const int64_t groups = options.groups;
  const int64_t channels = in.batched.shape()[1];
  if (weight.shape()[0] != channels || channels % groups != 0)
    shape_error(op, "the weight must be (Cin, Cout / groups, *kernel) with groups " +
                        std::to_string(groups) + " dividing Cin: got input " +
                        input.shape_string() + " and weight " + weight.shape_string());
  const int64_t out_channels = weight.shape()[1] * groups;
  if (bias && bias->shape() != Shape{out_channels})
    shape_error(op,
                "bias must be (" + std::to_string(out_channels) + "), got " + bias->shape_string());
  const std::vector<int64_t> stride = per_axis(options.stride, spatial, op, "stride");
  const std::vector<int64_t> dilation = per_axis(options.dilation, spatial, op, "dilation");
  const std::vector<int64_t> padding = per_axis(options.padding, spatial, op, "padding");
  const std::vector<int64_t> extra =
      per_axis(options.output_padding, spatial, op, "output_padding");
  check_at_least(stride, 1, op, "stride");
  check_at_least(dilation, 1, op, "dilation");
  check_at_least(padding, 0, op, "padding");
  check_at_least(extra, 0, op, "output_padding");
  ConvGeometry geometry;
  geometry.groups = groups;
  geometry.stride = std::vector<int64_t>(spatial, 1);
  geometry.dilation = dilation;
  for (size_t axis = 0; axis < spatial; ++axis) {
    if (extra[axis] >= std::max(stride[axis], dilation[axis]))
      shape_error(op, "output_padding " + list_of(extra) +
                          " must be smaller than the stride or the dilation on each axis (stride " +
                          list_of(stride) + ", dilation " + list_of(dilation) + ")");
    const int64_t reach = dilation[axis] * (weight.shape()[2 + axis] - 1);
    const int64_t size = (in.batched.shape()[2 + axis] - 1) * stride[axis] - 2 * padding[axis] +
                         reach + extra[axis] + 1;
    if (size < 1 || in.batched.shape()[2 + axis] == 0)
      shape_error(op, "the output would have size " + std::to_string(size) + " on spatial axis " +
                          std::to_string(axis) + " (input " + input.shape_string() + ", weight " +
                          weight.shape_string() + ", padding " + list_of(padding) +
                          "); it must be >= 1");
    geometry.pad_before.push_back(reach - padding[axis]);
    geometry.pad_after.push_back(reach - padding[axis] + extra[axis]);
  }
  // Zeros between the input's elements (stride - 1 on each axis), then a plain convolution with
  // the kernel flipped and each group's in and out channels swapped.
  Tensor spread = in.batched;
  bool strided = false;
  for (int64_t step : stride) strided = strided || step > 1;
  if (strided) {
    DimShape pairs = {spread.dims()[0], spread.dims()[1]}, merged = pairs;
    std::vector<std::pair<Dim, Dim>> gaps = {{0, 0}, {0, 0}}, kept = {{0, pairs[0]}, {0, pairs[1]}};
    for (size_t axis = 0; axis < spatial; ++axis) {
      const int64_t size = spread.shape()[2 + axis];
      pairs.insert(pairs.end(), {Dim(size), Dim(1)});
      gaps.insert(gaps.end(), {{0, 0}, {0, stride[axis] - 1}});
      merged.emplace_back(size * stride[axis]);
      kept.emplace_back(0, (size - 1) * stride[axis] + 1);
    }
    spread = spread.reshape(pairs).pad(gaps).reshape(merged).shrink(kept);
  }
  std::vector<int64_t> kernel_axes;
  for (size_t axis = 0; axis < spatial; ++axis)
    kernel_axes.push_back(static_cast<int64_t>(3 + axis));
  Shape grouped = {groups, channels / groups, weight.shape()[1]};
  Shape flipped_shape = {out_channels, channels / groups};
  for (size_t axis = 0; axis < spatial; ++axis) {
    grouped.push_back(weight.shape()[2 + axis]);
    flipped_shape.push_back(weight.shape()[2 + axis]);
  }
  const Tensor flipped =
      weight.reshape(grouped).transpose(1, 2).flip(kernel_axes).reshape(flipped_shape);
  return in.result(convolve(spread, flipped, bias, geometry));
}

}  // namespace

Tensor conv1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
              const ConvOptions& options) {
  return conv_nd(input, weight, bias, options, 1, "conv1d");
}
Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
              const ConvOptions& options) {
  return conv_nd(input, weight, bias, options, 2, "conv2d");
}
Tensor conv3d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
              const ConvOptions& options) {
  return conv_nd(input, weight, bias, options, 3, "conv3d");
}

Tensor conv_transpose1d(const Tensor& input, const Tensor& weight,
                        const std::optional<Tensor>& bias, const ConvTransposeOptions& options) {
  return conv_transpose_nd(input, weight, bias, options, 1, "conv_transpose1d");
}
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight,
                        const std::optional<Tensor>& bias, const ConvTransposeOptions& options) {
  return conv_transpose_nd(input, weight, bias, options, 2, "conv_transpose2d");
}
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight,
                        const std::optional<Tensor>& bias, const ConvTransposeOptions& options) {
  return conv_transpose_nd(input, weight, bias, options, 3, "conv_transpose3d");
}

}  // namespace kiln::nn

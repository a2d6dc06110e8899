// Interpolation and the padding modes (kiln/conv.h): each output position reads input positions
// worked out on the host from the sizes alone, with PyTorch's arithmetic (float for every float
// dtype but float64), so the same sizes pick the same elements.

#include <kiln/conv.h>
#include <kiln/shape_ops.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "runtime/nn_checks.h"
#include "runtime/nn_window.h"
#include "runtime/tensor_internal.h"

namespace kiln::nn {
namespace {

using detail::list_of;
using detail::shape_error;

// The samples of an axis are worked out on the host, one per output position.
constexpr double kMostSamples = 2147483648.0;

// The input positions and weights one axis of an interpolation reads: out[o] = in[first[o]] *
// (1 - weight[o]) + in[second[o]] * weight[o] (nearest: second = first, weight 0).
struct AxisSamples {
  std::vector<int64_t> first, second;
  std::vector<double> weight;
};

template <typename Real>
AxisSamples axis_samples(int64_t in, int64_t out, std::optional<double> scale_factor,
                         InterpolateMode mode, bool align_corners) {
  AxisSamples samples;
  const bool linear = mode == InterpolateMode::Linear;
  Real scale;
  if (linear && align_corners)
    scale = out > 1 ? static_cast<Real>(in - 1) / static_cast<Real>(out - 1) : Real(0);
  else if (scale_factor && *scale_factor > 0)
    scale = static_cast<Real>(1.0 / *scale_factor);
  else
    scale = static_cast<Real>(in) / static_cast<Real>(out);
  for (int64_t at = 0; at < out; ++at) {
    if (!linear) {
      // PyTorch's nearest: exact halving and copying first, then floor(at * scale) in float.
      int64_t source;
      if (out == in)
        source = at;
      else if (out == 2 * in)
        source = at >> 1;
      else
        source = std::min<int64_t>(
            static_cast<int64_t>(std::floor(static_cast<float>(at) * static_cast<float>(scale))),
            in - 1);
      samples.first.push_back(source);
      samples.second.push_back(source);
      samples.weight.push_back(0);
      continue;
    }
    Real source = align_corners ? scale * static_cast<Real>(at)
                                : scale * (static_cast<Real>(at) + Real(0.5)) - Real(0.5);
    if (source < 0) source = 0;
    const int64_t low = static_cast<int64_t>(source);
    samples.first.push_back(low);
    samples.second.push_back(low + (low < in - 1 ? 1 : 0));
    samples.weight.push_back(static_cast<double>(source - static_cast<Real>(low)));
  }
  return samples;
}

// x resampled along `axis` by `samples`.
Tensor resample_axis(const Tensor& x, int64_t axis, const AxisSamples& samples, bool linear) {
  const int64_t out = static_cast<int64_t>(samples.first.size());
  const Tensor first = Tensor::from_vector(samples.first, {out}, x.device());
  const Tensor low = x.index_select(axis, first);
  if (!linear) return low;
  const Tensor high = x.index_select(axis, Tensor::from_vector(samples.second, {out}, x.device()));
  Shape along(static_cast<size_t>(x.ndim()), 1);
  along[static_cast<size_t>(axis)] = out;
  const Tensor weight = Tensor::from_vector(samples.weight, along, x.device()).cast(x.dtype());
  return low * (1.0 - weight) + high * weight;
}

// x padded on one axis by a mode other than Constant.
Tensor pad_axis(const Tensor& x, int axis, int64_t before, int64_t after, PadMode mode) {
  const int64_t size = x.shape()[static_cast<size_t>(axis)];
  std::vector<Tensor> parts;
  auto part = [&](int64_t start, int64_t stop) { return x.slice(axis, start, stop); };
  if (mode == PadMode::Reflect) {
    if (before > 0) parts.push_back(part(1, before + 1).flip({axis}));
    parts.push_back(x);
    if (after > 0) parts.push_back(part(size - 1 - after, size - 1).flip({axis}));
  } else if (mode == PadMode::Replicate) {
    auto edge = [&](int64_t at, int64_t count) {
      DimShape shape = x.dims();
      shape[static_cast<size_t>(axis)] = Dim(count);
      return part(at, at + 1).expand(shape);
    };
    if (before > 0) parts.push_back(edge(0, before));
    parts.push_back(x);
    if (after > 0) parts.push_back(edge(size - 1, after));
  } else {
    if (before > 0) parts.push_back(part(size - before, size));
    parts.push_back(x);
    if (after > 0) parts.push_back(part(0, after));
  }
  return parts.size() == 1 ? x : cat(parts, axis);
}

const char* mode_name(PadMode mode) {
  switch (mode) {
    case PadMode::Reflect:
      return "reflect";
    case PadMode::Replicate:
      return "replicate";
    case PadMode::Circular:
      return "circular";
    default:
      return "constant";
  }
}

}  // namespace

Tensor interpolate(const Tensor& input, const InterpolateOptions& options) {
  const char* op = "interpolate";
  detail::check_float(input, op, "the input");
  if (input.ndim() < 3 || input.ndim() > 5)
    shape_error(op, "the input must be (N, C, *spatial) with 1 to 3 spatial axes, got " +
                        input.shape_string());
  const size_t spatial = static_cast<size_t>(input.ndim()) - 2;
  for (size_t axis = 1; axis < input.dims().size(); ++axis)
    if (input.dims()[axis].is_symbolic())
      shape_error(
          op, "the channel and spatial axes must have fixed sizes, got " + input.shape_string());
  if (options.size.empty() == options.scale_factor.empty())
    shape_error(op, "give exactly one of size and scale_factor");
  if (options.align_corners && options.mode != InterpolateMode::Linear)
    throw ValueError("[interpolate] align_corners applies to Linear mode only");
  std::vector<int64_t> out;
  std::vector<std::optional<double>> scales(spatial);
  if (!options.size.empty()) {
    out = detail::per_axis(options.size, spatial, op, "size");
  } else {
    if (options.scale_factor.size() != 1 && options.scale_factor.size() != spatial)
      shape_error(op, "scale_factor must hold one value or one per spatial axis (" +
                          std::to_string(spatial) + ")");
    for (size_t axis = 0; axis < spatial; ++axis) {
      const double factor = options.scale_factor[options.scale_factor.size() == 1 ? 0 : axis];
      const double size = static_cast<double>(input.shape()[2 + axis]) * factor;
      if (!(factor > 0) || !std::isfinite(factor) || size >= kMostSamples)
        shape_error(op, "scale_factor " + std::to_string(factor) + " for " + input.shape_string() +
                            " must be positive, finite and give a size below 2^31");
      scales[axis] = factor;
      out.push_back(
          static_cast<int64_t>(std::floor(static_cast<double>(input.shape()[2 + axis]) * factor)));
    }
  }
  for (size_t axis = 0; axis < spatial; ++axis)
    if (out[axis] < 1 || out[axis] >= kMostSamples || input.shape()[2 + axis] < 1)
      shape_error(op, "the input " + input.shape_string() + " resampled to " + list_of(out) +
                          ": every input and output spatial size must be >= 1 (and an output "
                          "size below 2^31)");
  const bool linear = options.mode == InterpolateMode::Linear;
  Tensor result = detail::widened(input);
  for (size_t axis = 0; axis < spatial; ++axis) {
    const int64_t in = input.shape()[2 + axis];
    const AxisSamples samples =
        input.dtype() == dtypes::float64
            ? axis_samples<double>(in, out[axis], scales[axis], options.mode, options.align_corners)
            : axis_samples<float>(in, out[axis], scales[axis], options.mode, options.align_corners);
    result = resample_axis(result, static_cast<int64_t>(2 + axis), samples, linear);
  }
  return result.cast(input.dtype());
}

Tensor pad(const Tensor& input, const AxisValues& pads, PadMode mode, double value) {
  const char* op = "pad";
  check_defined(input, op);
  const size_t pairs = pads.size() / 2;
  if (pads.size() % 2 != 0 || pairs > static_cast<size_t>(input.ndim()))
    shape_error(op, "pads " + list_of(pads) +
                        " must be (before, after) pairs, at most one per axis of " +
                        input.shape_string());
  std::vector<int64_t> before(pairs), after(pairs);
  for (size_t pair = 0; pair < pairs; ++pair) {
    // The first pair is the last axis.
    before[pairs - 1 - pair] = pads[2 * pair];
    after[pairs - 1 - pair] = pads[2 * pair + 1];
  }
  const size_t lead = static_cast<size_t>(input.ndim()) - pairs;
  for (size_t axis = lead; axis < static_cast<size_t>(input.ndim()); ++axis) {
    const int64_t front = before[axis - lead], back = after[axis - lead];
    if (input.dims()[axis].is_symbolic() && (front != 0 || back != 0))
      shape_error(op, "padded axes must have fixed sizes, got " + input.shape_string());
    const int64_t size = input.shape()[axis];
    if (mode == PadMode::Constant) {
      if (size + std::min<int64_t>(front, 0) + std::min<int64_t>(back, 0) < 0)
        shape_error(op, "pads " + list_of(pads) + " crop more than axis " + std::to_string(axis) +
                            " of " + input.shape_string() + " holds");
      continue;
    }
    const bool fits = front >= 0 && back >= 0 &&
                      (mode == PadMode::Reflect     ? front < size && back < size
                       : mode == PadMode::Replicate ? size > 0 || (front == 0 && back == 0)
                                                    : front <= size && back <= size);
    if (!fits)
      shape_error(op, std::string("pads ") + list_of(pads) + " in mode " + mode_name(mode) +
                          " for axis " + std::to_string(axis) + " of " + input.shape_string() +
                          ": each must be >= 0 and " +
                          (mode == PadMode::Reflect     ? "smaller than the axis"
                           : mode == PadMode::Replicate ? "the axis non-empty"
                                                        : "at most the axis"));
  }
  if (mode == PadMode::Constant) return detail::pad_trailing(input, before, after, value);
  Tensor result = input;
  for (size_t axis = lead; axis < static_cast<size_t>(input.ndim()); ++axis)
    result =
        pad_axis(result, static_cast<int>(axis), before[axis - lead], after[axis - lead], mode);
  return result;
}

}  // namespace kiln::nn

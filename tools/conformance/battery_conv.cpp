// Convolution, pooling, interpolation and the padding modes (kiln/conv.h), each against a
// double-precision loop over output positions written from PyTorch's definitions: the input
// position each kernel tap reads, the windows' sizes and divisors, the samples' weights.

#include <kiln/conv.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "tools/conformance/battery.h"
#include "tools/conformance/nn_support.h"

namespace kiln::conformance::detail {
namespace {

using namespace nn_support;
using Ints = std::vector<int64_t>;

const std::vector<DType> kConvDtypes = {dtypes::float32, dtypes::float64, dtypes::float16,
                                        dtypes::bfloat16};

int64_t count_of(const Ints& shape) {
  int64_t count = 1;
  for (int64_t size : shape) count *= size;
  return count;
}

// Row-major position of `index` in `shape`.
int64_t offset_of(const Ints& index, const Ints& shape) {
  int64_t offset = 0;
  for (size_t axis = 0; axis < shape.size(); ++axis) offset = offset * shape[axis] + index[axis];
  return offset;
}

// Calls visit(index) for every index of `shape`, row-major.
void for_each_index(const Ints& shape, const std::function<void(const Ints&)>& visit) {
  if (count_of(shape) == 0) return;
  Ints index(shape.size(), 0);
  while (true) {
    visit(index);
    size_t axis = shape.size();
    while (axis > 0 && ++index[axis - 1] == shape[axis - 1]) index[--axis] = 0;
    if (axis == 0) return;
  }
}

Ints tail(const Shape& shape, size_t from) {
  return Ints(shape.begin() + from, shape.end());
}

struct Conv {
  Ints stride, before, dilation;  // before: the front padding
  int64_t groups = 1;
};

// out[n, co, o] = b[co] + sum x[n, ci, o s + k d - before] w[co, ci - group start, k].
Expected conv_reference(DType dtype, const std::vector<HostTensor>& in, const Conv& conv,
                        const Ints& out_spatial) {
  const auto x = as_doubles(in[0]), w = as_doubles(in[1]);
  const std::vector<double> b = in.size() > 2 ? as_doubles(in[2]) : std::vector<double>();
  const Ints x_shape = in[0].shape, w_shape = in[1].shape;
  const size_t spatial = x_shape.size() - 2;
  const int64_t batch = x_shape[0], out_channels = w_shape[0], per_group = w_shape[1];
  Ints out_shape = {batch, out_channels};
  out_shape.insert(out_shape.end(), out_spatial.begin(), out_spatial.end());
  const Ints kernel = tail(w_shape, 2);
  std::vector<double> out(count_of(out_shape)), scale(out.size());
  for_each_index(out_shape, [&](const Ints& at) {
    const int64_t co = at[1], group = co / (out_channels / conv.groups);
    double total = b.empty() ? 0 : b[co], magnitude = std::fabs(total);
    for (int64_t ci = 0; ci < per_group; ++ci)
      for_each_index(kernel, [&](const Ints& k) {
        Ints source = {at[0], group * per_group + ci};
        for (size_t axis = 0; axis < spatial; ++axis) {
          const int64_t pos =
              at[2 + axis] * conv.stride[axis] + k[axis] * conv.dilation[axis] - conv.before[axis];
          if (pos < 0 || pos >= x_shape[2 + axis]) return;
          source.push_back(pos);
        }
        Ints tap = {co, ci};
        tap.insert(tap.end(), k.begin(), k.end());
        const double term = x[offset_of(source, x_shape)] * w[offset_of(tap, w_shape)];
        total += term;
        magnitude += std::fabs(term);
      });
    out[offset_of(at, out_shape)] = total;
    scale[offset_of(at, out_shape)] = magnitude;
  });
  return result_of(dtype, out_shape, out, scale);
}

// The transposed convolution by its definition: each input element scattered through the kernel
// to position i s + k d - padding.
Expected conv_transpose_reference(DType dtype, const std::vector<HostTensor>& in,
                                  const Ints& stride, const Ints& padding, const Ints& extra,
                                  const Ints& dilation, int64_t groups) {
  const auto x = as_doubles(in[0]), w = as_doubles(in[1]);
  const std::vector<double> b = in.size() > 2 ? as_doubles(in[2]) : std::vector<double>();
  const Ints x_shape = in[0].shape, w_shape = in[1].shape;
  const size_t spatial = x_shape.size() - 2;
  const int64_t in_per_group = x_shape[1] / groups, out_per_group = w_shape[1];
  Ints out_shape = {x_shape[0], out_per_group * groups};
  for (size_t axis = 0; axis < spatial; ++axis)
    out_shape.push_back((x_shape[2 + axis] - 1) * stride[axis] - 2 * padding[axis] +
                        dilation[axis] * (w_shape[2 + axis] - 1) + extra[axis] + 1);
  std::vector<double> out(count_of(out_shape), 0.0), scale(out.size(), 0.0);
  for_each_index(out_shape, [&](const Ints& at) {
    if (!b.empty()) {
      out[offset_of(at, out_shape)] = b[at[1]];
      scale[offset_of(at, out_shape)] = std::fabs(b[at[1]]);
    }
  });
  const Ints kernel = tail(w_shape, 2);
  for_each_index(x_shape, [&](const Ints& source) {
    const int64_t ci = source[1], group = ci / in_per_group;
    for (int64_t local = 0; local < out_per_group; ++local)
      for_each_index(kernel, [&](const Ints& k) {
        Ints target = {source[0], group * out_per_group + local};
        for (size_t axis = 0; axis < spatial; ++axis) {
          const int64_t pos =
              source[2 + axis] * stride[axis] + k[axis] * dilation[axis] - padding[axis];
          if (pos < 0 || pos >= out_shape[2 + axis]) return;
          target.push_back(pos);
        }
        Ints tap = {ci, local};
        tap.insert(tap.end(), k.begin(), k.end());
        const double term = x[offset_of(source, x_shape)] * w[offset_of(tap, w_shape)];
        out[offset_of(target, out_shape)] += term;
        scale[offset_of(target, out_shape)] += std::fabs(term);
      });
  });
  return result_of(dtype, out_shape, out, scale);
}

struct Pool {
  Ints kernel, stride, padding, dilation;
  bool ceil_mode = false, count_include_pad = true;
  // PyTorch's output size: the last window must start inside the input or the front padding.
  Ints out_sizes(const Ints& in) const {
    Ints sizes;
    for (size_t axis = 0; axis < in.size(); ++axis) {
      const int64_t span = in[axis] + 2 * padding[axis] - dilation[axis] * (kernel[axis] - 1) - 1;
      int64_t out =
          (ceil_mode ? (span + stride[axis] - 1) / stride[axis] : span / stride[axis]) + 1;
      if (ceil_mode && (out - 1) * stride[axis] >= in[axis] + padding[axis]) --out;
      sizes.push_back(out);
    }
    return sizes;
  }
};

// Max pooling's values (want_indices false) or first positions of the maximum (a NaN first).
Expected max_pool_reference(DType dtype, const HostTensor& input, const Pool& pool,
                            bool want_indices) {
  const auto x = as_doubles(input);
  const Ints shape = input.shape, in = tail(shape, 2);
  Ints out_shape = {shape[0], shape[1]};
  const Ints sizes = pool.out_sizes(in);
  out_shape.insert(out_shape.end(), sizes.begin(), sizes.end());
  HostTensor result(want_indices ? dtypes::int64 : dtype, out_shape);
  for_each_index(out_shape, [&](const Ints& at) {
    double best = -std::numeric_limits<double>::infinity();
    int64_t best_at = -1;
    for_each_index(pool.kernel, [&](const Ints& k) {
      Ints source = {at[0], at[1]}, spatial_pos;
      for (size_t axis = 0; axis < in.size(); ++axis) {
        const int64_t pos =
            at[2 + axis] * pool.stride[axis] + k[axis] * pool.dilation[axis] - pool.padding[axis];
        if (pos < 0 || pos >= in[axis]) return;
        source.push_back(pos);
        spatial_pos.push_back(pos);
      }
      const double value = x[offset_of(source, shape)];
      // PyTorch's loop: a greater value or any NaN takes the place (so the last NaN wins).
      if (best_at < 0 || value > best || std::isnan(value)) {
        best = value;
        best_at = offset_of(spatial_pos, in);
      }
    });
    result.data[offset_of(at, out_shape)] =
        make_scalar(result.dtype, want_indices ? static_cast<double>(best_at) : best);
  });
  return Expected(result);
}

// PyTorch's average: the window clipped to the padded input (never the ceil_mode overhang) for
// count_include_pad, to the input otherwise.
Expected avg_pool_reference(DType dtype, const HostTensor& input, const Pool& pool) {
  const auto x = as_doubles(input);
  const Ints shape = input.shape, in = tail(shape, 2);
  Ints out_shape = {shape[0], shape[1]};
  const Ints sizes = pool.out_sizes(in);
  out_shape.insert(out_shape.end(), sizes.begin(), sizes.end());
  std::vector<double> out(count_of(out_shape)), scale(out.size());
  for_each_index(out_shape, [&](const Ints& at) {
    double total = 0, magnitude = 0, padded_count = 1, inside_count = 1;
    for (size_t axis = 0; axis < in.size(); ++axis) {
      const int64_t start = at[2 + axis] * pool.stride[axis] - pool.padding[axis];
      const int64_t stop = std::min(start + pool.kernel[axis], in[axis] + pool.padding[axis]);
      padded_count *= static_cast<double>(stop - start);
      inside_count *=
          static_cast<double>(std::min<int64_t>(stop, in[axis]) - std::max<int64_t>(start, 0));
    }
    for_each_index(pool.kernel, [&](const Ints& k) {
      Ints source = {at[0], at[1]};
      for (size_t axis = 0; axis < in.size(); ++axis) {
        const int64_t pos = at[2 + axis] * pool.stride[axis] + k[axis] - pool.padding[axis];
        if (pos < 0 || pos >= in[axis]) return;
        source.push_back(pos);
      }
      total += x[offset_of(source, shape)];
      magnitude += std::fabs(x[offset_of(source, shape)]);
    });
    const double divisor = pool.count_include_pad ? padded_count : inside_count;
    out[offset_of(at, out_shape)] = total / divisor;
    scale[offset_of(at, out_shape)] = magnitude / divisor + std::fabs(total / divisor);
  });
  return result_of(dtype, out_shape, out, scale);
}

Expected adaptive_reference(DType dtype, const HostTensor& input, const Ints& sizes) {
  const auto x = as_doubles(input);
  const Ints shape = input.shape, in = tail(shape, 2);
  Ints out_shape = {shape[0], shape[1]};
  out_shape.insert(out_shape.end(), sizes.begin(), sizes.end());
  std::vector<double> out(count_of(out_shape)), scale(out.size());
  for_each_index(out_shape, [&](const Ints& at) {
    Ints start, extent;
    for (size_t axis = 0; axis < in.size(); ++axis) {
      const int64_t o = at[2 + axis], first = o * in[axis] / sizes[axis];
      start.push_back(first);
      extent.push_back((((o + 1) * in[axis] + sizes[axis] - 1) / sizes[axis]) - first);
    }
    double total = 0, magnitude = 0;
    for_each_index(extent, [&](const Ints& k) {
      Ints source = {at[0], at[1]};
      for (size_t axis = 0; axis < in.size(); ++axis) source.push_back(start[axis] + k[axis]);
      total += x[offset_of(source, shape)];
      magnitude += std::fabs(x[offset_of(source, shape)]);
    });
    const double count = static_cast<double>(count_of(extent));
    out[offset_of(at, out_shape)] = total / count;
    scale[offset_of(at, out_shape)] = magnitude / count + std::fabs(total / count);
  });
  return result_of(dtype, out_shape, out, scale);
}

// PyTorch's sample positions for one axis: (low, high, weight of high).
struct Sample {
  int64_t low, high;
  double weight;
};
Sample sample_of(int64_t at, int64_t in, int64_t out, double scale_factor, bool linear,
                 bool align_corners, bool wide) {
  if (!linear) {
    int64_t source;
    if (out == in)
      source = at;
    else if (out == 2 * in)
      source = at / 2;
    else {
      const float scale = scale_factor > 0 ? static_cast<float>(1.0 / scale_factor)
                                           : static_cast<float>(in) / static_cast<float>(out);
      source = std::min<int64_t>(static_cast<int64_t>(std::floor(static_cast<float>(at) * scale)),
                                 in - 1);
    }
    return {source, source, 0.0};
  }
  // Linear: the source position in the dtype's arithmetic (double for float64, else float).
  auto compute = [&](auto zero) {
    using Real = decltype(zero);
    Real scale;
    if (align_corners)
      scale = out > 1 ? Real(in - 1) / Real(out - 1) : Real(0);
    else if (scale_factor > 0)
      scale = static_cast<Real>(1.0 / scale_factor);
    else
      scale = Real(in) / Real(out);
    Real source = align_corners ? scale * Real(at) : scale * (Real(at) + Real(0.5)) - Real(0.5);
    if (source < 0) source = 0;
    const int64_t low = static_cast<int64_t>(source);
    return Sample{low, low + (low < in - 1 ? 1 : 0), static_cast<double>(source - Real(low))};
  };
  return wide ? compute(0.0) : compute(0.0f);
}

Expected interpolate_reference(DType dtype, const HostTensor& input, const Ints& sizes,
                               const std::vector<double>& factors, bool linear, bool align) {
  const auto x = as_doubles(input);
  const Ints shape = input.shape, in = tail(shape, 2);
  Ints out_shape = {shape[0], shape[1]};
  out_shape.insert(out_shape.end(), sizes.begin(), sizes.end());
  std::vector<double> out(count_of(out_shape)), scale(out.size());
  const Ints corners(in.size(), 2);
  for_each_index(out_shape, [&](const Ints& at) {
    std::vector<Sample> samples;
    for (size_t axis = 0; axis < in.size(); ++axis)
      samples.push_back(sample_of(at[2 + axis], in[axis], sizes[axis],
                                  factors.empty() ? 0.0 : factors[axis], linear, align,
                                  dtype == dtypes::float64));
    double total = 0, magnitude = 0;
    for_each_index(corners, [&](const Ints& corner) {
      Ints source = {at[0], at[1]};
      double weight = 1;
      for (size_t axis = 0; axis < in.size(); ++axis) {
        const Sample& sample = samples[axis];
        source.push_back(corner[axis] ? sample.high : sample.low);
        weight *= corner[axis] ? sample.weight : 1 - sample.weight;
      }
      if (weight == 0) return;
      total += weight * x[offset_of(source, shape)];
      magnitude += std::fabs(weight * x[offset_of(source, shape)]);
    });
    out[offset_of(at, out_shape)] = total;
    scale[offset_of(at, out_shape)] = magnitude;
  });
  return result_of(dtype, out_shape, out, scale);
}

std::string ints_code(const Ints& values) {
  std::string text = "{";
  for (size_t at = 0; at < values.size(); ++at)
    text += (at ? ", " : "") + std::to_string(values[at]);
  return text + "}";
}

void add_conv(BatteryBuilder& builder) {
  struct Spec {
    const char* op;
    Shape x, w;
    bool bias;
    Ints stride, padding, dilation;
    int64_t groups;
    bool same;
    const char* layout;
  };
  const std::vector<Spec> specs = {
      {"conv1d", {2, 4, 9}, {6, 2, 3}, true, {2}, {1}, {2}, 2, false, "contiguous"},
      {"conv2d", {2, 3, 7, 6}, {4, 3, 3, 3}, true, {1}, {1}, {1}, 1, false, "contiguous"},
      {"conv2d", {2, 3, 7, 6}, {4, 3, 3, 3}, false, {1}, {1}, {1}, 1, false, "permuted"},
      {"conv2d", {1, 4, 9, 8}, {6, 2, 3, 2}, true, {2, 1}, {1, 0}, {1, 2}, 2, false, "flipped"},
      {"conv2d", {1, 2, 6, 5}, {3, 2, 4, 3}, true, {1}, {0}, {1, 2}, 1, true, "contiguous"},
      {"conv2d", {2, 5, 4, 4}, {3, 5, 1, 1}, false, {2}, {0}, {1}, 1, false, "contiguous"},
      {"conv2d", {1, 6, 5, 5}, {6, 1, 3, 3}, true, {2}, {1}, {1}, 6, false, "padded"},
      {"conv3d",
       {1, 2, 5, 4, 6},
       {3, 2, 3, 2, 3},
       true,
       {1, 2, 1},
       {1, 0, 1},
       {1},
       1,
       false,
       "contiguous"},
      // A stride past the input: one window per axis.
      {"conv1d", {2, 3, 5}, {2, 3, 2}, false, {13}, {0}, {2}, 1, false, "contiguous"},
  };
  for (DType dtype : kConvDtypes)
    for (const Spec& spec : specs) {
      const size_t spatial = spec.x.size() - 2;
      auto expand = [&](const Ints& values) {
        return values.size() == 1 ? Ints(spatial, values[0]) : values;
      };
      Conv conv{expand(spec.stride), {}, expand(spec.dilation), spec.groups};
      Ints out_spatial;
      for (size_t axis = 0; axis < spatial; ++axis) {
        const int64_t reach = conv.dilation[axis] * (spec.w[2 + axis] - 1);
        const int64_t before = spec.same ? reach / 2 : expand(spec.padding)[axis];
        const int64_t total = spec.same ? reach : 2 * before;
        conv.before.push_back(before);
        out_spatial.push_back((spec.x[2 + axis] + total - reach - 1) / conv.stride[axis] + 1);
      }
      std::vector<InputSpec> inputs = {input(dtype, spec.x, Values::Small, 0, spec.layout),
                                       input(dtype, spec.w, Values::Small, 1)};
      if (spec.bias) inputs.push_back(input(dtype, {spec.w[0]}, Values::Small, 2));
      nn::ConvOptions options{spec.stride, spec.padding, spec.dilation, spec.groups};
      if (spec.same) options.padding = nn::ConvPadding::same();
      const std::string op = spec.op;
      const std::string code = "nn::" + op + "(x, w, " + (spec.bias ? "b" : "{}") +
                               ", {.stride = " + ints_code(spec.stride) + ", .padding = " +
                               (spec.same ? "nn::ConvPadding::same()" : ints_code(spec.padding)) +
                               ", .dilation = " + ints_code(spec.dilation) +
                               ", .groups = " + std::to_string(spec.groups) + "})";
      builder.add(make_case(
          "conv", op, inputs,
          [op, options, bias = spec.bias](const std::vector<Tensor>& in) {
            const std::optional<Tensor> b = bias ? std::optional<Tensor>(in[2]) : std::nullopt;
            if (op == "conv1d") return nn::conv1d(in[0], in[1], b, options);
            if (op == "conv2d") return nn::conv2d(in[0], in[1], b, options);
            return nn::conv3d(in[0], in[1], b, options);
          },
          [dtype, conv, out_spatial](const std::vector<HostTensor>& in) {
            return conv_reference(dtype, in, conv, out_spatial);
          },
          code, nn_tolerance(dtype),
          ints_code(spec.w) + (spec.same ? " same" : "") + " s" + ints_code(spec.stride) + " p" +
              ints_code(spec.padding) + " d" + ints_code(spec.dilation) + " g" +
              std::to_string(spec.groups)));
    }
}

void add_conv_transpose(BatteryBuilder& builder) {
  struct Spec {
    const char* op;
    Shape x, w;
    bool bias;
    Ints stride, padding, extra, dilation;
    int64_t groups;
  };
  const std::vector<Spec> specs = {
      {"conv_transpose1d", {2, 4, 5}, {4, 3, 3}, true, {2}, {1}, {1}, {1}, 2},
      {"conv_transpose2d", {1, 3, 4, 5}, {3, 2, 3, 3}, true, {2, 3}, {1, 0}, {1, 2}, {1}, 1},
      {"conv_transpose2d", {1, 2, 3, 3}, {2, 2, 2, 3}, false, {1}, {1}, {0}, {2}, 1},
      {"conv_transpose3d", {1, 2, 3, 2, 3}, {2, 2, 2, 2, 2}, true, {2}, {0}, {0}, {1}, 1},
      // Padding past dilation (kernel - 1): the full output cropped.
      {"conv_transpose2d", {1, 2, 4, 4}, {2, 3, 2, 2}, true, {3}, {2, 3}, {1}, {1}, 1},
  };
  for (DType dtype : kConvDtypes)
    for (const Spec& spec : specs) {
      const size_t spatial = spec.x.size() - 2;
      auto expand = [&](const Ints& values) {
        return values.size() == 1 ? Ints(spatial, values[0]) : values;
      };
      std::vector<InputSpec> inputs = {input(dtype, spec.x, Values::Small),
                                       input(dtype, spec.w, Values::Small, 1)};
      if (spec.bias) inputs.push_back(input(dtype, {spec.w[1] * spec.groups}, Values::Small, 2));
      const nn::ConvTransposeOptions options{spec.stride, spec.padding, spec.extra, spec.dilation,
                                             spec.groups};
      const std::string op = spec.op;
      const std::string code = "nn::" + op + "(x, w, " + (spec.bias ? "b" : "{}") +
                               ", {.stride = " + ints_code(spec.stride) +
                               ", .padding = " + ints_code(spec.padding) +
                               ", .output_padding = " + ints_code(spec.extra) +
                               ", .dilation = " + ints_code(spec.dilation) +
                               ", .groups = " + std::to_string(spec.groups) + "})";
      builder.add(make_case(
          "conv", op, inputs,
          [op, options, bias = spec.bias](const std::vector<Tensor>& in) {
            const std::optional<Tensor> b = bias ? std::optional<Tensor>(in[2]) : std::nullopt;
            if (op == "conv_transpose1d") return nn::conv_transpose1d(in[0], in[1], b, options);
            if (op == "conv_transpose2d") return nn::conv_transpose2d(in[0], in[1], b, options);
            return nn::conv_transpose3d(in[0], in[1], b, options);
          },
          [dtype, s = expand(spec.stride), p = expand(spec.padding), e = expand(spec.extra),
           d = expand(spec.dilation), g = spec.groups](const std::vector<HostTensor>& in) {
            return conv_transpose_reference(dtype, in, s, p, e, d, g);
          },
          code, nn_tolerance(dtype),
          ints_code(spec.w) + " s" + ints_code(spec.stride) + " p" + ints_code(spec.padding) +
              " op" + ints_code(spec.extra) + " d" + ints_code(spec.dilation) + " g" +
              std::to_string(spec.groups)));
    }
}

void add_pools(BatteryBuilder& builder) {
  struct Spec {
    const char* op;  // max, indices or avg
    Shape x;
    Pool pool;
  };
  const std::vector<Spec> specs = {
      {"max", {2, 3, 11}, {{3}, {2}, {1}, {1}, true, true}},
      {"max", {2, 3, 7, 8}, {{3, 2}, {2, 2}, {1, 1}, {1, 2}, false, true}},
      {"max", {2, 3, 7, 8}, {{3, 3}, {2, 2}, {1, 1}, {1, 1}, true, true}},
      {"max", {1, 2, 5, 6, 4}, {{2, 2, 2}, {2, 2, 2}, {0, 0, 0}, {1, 1, 1}, false, true}},
      // A kernel past the padded input, which ceil_mode still gives one window.
      {"max", {2, 3, 1}, {{4}, {2}, {1}, {1}, true, true}},
      {"max", {2, 3, 5}, {{2}, {13}, {0}, {2}, false, true}},
      {"indices", {2, 3, 11}, {{3}, {2}, {1}, {1}, true, true}},
      {"indices", {2, 3, 7, 8}, {{3, 2}, {2, 2}, {1, 1}, {1, 2}, true, true}},
      {"indices", {1, 2, 5, 6, 4}, {{2, 3, 2}, {2, 2, 1}, {1, 1, 0}, {1, 1, 1}, false, true}},
      {"avg", {2, 3, 7, 8}, {{3, 3}, {2, 2}, {1, 1}, {1, 1}, true, true}},
      {"avg", {2, 3, 7, 8}, {{3, 3}, {2, 2}, {1, 1}, {1, 1}, true, false}},
      {"avg", {2, 3, 13}, {{4}, {3}, {2}, {1}, true, false}},
      {"avg", {2, 3, 13}, {{4}, {3}, {2}, {1}, false, true}},
      {"avg", {1, 2, 5, 4, 6}, {{2, 3, 2}, {2, 1, 2}, {0, 1, 1}, {1, 1, 1}, false, true}},
  };
  for (DType dtype : kConvDtypes)
    for (const Spec& spec : specs) {
      const size_t spatial = spec.x.size() - 2;
      const std::string kind = spec.op;
      const std::string op = (kind == "avg" ? "avg_pool" : "max_pool") + std::to_string(spatial) +
                             "d" + (kind == "indices" ? "_with_indices" : "");
      const Pool pool = spec.pool;
      const nn::PoolOptions options{pool.kernel,   pool.stride,    pool.padding,
                                    pool.dilation, pool.ceil_mode, pool.count_include_pad};
      const std::string code =
          "nn::" + op + "(x, {.kernel_size = " + ints_code(pool.kernel) +
          ", .stride = " + ints_code(pool.stride) + ", .padding = " + ints_code(pool.padding) +
          ", .dilation = " + ints_code(pool.dilation) +
          ", .ceil_mode = " + (pool.ceil_mode ? "true" : "false") +
          ", .count_include_pad = " + (pool.count_include_pad ? "true" : "false") + "})" +
          (kind == "indices" ? ".second" : "");
      builder.add(make_case(
          "conv", op,
          {input(dtype, spec.x, kind == "avg" ? Values::Small : Values::General, 0,
                 kind == "max" ? "flipped" : "contiguous")},
          [kind, spatial, options](const std::vector<Tensor>& in) {
            if (kind == "avg")
              return spatial == 1   ? nn::avg_pool1d(in[0], options)
                     : spatial == 2 ? nn::avg_pool2d(in[0], options)
                                    : nn::avg_pool3d(in[0], options);
            if (kind == "indices")
              return (spatial == 1   ? nn::max_pool1d_with_indices(in[0], options)
                      : spatial == 2 ? nn::max_pool2d_with_indices(in[0], options)
                                     : nn::max_pool3d_with_indices(in[0], options))
                  .second;
            return spatial == 1   ? nn::max_pool1d(in[0], options)
                   : spatial == 2 ? nn::max_pool2d(in[0], options)
                                  : nn::max_pool3d(in[0], options);
          },
          [dtype, kind, pool](const std::vector<HostTensor>& in) {
            if (kind == "avg") return avg_pool_reference(dtype, in[0], pool);
            return max_pool_reference(dtype, in[0], pool, kind == "indices");
          },
          code, kind == "avg" ? nn_tolerance(dtype) : exact_tolerance(true),
          "k" + ints_code(pool.kernel) + " s" + ints_code(pool.stride) + " p" +
              ints_code(pool.padding) + " d" + ints_code(pool.dilation) +
              (pool.ceil_mode ? " ceil" : "") + (pool.count_include_pad ? "" : " exclude_pad")));
    }
}

void add_adaptive_and_interpolate(BatteryBuilder& builder) {
  struct Adaptive {
    Shape x;
    Ints out;
  };
  const std::vector<Adaptive> adaptive = {{{2, 3, 10}, {4}},
                                          {{2, 3, 7, 9}, {3, 4}},
                                          {{2, 3, 7, 9}, {7, 3}},
                                          {{1, 2, 4, 6, 5}, {2, 3, 2}}};
  struct Resample {
    Shape x;
    Ints size;
    std::vector<double> factors;
    bool linear, align;
  };
  const std::vector<Resample> resample = {{{1, 2, 5, 7}, {8, 3}, {}, false, false},
                                          {{1, 2, 5, 7}, {}, {2.0, 2.0}, false, false},
                                          {{2, 3, 6}, {10}, {}, true, false},
                                          {{1, 2, 5, 4}, {7, 9}, {}, true, true},
                                          {{1, 2, 6, 5}, {3, 2}, {}, true, false},
                                          {{1, 1, 3, 4, 5}, {}, {1.5, 1.5, 1.5}, true, false},
                                          {{1, 1, 3, 4, 5}, {5, 2, 7}, {}, false, false}};
  for (DType dtype : kConvDtypes) {
    for (const Adaptive& spec : adaptive) {
      const size_t spatial = spec.x.size() - 2;
      const std::string op = "adaptive_avg_pool" + std::to_string(spatial) + "d";
      builder.add(make_case(
          "conv", op, {input(dtype, spec.x, Values::Small)},
          [spatial, out = spec.out](const std::vector<Tensor>& in) {
            return spatial == 1   ? nn::adaptive_avg_pool1d(in[0], out)
                   : spatial == 2 ? nn::adaptive_avg_pool2d(in[0], out)
                                  : nn::adaptive_avg_pool3d(in[0], out);
          },
          [dtype, out = spec.out](const std::vector<HostTensor>& in) {
            return adaptive_reference(dtype, in[0], out);
          },
          "nn::" + op + "(x, " + ints_code(spec.out) + ")", nn_tolerance(dtype),
          "to " + ints_code(spec.out)));
    }
    for (const Resample& spec : resample) {
      Ints sizes = spec.size;
      if (sizes.empty())
        for (size_t axis = 0; axis + 2 < spec.x.size(); ++axis)
          sizes.push_back(static_cast<int64_t>(
              std::floor(static_cast<double>(spec.x[2 + axis]) * spec.factors[axis])));
      nn::InterpolateOptions options;
      options.size = spec.size;
      options.scale_factor = spec.factors;
      options.mode = spec.linear ? nn::InterpolateMode::Linear : nn::InterpolateMode::Nearest;
      options.align_corners = spec.align;
      std::string factors = "{";
      for (double factor : spec.factors) factors += std::to_string(factor) + ",";
      const std::string variant = std::string(spec.linear ? "linear" : "nearest") +
                                  (spec.align ? " align_corners" : "") + " to " + ints_code(sizes) +
                                  (spec.factors.empty() ? "" : " by scale");
      builder.add(make_case(
          "conv", "interpolate", {input(dtype, spec.x, Values::Small)},
          [options](const std::vector<Tensor>& in) { return nn::interpolate(in[0], options); },
          [dtype, sizes, spec](const std::vector<HostTensor>& in) {
            return interpolate_reference(dtype, in[0], sizes, spec.factors, spec.linear,
                                         spec.align);
          },
          "nn::interpolate(x, {.size = " + ints_code(spec.size) + ", .scale_factor = " + factors +
              "}, .mode = nn::InterpolateMode::" + (spec.linear ? "Linear" : "Nearest") +
              ", .align_corners = " + (spec.align ? "true" : "false") + "})",
          nn_tolerance(dtype), variant));
    }
  }
}

void add_pad_modes(BatteryBuilder& builder) {
  struct Spec {
    nn::PadMode mode;
    const char* name;
    const char* enum_name;
    Ints pads;
  };
  const std::vector<Spec> specs = {{nn::PadMode::Reflect, "reflect", "Reflect", {2, 1, 3, 4}},
                                   {nn::PadMode::Replicate, "replicate", "Replicate", {3, 0, 1, 6}},
                                   {nn::PadMode::Circular, "circular", "Circular", {6, 2, 0, 5}},
                                   {nn::PadMode::Constant, "constant", "Constant", {-1, 2, 1, -2}}};
  const Shape shape = {2, 5, 6};
  for (DType dtype :
       {dtypes::float32, dtypes::float16, dtypes::int32, dtypes::uint8, dtypes::bool_})
    for (const Spec& spec : specs) {
      builder.add(make_case(
          "conv", std::string("pad_") + spec.name,
          {input(dtype, shape, Values::General, 0, "permuted")},
          [spec](const std::vector<Tensor>& in) { return nn::pad(in[0], spec.pads, spec.mode, 1); },
          [spec, shape](const std::vector<HostTensor>& in) {
            // Axis 2 takes pads[0..1], axis 1 pads[2..3].
            const int64_t before[3] = {0, spec.pads[2], spec.pads[0]};
            const int64_t after[3] = {0, spec.pads[3], spec.pads[1]};
            Ints out_shape;
            for (int axis = 0; axis < 3; ++axis)
              out_shape.push_back(shape[axis] + before[axis] + after[axis]);
            HostTensor result(in[0].dtype, out_shape);
            for_each_index(out_shape, [&](const Ints& at) {
              Ints source;
              bool inside = true;
              for (int axis = 0; axis < 3; ++axis) {
                const int64_t size = shape[axis];
                int64_t pos = at[axis] - before[axis];
                if (spec.mode == nn::PadMode::Reflect) {
                  if (pos < 0) pos = -pos;
                  if (pos >= size) pos = 2 * (size - 1) - pos;
                } else if (spec.mode == nn::PadMode::Replicate) {
                  pos = std::clamp<int64_t>(pos, 0, size - 1);
                } else if (spec.mode == nn::PadMode::Circular) {
                  pos = ((pos % size) + size) % size;
                } else if (pos < 0 || pos >= size) {
                  inside = false;
                }
                source.push_back(pos);
              }
              result.data[offset_of(at, out_shape)] =
                  inside ? in[0].data[offset_of(source, shape)] : make_scalar(in[0].dtype, 1);
            });
            return Expected(result);
          },
          "nn::pad(x, " + ints_code(spec.pads) + ", nn::PadMode::" + spec.enum_name + ", 1)",
          exact_tolerance(true), ints_code(spec.pads)));
    }
}

}  // namespace

void add_conv_cases(BatteryBuilder& builder) {
  add_conv(builder);
  add_conv_transpose(builder);
  add_pools(builder);
  add_adaptive_and_interpolate(builder);
  add_pad_modes(builder);
}

}  // namespace kiln::conformance::detail

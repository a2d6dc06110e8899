// nn building blocks (kiln/nn.h): linear, the normalizations, attention, one_hot and the losses,
// each against a double-precision loop written from PyTorch's definition. Tolerances are
// relative to a scale of the terms that round (nn_tolerance).

#include <kiln/nn.h>

#include <cmath>
#include <functional>
#include <limits>

#include "tools/conformance/battery.h"
#include "tools/conformance/nn_support.h"

namespace kiln::conformance::detail {
namespace {

using namespace nn_support;

const std::vector<DType> kNnDtypes = {dtypes::float32, dtypes::float64, dtypes::float16,
                                      dtypes::bfloat16};

std::vector<int64_t> as_ints(const HostTensor& tensor) {
  std::vector<int64_t> values;
  for (const Scalar& item : tensor.data) values.push_back(item.i);
  return values;
}

// Each line (its elements' offsets) normalized: (x - mean) / sqrt(var + eps), the variance
// biased; with `rms`, x / sqrt(mean(x^2) + eps).
void normalize_lines(const std::vector<std::vector<int64_t>>& lines, const std::vector<double>& x,
                     double eps, bool rms, std::vector<double>& out) {
  for (const std::vector<int64_t>& line : lines) {
    const double n = static_cast<double>(line.size());
    double mean = 0;
    if (!rms) {
      for (int64_t at : line) mean += x[at];
      mean /= n;
    }
    double variance = 0;
    for (int64_t at : line) variance += (x[at] - mean) * (x[at] - mean);
    variance /= n;
    for (int64_t at : line) out[at] = (x[at] - mean) / std::sqrt(variance + eps);
  }
}

// Lines of a (R, D) layout: each row.
std::vector<std::vector<int64_t>> rows_of(int64_t rows, int64_t length) {
  std::vector<std::vector<int64_t>> lines(rows);
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t column = 0; column < length; ++column) lines[row].push_back(row * length + column);
  return lines;
}

void add_layers(BatteryBuilder& builder) {
  for (DType dtype : kNnDtypes) {
    const Tolerance tolerance = nn_tolerance(dtype);
    builder.add(make_case(
        "nn", "linear",
        {input(dtype, {5, 7}, Values::Small), input(dtype, {3, 7}, Values::Small, 1),
         input(dtype, {3}, Values::Small, 2)},
        [](const std::vector<Tensor>& in) { return nn::linear(in[0], in[1], in[2]); },
        [dtype](const std::vector<HostTensor>& in) {
          const auto x = as_doubles(in[0]), w = as_doubles(in[1]), b = as_doubles(in[2]);
          std::vector<double> out(15), scale(15);
          for (int row = 0; row < 5; ++row)
            for (int o = 0; o < 3; ++o) {
              double total = b[o], magnitude = std::fabs(b[o]);
              for (int j = 0; j < 7; ++j) {
                total += x[row * 7 + j] * w[o * 7 + j];
                magnitude += std::fabs(x[row * 7 + j] * w[o * 7 + j]);
              }
              out[row * 3 + o] = total;
              scale[row * 3 + o] = magnitude;
            }
          return result_of(dtype, {5, 3}, out, scale);
        },
        "nn::linear(x, w, b)", tolerance));

    // Normalizations, with weight and bias: scale |w| (|y| + 1) + |b|.
    auto affine_scale = [](const std::vector<double>& y, const std::vector<double>& w,
                           const std::vector<double>& b, const std::vector<int64_t>& channel) {
      std::vector<double> out(y.size()), scale(y.size());
      for (size_t at = 0; at < y.size(); ++at) {
        const int64_t c = channel[at];
        out[at] = y[at] * w[c] + b[c];
        scale[at] = std::fabs(w[c]) * (std::fabs(y[at]) + 1) + std::fabs(b[c]);
      }
      return std::make_pair(out, scale);
    };
    builder.add(make_case(
        "nn", "layer_norm",
        {input(dtype, {6, 13}, Values::Small), input(dtype, {13}, Values::Small, 1),
         input(dtype, {13}, Values::Small, 2)},
        [](const std::vector<Tensor>& in) { return nn::layer_norm(in[0], {13}, in[1], in[2]); },
        [dtype, affine_scale](const std::vector<HostTensor>& in) {
          const auto x = as_doubles(in[0]);
          std::vector<double> y(x.size());
          normalize_lines(rows_of(6, 13), x, 1e-5, false, y);
          std::vector<int64_t> channel(x.size());
          for (size_t at = 0; at < x.size(); ++at) channel[at] = static_cast<int64_t>(at % 13);
          const auto [out, scale] = affine_scale(y, as_doubles(in[1]), as_doubles(in[2]), channel);
          return result_of(dtype, {6, 13}, out, scale);
        },
        "nn::layer_norm(x, {13}, w, b)", tolerance));
    builder.add(make_case(
        "nn", "rms_norm",
        {input(dtype, {6, 13}, Values::Small), input(dtype, {13}, Values::Small, 1)},
        [](const std::vector<Tensor>& in) { return nn::rms_norm(in[0], {13}, in[1]); },
        [dtype, affine_scale](const std::vector<HostTensor>& in) {
          const auto x = as_doubles(in[0]);
          std::vector<double> y(x.size());
          // The epsilon of the dtype it computes in: float32's for the 16-bit floats.
          const double eps = epsilon_of(dtype == dtypes::float64 ? dtype : dtypes::float32);
          normalize_lines(rows_of(6, 13), x, eps, true, y);
          std::vector<int64_t> channel(x.size());
          for (size_t at = 0; at < x.size(); ++at) channel[at] = static_cast<int64_t>(at % 13);
          const auto [out, scale] =
              affine_scale(y, as_doubles(in[1]), std::vector<double>(13, 0.0), channel);
          return result_of(dtype, {6, 13}, out, scale);
        },
        "nn::rms_norm(x, {13}, w)", tolerance));
    // (N, C, L) = (2, 6, 5): group_norm in 3 groups, batch_norm per channel.
    auto channel_of = [](size_t at) { return static_cast<int64_t>(at / 5 % 6); };
    builder.add(make_case(
        "nn", "group_norm",
        {input(dtype, {2, 6, 5}, Values::Small), input(dtype, {6}, Values::Small, 1),
         input(dtype, {6}, Values::Small, 2)},
        [](const std::vector<Tensor>& in) { return nn::group_norm(in[0], 3, in[1], in[2]); },
        [dtype, affine_scale, channel_of](const std::vector<HostTensor>& in) {
          const auto x = as_doubles(in[0]);
          std::vector<double> y(x.size());
          normalize_lines(rows_of(6, 10), x, 1e-5, false, y);  // a group: 2 channels x 5
          std::vector<int64_t> channel(x.size());
          for (size_t at = 0; at < x.size(); ++at) channel[at] = channel_of(at);
          const auto [out, scale] = affine_scale(y, as_doubles(in[1]), as_doubles(in[2]), channel);
          return result_of(dtype, {2, 6, 5}, out, scale);
        },
        "nn::group_norm(x, 3, w, b)", tolerance));
    for (const bool training : {true, false}) {
      builder.add(make_case(
          "nn", training ? "batch_norm(train)" : "batch_norm(eval)",
          {input(dtype, {2, 6, 5}, Values::Small), input(dtype, {6}, Values::Small, 1),
           input(dtype, {6}, Values::Positive, 2), input(dtype, {6}, Values::Small, 3)},
          [training](const std::vector<Tensor>& in) {
            Tensor mean = in[1].contiguous().realize(), variance = in[2].contiguous().realize();
            return nn::batch_norm(in[0], &mean, &variance, in[3], {}, training);
          },
          [dtype, training, affine_scale, channel_of](const std::vector<HostTensor>& in) {
            const auto x = as_doubles(in[0]), running_mean = as_doubles(in[1]),
                       running_var = as_doubles(in[2]);
            std::vector<double> y(x.size());
            std::vector<std::vector<int64_t>> lines(6);
            for (size_t at = 0; at < x.size(); ++at)
              lines[channel_of(at)].push_back(static_cast<int64_t>(at));
            if (training) {
              normalize_lines(lines, x, 1e-5, false, y);
            } else {
              for (size_t at = 0; at < x.size(); ++at) {
                const int64_t c = channel_of(at);
                y[at] = (x[at] - running_mean[c]) / std::sqrt(running_var[c] + 1e-5);
              }
            }
            std::vector<int64_t> channel(x.size());
            for (size_t at = 0; at < x.size(); ++at) channel[at] = channel_of(at);
            const auto [out, scale] =
                affine_scale(y, as_doubles(in[3]), std::vector<double>(6, 0.0), channel);
            return result_of(dtype, {2, 6, 5}, out, scale);
          },
          training ? "nn::batch_norm(x, &mean, &var, w, {}, true)"
                   : "nn::batch_norm(x, &mean, &var, w)",
          tolerance));
    }
  }
}

// softmax(scale q k^T + bias) v for q (B, Hq, L, E), k (B, Hk, S, E) and v (B, Hk, S, Ev), where
// `bias(b, h, i, j)` is 0, a float mask's value or -inf (a dropped score); a row whose scores are
// all -inf is 0.
using AttentionBias = std::function<double(int64_t, int64_t, int64_t, int64_t)>;

Expected attention_reference(DType dtype, const std::vector<HostTensor>& in, double scale,
                             const AttentionBias& bias) {
  const Shape& qs = in[0].shape;
  const int64_t batch = qs[0], heads = qs[1], length = qs[2], width = qs[3];
  const int64_t kv_heads = in[1].shape[1], keys = in[1].shape[2], value_width = in[2].shape[3];
  const auto q = as_doubles(in[0]), k = as_doubles(in[1]), v = as_doubles(in[2]);
  const Shape out_shape = {batch, heads, length, value_width};
  std::vector<double> out(static_cast<size_t>(batch * heads * length * value_width));
  std::vector<double> magnitudes(out.size());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t kh = h / (heads / kv_heads);
      const auto v_at = [&](int64_t j, int64_t e) {
        return v[static_cast<size_t>(((b * kv_heads + kh) * keys + j) * value_width + e)];
      };
      for (int64_t i = 0; i < length; ++i) {
        std::vector<double> scores(static_cast<size_t>(keys));
        double peak = -INFINITY;
        for (int64_t j = 0; j < keys; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < width; ++e)
            dot += q[static_cast<size_t>(((b * heads + h) * length + i) * width + e)] *
                   k[static_cast<size_t>(((b * kv_heads + kh) * keys + j) * width + e)];
          scores[j] = dot * scale + bias(b, h, i, j);
          peak = std::max(peak, scores[j]);
        }
        double total = 0;
        if (peak != -INFINITY) {
          for (double& score : scores) total += (score = std::exp(score - peak));
        }
        for (int64_t e = 0; e < value_width; ++e) {
          double value = 0, magnitude = 0;
          for (int64_t j = 0; j < keys && total > 0; ++j) {
            if (scores[j] == 0) continue;  // a key of weight 0 adds nothing, whatever its value
            value += scores[j] / total * v_at(j, e);
            magnitude += std::fabs(v_at(j, e));
          }
          const size_t at = static_cast<size_t>(((b * heads + h) * length + i) * value_width + e);
          out[at] = value;
          magnitudes[at] = magnitude;
        }
      }
    }
  return result_of(dtype, out_shape, out, magnitudes);
}

// The bias of a causal attention (j > i dropped), or of none.
AttentionBias causal_bias(bool causal) {
  return [causal](int64_t, int64_t, int64_t i, int64_t j) {
    return causal && j > i ? -INFINITY : 0.0;
  };
}

void add_attention(BatteryBuilder& builder) {
  for (DType dtype : kNnDtypes) {
    const Tolerance tolerance = nn_tolerance(dtype);
    const std::vector<InputSpec> qkv = {input(dtype, {2, 4, 5, 8}, Values::Small),
                                        input(dtype, {2, 2, 6, 8}, Values::Small, 1),
                                        input(dtype, {2, 2, 6, 8}, Values::Small, 2)};
    const double scale = 1 / std::sqrt(8.0);
    builder.add(make_case(
        "nn", "attention(gqa)", qkv,
        [](const std::vector<Tensor>& in) {
          return nn::scaled_dot_product_attention(in[0], in[1], in[2]);
        },
        [dtype, scale](const std::vector<HostTensor>& in) {
          return attention_reference(dtype, in, scale, causal_bias(false));
        },
        "nn::scaled_dot_product_attention(q, k, v)", tolerance));
    builder.add(make_case(
        "nn", "attention(causal)", qkv,
        [](const std::vector<Tensor>& in) {
          return nn::scaled_dot_product_attention(in[0], in[1], in[2], {}, true);
        },
        [dtype, scale](const std::vector<HostTensor>& in) {
          return attention_reference(dtype, in, scale, causal_bias(true));
        },
        "nn::scaled_dot_product_attention(q, k, v, {}, true)", tolerance));
    std::vector<InputSpec> with_mask = qkv;
    with_mask.push_back(input(dtypes::bool_, {5, 6}, Values::General, 3));
    builder.add(make_case(
        "nn", "attention(mask)", with_mask,
        [](const std::vector<Tensor>& in) {
          // Column 0 dropped from row 1 and kept in the others; row 1 keeps nothing else.
          const Tensor rows =
              Tensor::arange(0, 5, 1, dtypes::int32, in[3].device()).reshape({5, 1});
          const Tensor first = Tensor::arange(0, 6, 1, dtypes::int32, in[3].device()) == 0.0;
          return nn::scaled_dot_product_attention(in[0], in[1], in[2],
                                                  (in[3] | first) & (rows != 1.0));
        },
        [dtype, scale](const std::vector<HostTensor>& in) {
          const std::vector<int64_t> keep = as_ints(in[3]);
          return attention_reference(
              dtype, in, scale, [keep](int64_t, int64_t, int64_t i, int64_t j) {
                const bool kept = i != 1 && (j == 0 || keep[static_cast<size_t>(i * 6 + j)]);
                return kept ? 0.0 : -INFINITY;
              });
        },
        "nn::scaled_dot_product_attention(q, k, v, (mask | column == 0) & row != 1): row 1 keeps "
        "no score, so it is 0",
        tolerance));
    // A float mask added to the scores (per batch, broadcast over heads), an explicit scale,
    // and values of another width than the keys.
    const std::vector<InputSpec> float_mask = {
        input(dtype, {2, 3, 5, 8}, Values::Small), input(dtype, {2, 3, 7, 8}, Values::Small, 1),
        input(dtype, {2, 3, 7, 3}, Values::Small, 2), input(dtype, {2, 1, 5, 7}, Values::Small, 3)};
    builder.add(make_case(
        "nn", "attention(float mask, scale)", float_mask,
        [](const std::vector<Tensor>& in) {
          return nn::scaled_dot_product_attention(in[0], in[1], in[2], in[3], false, 0.7);
        },
        [dtype](const std::vector<HostTensor>& in) {
          const std::vector<double> mask = as_doubles(in[3]);
          return attention_reference(dtype, in, 0.7,
                                     [mask](int64_t b, int64_t, int64_t i, int64_t j) {
                                       return mask[static_cast<size_t>((b * 5 + i) * 7 + j)];
                                     });
        },
        "nn::scaled_dot_product_attention(q, k, v, mask (B, 1, L, S) float, false, 0.7)",
        tolerance));
    // Longer and odd lengths (a kernel's rows per work item do not divide them), causal.
    const std::vector<InputSpec> longer = {input(dtype, {1, 2, 33, 16}, Values::Small),
                                           input(dtype, {1, 2, 67, 16}, Values::Small, 1),
                                           input(dtype, {1, 2, 67, 16}, Values::Small, 2)};
    builder.add(make_case(
        "nn", "attention(causal, L 33, S 67)", longer,
        [](const std::vector<Tensor>& in) {
          return nn::scaled_dot_product_attention(in[0], in[1], in[2], {}, true);
        },
        [dtype](const std::vector<HostTensor>& in) {
          return attention_reference(dtype, in, 0.25, causal_bias(true));
        },
        "nn::scaled_dot_product_attention(q, k, v, {}, true) over 33 queries and 67 keys",
        tolerance));
  }
}

}  // namespace

void add_nn_layer_cases(BatteryBuilder& builder) {
  add_layers(builder);
  add_attention(builder);
}

}  // namespace kiln::conformance::detail

// Losses (kiln/nn.h) against double-precision loops from PyTorch's definitions: cross entropy
// with class indices (ignored ones, label smoothing, a trailing axis, class weights) and with
// probabilities, nll, binary cross entropy (with logits, pos_weight and element weights), mse, l1
// and smooth l1, in each reduction; one_hot.

#include <kiln/nn.h>

#include <algorithm>
#include <cmath>

#include "tools/conformance/battery.h"
#include "tools/conformance/nn_support.h"

namespace kiln::conformance::detail {
namespace {

using namespace nn_support;

constexpr int64_t kClasses = 5;
constexpr int64_t kIgnored = 3;  // the ignore_index of the cases: a class that occurs

const std::vector<DType> kLossDtypes = {dtypes::float32, dtypes::float64, dtypes::float16,
                                        dtypes::bfloat16};

// Class indices from SmallInt values: into [0, kClasses), on both sides.
int64_t class_of(int64_t value) {
  return ((value % kClasses) + kClasses) % kClasses;
}
Tensor classes_of(const Tensor& values) {
  return remainder(
      values, Tensor::full({}, static_cast<double>(kClasses), values.dtype(), values.device()));
}

Expected reduced(DType dtype, const Shape& shape, const std::vector<double>& loss,
                 const std::vector<double>& scale, nn::Reduction reduction, double count = -1) {
  if (reduction == nn::Reduction::None) return result_of(dtype, shape, loss, scale);
  double total = 0, total_scale = 0;
  for (size_t index = 0; index < loss.size(); ++index) {
    total += loss[index];
    total_scale += scale[index];
  }
  if (reduction == nn::Reduction::Mean) {
    const double divisor = count < 0 ? static_cast<double>(loss.size()) : count;
    total /= divisor;
    total_scale /= divisor;
  }
  return result_of(dtype, {}, {total}, {total_scale + std::fabs(total)});
}

const char* reduction_name(nn::Reduction reduction) {
  return reduction == nn::Reduction::None  ? "none"
         : reduction == nn::Reduction::Sum ? "sum"
                                           : "mean";
}

// Cross entropy of logits (N, C, D) against class indices (N, D) or probabilities (N, C, D), or
// nll of log-probabilities (as given) with `nll`; class weights in[2] where `weighted`.
Expected class_loss_reference(DType dtype, const std::vector<HostTensor>& in, int64_t trailing,
                              bool probabilities, bool nll, double smoothing,
                              nn::Reduction reduction, bool weighted = false) {
  const auto logits = as_doubles(in[0]);
  std::vector<double> weights(kClasses, 1.0);
  if (weighted) weights = as_doubles(in[2]);
  const int64_t rows = in[0].shape[0];
  std::vector<double> loss, scale;
  double counted = 0;
  for (int64_t n = 0; n < rows; ++n)
    for (int64_t d = 0; d < trailing; ++d) {
      auto at = [&](int64_t c) { return (n * kClasses + c) * trailing + d; };
      double peak = -INFINITY, total = 0;
      for (int64_t c = 0; c < kClasses; ++c) peak = std::max(peak, logits[at(c)]);
      for (int64_t c = 0; c < kClasses; ++c) total += std::exp(logits[at(c)] - peak);
      auto log_prob = [&](int64_t c) {
        return nll ? logits[at(c)] : logits[at(c)] - peak - std::log(total);
      };
      double value = 0, magnitude = std::fabs(peak) + 4;
      if (probabilities) {
        const auto target = as_doubles(in[1]);
        for (int64_t c = 0; c < kClasses; ++c) {
          const double t = target[at(c)] * (1 - smoothing) + smoothing / kClasses;
          value -= weights[c] * t * log_prob(c);
          magnitude += std::fabs(weights[c] * t) * (std::fabs(log_prob(c)) + std::fabs(peak) + 4);
        }
        counted += 1;
      } else {
        const int64_t target = class_of(in[1].data[n * trailing + d].i);
        if (target != kIgnored) {
          double uniform = 0, uniform_magnitude = 0;
          for (int64_t c = 0; c < kClasses; ++c) {
            uniform -= weights[c] * log_prob(c) / kClasses;
            uniform_magnitude += std::fabs(weights[c] * log_prob(c)) / kClasses;
          }
          value = -weights[target] * log_prob(target) * (1 - smoothing) + uniform * smoothing;
          magnitude += std::fabs(weights[target] * log_prob(target)) + uniform_magnitude;
          counted += weights[target];
        }
      }
      loss.push_back(value);
      scale.push_back(magnitude);
    }
  const Shape shape = trailing == 1 ? Shape{rows} : Shape{rows, trailing};
  return reduced(dtype, shape, loss, scale, reduction, probabilities ? -1 : counted);
}

void add_class_losses(BatteryBuilder& builder) {
  for (DType dtype : kLossDtypes) {
    const Tolerance tolerance = nn_tolerance(dtype);
    for (nn::Reduction reduction : {nn::Reduction::None, nn::Reduction::Mean, nn::Reduction::Sum}) {
      const std::string suffix = std::string("(") + reduction_name(reduction) + ")";
      builder.add(make_case(
          "nn", "cross_entropy" + suffix,
          {input(dtype, {6, kClasses}, Values::Small),
           input(dtypes::int64, {6}, Values::SmallInt, 1)},
          [reduction](const std::vector<Tensor>& in) {
            return nn::cross_entropy(in[0], classes_of(in[1]), reduction, kIgnored, 0.1);
          },
          [dtype, reduction](const std::vector<HostTensor>& in) {
            return class_loss_reference(dtype, in, 1, false, false, 0.1, reduction);
          },
          "nn::cross_entropy(x, t, reduction, 3, 0.1)", tolerance));
      builder.add(make_case(
          "nn", "nll_loss" + suffix,
          {input(dtype, {6, kClasses}, Values::Small),
           input(dtypes::int32, {6}, Values::SmallInt, 1)},
          [reduction](const std::vector<Tensor>& in) {
            return nn::nll_loss(in[0], classes_of(in[1]), reduction, kIgnored);
          },
          [dtype, reduction](const std::vector<HostTensor>& in) {
            return class_loss_reference(dtype, in, 1, false, true, 0, reduction);
          },
          "nn::nll_loss(x, t, reduction, 3)", tolerance));
    }
    builder.add(make_case(
        "nn", "cross_entropy(nd)",
        {input(dtype, {2, kClasses, 3}, Values::Small),
         input(dtypes::uint8, {2, 3}, Values::SmallInt, 1)},
        [](const std::vector<Tensor>& in) {
          return nn::cross_entropy(in[0], classes_of(in[1]), nn::Reduction::None, kIgnored);
        },
        [dtype](const std::vector<HostTensor>& in) {
          return class_loss_reference(dtype, in, 3, false, false, 0, nn::Reduction::None);
        },
        "nn::cross_entropy(x, t, none, 3)", tolerance));
    builder.add(make_case(
        "nn", "cross_entropy(probs)",
        {input(dtype, {6, kClasses}, Values::Small),
         input(dtype, {6, kClasses}, Values::Positive, 1)},
        [](const std::vector<Tensor>& in) {
          return nn::cross_entropy(in[0], in[1], nn::Reduction::Mean, -100, 0.2);
        },
        [dtype](const std::vector<HostTensor>& in) {
          return class_loss_reference(dtype, in, 1, true, false, 0.2, nn::Reduction::Mean);
        },
        "nn::cross_entropy(x, probs, mean, -100, 0.2)", tolerance));
    // Class weights (PyTorch's `weight`): Mean divides by the counted targets' weights.
    const InputSpec class_weight = input(dtype, {kClasses}, Values::Positive, 2);
    builder.add(make_case(
        "nn", "cross_entropy(weight)",
        {input(dtype, {6, kClasses}, Values::Small), input(dtypes::int64, {6}, Values::SmallInt, 1),
         class_weight},
        [](const std::vector<Tensor>& in) {
          return nn::cross_entropy(in[0], classes_of(in[1]), nn::Reduction::Mean, kIgnored, 0.1,
                                   in[2]);
        },
        [dtype](const std::vector<HostTensor>& in) {
          return class_loss_reference(dtype, in, 1, false, false, 0.1, nn::Reduction::Mean, true);
        },
        "nn::cross_entropy(x, t, mean, 3, 0.1, w)", tolerance));
    builder.add(make_case(
        "nn", "nll_loss(weight)",
        {input(dtype, {2, kClasses, 3}, Values::Small),
         input(dtypes::int32, {2, 3}, Values::SmallInt, 1), class_weight},
        [](const std::vector<Tensor>& in) {
          return nn::nll_loss(in[0], classes_of(in[1]), nn::Reduction::Mean, kIgnored, in[2]);
        },
        [dtype](const std::vector<HostTensor>& in) {
          return class_loss_reference(dtype, in, 3, false, true, 0, nn::Reduction::Mean, true);
        },
        "nn::nll_loss(x, t, mean, 3, w)", tolerance));
    builder.add(make_case(
        "nn", "cross_entropy(probs,weight)",
        {input(dtype, {6, kClasses}, Values::Small),
         input(dtype, {6, kClasses}, Values::Positive, 1), class_weight},
        [](const std::vector<Tensor>& in) {
          return nn::cross_entropy(in[0], in[1], nn::Reduction::Sum, -100, 0.2, in[2]);
        },
        [dtype](const std::vector<HostTensor>& in) {
          return class_loss_reference(dtype, in, 1, true, false, 0.2, nn::Reduction::Sum, true);
        },
        "nn::cross_entropy(x, probs, sum, -100, 0.2, w)", tolerance));
  }
  builder.add(make_case(
      "nn", "one_hot", {input(dtypes::int32, {4, 3}, Values::SmallInt)},
      [](const std::vector<Tensor>& in) { return nn::one_hot(classes_of(in[0]), kClasses); },
      [](const std::vector<HostTensor>& in) {
        HostTensor result(dtypes::int64, {4, 3, kClasses});
        for (size_t at = 0; at < in[0].data.size(); ++at)
          result.data[at * kClasses + class_of(in[0].data[at].i)].i = 1;
        return Expected(result);
      },
      "nn::one_hot(t, 5)", exact_tolerance()));
}

// Elementwise losses of (x, t): the loss and its rounding scale.
using PairLoss = std::pair<double, double> (*)(double, double);

struct PairSpec {
  const char* name;
  Values left, right;
  Tensor (*build)(const Tensor&, const Tensor&, nn::Reduction);
  PairLoss loss;
  const char* code;
};

double clamped_log(double value) {
  return std::max(std::log(value), -100.0);
}

const PairSpec kPairLosses[] = {
    {"mse_loss", Values::Small, Values::Small,
     [](const Tensor& x, const Tensor& t, nn::Reduction r) { return nn::mse_loss(x, t, r); },
     [](double x, double t) {
       return std::make_pair((x - t) * (x - t), (x - t) * (x - t) + 1e-30);
     },
     "nn::mse_loss(x, t, reduction)"},
    {"l1_loss", Values::Small, Values::Small,
     [](const Tensor& x, const Tensor& t, nn::Reduction r) { return nn::l1_loss(x, t, r); },
     [](double x, double t) {
       return std::make_pair(std::fabs(x - t), std::fabs(x) + std::fabs(t));
     },
     "nn::l1_loss(x, t, reduction)"},
    {"smooth_l1_loss", Values::Small, Values::Small,
     [](const Tensor& x, const Tensor& t, nn::Reduction r) {
       return nn::smooth_l1_loss(x, t, r, 0.5);
     },
     [](double x, double t) {
       const double d = std::fabs(x - t);
       return std::make_pair(d < 0.5 ? d * d : d - 0.25, std::fabs(x) + std::fabs(t) + d * d * 4);
     },
     "nn::smooth_l1_loss(x, t, reduction, 0.5)"},
    // Probabilities and targets |x| / 4 of values in [-4, 4]: finite, in [0, 1], 0 and 1 among
    // them.
    {"binary_cross_entropy", Values::Small, Values::Small,
     [](const Tensor& p, const Tensor& t, nn::Reduction r) {
       return nn::binary_cross_entropy(p.abs() / 4.0, t.abs() / 4.0, r);
     },
     [](double p, double t) {
       p = std::fabs(p) / 4, t = std::fabs(t) / 4;
       const double a = clamped_log(p), b = clamped_log(1 - p);
       return std::make_pair(-(t * a + (1 - t) * b), std::fabs(t * a) + std::fabs((1 - t) * b) + 4);
     },
     "nn::binary_cross_entropy(p.abs() / 4, t.abs() / 4, reduction)"},
    {"bce_with_logits", Values::Small, Values::Small,
     [](const Tensor& x, const Tensor& t, nn::Reduction r) {
       return nn::binary_cross_entropy_with_logits(x, t.abs() / 4.0, r);
     },
     [](double x, double t) {
       t = std::fabs(t) / 4;
       const double softplus_negative = std::log1p(std::exp(-x));
       return std::make_pair((1 - t) * x + softplus_negative, std::fabs(x) + 4);
     },
     "nn::binary_cross_entropy_with_logits(x, t.abs() / 4, reduction)"},
};

void add_pair_losses(BatteryBuilder& builder) {
  for (DType dtype : kLossDtypes) {
    const Tolerance tolerance = nn_tolerance(dtype);
    for (const PairSpec& spec : kPairLosses) {
      for (nn::Reduction reduction :
           {nn::Reduction::None, nn::Reduction::Mean, nn::Reduction::Sum}) {
        const PairSpec copy = spec;
        builder.add(make_case(
            "nn", std::string(spec.name) + "(" + reduction_name(reduction) + ")",
            {input(dtype, {7, 13}, spec.left), input(dtype, {7, 13}, spec.right, 1)},
            [copy, reduction](const std::vector<Tensor>& in) {
              return copy.build(in[0], in[1], reduction);
            },
            [copy, dtype, reduction](const std::vector<HostTensor>& in) {
              const auto x = as_doubles(in[0]), t = as_doubles(in[1]);
              std::vector<double> loss, scale;
              for (size_t at = 0; at < x.size(); ++at) {
                const auto [value, magnitude] = copy.loss(x[at], t[at]);
                loss.push_back(value);
                scale.push_back(magnitude);
              }
              return reduced(dtype, {7, 13}, loss, scale, reduction);
            },
            spec.code, tolerance));
      }
    }
    builder.add(make_case(
        "nn", "bce_with_logits(pos_weight)",
        {input(dtype, {6, kClasses}, Values::Small), input(dtype, {6, kClasses}, Values::Unit, 1),
         input(dtype, {kClasses}, Values::Positive, 2)},
        [](const std::vector<Tensor>& in) {
          return nn::binary_cross_entropy_with_logits(in[0], in[1].abs(), nn::Reduction::None,
                                                      in[2]);
        },
        [dtype](const std::vector<HostTensor>& in) {
          const auto x = as_doubles(in[0]), t = as_doubles(in[1]), w = as_doubles(in[2]);
          std::vector<double> loss, scale;
          for (size_t at = 0; at < x.size(); ++at) {
            const double target = std::fabs(t[at]), weight = w[at % kClasses];
            // -(w t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))), arranged as PyTorch's.
            const double softplus_negative = std::log1p(std::exp(-x[at]));
            loss.push_back((1 - target) * x[at] + (1 + (weight - 1) * target) * softplus_negative);
            scale.push_back((weight + 1) * (std::fabs(x[at]) + 4));
          }
          return result_of(dtype, {6, kClasses}, loss, scale);
        },
        "nn::binary_cross_entropy_with_logits(x, t.abs(), none, w)", tolerance));
    // An element weight broadcast along the rows.
    builder.add(make_case(
        "nn", "binary_cross_entropy(weight)",
        {input(dtype, {6, kClasses}, Values::Small), input(dtype, {6, kClasses}, Values::Small, 1),
         input(dtype, {kClasses}, Values::Positive, 2)},
        [](const std::vector<Tensor>& in) {
          return nn::binary_cross_entropy(in[0].abs() / 4.0, in[1].abs() / 4.0, nn::Reduction::Mean,
                                          in[2]);
        },
        [dtype](const std::vector<HostTensor>& in) {
          const auto x = as_doubles(in[0]), t = as_doubles(in[1]), w = as_doubles(in[2]);
          std::vector<double> loss, scale;
          for (size_t at = 0; at < x.size(); ++at) {
            const double p = std::fabs(x[at]) / 4, target = std::fabs(t[at]) / 4;
            const double weight = w[at % kClasses];
            const double a = clamped_log(p), b = clamped_log(1 - p);
            loss.push_back(-weight * (target * a + (1 - target) * b));
            scale.push_back(weight * (std::fabs(target * a) + std::fabs((1 - target) * b) + 4));
          }
          return reduced(dtype, {6, kClasses}, loss, scale, nn::Reduction::Mean);
        },
        "nn::binary_cross_entropy(p.abs() / 4, t.abs() / 4, mean, w)", tolerance));
  }
}

}  // namespace

void add_nn_loss_cases(BatteryBuilder& builder) {
  add_class_losses(builder);
  add_pair_losses(builder);
}

}  // namespace kiln::conformance::detail

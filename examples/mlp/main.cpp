// mlp: a 784-64-10 classifier (relu hidden layer, softmax cross-entropy) trained for a few SGD
// steps, its backward pass written out with kiln operations. Each step takes the next batch of a
// fixed random dataset held in one tensor (a shrink at a moving offset) and its own learning rate
// (Tensor::scalar: held in a buffer, so that a new rate is new data, not a new kernel). The same
// training is run in double precision on the host; the program prints the loss of every step and
// exits 1 when a loss or a final weight disagrees, and 4 when the device KILN_DEVICE names cannot
// be opened here (ctest reports that as skipped).
#include <kiln/kiln.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace {

constexpr int64_t kInputs = 784;
constexpr int64_t kHidden = 64;
constexpr int64_t kClasses = 10;
constexpr int64_t kBatch = 32;
constexpr int64_t kDatasetRows = 256;
// Batches overlap (a stride below the batch) so that later steps revisit examples and the loss
// falls; lavapipe runs each step slowly, so there are few.
constexpr int64_t kBatchStride = 24;
constexpr int64_t kSteps = 5;
constexpr int kSkippedExitCode = 4;

// splitmix64: a fixed, portable sequence, so the data and weights are the same everywhere.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t mixed = (state_ += 0x9E3779B97F4A7C15ull);
    mixed = (mixed ^ (mixed >> 30)) * 0xBF58476D1CE4E5B9ull;
    mixed = (mixed ^ (mixed >> 27)) * 0x94D049BB133111EBull;
    return mixed ^ (mixed >> 31);
  }
  // Uniform in [low, high).
  float uniform(double low, double high) {
    const double unit = static_cast<double>(next() >> 11) / static_cast<double>(1ull << 53);
    return static_cast<float>(low + unit * (high - low));
  }

 private:
  uint64_t state_;
};

std::vector<float> random_values(Random& random, int64_t count, double low, double high) {
  std::vector<float> values(static_cast<size_t>(count));
  for (float& value : values) value = random.uniform(low, high);
  return values;
}

double learning_rate(int64_t step) {
  return 0.2 * std::pow(0.8, double(step));
}

// The parameters, row-major: first_weight [inputs, hidden], second_weight [hidden, classes].
template <typename Value>
struct Parameters {
  std::vector<Value> first_weight, first_bias, second_weight, second_bias;
};

// One SGD step in double, as the kiln version computes it; returns the batch's mean loss.
double reference_step(Parameters<double>& parameters, const std::vector<float>& inputs,
                      const std::vector<float>& targets, int64_t offset, double rate) {
  const float* batch_inputs = &inputs[offset * kInputs];
  const float* batch_targets = &targets[offset * kClasses];
  std::vector<double> pre_activation(kBatch * kHidden), hidden(kBatch * kHidden);
  std::vector<double> logit_gradient(kBatch * kClasses);
  double loss = 0;
  for (int64_t row = 0; row < kBatch; ++row) {
    for (int64_t unit = 0; unit < kHidden; ++unit) {
      double total = parameters.first_bias[unit];
      for (int64_t k = 0; k < kInputs; ++k) {
        total += batch_inputs[row * kInputs + k] * parameters.first_weight[k * kHidden + unit];
      }
      pre_activation[row * kHidden + unit] = total;
      hidden[row * kHidden + unit] = std::max(total, 0.0);
    }
    double logits[kClasses];
    double largest = -INFINITY;
    for (int64_t label = 0; label < kClasses; ++label) {
      double total = parameters.second_bias[label];
      for (int64_t unit = 0; unit < kHidden; ++unit) {
        total += hidden[row * kHidden + unit] * parameters.second_weight[unit * kClasses + label];
      }
      logits[label] = total;
      largest = std::max(largest, total);
    }
    double exponential_sum = 0;
    for (double logit : logits) exponential_sum += std::exp(logit - largest);
    const double log_normaliser = largest + std::log(exponential_sum);
    for (int64_t label = 0; label < kClasses; ++label) {
      const double log_probability = logits[label] - log_normaliser;
      const double target = batch_targets[row * kClasses + label];
      loss -= log_probability * target / kBatch;
      logit_gradient[row * kClasses + label] = (std::exp(log_probability) - target) / kBatch;
    }
  }
  // Gradients from the weights before the update, then the update.
  std::vector<double> hidden_gradient(kBatch * kHidden);
  for (int64_t row = 0; row < kBatch; ++row) {
    for (int64_t unit = 0; unit < kHidden; ++unit) {
      double total = 0;
      for (int64_t label = 0; label < kClasses; ++label) {
        total += logit_gradient[row * kClasses + label] *
                 parameters.second_weight[unit * kClasses + label];
      }
      hidden_gradient[row * kHidden + unit] = pre_activation[row * kHidden + unit] > 0 ? total : 0;
    }
  }
  for (int64_t unit = 0; unit < kHidden; ++unit) {
    for (int64_t label = 0; label < kClasses; ++label) {
      double gradient = 0;
      for (int64_t row = 0; row < kBatch; ++row) {
        gradient += hidden[row * kHidden + unit] * logit_gradient[row * kClasses + label];
      }
      parameters.second_weight[unit * kClasses + label] -= rate * gradient;
    }
  }
  for (int64_t label = 0; label < kClasses; ++label) {
    double gradient = 0;
    for (int64_t row = 0; row < kBatch; ++row) gradient += logit_gradient[row * kClasses + label];
    parameters.second_bias[label] -= rate * gradient;
  }
  for (int64_t k = 0; k < kInputs; ++k) {
    for (int64_t unit = 0; unit < kHidden; ++unit) {
      double gradient = 0;
      for (int64_t row = 0; row < kBatch; ++row) {
        gradient += batch_inputs[row * kInputs + k] * hidden_gradient[row * kHidden + unit];
      }
      parameters.first_weight[k * kHidden + unit] -= rate * gradient;
    }
  }
  for (int64_t unit = 0; unit < kHidden; ++unit) {
    double gradient = 0;
    for (int64_t row = 0; row < kBatch; ++row) gradient += hidden_gradient[row * kHidden + unit];
    parameters.first_bias[unit] -= rate * gradient;
  }
  return loss;
}

// float32 sums of up to 784 products: 1e-3 relative, with a small absolute floor for values near
// zero, leaves room for any summation order and still catches a wrong gradient.
bool close(double got, double want) {
  return std::fabs(got - want) <= 1e-3 * std::fabs(want) + 1e-5;
}

// Counts and reports the values of `got` that are not close to `want`, and the updates (the
// change from `initial`) that are not within 1e-3 of the largest reference update: an update is
// far smaller than its weight, so a wrong gradient could hide inside the weights' tolerance.
int compare(const char* name, const std::vector<float>& got, const std::vector<float>& initial,
            const std::vector<double>& want) {
  double largest_update = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    largest_update = std::max(largest_update, std::fabs(want[i] - initial[i]));
  }
  int mismatches = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double got_update = double(got[i]) - initial[i], want_update = want[i] - initial[i];
    if (close(got[i], want[i]) &&
        std::fabs(got_update - want_update) <= 1e-3 * largest_update + 1e-7) {
      continue;
    }
    if (mismatches++ < 3) {
      std::fprintf(stderr, "%s[%zu] is %.8f (update %.3g), reference %.8f (update %.3g)\n", name, i,
                   got[i], got_update, want[i], want_update);
    }
  }
  return mismatches;
}

}  // namespace

int main() try {
  std::string device;
  try {
    device = kiln::default_device();
  } catch (const kiln::DeviceError& error) {
    std::printf("skipped: %s\n", error.what());
    return kSkippedExitCode;
  }
  std::printf("device: %s\n", device.c_str());

  // Inputs in [0, 1), labelled by a fixed random linear teacher, so there is something to learn.
  Random random(2024);
  const std::vector<float> inputs = random_values(random, kDatasetRows * kInputs, 0, 1);
  const std::vector<float> teacher = random_values(random, kInputs * kClasses, -1, 1);
  std::vector<float> targets(kDatasetRows * kClasses, 0.0f);  // one-hot
  for (int64_t row = 0; row < kDatasetRows; ++row) {
    double best_score = -INFINITY;
    int64_t best_label = 0;
    for (int64_t label = 0; label < kClasses; ++label) {
      double score = 0;
      for (int64_t k = 0; k < kInputs; ++k) {
        score += double(inputs[row * kInputs + k]) * teacher[k * kClasses + label];
      }
      if (score > best_score) {
        best_score = score;
        best_label = label;
      }
    }
    targets[row * kClasses + best_label] = 1;
  }

  const double first_scale = 1 / std::sqrt(double(kInputs));
  const double second_scale = 1 / std::sqrt(double(kHidden));
  Parameters<float> initial;
  initial.first_weight = random_values(random, kInputs * kHidden, -first_scale, first_scale);
  initial.first_bias = random_values(random, kHidden, -0.1, 0.1);
  initial.second_weight = random_values(random, kHidden * kClasses, -second_scale, second_scale);
  initial.second_bias = random_values(random, kClasses, -0.1, 0.1);

  const kiln::Tensor dataset = kiln::Tensor::from_vector(inputs, {kDatasetRows, kInputs});
  const kiln::Tensor dataset_targets = kiln::Tensor::from_vector(targets, {kDatasetRows, kClasses});
  kiln::Tensor first_weight = kiln::Tensor::from_vector(initial.first_weight, {kInputs, kHidden});
  kiln::Tensor first_bias = kiln::Tensor::from_vector(initial.first_bias, {kHidden});
  kiln::Tensor second_weight =
      kiln::Tensor::from_vector(initial.second_weight, {kHidden, kClasses});
  kiln::Tensor second_bias = kiln::Tensor::from_vector(initial.second_bias, {kClasses});

  Parameters<double> reference;
  reference.first_weight.assign(initial.first_weight.begin(), initial.first_weight.end());
  reference.first_bias.assign(initial.first_bias.begin(), initial.first_bias.end());
  reference.second_weight.assign(initial.second_weight.begin(), initial.second_weight.end());
  reference.second_bias.assign(initial.second_bias.begin(), initial.second_bias.end());

  // The batch's first row as a variable: a kernel argument, so each new offset compiles nothing.
  const kiln::Variable offset_variable("offset", 0, kDatasetRows - kBatch);
  int mismatches = 0;
  size_t kernels_after_first_step = 0;
  for (int64_t step = 0; step < kSteps; ++step) {
    const int64_t offset = (step * kBatchStride) % (kDatasetRows - kBatch + 1);
    const double rate = learning_rate(step);
    const kiln::Dim first_row = offset_variable.bind(offset);
    const kiln::Tensor batch = dataset.shrink({{first_row, first_row + kBatch}, {0, kInputs}});
    const kiln::Tensor batch_targets =
        dataset_targets.shrink({{first_row, first_row + kBatch}, {0, kClasses}});
    const kiln::Tensor rate_tensor = kiln::Tensor::scalar(rate);

    const kiln::Tensor pre_activation = batch.matmul(first_weight) + first_bias;
    const kiln::Tensor hidden = pre_activation.relu();
    const kiln::Tensor log_probabilities =
        (hidden.matmul(second_weight) + second_bias).log_softmax(-1);
    const kiln::Tensor loss = -(log_probabilities * batch_targets).sum() / double(kBatch);

    // d loss / d logits of softmax cross-entropy, averaged over the batch.
    const kiln::Tensor logit_gradient = (log_probabilities.exp() - batch_targets) / double(kBatch);
    const kiln::Tensor hidden_gradient =
        logit_gradient.matmul(second_weight.transpose()) * (pre_activation > 0);
    const kiln::Tensor second_weight_gradient = hidden.transpose().matmul(logit_gradient);
    const kiln::Tensor first_weight_gradient = batch.transpose().matmul(hidden_gradient);

    first_weight = first_weight - rate_tensor * first_weight_gradient;
    first_bias = first_bias - rate_tensor * hidden_gradient.sum(0);
    second_weight = second_weight - rate_tensor * second_weight_gradient;
    second_bias = second_bias - rate_tensor * logit_gradient.sum(0);
    // One graph: the forward pass is shared by the loss and all four updates.
    kiln::realize({loss, first_weight, first_bias, second_weight, second_bias});

    if (step == 0) kernels_after_first_step = kiln::kernel_cache_sizes().prepared_kernels;
    const float got_loss = loss.item<float>();
    const double want_loss = reference_step(reference, inputs, targets, offset, rate);
    std::printf("step %lld (rows %lld..%lld, learning rate %.4f): loss %.6f (reference %.6f)\n",
                (long long)step, (long long)offset, (long long)(offset + kBatch - 1), rate,
                got_loss, want_loss);
    if (!close(got_loss, want_loss)) {
      std::fprintf(stderr, "step %lld: loss %.8f, reference %.8f\n", (long long)step, got_loss,
                   want_loss);
      ++mismatches;
    }
  }

  std::printf("kernels prepared after the first step: %zu\n",
              kiln::kernel_cache_sizes().prepared_kernels - kernels_after_first_step);
  mismatches += compare("first_weight", first_weight.to_vector<float>(), initial.first_weight,
                        reference.first_weight);
  mismatches += compare("first_bias", first_bias.to_vector<float>(), initial.first_bias,
                        reference.first_bias);
  mismatches += compare("second_weight", second_weight.to_vector<float>(), initial.second_weight,
                        reference.second_weight);
  mismatches += compare("second_bias", second_bias.to_vector<float>(), initial.second_bias,
                        reference.second_bias);
  if (mismatches != 0) {
    std::fprintf(stderr, "FAILED: %d mismatch(es) against the double-precision reference\n",
                 mismatches);
    return 1;
  }
  std::printf("ok: the losses and final weights match the double-precision reference\n");
  return 0;
} catch (const kiln::Error& error) {
  std::fprintf(stderr, "kiln error: %s\n", error.what());
  return 1;
}

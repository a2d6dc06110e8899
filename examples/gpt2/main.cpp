// gpt2: greedy generation with a small GPT-2-style decoder (one pre-LN block: token and position
// embeddings, causal multi-head attention, a 4x MLP with tanh-GELU, a final layer norm and an
// output head). The weights are random with a fixed seed; the head is not tied to the token
// embedding as GPT-2's is, since with random weights a tied head mostly predicts the token it was
// given, and the generated sequences would be one token repeated.
//
// The token sequence lives in one preallocated [batch, max length] buffer; each decode step reads
// its first n columns through a variable size (kiln::Variable), so the kernels compiled for the
// first step serve every later length, and the step is a kiln::CapturedStep that returns the last
// position's logits and their argmax, realized together. Every step is checked against the same
// model computed in double precision on the host; the program exits 1 on a mismatch, and 4 when
// the device KILN_DEVICE names cannot be opened here (ctest reports that as skipped).
#include "decoder.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace {

using namespace gpt2;

constexpr int64_t kPromptLength = 64;
// Enough steps for the captured step to replay a few times at new lengths; lavapipe runs each
// step slowly, so this stays small.
constexpr int64_t kDecodeSteps = 8;
// The first step runs as written, the second is captured, the rest replay.
static_assert(kDecodeSteps >= 3, "the step time is measured over the replays");
constexpr int kSkippedExitCode = 4;

// ---- the same model in double on the host ----

using Matrix = std::vector<double>;  // row-major

// [rows, in] x [in, out] + bias.
Matrix linear(const Matrix& x, int64_t rows, int64_t in, const std::vector<float>& weight,
              const std::vector<float>& bias, int64_t out) {
  Matrix result(static_cast<size_t>(rows * out));
  for (int64_t row = 0; row < rows; ++row) {
    for (int64_t column = 0; column < out; ++column) {
      double total = bias[column];
      for (int64_t k = 0; k < in; ++k) total += x[row * in + k] * weight[k * out + column];
      result[row * out + column] = total;
    }
  }
  return result;
}

Matrix reference_layer_norm(const Matrix& x, int64_t rows, const std::vector<float>& gain,
                            const std::vector<float>& bias) {
  Matrix result(x.size());
  for (int64_t row = 0; row < rows; ++row) {
    const double* values = &x[row * kModel];
    double mean = 0, variance = 0;
    for (int64_t k = 0; k < kModel; ++k) mean += values[k];
    mean /= kModel;
    for (int64_t k = 0; k < kModel; ++k) variance += (values[k] - mean) * (values[k] - mean);
    variance /= kModel;
    const double scale = 1 / std::sqrt(variance + kLayerNormEpsilon);
    for (int64_t k = 0; k < kModel; ++k) {
      result[row * kModel + k] = (values[k] - mean) * scale * gain[k] + bias[k];
    }
  }
  return result;
}

// The last position's logits for one sequence.
std::vector<double> reference_logits(const HostWeights& weights,
                                     const std::vector<int32_t>& tokens) {
  const int64_t length = static_cast<int64_t>(tokens.size());
  Matrix x(static_cast<size_t>(length * kModel));
  for (int64_t position = 0; position < length; ++position) {
    for (int64_t k = 0; k < kModel; ++k) {
      x[position * kModel + k] = double(weights.token_embedding[tokens[position] * kModel + k]) +
                                 weights.position_embedding[position * kModel + k];
    }
  }
  const Matrix qkv = linear(reference_layer_norm(x, length, weights.ln1_gain, weights.ln1_bias),
                            length, kModel, weights.qkv_weight, weights.qkv_bias, 3 * kModel);
  Matrix attended(x.size());
  const double score_scale = 1 / std::sqrt(double(kHeadSize));
  std::vector<double> scores(static_cast<size_t>(length));
  for (int64_t head = 0; head < kHeads; ++head) {
    for (int64_t query = 0; query < length; ++query) {
      double largest = -INFINITY;
      for (int64_t key = 0; key <= query; ++key) {
        double dot = 0;
        for (int64_t k = 0; k < kHeadSize; ++k) {
          dot += qkv[query * 3 * kModel + head * kHeadSize + k] *
                 qkv[key * 3 * kModel + kModel + head * kHeadSize + k];
        }
        scores[key] = dot * score_scale;
        largest = std::max(largest, scores[key]);
      }
      double total = 0;
      for (int64_t key = 0; key <= query; ++key)
        total += scores[key] = std::exp(scores[key] - largest);
      for (int64_t k = 0; k < kHeadSize; ++k) {
        double value = 0;
        for (int64_t key = 0; key <= query; ++key) {
          value += scores[key] * qkv[key * 3 * kModel + 2 * kModel + head * kHeadSize + k];
        }
        attended[query * kModel + head * kHeadSize + k] = value / total;
      }
    }
  }
  const Matrix projected = linear(attended, length, kModel, weights.attention_out_weight,
                                  weights.attention_out_bias, kModel);
  for (size_t i = 0; i < x.size(); ++i) x[i] += projected[i];
  Matrix hidden = linear(reference_layer_norm(x, length, weights.ln2_gain, weights.ln2_bias),
                         length, kModel, weights.mlp_in_weight, weights.mlp_in_bias, kHidden);
  for (double& value : hidden) {
    value = 0.5 * value *
            (1 + std::tanh(std::sqrt(2 / kPi) * (value + 0.044715 * value * value * value)));
  }
  const Matrix mlp_out =
      linear(hidden, length, kHidden, weights.mlp_out_weight, weights.mlp_out_bias, kModel);
  for (size_t i = 0; i < x.size(); ++i) x[i] += mlp_out[i];

  const Matrix last(x.end() - kModel, x.end());
  const Matrix normed = reference_layer_norm(last, 1, weights.final_gain, weights.final_bias);
  std::vector<double> logits(static_cast<size_t>(kVocabulary));
  for (int64_t token = 0; token < kVocabulary; ++token) {
    double dot = 0;
    for (int64_t k = 0; k < kModel; ++k) {
      dot += normed[k] * weights.output_head[k * kVocabulary + token];
    }
    logits[token] = dot;
  }
  return logits;
}

// float32 logits built from sums of 128-512 terms: 1e-3 relative (with a floor of 1e-3 for the
// logits near zero) leaves room for any summation order and still catches a wrong value.
bool close(double got, double want) {
  return std::fabs(got - want) <= 1e-3 * std::max(1.0, std::fabs(want));
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

  const HostWeights host_weights = make_weights(/*seed=*/2024);
  const DeviceWeights weights = upload_weights(host_weights);

  // [batch, max length]: the prompt, then each generated token written after it.
  std::vector<int32_t> sequence(static_cast<size_t>(kBatch * kMaxLength), 0);
  Random prompt_random(7);
  for (int64_t row = 0; row < kBatch; ++row) {
    for (int64_t position = 0; position < kPromptLength; ++position) {
      sequence[row * kMaxLength + position] =
          static_cast<int32_t>(prompt_random.next() % kVocabulary);
    }
  }

  kiln::Variable length_variable("n", 1, kMaxLength);
  kiln::CapturedStep step(
      [&](const std::vector<kiln::Tensor>& inputs) { return decode_step(weights, inputs[0]); });

  std::vector<double> step_milliseconds;
  // Kernels prepared (lowered and rendered) so far, after each step: later lengths should need
  // none, the variable n being a kernel argument.
  std::vector<size_t> kernels_prepared;
  int mismatches = 0;
  for (int64_t step_index = 0; step_index < kDecodeSteps; ++step_index) {
    const int64_t length = kPromptLength + step_index;
    const auto start = std::chrono::steady_clock::now();
    const kiln::Tensor tokens = kiln::Tensor::from_vector(sequence, {kBatch, kMaxLength})
                                    .shrink({{0, kBatch}, {0, length_variable.bind(length)}});
    const std::vector<kiln::Tensor> outputs = step({tokens});
    const std::vector<float> logits = outputs[0].to_vector<float>();
    const std::vector<int32_t> chosen = outputs[1].to_vector<int32_t>();
    step_milliseconds.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
    kernels_prepared.push_back(kiln::kernel_cache_sizes().prepared_kernels);
    for (int64_t row = 0; row < kBatch; ++row) {
      const std::vector<int32_t> prefix(sequence.begin() + row * kMaxLength,
                                        sequence.begin() + row * kMaxLength + length);
      const std::vector<double> want = reference_logits(host_weights, prefix);
      const float* got = &logits[row * kVocabulary];
      int bad_logits = 0;
      for (int64_t token = 0; token < kVocabulary; ++token) {
        if (close(got[token], want[token])) continue;
        if (bad_logits++ < 3) {
          std::fprintf(stderr, "step %lld row %lld: logit %lld is %.6f, reference %.6f\n",
                       (long long)step_index, (long long)row, (long long)token, got[token],
                       want[token]);
        }
      }
      mismatches += bad_logits;

      const int32_t token = chosen[row];
      const int64_t reference_token = std::max_element(want.begin(), want.end()) - want.begin();
      const bool in_range = token >= 0 && token < kVocabulary;
      // The argmax must be the largest of the logits kiln returned with it, and the token the
      // reference ranks first unless the two are tied within the logits' tolerance (float32 may
      // then pick either).
      if (!in_range || got[token] != *std::max_element(got, got + kVocabulary) ||
          !close(want[token], want[reference_token])) {
        std::fprintf(stderr, "step %lld row %lld: chose token %d, the reference token %lld\n",
                     (long long)step_index, (long long)row, token, (long long)reference_token);
        ++mismatches;
      } else if (token != reference_token) {
        std::printf(
            "step %lld row %lld: near-tie, token %d (reference %lld, logits %.6f vs %.6f)\n",
            (long long)step_index, (long long)row, token, (long long)reference_token, want[token],
            want[reference_token]);
      }
      sequence[row * kMaxLength + length] = in_range ? token : 0;
    }
  }

  for (int64_t row = 0; row < kBatch; ++row) {
    std::printf("row %lld generated:", (long long)row);
    for (int64_t position = kPromptLength; position < kPromptLength + kDecodeSteps; ++position) {
      std::printf(" %d", sequence[row * kMaxLength + position]);
    }
    std::printf("\n");
  }
  // The replays are the steady state; a step's time includes uploading the tokens and reading
  // the logits back.
  std::vector<double> replays(step_milliseconds.begin() + 2, step_milliseconds.end());
  std::nth_element(replays.begin(), replays.begin() + replays.size() / 2, replays.end());
  std::printf(
      "first step (prepares the kernels) %.1f ms, captured step %.1f ms; decode step (replayed, "
      "n = %lld..%lld) median %.3f ms\n",
      step_milliseconds[0], step_milliseconds[1], (long long)(kPromptLength + 2),
      (long long)(kPromptLength + kDecodeSteps - 1), replays[replays.size() / 2]);
  // The first step prepares every kernel (it reads its input through a private copy, as the
  // capture does); the capture and the replays, at new lengths, prepare none.
  std::printf(
      "kernels per replay: %zu; kernels prepared after the first step: %zu (by the "
      "capture: %zu, by the replays: %zu)\n",
      step.kernels(), kernels_prepared.back() - kernels_prepared[0],
      kernels_prepared[1] - kernels_prepared[0], kernels_prepared.back() - kernels_prepared[1]);
  if (kernels_prepared.back() != kernels_prepared[0]) {
    std::fprintf(stderr, "FAILED: the steps after the first prepared %zu kernel(s)\n",
                 kernels_prepared.back() - kernels_prepared[0]);
    return 1;
  }
  if (mismatches != 0) {
    std::fprintf(stderr, "FAILED: %d mismatch(es) against the double-precision reference\n",
                 mismatches);
    return 1;
  }
  std::printf("ok: logits and tokens of %lld steps match the double-precision reference\n",
              (long long)kDecodeSteps);
  return 0;
} catch (const kiln::Error& error) {
  std::fprintf(stderr, "kiln error: %s\n", error.what());
  return 1;
}

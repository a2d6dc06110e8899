#pragma once
// The small GPT-2-style decoder of examples/gpt2: its sizes, its random weights (a fixed seed, the
// same on every machine) and one decode step in kiln. main.cpp generates tokens with it and checks
// them against the same model in double on the host; `kiln bench` times its decode step.
#include <kiln/kiln.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace gpt2 {

constexpr int64_t kBatch = 2;
constexpr int64_t kModel = 128;
constexpr int64_t kHeads = 4;
constexpr int64_t kHeadSize = kModel / kHeads;
constexpr int64_t kHidden = 4 * kModel;
constexpr int64_t kVocabulary = 512;
constexpr int64_t kMaxLength = 80;
constexpr double kLayerNormEpsilon = 1e-5;
constexpr double kPi = 3.14159265358979323846;

// splitmix64: a fixed, portable sequence, so the weights are the same on every machine.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t mixed = (state_ += 0x9E3779B97F4A7C15ull);
    mixed = (mixed ^ (mixed >> 30)) * 0xBF58476D1CE4E5B9ull;
    mixed = (mixed ^ (mixed >> 27)) * 0x94D049BB133111EBull;
    return mixed ^ (mixed >> 31);
  }
  // Uniform in [-scale, scale).
  float uniform(double scale) {
    const double unit = static_cast<double>(next() >> 11) / static_cast<double>(1ull << 53);
    return static_cast<float>((2 * unit - 1) * scale);
  }

 private:
  uint64_t state_;
};

inline std::vector<float> random_values(Random& random, int64_t count, double scale,
                                        double offset = 0) {
  std::vector<float> values(static_cast<size_t>(count));
  for (float& value : values) value = static_cast<float>(offset + random.uniform(scale));
  return values;
}

// The weights as the host holds them (row-major, [in, out] for the linear layers); the reference
// computes from these exact float values in double.
struct HostWeights {
  std::vector<float> token_embedding;     // [vocabulary, model]
  std::vector<float> position_embedding;  // [max length, model]
  std::vector<float> ln1_gain, ln1_bias;  // [model]
  std::vector<float> qkv_weight;          // [model, 3 * model]: queries, keys, values
  std::vector<float> qkv_bias;            // [3 * model]
  std::vector<float> attention_out_weight, attention_out_bias;  // [model, model], [model]
  std::vector<float> ln2_gain, ln2_bias;
  std::vector<float> mlp_in_weight, mlp_in_bias;    // [model, hidden], [hidden]
  std::vector<float> mlp_out_weight, mlp_out_bias;  // [hidden, model], [model]
  std::vector<float> final_gain, final_bias;
  std::vector<float> output_head;  // [model, vocabulary]
};

inline HostWeights make_weights(uint64_t seed) {
  Random random(seed);
  // Uniform in +-sqrt(3 / fan_in) keeps each layer's outputs near unit variance, so attention is
  // not uniform and the logits spread over a few units (few near-ties for the argmax).
  const double model_scale = std::sqrt(3.0 / kModel);
  const double hidden_scale = std::sqrt(3.0 / kHidden);
  HostWeights weights;
  weights.token_embedding = random_values(random, kVocabulary * kModel, 1.0);
  weights.position_embedding = random_values(random, kMaxLength * kModel, 0.5);
  weights.ln1_gain = random_values(random, kModel, 0.2, 1.0);
  weights.ln1_bias = random_values(random, kModel, 0.1);
  weights.qkv_weight = random_values(random, kModel * 3 * kModel, model_scale);
  weights.qkv_bias = random_values(random, 3 * kModel, 0.1);
  weights.attention_out_weight = random_values(random, kModel * kModel, model_scale);
  weights.attention_out_bias = random_values(random, kModel, 0.1);
  weights.ln2_gain = random_values(random, kModel, 0.2, 1.0);
  weights.ln2_bias = random_values(random, kModel, 0.1);
  weights.mlp_in_weight = random_values(random, kModel * kHidden, model_scale);
  weights.mlp_in_bias = random_values(random, kHidden, 0.1);
  weights.mlp_out_weight = random_values(random, kHidden * kModel, hidden_scale);
  weights.mlp_out_bias = random_values(random, kModel, 0.1);
  weights.final_gain = random_values(random, kModel, 0.2, 1.0);
  weights.final_bias = random_values(random, kModel, 0.1);
  // Logits a few units apart: greedy choices are clear, near-ties rare.
  weights.output_head = random_values(random, kModel * kVocabulary, 2 * model_scale);
  return weights;
}

// ---- the model in kiln ----

struct DeviceWeights {
  kiln::Tensor token_embedding, output_head, position_embedding;
  kiln::Tensor ln1_gain, ln1_bias, qkv_weight, qkv_bias, attention_out_weight, attention_out_bias;
  kiln::Tensor ln2_gain, ln2_bias, mlp_in_weight, mlp_in_bias, mlp_out_weight, mlp_out_bias;
  kiln::Tensor final_gain, final_bias;
};

inline DeviceWeights upload_weights(const HostWeights& host, const std::string& device = "") {
  auto upload = [&](const std::vector<float>& values, kiln::Shape shape) {
    return kiln::Tensor::from_vector(values, std::move(shape), device);
  };
  DeviceWeights weights;
  weights.token_embedding = upload(host.token_embedding, {kVocabulary, kModel});
  weights.position_embedding = upload(host.position_embedding, {kMaxLength, kModel});
  weights.ln1_gain = upload(host.ln1_gain, {kModel});
  weights.ln1_bias = upload(host.ln1_bias, {kModel});
  weights.qkv_weight = upload(host.qkv_weight, {kModel, 3 * kModel});
  weights.qkv_bias = upload(host.qkv_bias, {3 * kModel});
  weights.attention_out_weight = upload(host.attention_out_weight, {kModel, kModel});
  weights.attention_out_bias = upload(host.attention_out_bias, {kModel});
  weights.ln2_gain = upload(host.ln2_gain, {kModel});
  weights.ln2_bias = upload(host.ln2_bias, {kModel});
  weights.mlp_in_weight = upload(host.mlp_in_weight, {kModel, kHidden});
  weights.mlp_in_bias = upload(host.mlp_in_bias, {kHidden});
  weights.mlp_out_weight = upload(host.mlp_out_weight, {kHidden, kModel});
  weights.mlp_out_bias = upload(host.mlp_out_bias, {kModel});
  weights.final_gain = upload(host.final_gain, {kModel});
  weights.final_bias = upload(host.final_bias, {kModel});
  weights.output_head = upload(host.output_head, {kModel, kVocabulary});
  return weights;
}

inline kiln::Tensor layer_norm(const kiln::Tensor& x, const kiln::Tensor& gain,
                               const kiln::Tensor& bias) {
  const kiln::Tensor centred = x - x.mean({-1}, /*keepdim=*/true);
  const kiln::Tensor variance = (centred * centred).mean({-1}, /*keepdim=*/true);
  return centred * (variance + kLayerNormEpsilon).rsqrt() * gain + bias;
}

// GPT-2's GELU: the tanh approximation.
inline kiln::Tensor gelu_tanh(const kiln::Tensor& x) {
  const double sqrt_2_over_pi = std::sqrt(2.0 / kPi);
  return 0.5 * x * (1.0 + ((x + 0.044715 * x * x * x) * sqrt_2_over_pi).tanh());
}

// The logits at the last position of `tokens` ([batch, n] int32, n a bound variable) and their
// argmax. Sizes come from dims(), so that they stay symbolic inside a captured step.
inline std::vector<kiln::Tensor> decode_step(const DeviceWeights& weights,
                                             const kiln::Tensor& tokens) {
  const kiln::Dim length = tokens.dims()[1];
  kiln::Tensor x = kiln::embedding(tokens, weights.token_embedding) +
                   weights.position_embedding.shrink({{0, length}, {0, kModel}});

  const kiln::Tensor qkv =
      layer_norm(x, weights.ln1_gain, weights.ln1_bias).matmul(weights.qkv_weight) +
      weights.qkv_bias;
  // [batch, heads, n, head size] for part 0 (queries), 1 (keys) or 2 (values).
  auto heads = [&](int64_t part) {
    return qkv.shrink({{0, kBatch}, {0, length}, {part * kModel, (part + 1) * kModel}})
        .reshape({kBatch, length, kHeads, kHeadSize})
        .permute({0, 2, 1, 3});
  };
  const kiln::Tensor queries = heads(0), keys = heads(1), values = heads(2);
  kiln::Tensor scores = queries.matmul(keys.transpose()) * (1.0 / std::sqrt(double(kHeadSize)));
  const kiln::Tensor positions = kiln::Tensor::arange(length, kiln::dtypes::int32, tokens.device());
  const kiln::Tensor key_after_query =
      positions.reshape({1, length}) > positions.reshape({length, 1});
  scores = kiln::where(key_after_query, -INFINITY, scores);
  const kiln::Tensor attended =
      scores.softmax(-1).matmul(values).permute({0, 2, 1, 3}).reshape({kBatch, length, kModel});
  x = x + attended.matmul(weights.attention_out_weight) + weights.attention_out_bias;

  const kiln::Tensor hidden =
      gelu_tanh(layer_norm(x, weights.ln2_gain, weights.ln2_bias).matmul(weights.mlp_in_weight) +
                weights.mlp_in_bias);
  x = x + hidden.matmul(weights.mlp_out_weight) + weights.mlp_out_bias;

  // Only the last position predicts the next token; the final norm is per position, so it is
  // applied to that position alone.
  const kiln::Tensor last =
      x.shrink({{0, kBatch}, {length - 1, length}, {0, kModel}}).reshape({kBatch, kModel});
  const kiln::Tensor logits =
      layer_norm(last, weights.final_gain, weights.final_bias).matmul(weights.output_head);
  return {logits, logits.argmax(-1)};
}

}  // namespace gpt2

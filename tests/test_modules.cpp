// nn modules (include/kiln/modules.h) and safetensors checkpoints (include/kiln/safetensors.h):
// PyTorch's parameter names, shapes and initialisation, each layer against a double-precision
// host loop, train and eval modes, loading state back (and refusing the wrong state), files
// written by Python's safetensors package (tests/data, made by tests/data/make_safetensors.py)
// read exactly, and a model trained, saved and reloaded on every device.

#include <catch2/catch.hpp>

#include <kiln/kiln.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "tests/child_process.h"
#include "tests/test_support.h"

using namespace kiln;
using kiln::nn::LayerOptions;
using kiln::test::ScratchFolder;

namespace {

std::vector<double> host(const Tensor& tensor) {
  return tensor.to_vector<double>();
}

std::vector<std::string> names_of(const NamedTensors& tensors) {
  std::vector<std::string> names;
  for (const auto& [name, tensor] : tensors) names.push_back(name);
  return names;
}

Tensor values(const std::vector<float>& data, Shape shape, const std::string& device = "") {
  return Tensor::from_vector(data, std::move(shape), device);
}

std::vector<float> ramp(size_t count, float scale, float shift = 0) {
  std::vector<float> data(count);
  for (size_t at = 0; at < count; ++at)
    data[at] = scale * std::sin(static_cast<float>(at) * 0.7f + shift);
  return data;
}

void check_close(const std::vector<double>& got, const std::vector<double>& expected,
                 double tolerance = 1e-5) {
  REQUIRE(got.size() == expected.size());
  for (size_t at = 0; at < got.size(); ++at) {
    INFO("element " << at);
    CHECK(got[at] == Approx(expected[at]).epsilon(tolerance).margin(tolerance));
  }
}

std::string data_file(const std::string& name) {
  return (std::filesystem::path(KILN_TEST_DATA_DIR) / name).string();
}

}  // namespace

TEST_CASE("modules name their state as PyTorch's state_dict does", "[modules]") {
  nn::Sequential model;
  model.push_back(std::make_shared<nn::Linear>(4, 3));
  model.push_back(std::make_shared<nn::ReLU>());
  model.push_back(std::make_shared<nn::Linear>(3, 2, /*bias=*/false));
  CHECK(names_of(model.named_parameters()) ==
        std::vector<std::string>{"0.weight", "0.bias", "2.weight"});
  CHECK(model.parameters().size() == 3);
  CHECK(model[0].type_name() == "Linear");

  nn::BatchNorm2d norm(5);
  CHECK(names_of(norm.state_dict()) == std::vector<std::string>{"weight", "bias", "running_mean",
                                                                "running_var",
                                                                "num_batches_tracked"});
  CHECK(names_of(norm.named_buffers()).size() == 3);
  CHECK(norm.num_batches_tracked.dtype() == dtypes::int64);
  CHECK(norm.num_batches_tracked.shape().empty());

  nn::MultiheadAttention attention(8, 2);
  CHECK(names_of(attention.state_dict()) ==
        std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight",
                                 "out_proj.bias"});
  CHECK(attention.in_proj_weight.shape() == Shape{24, 8});

  nn::Conv2d conv(6, 4, {3, 5}, {.groups = 2});
  CHECK(conv.weight.shape() == Shape{4, 3, 3, 5});
  CHECK(conv.bias.shape() == Shape{4});
  nn::Embedding embedding(10, 3);
  nn::LayerNorm layer_norm({3});
  nn::RMSNorm rms_norm({3}, std::nullopt, /*elementwise_affine=*/false);
  nn::GroupNorm group_norm(2, 6);
  CHECK(names_of(layer_norm.state_dict()) == std::vector<std::string>{"weight", "bias"});
  CHECK(rms_norm.state_dict().empty());
  CHECK(names_of(group_norm.state_dict()) == std::vector<std::string>{"weight", "bias"});

  // Every parameter is a leaf of its own that requires a gradient; buffers take none.
  for (const auto& [name, parameter] : model.named_parameters()) {
    INFO(name);
    CHECK(parameter.requires_grad());
    CHECK(parameter.is_leaf());
  }
  CHECK_FALSE(norm.running_mean.requires_grad());
}

TEST_CASE("layers are initialised as PyTorch's and train and eval switch every child",
          "[modules]") {
  manual_seed(7);
  nn::Linear linear(100, 50);
  const double bound = 1 / std::sqrt(100.0);
  const std::vector<double> weight = host(linear.weight);
  double largest = 0, sum = 0;
  for (double value : weight) {
    largest = std::max(largest, std::fabs(value));
    sum += value;
  }
  CHECK(largest <= bound);
  CHECK(largest > 0.95 * bound);                        // spread over the whole range
  CHECK(std::fabs(sum / weight.size()) < 0.1 * bound);  // centred

  nn::Conv1d conv(4, 6, 3, {.groups = 2});
  for (double value : host(conv.weight)) CHECK(std::fabs(value) <= 1 / std::sqrt(2.0 * 3.0));

  nn::MultiheadAttention attention(16, 4);
  for (double value : host(attention.in_proj_bias)) CHECK(value == 0);
  for (double value : host(attention.out_proj->bias)) CHECK(value == 0);
  for (double value : host(attention.in_proj_weight))
    CHECK(std::fabs(value) <= std::sqrt(6.0 / 64.0));

  nn::Embedding embedding(6, 4, /*padding_idx=*/-1);
  const std::vector<double> table = host(embedding.weight);
  for (size_t at = 20; at < 24; ++at) CHECK(table[at] == 0);  // row 5 = -1
  CHECK(embedding.padding_idx == 5);

  // The same seed makes the same model.
  manual_seed(7);
  nn::Linear again(100, 50);
  CHECK(host(again.weight) == weight);

  nn::Sequential model({std::make_shared<nn::Linear>(2, 2), std::make_shared<nn::Dropout>(0.5)});
  CHECK(model.training());
  model.eval();
  CHECK_FALSE(model[1].training());
  model.train();
  CHECK(model[0].training());
}

TEST_CASE("Linear, Conv2d, the norms and Embedding compute their functions", "[modules]") {
  for (const std::string& device : devices()) {
    INFO(device);
    const LayerOptions options{.device = device};

    nn::Linear linear(3, 2, true, options);
    const Tensor x = values(ramp(6, 1.5f), {2, 3}, device);
    const std::vector<double> w = host(linear.weight), b = host(linear.bias), xs = host(x);
    std::vector<double> expected;
    for (int row = 0; row < 2; ++row) {
      for (int out = 0; out < 2; ++out) {
        double sum = b[out];
        for (int in = 0; in < 3; ++in) sum += xs[row * 3 + in] * w[out * 3 + in];
        expected.push_back(sum);
      }
    }
    check_close(host(linear(x)), expected);

    nn::Conv2d conv(2, 3, {3}, {.padding = 1}, options);
    const Tensor image = values(ramp(2 * 2 * 4 * 5, 1.0f), {2, 2, 4, 5}, device);
    check_close(host(conv(image)), host(nn::conv2d(image, conv.weight, conv.bias, {.padding = 1})));

    // LayerNorm's and GroupNorm's weight 1 and bias 0: plain normalization, against the host.
    const Tensor features = values(ramp(2 * 6, 2.0f, 0.3f), {2, 6}, device);
    const std::vector<double> fs = host(features);
    std::vector<double> normalized, rms;
    for (int row = 0; row < 2; ++row) {
      double mean = 0, square = 0;
      for (int at = 0; at < 6; ++at) mean += fs[row * 6 + at] / 6;
      for (int at = 0; at < 6; ++at) square += fs[row * 6 + at] * fs[row * 6 + at] / 6;
      const double variance = square - mean * mean;
      for (int at = 0; at < 6; ++at) {
        normalized.push_back((fs[row * 6 + at] - mean) / std::sqrt(variance + 1e-5));
        rms.push_back(fs[row * 6 + at] / std::sqrt(square + 1e-6));
      }
    }
    check_close(host(nn::LayerNorm({6}, 1e-5, true, true, options)(features)), normalized, 1e-4);
    check_close(host(nn::RMSNorm({6}, 1e-6, true, options)(features)), rms, 1e-4);
    // One group of all six channels (with a trailing axis of 1) is the same normalization.
    check_close(host(nn::GroupNorm(1, 6, 1e-5, true, options)(features.reshape({2, 6, 1}))),
                normalized, 1e-4);

    nn::Embedding embedding(5, 3, /*padding_idx=*/1, options);
    const Tensor indices = Tensor::from_vector(std::vector<int64_t>{4, 1, 0, 1}, {2, 2}, device);
    const std::vector<double> table = host(embedding.weight);
    const Tensor rows = embedding(indices);
    CHECK(rows.shape() == Shape{2, 2, 3});
    const std::vector<double> got = host(rows);
    const int64_t picked[] = {4, 1, 0, 1};
    for (int at = 0; at < 4; ++at)
      for (int column = 0; column < 3; ++column)
        CHECK(got[at * 3 + column] == table[picked[at] * 3 + column]);
    // The padding row gets no gradient; the others add up over their uses.
    (rows * 2.0).sum().backward();
    const std::vector<double> gradient = host(embedding.weight.grad());
    const double expected_gradient[] = {2, 0, 0, 0, 2};
    for (int row = 0; row < 5; ++row)
      for (int column = 0; column < 3; ++column)
        CHECK(gradient[row * 3 + column] == expected_gradient[row]);
  }
}

TEST_CASE("BatchNorm2d tracks running statistics in training and uses them in eval", "[modules]") {
  for (const std::string& device : devices()) {
    INFO(device);
    for (const std::optional<double> momentum :
         {std::optional<double>(0.1), std::optional<double>()}) {
      INFO("momentum " << (momentum ? std::to_string(*momentum) : "None"));
      nn::BatchNorm2d norm(2, 1e-5, momentum, true, true, {.device = device});
      std::vector<double> running_mean = {0, 0}, running_var = {1, 1};
      for (int step = 1; step <= 3; ++step) {
        const std::vector<float> data = ramp(3 * 2 * 2 * 2, 1.0f + step, 0.5f * step);
        const Tensor batch = values(data, {3, 2, 2, 2}, device);
        const std::vector<double> out = host(norm(batch));
        const double factor = momentum ? *momentum : 1.0 / step;
        for (int channel = 0; channel < 2; ++channel) {
          double mean = 0, square = 0;
          std::vector<int> at;
          for (int n = 0; n < 3; ++n)
            for (int pixel = 0; pixel < 4; ++pixel) at.push_back(n * 8 + channel * 4 + pixel);
          for (int index : at) mean += data[index] / 12.0;
          for (int index : at) square += (data[index] - mean) * (data[index] - mean);
          const double variance = square / 12;
          for (int index : at) {
            INFO("step " << step << " channel " << channel);
            CHECK(out[index] == Approx((data[index] - mean) / std::sqrt(variance + 1e-5))
                                    .epsilon(1e-4)
                                    .margin(1e-4));
          }
          running_mean[channel] = (1 - factor) * running_mean[channel] + factor * mean;
          running_var[channel] = (1 - factor) * running_var[channel] + factor * square / 11;
        }
      }
      check_close(host(norm.running_mean), running_mean);
      check_close(host(norm.running_var), running_var);
      CHECK(norm.num_batches_tracked.item<int64_t>() == 3);

      norm.eval();
      const Tensor single = values({1.0f, 2.0f}, {1, 2, 1, 1}, device);
      check_close(host(norm(single)),
                  {(1 - running_mean[0]) / std::sqrt(running_var[0] + 1e-5),
                   (2 - running_mean[1]) / std::sqrt(running_var[1] + 1e-5)},
                  1e-4);
      CHECK(norm.num_batches_tracked.item<int64_t>() == 3);
    }
  }
  nn::BatchNorm2d norm(2);
  CHECK_THROWS_AS(norm(Tensor::zeros({2, 2, 3})), ShapeError);
}

// BatchNorm1d normalizes each channel over the batch (and the length, for (N, C, L));
// BatchNorm3d over the batch and the volume. Same buffers, names and updates as BatchNorm2d.
TEST_CASE("BatchNorm1d and BatchNorm3d normalize per channel over the other axes", "[modules]") {
  struct Layout {
    Shape shape;
    int64_t per_sample;  // elements of one channel in one sample
  };
  for (const Layout& layout :
       {Layout{{5, 3}, 1}, Layout{{4, 3, 6}, 6}, Layout{{2, 3, 2, 3, 2}, 12}}) {
    INFO("input " << layout.shape.size() << " axes");
    std::unique_ptr<nn::BatchNorm> norm;
    if (layout.shape.size() == 5) {
      norm = std::make_unique<nn::BatchNorm3d>(3, 1e-5, 0.25);
    } else {
      norm = std::make_unique<nn::BatchNorm1d>(3, 1e-5, 0.25);
    }
    const int64_t samples = layout.shape[0], count = samples * 3 * layout.per_sample;
    const std::vector<float> data = ramp(static_cast<size_t>(count), 2.0f, 0.3f);
    const std::vector<double> out = host((*norm)(values(data, layout.shape)));
    std::vector<double> running_mean(3), running_var(3);
    for (int64_t channel = 0; channel < 3; ++channel) {
      std::vector<int64_t> at;
      for (int64_t n = 0; n < samples; ++n) {
        for (int64_t inner = 0; inner < layout.per_sample; ++inner)
          at.push_back((n * 3 + channel) * layout.per_sample + inner);
      }
      double mean = 0, square = 0;
      for (int64_t index : at) mean += data[index] / static_cast<double>(at.size());
      for (int64_t index : at) square += (data[index] - mean) * (data[index] - mean);
      const double variance = square / static_cast<double>(at.size());
      for (int64_t index : at) {
        INFO("channel " << channel << " element " << index);
        CHECK(out[index] ==
              Approx((data[index] - mean) / std::sqrt(variance + 1e-5)).epsilon(1e-4).margin(1e-4));
      }
      running_mean[channel] = 0.25 * mean;
      running_var[channel] = 0.75 + 0.25 * square / static_cast<double>(at.size() - 1);
    }
    check_close(host(norm->running_mean), running_mean);
    check_close(host(norm->running_var), running_var);
    CHECK(names_of(norm->state_dict()) == std::vector<std::string>{"weight", "bias", "running_mean",
                                                                   "running_var",
                                                                   "num_batches_tracked"});
  }
  nn::BatchNorm1d one(3);
  CHECK(one.type_name() == "BatchNorm1d");
  CHECK_THROWS_AS(one(Tensor::zeros({2, 3, 4, 5})), ShapeError);
  CHECK_THROWS_WITH(one(Tensor::zeros({2, 3, 4, 5})),
                    Catch::Contains("BatchNorm1d") && Catch::Contains("(N, C) or (N, C, L)"));
  nn::BatchNorm3d three(3);
  CHECK_THROWS_WITH(three(Tensor::zeros({2, 3, 4, 5})), Catch::Contains("(N, C, D, H, W)"));
  CHECK_THROWS_AS(nn::BatchNorm1d(0), ValueError);
}

// A ModuleList registers its children as "0", "1", ...: their parameters are the owner's, and
// the owner calls them as it needs; the list has no forward of its own.
TEST_CASE("ModuleList holds children whose parameters are its own", "[modules]") {
  struct Residual : nn::Module {
    std::shared_ptr<nn::ModuleList> layers = std::make_shared<nn::ModuleList>();
    Residual() {
      for (int at = 0; at < 3; ++at) layers->push_back(std::make_shared<nn::Linear>(4, 4));
      register_module("layers", layers);
    }
    Tensor forward(const Tensor& input) override {
      Tensor value = input;
      for (size_t at = 0; at < layers->size(); ++at) value = value + (*layers)[at](value).relu();
      return value;
    }
    std::string type_name() const override { return "Residual"; }
  };
  Residual model;
  CHECK(names_of(model.named_parameters()) ==
        std::vector<std::string>{"layers.0.weight", "layers.0.bias", "layers.1.weight",
                                 "layers.1.bias", "layers.2.weight", "layers.2.bias"});
  CHECK(model.layers->type_name() == "ModuleList");
  const Tensor x = Tensor::ones({2, 4});
  CHECK(model(x).shape() == Shape{2, 4});
  CHECK_THROWS_AS((*model.layers)(x), ValueError);
  model.eval();
  CHECK_FALSE((*model.layers)[2].training());
}

TEST_CASE("Dropout drops in training and passes through in eval", "[modules]") {
  nn::Dropout dropout(0.25, Generator(3));
  const Tensor x = Tensor::ones({4000});
  const std::vector<double> dropped = host(dropout(x));
  size_t zeros = 0;
  for (double value : dropped) {
    if (value == 0) {
      ++zeros;
    } else {
      CHECK(value == Approx(1 / 0.75));
    }
  }
  CHECK(zeros > 900);
  CHECK(zeros < 1100);
  dropout.eval();
  CHECK(host(dropout(x)) == host(x));
  CHECK_THROWS_AS(nn::Dropout(1.5), ValueError);
}

namespace {

// PyTorch's multi-head attention on the host in double: x (L, N, E) sequence-first.
std::vector<double> attention_reference(const nn::MultiheadAttention& module,
                                        const std::vector<double>& query,
                                        const std::vector<double>& key, int64_t length,
                                        int64_t source, int64_t batch,
                                        const std::vector<uint8_t>& padding, bool causal) {
  const int64_t features = module.embed_dim, heads = module.num_heads, size = features / heads;
  const std::vector<double> w = host(module.in_proj_weight), b = host(module.in_proj_bias);
  const std::vector<double> wo = host(module.out_proj->weight), bo = host(module.out_proj->bias);
  auto project = [&](const std::vector<double>& x, int64_t rows, int part) {
    std::vector<double> out(rows * batch * features);
    for (int64_t r = 0; r < rows * batch; ++r)
      for (int64_t o = 0; o < features; ++o) {
        double sum = b[part * features + o];
        for (int64_t i = 0; i < features; ++i)
          sum += x[r * features + i] * w[(part * features + o) * features + i];
        out[r * features + o] = sum;
      }
    return out;
  };
  const std::vector<double> q = project(query, length, 0), k = project(key, source, 1),
                            v = project(key, source, 2);
  std::vector<double> merged(length * batch * features, 0.0);
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < length; ++i) {
        std::vector<double> scores(source, -std::numeric_limits<double>::infinity());
        double top = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < source; ++j) {
          if (padding[n * source + j] || (causal && j > i)) continue;
          double dot = 0;
          for (int64_t d = 0; d < size; ++d)
            dot += q[(i * batch + n) * features + h * size + d] *
                   k[(j * batch + n) * features + h * size + d];
          scores[j] = dot / std::sqrt(static_cast<double>(size));
          top = std::max(top, scores[j]);
        }
        double total = 0;
        for (double& score : scores) total += (score = std::exp(score - top));
        for (int64_t j = 0; j < source; ++j)
          for (int64_t d = 0; d < size; ++d)
            merged[(i * batch + n) * features + h * size + d] +=
                scores[j] / total * v[(j * batch + n) * features + h * size + d];
      }
  std::vector<double> out(length * batch * features);
  for (int64_t r = 0; r < length * batch; ++r)
    for (int64_t o = 0; o < features; ++o) {
      double sum = bo[o];
      for (int64_t i = 0; i < features; ++i) sum += merged[r * features + i] * wo[o * features + i];
      out[r * features + o] = sum;
    }
  return out;
}

}  // namespace

TEST_CASE("MultiheadAttention matches PyTorch's module computed on the host", "[modules]") {
  for (const std::string& device : devices()) {
    INFO(device);
    manual_seed(11);
    nn::MultiheadAttention attention(8, 2, {}, {.device = device});
    // Biases that are not zero, so that their gradients and placement are checked too.
    {
      NoGradGuard writing;
      attention.in_proj_bias.assign(values(ramp(24, 0.3f), {24}, device));
      attention.out_proj->bias.assign(values(ramp(8, 0.2f, 1.0f), {8}, device));
    }
    const int64_t length = 3, source = 4, batch = 2;
    const std::vector<float> query = ramp(length * batch * 8, 1.0f);
    const std::vector<float> key = ramp(source * batch * 8, 0.8f, 2.0f);
    const Tensor q = values(query, {length, batch, 8}, device);
    const Tensor kv = values(key, {source, batch, 8}, device);
    const std::vector<uint8_t> none(batch * source, 0), padded = {0, 0, 1, 0, 0, 1, 1, 0};
    const std::vector<double> qd(query.begin(), query.end()), kd(key.begin(), key.end());

    check_close(host(attention.forward(q, kv, kv)),
                attention_reference(attention, qd, kd, length, source, batch, none, false), 1e-4);
    const Tensor padding = Tensor::from_vector(std::vector<bool>(padded.begin(), padded.end()),
                                               {batch, source}, device);
    check_close(host(attention.forward(q, kv, kv, std::nullopt, padding)),
                attention_reference(attention, qd, kd, length, source, batch, padded, false), 1e-4);
    check_close(host(attention.forward(q, kv, kv, std::nullopt, padding, /*is_causal=*/true)),
                attention_reference(attention, qd, kd, length, source, batch, padded, true), 1e-4);
    // A bool attn_mask marks what is dropped (PyTorch's convention for this module).
    std::vector<bool> upper(length * source);
    for (int64_t i = 0; i < length; ++i)
      for (int64_t j = 0; j < source; ++j) upper[i * source + j] = j > i;
    check_close(
        host(attention.forward(q, kv, kv, Tensor::from_vector(upper, {length, source}, device))),
        attention_reference(attention, qd, kd, length, source, batch, none, true), 1e-4);

    // batch_first and unbatched inputs are the same computation.
    nn::MultiheadAttention first(8, 2, {.batch_first = true}, {.device = device});
    first.load_state_dict(attention.state_dict());
    check_close(host(first.forward(q.transpose(0, 1), kv.transpose(0, 1), kv.transpose(0, 1))
                         .transpose(0, 1)),
                host(attention.forward(q, kv, kv)));
    check_close(host(attention.forward(q.select(1, 1), kv.select(1, 1), kv.select(1, 1))),
                host(attention.forward(q, kv, kv).select(1, 1)));

    // Every parameter gets a gradient.
    attention.forward(q, kv, kv).square().sum().backward();
    for (const auto& [name, parameter] : attention.named_parameters()) {
      INFO(name);
      REQUIRE(parameter.grad().defined());
      double magnitude = 0;
      for (double value : host(parameter.grad())) magnitude += std::fabs(value);
      CHECK(magnitude > 0);
    }
  }
  nn::MultiheadAttention attention(8, 2);
  CHECK_THROWS_AS(nn::MultiheadAttention(10, 3), ValueError);
  CHECK_THROWS_AS(attention.forward(Tensor::zeros({3, 2, 6})), ShapeError);
  CHECK_THROWS_AS(attention.forward(Tensor::zeros({3, 2, 8}), Tensor::zeros({4, 3, 8}),
                                    Tensor::zeros({4, 3, 8})),
                  ShapeError);
}

TEST_CASE("load_state_dict writes every tensor or, on a wrong one, none", "[modules]") {
  auto make = [] {
    auto model = std::make_shared<nn::Sequential>();
    model->push_back(std::make_shared<nn::Linear>(3, 4));
    model->push_back(std::make_shared<nn::BatchNorm2d>(4));
    return model;
  };
  manual_seed(1);
  auto source = make();
  manual_seed(2);
  auto target = make();
  const std::vector<double> before = host(target->named_parameters()[0].second);
  CHECK(before != host(source->named_parameters()[0].second));

  auto expect_unchanged = [&] { CHECK(host(target->named_parameters()[0].second) == before); };
  NamedTensors state = source->state_dict();
  NamedTensors missing(state.begin() + 1, state.end());
  CHECK_THROWS_WITH(target->load_state_dict(missing),
                    Catch::Contains("lacks '0.weight'") && Catch::Contains("strict = false"));
  expect_unchanged();
  NamedTensors extra = state;
  extra.emplace_back("2.weight", Tensor::zeros({1}));
  CHECK_THROWS_WITH(target->load_state_dict(extra),
                    Catch::Contains("unexpected tensor '2.weight'"));
  expect_unchanged();
  NamedTensors wrong_shape = state;
  wrong_shape[1].second = Tensor::zeros({5});
  CHECK_THROWS_AS(target->load_state_dict(wrong_shape), ShapeError);
  CHECK_THROWS_WITH(target->load_state_dict(wrong_shape), Catch::Contains("'0.bias'") &&
                                                              Catch::Contains("(5,)") &&
                                                              Catch::Contains("(4,)"));
  expect_unchanged();
  NamedTensors wrong_dtype = state;
  wrong_dtype[0].second = state[0].second.cast(dtypes::float64);
  CHECK_THROWS_AS(target->load_state_dict(wrong_dtype), DTypeError);
  expect_unchanged();

  target->load_state_dict(state);
  const NamedTensors loaded = target->state_dict();
  for (size_t at = 0; at < state.size(); ++at) {
    INFO(state[at].first);
    CHECK(host(loaded[at].second) == host(state[at].second));
  }
  // Loaded parameters stay leaves that train.
  CHECK(target->parameters()[0].requires_grad());
  target->load_state_dict(missing, /*strict=*/false);
}

TEST_CASE("safetensors files written by Python's package are read exactly", "[modules]") {
  const NamedTensors tensors = load_safetensors(data_file("python_written.safetensors"));
  std::map<std::string, Tensor> by_name(tensors.begin(), tensors.end());
  REQUIRE(by_name.size() == 16);
  const Tensor& special = by_name.at("float32_special");
  CHECK(special.dtype() == dtypes::float32);
  CHECK(special.shape() == Shape{2, 3});
  const std::vector<float> got = special.to_vector<float>();
  CHECK(got[0] == 1.0f);
  CHECK(got[1] == -2.5f);
  CHECK(got[2] == 3.25e-3f);
  CHECK(got[3] == 0.0f);
  CHECK(std::signbit(got[3]));
  CHECK(got[4] == std::numeric_limits<float>::infinity());
  CHECK(std::isnan(got[5]));
  CHECK(by_name.at("float16").dtype() == dtypes::float16);
  CHECK(by_name.at("float16").to_vector<float>() == std::vector<float>{0.5f, -1.0f, 65504.0f});
  CHECK(by_name.at("bfloat16").dtype() == dtypes::bfloat16);
  CHECK(by_name.at("bfloat16").to_vector<float>() == std::vector<float>{1.0f, -3.0f, 0.15625f});
  CHECK(by_name.at("float64_scalar").shape().empty());
  CHECK(by_name.at("float64_scalar").item<double>() == 3.141592653589793);
  CHECK(by_name.at("int64").to_vector<int64_t>() == std::vector<int64_t>{-1, int64_t{1} << 40, 7});
  CHECK(by_name.at("int32").to_vector<int32_t>() == std::vector<int32_t>{-2147483648, 5});
  CHECK(by_name.at("int16").to_vector<int16_t>() == std::vector<int16_t>{-32768, 32767});
  CHECK(by_name.at("int8").to_vector<int8_t>() == std::vector<int8_t>{-128, 127});
  CHECK(by_name.at("uint8").to_vector<uint8_t>() == std::vector<uint8_t>{0, 255});
  CHECK(by_name.at("uint16").to_vector<uint16_t>() == std::vector<uint16_t>{65535});
  CHECK(by_name.at("uint32").to_vector<uint32_t>() == std::vector<uint32_t>{4294967295u});
  CHECK(by_name.at("uint64").to_vector<uint64_t>() ==
        std::vector<uint64_t>{(uint64_t{1} << 63) + 5});
  CHECK(by_name.at("bool").to_vector<bool>() == std::vector<bool>{true, false, true});
  CHECK(by_name.at("empty").shape() == Shape{0, 4});
  CHECK(by_name.at("layer.weight").shape() == Shape{2, 2});
  CHECK(by_name.at("layer.bias").to_vector<float>() == std::vector<float>{0.5f, -0.5f});
  const auto metadata = safetensors_metadata(data_file("python_written.safetensors"));
  CHECK(std::count(metadata.begin(), metadata.end(),
                   std::pair<std::string, std::string>("format", "pt")) == 1);
}

TEST_CASE("safetensors files round-trip every dtype and bad files are refused by name",
          "[modules]") {
  ScratchFolder folder("safetensors");
  const std::string path = (folder.path() / "all.safetensors").string();
  NamedTensors tensors;
  for (DType dtype : dtypes::all) {
    tensors.emplace_back(dtype.name(),
                         Tensor::arange(-3, 4, 1, dtypes::int64).cast(dtype).reshape({7, 1}));
  }
  tensors.emplace_back("view", Tensor::arange(12).reshape({3, 4}).transpose().slice(0, 1, 3));
  tensors.emplace_back("empty", Tensor::zeros({0, 2}));
  save_safetensors(path, tensors, {{"note", "kiln"}});
  const NamedTensors loaded = load_safetensors(path);
  REQUIRE(loaded.size() == tensors.size());
  for (size_t at = 0; at < tensors.size(); ++at) {
    INFO(tensors[at].first);
    CHECK(loaded[at].first == tensors[at].first);  // in the order of their data
    CHECK(loaded[at].second.dtype() == tensors[at].second.dtype());
    CHECK(loaded[at].second.shape() == tensors[at].second.shape());
    CHECK(host(loaded[at].second) == host(tensors[at].second));
  }
  CHECK(safetensors_metadata(path) ==
        std::vector<std::pair<std::string, std::string>>{{"note", "kiln"}});
  // The header is padded to 8 bytes, so the data is aligned.
  std::ifstream file(path, std::ios::binary);
  uint64_t length = 0;
  file.read(reinterpret_cast<char*>(&length), 8);
  CHECK(length % 8 == 0);

  CHECK_THROWS_AS(save_safetensors(path, {{"a", Tensor::zeros({1})}, {"a", Tensor::zeros({1})}}),
                  ValueError);
  CHECK(load_safetensors(path).size() == tensors.size());  // the old file is still there

  auto write = [&](const std::string& header, const std::string& data) {
    const std::string bad = (folder.path() / "bad.safetensors").string();
    std::ofstream out(bad, std::ios::binary | std::ios::trunc);
    const uint64_t size = header.size();
    out.write(reinterpret_cast<const char*>(&size), 8);
    out << header << data;
    return bad;
  };
  CHECK_THROWS_WITH(load_safetensors((folder.path() / "missing.safetensors").string()),
                    Catch::Contains("cannot open") && Catch::Contains("missing.safetensors"));
  CHECK_THROWS_WITH(load_safetensors(write("{not json", "")), Catch::Contains("not JSON"));
  CHECK_THROWS_WITH(
      load_safetensors(write(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", "1234")),
      Catch::Contains("tensor 'w'") && Catch::Contains("outside the data"));
  CHECK_THROWS_WITH(load_safetensors(write(
                        R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", "12345678")),
                    Catch::Contains("tensor 'w'") && Catch::Contains("needs 12"));
  CHECK_THROWS_AS(
      load_safetensors(write(R"({"w":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}})", "1")),
      DTypeError);
  CHECK_THROWS_WITH(load_safetensors(write(R"({"w":{"dtype":"F32","shape":[1]}})", "1234")),
                    Catch::Contains("tensor 'w'") && Catch::Contains("lacks a field"));
  CHECK_THROWS_WITH(
      load_safetensors(write(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                             R"("b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}})",
                             "123")),
      Catch::Contains("overlap"));
  CHECK_THROWS_WITH(
      load_safetensors(write(
          R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", "1234")),
      Catch::Contains("more than 2^64"));
}

TEST_CASE("a model trained on each device saves and reloads to the same outputs", "[modules]") {
  for (const std::string& device : devices()) {
    INFO(device);
    ScratchFolder folder("checkpoint");
    const std::string path = (folder.path() / "model.safetensors").string();
    auto make = [&] {
      auto model = std::make_shared<nn::Sequential>();
      model->push_back(std::make_shared<nn::Linear>(4, 16, true, LayerOptions{.device = device}));
      model->push_back(std::make_shared<nn::LayerNorm>(Shape{16}, 1e-5, true, true,
                                                       LayerOptions{.device = device}));
      model->push_back(std::make_shared<nn::GELU>());
      model->push_back(std::make_shared<nn::Linear>(16, 3, true, LayerOptions{.device = device}));
      return model;
    };
    manual_seed(5);
    auto model = make();
    const Tensor inputs = values(ramp(8 * 4, 1.0f), {8, 4}, device);
    const Tensor labels =
        Tensor::from_vector(std::vector<int64_t>{0, 1, 2, 0, 1, 2, 0, 1}, {8}, device);
    optim::AdamW optimizer(model->parameters(), {.lr = 0.05});
    double first = 0, last = 0;
    for (int step = 0; step < 30; ++step) {
      optimizer.zero_grad();
      Tensor loss = nn::cross_entropy((*model)(inputs), labels);
      loss.backward();
      optimizer.step({loss});
      (step == 0 ? first : last) = loss.item<double>();
    }
    CHECK(last < 0.5 * first);

    save_safetensors(path, model->state_dict());
    manual_seed(6);
    auto reloaded = make();
    reloaded->load_state_dict(load_safetensors(path, device));
    CHECK(host((*reloaded)(inputs)) == host((*model)(inputs)));

    nn::Sequential other;
    other.push_back(std::make_shared<nn::Linear>(4, 8, true, LayerOptions{.device = device}));
    CHECK_THROWS_WITH(other.load_state_dict(load_safetensors(path, device)),
                      Catch::Contains("'0.weight'") && Catch::Contains("(16, 4)"));
  }
}

TEST_CASE("shared parameters, empty layers, dropped rows and mismatched generators", "[modules]") {
  // Tied weights are one parameter: listed once, so an optimizer updates them once.
  auto layer = std::make_shared<nn::Linear>(3, 3);
  nn::Sequential tied({layer, std::make_shared<nn::ReLU>(), layer});
  CHECK(names_of(tied.named_parameters()) == std::vector<std::string>{"0.weight", "0.bias"});
  CHECK(tied.state_dict().size() == 4);  // each name, as PyTorch's state_dict

  nn::Linear empty(0, 4);
  CHECK(host(empty.weight).empty());
  check_close(host(empty(Tensor::zeros({2, 0}))), host(empty.bias.expand({2, 4})));
  nn::Conv2d square(2, 3, 3);  // one size for both axes
  CHECK(square.weight.shape() == Shape{3, 2, 3, 3});

  // With dropout on the weights, a query whose keys are all dropped is 0, not NaN.
  manual_seed(4);
  nn::MultiheadAttention attention(4, 2, {.dropout = 0.5, .batch_first = true});
  const Tensor x = values(ramp(2 * 3 * 4, 1.0f), {2, 3, 4});
  const Tensor padding =
      Tensor::from_vector(std::vector<bool>{true, true, true, false, false, true}, {2, 3});
  const std::vector<double> got = host(attention.forward(x, x, x, std::nullopt, padding));
  const std::vector<double> bias = host(attention.out_proj->bias);
  for (size_t at = 0; at < 12; ++at) CHECK(got[at] == Approx(bias[at % 4]));  // batch 0: bias only
  for (double value : got) CHECK(std::isfinite(value));
  CHECK_THROWS_AS(attention.forward(x, x, x, Tensor::zeros({3, 3, 3}, dtypes::bool_)), ShapeError);

  const std::vector<std::string> available = devices();
  if (available.size() > 1) {
    LayerOptions options{.device = available[0], .generator = Generator(1, available[1])};
    CHECK_THROWS_AS(nn::Linear(2, 2, true, options), DeviceError);
    CHECK_THROWS_AS(nn::Embedding(2, 2, std::nullopt, options), DeviceError);
  }
}

TEST_CASE("an overlap hidden behind an empty tensor is still found", "[modules]") {
  ScratchFolder folder("safetensors-overlap");
  const std::string path = (folder.path() / "overlap.safetensors").string();
  const std::string header = R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                             R"("b":{"dtype":"U8","shape":[0],"data_offsets":[2,2]},)"
                             R"("c":{"dtype":"U8","shape":[1],"data_offsets":[3,4]}})";
  std::ofstream out(path, std::ios::binary);
  const uint64_t size = header.size();
  out.write(reinterpret_cast<const char*>(&size), 8);
  out << header << "abcd";
  out.close();
  CHECK_THROWS_WITH(load_safetensors(path), Catch::Contains("overlap"));
}

// kiln/nn.h beyond the conformance battery's values: batch_norm's running statistics, the cases
// PyTorch defines (every target ignored, a fully masked attention row), and typed errors that
// name the function.

#include <catch2/catch.hpp>

#include <kiln/kiln.h>

#include <cmath>

using namespace kiln;

namespace {

Tensor floats(const std::vector<float>& data, Shape shape) {
  return Tensor::from_vector<float>(data, std::move(shape), "CPU");
}

}  // namespace

TEST_CASE("batch_norm updates its running statistics in place when training", "[nn]") {
  // Two channels over a batch of 2 and length 2: channel 0 holds 1, 2, 3, 4; channel 1 all 5.
  const Tensor x = floats({1, 2, 5, 5, 3, 4, 5, 5}, {2, 2, 2});
  Tensor mean = floats({0, 1}, {2}), variance = floats({1, 1}, {2});
  const void* memory = mean.native_memory().handle;
  const std::vector<float> y = nn::batch_norm(x, &mean, &variance, {}, {}, true).to_vector<float>();
  CHECK(mean.native_memory().handle == memory);
  // 0.9 * old + 0.1 * batch; the variance unbiased (5 / 3 for 1..4).
  CHECK(mean.to_vector<float>()[0] == Approx(0.25));
  CHECK(mean.to_vector<float>()[1] == Approx(1.4));
  CHECK(variance.to_vector<float>()[0] == Approx(0.9 + 0.1 * 5.0 / 3.0));
  CHECK(variance.to_vector<float>()[1] == Approx(0.9));
  CHECK(y[0] == Approx(-1.5 / std::sqrt(1.25 + 1e-5)));
  CHECK(y[2] == 0);
  // Evaluation reads them and leaves them alone.
  const float before = mean.to_vector<float>()[0];
  nn::batch_norm(x, &mean, &variance).realize();
  CHECK(mean.to_vector<float>()[0] == before);
}

TEST_CASE("losses and attention where PyTorch defines NaN or 0", "[nn]") {
  const Tensor logits = floats({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor ignored = Tensor::from_vector<int64_t>({-100, -100}, {2}, "CPU");
  CHECK(std::isnan(nn::cross_entropy(logits, ignored).item<float>()));
  CHECK(nn::cross_entropy(logits, ignored, nn::Reduction::Sum).item<float>() == 0);
  const Tensor q = floats({1, 0, 0, 1}, {2, 2});
  const Tensor mask = Tensor::from_vector<bool>({true, true, false, false}, {2, 2}, "CPU");
  // A query that may attend to nothing gets 0 (PyTorch's safe softmax).
  const std::vector<float> out = nn::scaled_dot_product_attention(q, q, q, mask).to_vector<float>();
  CHECK(out[2] == 0);
  CHECK(out[3] == 0);
  CHECK_FALSE(std::isnan(out[0]));
}

TEST_CASE("class losses count every target they should", "[nn]") {
  // ignore_index -100 does not wrap into class 156 of a uint8 target.
  const Tensor logits = Tensor::zeros({1, 160}, dtypes::float32, "CPU");
  const Tensor target = Tensor::from_vector<uint8_t>({156}, {1}, "CPU");
  CHECK(nn::cross_entropy(logits, target).item<float>() == Approx(std::log(160.0)));
  // A float16 mean over 40000 losses of log 8 (their sum is past float16's 65504).
  const Tensor many = Tensor::zeros({40000, 8}, dtypes::float16, "CPU");
  const Tensor classes = Tensor::zeros({40000}, dtypes::int32, "CPU");
  CHECK(nn::cross_entropy(many, classes).cast(dtypes::float32).item<float>() ==
        Approx(std::log(8.0)).epsilon(1e-3));
  // A negative class is out of range, not the last class.
  CHECK_THROWS_AS(nn::nll_loss(logits, Tensor::from_vector<int64_t>({-1}, {1}, "CPU")).realize(),
                  IndexError);
  CHECK_THROWS_AS(nn::one_hot(Tensor::from_vector<int64_t>({-1}, {1}, "CPU"), 3).realize(),
                  IndexError);
}

TEST_CASE("class weights scale each target and the Mean's divisor, as PyTorch's", "[nn]") {
  // Two targets of classes 0 and 2 (weights 1 and 3) and one ignored: uniform logits give each
  // loss log 3, so the weighted mean is (1 + 3) log 3 / (1 + 3) and the sum 4 log 3.
  const Tensor logits = Tensor::zeros({3, 3}, dtypes::float32, "CPU");
  const Tensor target = Tensor::from_vector<int64_t>({0, 2, -100}, {3}, "CPU");
  const Tensor weight = Tensor::from_vector<float>({1, 2, 3}, {3}, "CPU");
  CHECK(nn::cross_entropy(logits, target, nn::Reduction::Mean, -100, 0, weight).item<float>() ==
        Approx(std::log(3.0)));
  CHECK(
      nn::nll_loss(logits.log_softmax(1), target, nn::Reduction::Sum, -100, weight).item<float>() ==
      Approx(4 * std::log(3.0)));
  const std::vector<float> each =
      nn::cross_entropy(logits, target, nn::Reduction::None, -100, 0, weight).to_vector<float>();
  CHECK(each[1] == Approx(3 * std::log(3.0)));
  CHECK(each[2] == 0.0f);
  // Element weights of binary cross entropy broadcast along the rows.
  const Tensor half_probs = Tensor::full({2, 3}, 0.5, dtypes::float32, "CPU");
  CHECK(
      nn::binary_cross_entropy(half_probs, half_probs, nn::Reduction::Sum, weight).item<float>() ==
      Approx(12 * std::log(2.0)));
  CHECK_THROWS_WITH(nn::cross_entropy(logits, target, nn::Reduction::Mean, -100, 0,
                                      Tensor::ones({2}, dtypes::float32, "CPU")),
                    Catch::Contains("[cross_entropy]") && Catch::Contains("one value per class"));
  CHECK_THROWS_WITH(nn::binary_cross_entropy(half_probs, half_probs, nn::Reduction::Mean,
                                             Tensor::ones({2}, dtypes::float32, "CPU")),
                    Catch::Contains("[binary_cross_entropy]") && Catch::Contains("broadcast"));
}

TEST_CASE("batch_norm changes both running statistics or neither", "[nn]") {
  const Tensor x = floats({1, 2, 3, 4}, {2, 2});
  Tensor mean = floats({0, 0}, {2});
  Tensor variance = floats({1, 1, 1, 1}, {2, 2}).shrink({{0, 1}}).reshape({2});  // not its own
  CHECK_THROWS(nn::batch_norm(x, &mean, &variance, {}, {}, true));
  CHECK(mean.to_vector<float>() == std::vector<float>{0, 0});
  Tensor ints = Tensor::zeros({2}, dtypes::int32, "CPU");
  CHECK_THROWS_AS(nn::batch_norm(x, &ints, nullptr, {}, {}, true), DTypeError);
}

TEST_CASE("nn functions refuse bad arguments, naming the function and the rule", "[nn][errors]") {
  const Tensor x = floats({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK_THROWS_WITH(nn::linear(x, floats({1, 2}, {1, 2})),
                    Catch::Contains("[linear]") && Catch::Contains("(2, 3)"));
  CHECK_THROWS_WITH(nn::layer_norm(x, {2}), Catch::Contains("[layer_norm]"));
  CHECK_THROWS_WITH(nn::group_norm(x.reshape({1, 3, 2}), 2),
                    Catch::Contains("[group_norm]") && Catch::Contains("divide"));
  CHECK_THROWS_AS(nn::batch_norm(x, nullptr, nullptr), ValueError);
  CHECK_THROWS_AS(nn::layer_norm(x.cast(dtypes::int32), {3}), DTypeError);
  const Tensor target = Tensor::from_vector<int64_t>({0, 1}, {2}, "CPU");
  CHECK_THROWS_WITH(nn::cross_entropy(x, target, nn::Reduction::Mean, -100, 1.5),
                    Catch::Contains("[cross_entropy]") && Catch::Contains("label_smoothing"));
  CHECK_THROWS_AS(nn::nll_loss(x, target.reshape({1, 2})), ShapeError);
  CHECK_THROWS_AS(nn::cross_entropy(x, target.cast(dtypes::bool_)), DTypeError);
  const Tensor q = floats(std::vector<float>(12, 1), {3, 2, 2});
  const Tensor kv = floats(std::vector<float>(8, 1), {2, 2, 2});
  CHECK_THROWS_WITH(
      nn::scaled_dot_product_attention(q, kv, kv),
      Catch::Contains("[scaled_dot_product_attention]") && Catch::Contains("multiple"));
  CHECK_THROWS_AS(nn::scaled_dot_product_attention(kv, kv, kv, Tensor::full({2, 2}, 0), true),
                  ValueError);
  CHECK_THROWS_AS(nn::one_hot(target, 0), ValueError);
  CHECK_THROWS_AS(nn::one_hot(Tensor::from_vector<int64_t>({7}, {1}, "CPU"), 3).realize(),
                  IndexError);
  CHECK_THROWS_AS(nn::smooth_l1_loss(x, x, nn::Reduction::Mean, -1), ValueError);
  CHECK_THROWS_WITH(nn::mse_loss(x, x.reshape({3, 2})), Catch::Contains("[mse_loss]"));
  CHECK_THROWS_AS(
      nn::scaled_dot_product_attention(kv, kv, kv, Tensor::zeros({2, 2}, dtypes::int32, "CPU")),
      DTypeError);
}

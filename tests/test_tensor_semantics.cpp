// The Tensor API's documented semantics, each checked against values worked out by hand or in
// plain C++ (double precision). The exhaustive op x dtype x layout battery is the conformance
// suite; these tests pin the rules a user reads in the headers.

#include <catch2/catch.hpp>

#include <kiln/kiln.h>

#include <cmath>
#include <limits>
#include <numeric>

#include "runtime/registry.h"

using namespace kiln;

namespace {

std::vector<float> iota(size_t count, float start = 0) {
  std::vector<float> values(count);
  std::iota(values.begin(), values.end(), start);
  return values;
}

// On the default device, so that KILN_DEVICE=CL runs these tests there too.
Tensor floats(std::vector<float> values, Shape shape) {
  return Tensor::from_vector(values, std::move(shape));
}

}  // namespace

TEST_CASE("creation", "[tensor]") {
  CHECK(Tensor::arange(5).to_vector<int32_t>() == std::vector<int32_t>{0, 1, 2, 3, 4});
  CHECK(Tensor::arange(10, 0, -3).to_vector<int32_t>() == std::vector<int32_t>{10, 7, 4, 1});
  CHECK(Tensor::arange(3, 3).numel() == 0);
  CHECK(Tensor::full({2, 2}, 7.5).to_vector<float>() == std::vector<float>{7.5, 7.5, 7.5, 7.5});
  CHECK(Tensor::zeros({3}, dtypes::int8).to_vector<int8_t>() == std::vector<int8_t>{0, 0, 0});
  CHECK(Tensor::ones({2}, dtypes::bool_).to_vector<bool>() == std::vector<bool>{true, true});
  CHECK(Tensor::eye(3).to_vector<float>() == std::vector<float>{1, 0, 0, 0, 1, 0, 0, 0, 1});
  const Tensor scalar = Tensor::full({}, 3);
  CHECK(scalar.ndim() == 0);
  CHECK(scalar.item<float>() == 3);
}

TEST_CASE("rand is uniform, reproducible and seeded", "[tensor]") {
  const std::vector<float> first = Tensor::rand({10000}, 7).to_vector<float>();
  CHECK(first == Tensor::rand({100, 100}, 7).to_vector<float>());
  CHECK(first != Tensor::rand({10000}, 8).to_vector<float>());
  double sum = 0, low = 1, high = 0;
  for (float value : first) {
    sum += value;
    low = std::min<double>(low, value);
    high = std::max<double>(high, value);
  }
  CHECK(low >= 0);
  CHECK(high < 1);
  CHECK(sum / first.size() == Approx(0.5).margin(0.02));
}

TEST_CASE("broadcasting and scalar dtype rules", "[tensor]") {
  const Tensor column = floats({1, 2, 3}, {3, 1});
  const Tensor row = floats({10, 20}, {2});
  const Tensor sum = column + row;
  CHECK(sum.shape() == Shape{3, 2});
  CHECK(sum.to_vector<float>() == std::vector<float>{11, 21, 12, 22, 13, 23});
  const Tensor ints = Tensor::arange(4);
  CHECK((ints * 2).dtype() == dtypes::int32);
  CHECK((ints * 2.5).dtype() == dtypes::float32);
  CHECK((ints + Tensor::ones({4}, dtypes::int64)).dtype() == dtypes::int64);
  CHECK((Tensor::ones({1}, dtypes::uint8) + Tensor::ones({1}, dtypes::int8)).dtype() ==
        dtypes::int16);
  CHECK((Tensor::ones({1}, dtypes::float16) + Tensor::ones({1}, dtypes::bfloat16)).dtype() ==
        dtypes::float32);
  CHECK((10.0 - ints).to_vector<int32_t>() == std::vector<int32_t>{10, 9, 8, 7});
  CHECK((ints < 2).dtype() == dtypes::bool_);
}

TEST_CASE("integer arithmetic wraps and divides as C", "[tensor]") {
  const Tensor big = Tensor::from_vector<int32_t>({2147483647, -2147483647 - 1, 7, -7}, {4});
  CHECK((big + 1).to_vector<int32_t>() ==
        std::vector<int32_t>{-2147483647 - 1, -2147483647, 8, -6});
  CHECK((big * 2).to_vector<int32_t>() == std::vector<int32_t>{-2, 0, 14, -14});
  const Tensor divisor = Tensor::from_vector<int32_t>({2, -1, -2, 0}, {4});
  CHECK((big / divisor).to_vector<int32_t>() ==
        std::vector<int32_t>{1073741823, -2147483647 - 1, -3, 0});
  CHECK((big % divisor).to_vector<int32_t>() == std::vector<int32_t>{1, 0, 1, 0});
  const Tensor bytes = Tensor::from_vector<uint8_t>({250, 3}, {2});
  CHECK((bytes + 10).to_vector<uint8_t>() == std::vector<uint8_t>{4, 13});
}

TEST_CASE("float to integer casts truncate and saturate, NaN gives 0", "[tensor]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor values = floats({1.9f, -1.9f, 300.0f, -300.0f, nan, inf, -inf, -0.0f}, {8});
  CHECK(values.cast(dtypes::int8).to_vector<int8_t>() ==
        std::vector<int8_t>{1, -1, 127, -128, 0, 127, -128, 0});
  CHECK(values.cast(dtypes::uint8).to_vector<uint8_t>() ==
        std::vector<uint8_t>{1, 0, 255, 0, 0, 255, 0, 0});
  CHECK(values.cast(dtypes::int32).to_vector<int32_t>()[5] == 2147483647);
  CHECK(values.cast(dtypes::bool_).to_vector<bool>() ==
        std::vector<bool>{true, true, true, true, true, true, true, false});
}

TEST_CASE("half types round to nearest even on store", "[tensor]") {
  if (!open_device(default_device())->device().supports(dtypes::float16)) {
    // The device says it lacks float16 (OpenCL without cl_khr_fp16): using it is a DTypeError.
    CHECK_THROWS_AS(floats({1.0f}, {1}).cast(dtypes::float16).realize(), DTypeError);
    return;
  }
  const Tensor values =
      floats({1.0f, 1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, 65520.0f, 1e-8f}, {5});
  const std::vector<float> halves = values.cast(dtypes::float16).to_vector<float>();
  CHECK(halves == std::vector<float>{1.0f, 1.0f, 1.0f + 4.0f / 2048,
                                     std::numeric_limits<float>::infinity(), 0.0f});
  const std::vector<half> stored = values.cast(dtypes::float16).to_vector<half>();
  CHECK(static_cast<float>(stored[0]) == 1.0f);
  const Tensor brain = floats({1.0f + 1.0f / 256, 3.0f}, {2}).cast(dtypes::bfloat16);
  CHECK(brain.to_vector<float>() == std::vector<float>{1.0f, 3.0f});
  CHECK((brain * 2).dtype() == dtypes::bfloat16);
}

TEST_CASE("NaN propagates through maximum and max", "[tensor]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor a = floats({1, nan, 3}, {3});
  const Tensor b = floats({2, 2, nan}, {3});
  const std::vector<float> high = maximum(a, b).to_vector<float>();
  CHECK(high[0] == 2);
  CHECK(std::isnan(high[1]));
  CHECK(std::isnan(high[2]));
  CHECK(std::isnan(a.max().item<float>()));
  CHECK(a.argmax(0).item<int32_t>() == 1);
  CHECK(floats({1, 0, 0}, {3}).relu().to_vector<float>() == std::vector<float>{1, 0, 0});
}

TEST_CASE("reductions", "[tensor]") {
  const Tensor a = floats(iota(6, 1), {2, 3});
  CHECK(a.sum().item<float>() == 21);
  CHECK(a.sum({0}).to_vector<float>() == std::vector<float>{5, 7, 9});
  CHECK(a.sum({1}, true).shape() == Shape{2, 1});
  CHECK(a.prod({1}).to_vector<float>() == std::vector<float>{6, 120});
  CHECK(a.max({0}).to_vector<float>() == std::vector<float>{4, 5, 6});
  CHECK(a.min().item<float>() == 1);
  CHECK(a.mean({1}).to_vector<float>() == std::vector<float>{2, 5});
  CHECK(a.var({1}).to_vector<float>() == std::vector<float>{1, 1});
  CHECK(a.var({1}, false, 0).to_vector<float>()[0] == Approx(2.0 / 3));
  CHECK(a.std().item<float>() == Approx(std::sqrt(3.5)));
  CHECK(Tensor::arange(5).sum().dtype() == dtypes::int64);
  CHECK(Tensor::zeros({0}).sum().item<float>() == 0);
  CHECK(Tensor::zeros({0}).prod().item<float>() == 1);
  CHECK(std::isnan(Tensor::zeros({0}).mean().item<float>()));
  // One axis as a number, negative axes counted from the end.
  CHECK(a.sum(0).to_vector<float>() == std::vector<float>{5, 7, 9});
  CHECK(a.sum(-1, true).shape() == Shape{2, 1});
  CHECK(a.max(1).to_vector<float>() == std::vector<float>{3, 6});
  CHECK(a.min(0).to_vector<float>() == std::vector<float>{1, 2, 3});
  CHECK(a.mean(1).to_vector<float>() == std::vector<float>{2, 5});
  CHECK(a.prod(0).to_vector<float>() == std::vector<float>{4, 10, 18});
  CHECK(a.var(1, false, 0).to_vector<float>()[0] == Approx(2.0 / 3));
  CHECK(a.std(0).to_vector<float>()[0] == Approx(std::sqrt(4.5)));
  CHECK(a.sum({0, 1}).item<float>() == 21);
  // A braced list is a list of axes, the empty one every axis.
  CHECK(a.sum({}, true).shape() == Shape{1, 1});
  CHECK(a.max({}).item<float>() == 6);
  CHECK(a.var({}, false, 0).item<float>() == Approx(35.0 / 12));
  CHECK(a.any({}).shape() == Shape{});
  CHECK(a.sum(size_t{1}).to_vector<float>() == std::vector<float>{6, 15});
  CHECK_THROWS_AS(a.sum(2), ShapeError);
}

TEST_CASE("argmax and argmin take the first index on ties", "[tensor]") {
  const Tensor a = floats({3, 1, 3, 1, 2, 2}, {2, 3});
  CHECK(a.argmax(1).to_vector<int32_t>() == std::vector<int32_t>{0, 1});
  CHECK(a.argmin(1).to_vector<int32_t>() == std::vector<int32_t>{1, 0});
  CHECK(a.argmax(0, true).shape() == Shape{1, 3});
  CHECK(a.argmax(0).to_vector<int32_t>() == std::vector<int32_t>{0, 1, 0});
}

TEST_CASE("softmax, log_softmax, logsumexp and cumsum", "[tensor]") {
  const Tensor a = floats({1, 2, 3, 1000, 1000, 1000}, {2, 3});
  const std::vector<float> soft = a.softmax(-1).to_vector<float>();
  const double denominator = std::exp(-2.0) + std::exp(-1.0) + 1.0;
  CHECK(soft[0] == Approx(std::exp(-2.0) / denominator));
  CHECK(soft[3] == Approx(1.0 / 3));
  CHECK(a.log_softmax(-1).to_vector<float>()[2] == Approx(-std::log(denominator)));
  CHECK(a.logsumexp(1).to_vector<float>()[1] == Approx(1000 + std::log(3.0)));
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(floats({-inf, -inf}, {2}).logsumexp(0).item<float>() == -inf);
  CHECK(a.cumsum(1).to_vector<float>() == std::vector<float>{1, 3, 6, 1000, 2000, 3000});
  CHECK(floats(iota(4), {4}).cumsum(0).to_vector<float>() == std::vector<float>{0, 1, 3, 6});
}

TEST_CASE("matmul batches and broadcasts as NumPy", "[tensor]") {
  const Tensor a = floats(iota(12), {2, 2, 3});
  const Tensor b = floats(iota(6), {3, 2});
  const Tensor product = matmul(a, b);
  CHECK(product.shape() == Shape{2, 2, 2});
  CHECK(product.to_vector<float>() == std::vector<float>{10, 13, 28, 40, 46, 67, 64, 94});
  const Tensor vector = floats({1, 1, 1}, {3});
  CHECK(matmul(a, vector).shape() == Shape{2, 2});
  CHECK(matmul(vector, b).to_vector<float>() == std::vector<float>{6, 9});
  CHECK(matmul(vector, vector).ndim() == 0);
  CHECK(a.matmul(b).to_vector<float>() == product.to_vector<float>());
}

TEST_CASE("isnan, clamp, any, all, gather and index_select", "[tensor]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor x = Tensor::from_vector(std::vector<float>{nan, inf, -inf, -0.0f, 2.5f}, {5});
  CHECK(x.isnan().to_vector<bool>() == std::vector<bool>{true, false, false, false, false});
  CHECK(x.isinf().to_vector<bool>() == std::vector<bool>{false, true, true, false, false});
  CHECK(x.isfinite().to_vector<bool>() == std::vector<bool>{false, false, false, true, true});
  const std::vector<float> clamped = x.clamp(-1, 2).to_vector<float>();
  CHECK(std::isnan(clamped[0]));
  CHECK(std::vector<float>(clamped.begin() + 1, clamped.end()) ==
        std::vector<float>{2, -1, -0.0f, 2});
  CHECK(std::signbit(clamped[3]));
  const Tensor bytes = Tensor::from_vector(std::vector<uint8_t>{0, 7, 200}, {3});
  CHECK(bytes.clamp(-5, 100).dtype() == dtypes::uint8);  // -5 lies below the range: open
  CHECK(bytes.clamp(-5, 100).to_vector<int>() == std::vector<int>{0, 7, 100});
  CHECK(bytes.clamp(1.5, 100).dtype() == dtypes::float32);
  CHECK_THROWS_AS(bytes.clamp(300, 400), DTypeError);
  CHECK_THROWS_AS(bytes.clamp(-400, -300), DTypeError);
  // The ends of 64-bit ranges, which a double cannot hold exactly.
  const Tensor wide = Tensor::from_vector(std::vector<int64_t>{-5, 0, 5}, {3});
  CHECK_THROWS_AS(wide.clamp(9223372036854775807.0, INFINITY), DTypeError);  // 2^63
  CHECK(wide.clamp(-9223372036854775808.0, 9223372036854775807.0).to_vector<int64_t>() ==
        std::vector<int64_t>{-5, 0, 5});
  CHECK(wide.clamp(-4611686018427387904.0, 2).to_vector<int64_t>() ==
        std::vector<int64_t>{-5, 0, 2});
  const Tensor unsigned_wide = Tensor::from_vector(std::vector<uint64_t>{1, 7}, {2});
  CHECK_THROWS_AS(unsigned_wide.clamp(18446744073709551616.0, INFINITY), DTypeError);  // 2^64
  CHECK(unsigned_wide.clamp(-1, 3).to_vector<uint64_t>() == std::vector<uint64_t>{1, 3});
  CHECK_THROWS_AS(Tensor::ones({2}, dtypes::bool_).clamp(0, 1), DTypeError);

  const Tensor flags = Tensor::from_vector(std::vector<int32_t>{0, 0, 3, 0, 0, 0}, {2, 3});
  CHECK(flags.any(1).to_vector<bool>() == std::vector<bool>{true, false});
  CHECK(flags.all().item<bool>() == false);
  CHECK(x.all().item<bool>() == false);  // -0.0 is zero
  CHECK(x.any(0, true).shape() == Shape{1});
  CHECK(Tensor::zeros({3, 0}).all(1).to_vector<bool>() == std::vector<bool>{true, true, true});
  CHECK_THROWS_AS(flags.any(2), ShapeError);

  const Tensor table = floats(iota(6, 1), {2, 3});
  // -1 is the last column; 9 is outside the 3 columns: IndexError when the value is computed.
  const Tensor picks = Tensor::from_vector(std::vector<int64_t>{2, 0, -1, 1}, {2, 2});
  CHECK(table.gather(1, picks).to_vector<float>() == std::vector<float>{3, 1, 6, 5});
  const Tensor past_end = Tensor::from_vector(std::vector<int64_t>{2, 0, 9, 1}, {2, 2});
  CHECK_THROWS_AS(table.gather(1, past_end).to_vector<float>(), IndexError);
  CHECK(table.index_select(0, Tensor::from_vector(std::vector<int32_t>{1, 1}, {2}))
            .to_vector<float>() == std::vector<float>{4, 5, 6, 4, 5, 6});
  CHECK_THROWS_AS(table.gather(1, picks.cast(dtypes::float32)), DTypeError);
  CHECK_THROWS_AS(table.gather(1, Tensor::zeros({4}, dtypes::int32)), ShapeError);
  CHECK_THROWS_AS(table.gather(1, Tensor::zeros({3, 1}, dtypes::int32)), ShapeError);
  CHECK_THROWS_AS(table.index_select(0, picks), ShapeError);
  CHECK(table.gather(0, Tensor::zeros({0, 3}, dtypes::int32)).shape() == Shape{0, 3});
}

TEST_CASE("movement ops are views with the right values", "[tensor]") {
  const Tensor a = floats(iota(6), {2, 3});
  CHECK(a.transpose().to_vector<float>() == std::vector<float>{0, 3, 1, 4, 2, 5});
  CHECK(a.flip({1}).to_vector<float>() == std::vector<float>{2, 1, 0, 5, 4, 3});
  CHECK(a.shrink({{1, 2}, {1, 3}}).to_vector<float>() == std::vector<float>{4, 5});
  CHECK(a.pad({{0, 1}, {1, 0}}, 9).to_vector<float>() ==
        std::vector<float>{9, 0, 1, 2, 9, 3, 4, 5, 9, 9, 9, 9});
  CHECK(a.reshape({3, -1}).shape() == Shape{3, 2});
  CHECK(a.unsqueeze(0).expand({2, 2, 3}).sum({0}).to_vector<float>() ==
        std::vector<float>{0, 2, 4, 6, 8, 10});
  CHECK(a.flatten().shape() == Shape{6});
  CHECK(a.reshape({1, 2, 1, 3}).squeeze().shape() == Shape{2, 3});
  CHECK(a.reshape({1, 6}).squeeze(0).shape() == Shape{6});
  // A chain: transpose -> [[0,3],[1,4],[2,5]], flip -> [[2,5],[1,4],[0,3]], pad a row above and
  // a column right, then keep rows 0..2 and columns 1..2.
  const Tensor chained = a.transpose().flip({0}).pad({{1, 0}, {0, 1}}).shrink({{0, 3}, {1, 3}});
  CHECK(chained.to_vector<float>() == std::vector<float>{0, 0, 5, 0, 4, 0});
  CHECK(cat({a, a + 10}, 0).to_vector<float>() ==
        std::vector<float>{0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15});
  CHECK(stack({a, a}, 2).shape() == Shape{2, 3, 2});
}

TEST_CASE("unary math matches the C library", "[tensor]") {
  const std::vector<float> inputs{0.1f, 0.5f, 1.0f, 2.5f};
  const Tensor x = floats(inputs, {4});
  struct Case {
    const char* name;
    Tensor result;
    double (*reference)(double);
  };
  const Case cases[] = {
      {"exp", x.exp(), [](double v) { return std::exp(v); }},
      {"log", x.log(), [](double v) { return std::log(v); }},
      {"sqrt", x.sqrt(), [](double v) { return std::sqrt(v); }},
      {"rsqrt", x.rsqrt(), [](double v) { return 1 / std::sqrt(v); }},
      {"sin", x.sin(), [](double v) { return std::sin(v); }},
      {"tanh", x.tanh(), [](double v) { return std::tanh(v); }},
      {"sigmoid", x.sigmoid(), [](double v) { return 1 / (1 + std::exp(-v)); }},
      {"gelu", x.gelu(), [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }},
      {"silu", x.silu(), [](double v) { return v / (1 + std::exp(-v)); }},
      {"pow", x.pow(1.5), [](double v) { return std::pow(v, 1.5); }},
  };
  for (const Case& test : cases) {
    INFO(test.name);
    const std::vector<float> got = test.result.to_vector<float>();
    for (size_t index = 0; index < inputs.size(); ++index) {
      CHECK(got[index] == Approx(test.reference(inputs[index])).epsilon(1e-6));
    }
  }
  CHECK(floats({0.5f, 1.5f, 2.5f, -0.5f}, {4}).round().to_vector<float>() ==
        std::vector<float>{0, 2, 2, -0.0f});
  CHECK(Tensor::arange(3).exp().dtype() == dtypes::float32);
}

TEST_CASE("realize is idempotent and copies share the computed value", "[tensor]") {
  const Tensor a = floats({1, 2}, {2});
  const Tensor b = a * 3;
  const Tensor copy = b;
  b.realize();
  CHECK(copy.to_vector<float>() == std::vector<float>{3, 6});
  b.realize();
  CHECK(b.to_vector<float>() == std::vector<float>{3, 6});
  CHECK(b.to("CPU").to_vector<float>() == std::vector<float>{3, 6});
  CHECK(b.to(default_device()).to("CPU").to_vector<float>() == std::vector<float>{3, 6});
}

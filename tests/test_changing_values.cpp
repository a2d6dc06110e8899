// Values that change between steps: a learning rate held by Tensor::scalar and batches taken at a
// moving offset (a Variable) compile their kernels in the first step and none after, on every
// device, and compute what plain C++ in double precision computes.

#include <catch2/catch.hpp>

#include <kiln/kiln.h>

#include <cmath>
#include <vector>

#include "runtime/registry.h"

using namespace kiln;

namespace {

// Kernels the device built or loaded: a kernel served from the in-memory cache adds nothing.
int64_t kernels_built(const std::string& device) {
  const auto& stats = open_device(device)->stats();
  return stats.compiles + stats.disk_hits;
}

}  // namespace

TEST_CASE("a learning rate that changes and batches at a moving offset compile in the first step",
          "[variables]") {
  constexpr int64_t kRows = 200, kFeatures = 8, kBatch = 16, kSteps = 8;
  std::vector<float> data(kRows * kFeatures), targets(kRows);
  for (int64_t row = 0; row < kRows; ++row) {
    for (int64_t feature = 0; feature < kFeatures; ++feature)
      data[row * kFeatures + feature] = std::sin(0.37f * static_cast<float>(row + 3 * feature));
    targets[row] = std::cos(0.11f * static_cast<float>(row));
  }
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    const Tensor inputs = Tensor::from_vector(data, {kRows, kFeatures}, device);
    const Tensor outputs = Tensor::from_vector(targets, {kRows}, device);
    const Variable start("start", 0, kRows - kBatch);
    // Held in a buffer from the start, as a model's weights are (zeros() would be a constant that
    // the first step's kernels fold).
    Tensor weights = Tensor::from_vector(std::vector<float>(kFeatures, 0.0f), {kFeatures}, device);
    std::vector<double> expected(kFeatures, 0.0);
    int64_t built_after_first = -1;
    for (int64_t step = 0; step < kSteps; ++step) {
      const int64_t offset = (step * 23) % (kRows - kBatch);
      const double rate = 0.5 / static_cast<double>(step + 1);
      const Dim begin = start.bind(offset);
      const Tensor batch = inputs.shrink({{begin, begin + Dim(kBatch)}, {0, kFeatures}});
      const Tensor wanted = outputs.shrink({{begin, begin + Dim(kBatch)}});
      // Least squares: the gradient of mean((batch . w - wanted)^2).
      const Tensor error = (batch * weights).sum(1) - wanted;
      const Tensor gradient = (error.reshape({Dim(kBatch), 1}) * batch).sum(0) * (2.0f / kBatch);
      weights = weights - gradient * Tensor::scalar(rate, dtypes::float32, device);
      weights.realize();

      std::vector<double> host_gradient(kFeatures, 0.0);
      for (int64_t row = offset; row < offset + kBatch; ++row) {
        double predicted = 0;
        for (int64_t feature = 0; feature < kFeatures; ++feature)
          predicted += data[row * kFeatures + feature] * expected[feature];
        const double residual = predicted - targets[row];
        for (int64_t feature = 0; feature < kFeatures; ++feature)
          host_gradient[feature] += residual * data[row * kFeatures + feature] * 2.0 / kBatch;
      }
      // The rate as float32 holds it, as the kernel reads it.
      for (int64_t feature = 0; feature < kFeatures; ++feature)
        expected[feature] -= host_gradient[feature] * static_cast<float>(rate);
      const std::vector<float> got = weights.to_vector<float>();
      for (int64_t feature = 0; feature < kFeatures; ++feature)
        CHECK(got[feature] == Approx(expected[feature]).epsilon(1e-4).margin(1e-5));
      if (step == 0) built_after_first = kernels_built(device);
    }
    CHECK(kernels_built(device) == built_after_first);
  }
}

TEST_CASE("a scalar holds its value in each dtype, and an integer dtype only integers it holds",
          "[variables][errors]") {
  CHECK(Tensor::scalar(2.5).item<float>() == 2.5f);
  CHECK(Tensor::scalar(2.5).shape().empty());
  CHECK(Tensor::scalar(-0.0).item<float>() == 0.0f);
  CHECK(std::signbit(Tensor::scalar(-0.0).item<float>()));
  CHECK(std::isnan(Tensor::scalar(NAN).item<float>()));
  CHECK(Tensor::scalar(-INFINITY).item<float>() == -INFINITY);
  CHECK(Tensor::scalar(0.1, dtypes::float64).item<double>() == 0.1);
  CHECK(Tensor::scalar(1.0001, dtypes::float16).cast(dtypes::float32).item<float>() == 1.0f);
  CHECK(Tensor::scalar(-128, dtypes::int8).cast(dtypes::int32).item<int32_t>() == -128);
  CHECK(Tensor::scalar(4e9, dtypes::uint32).cast(dtypes::int64).item<int64_t>() == 4000000000);
  CHECK(Tensor::scalar(-5e12, dtypes::int64).item<int64_t>() == -5000000000000);
  CHECK(Tensor::scalar(3, dtypes::bool_).item<bool>());
  // Added to a tensor it broadcasts like a number.
  const Tensor row = Tensor::from_vector(std::vector<float>{1, 2, 3}, {3});
  CHECK((row + Tensor::scalar(0.5)).to_vector<float>() == std::vector<float>{1.5f, 2.5f, 3.5f});
  CHECK_THROWS_AS(Tensor::scalar(300, dtypes::uint8), DTypeError);
  CHECK_THROWS_AS(Tensor::scalar(-1, dtypes::uint32), DTypeError);
  CHECK_THROWS_AS(Tensor::scalar(0.5, dtypes::int32), DTypeError);
  CHECK_THROWS_AS(Tensor::scalar(NAN, dtypes::int64), DTypeError);
  CHECK_THROWS_WITH(Tensor::scalar(300, dtypes::uint8),
                    Catch::Contains("[scalar]") && Catch::Contains("uint8") &&
                        Catch::Contains("integers from 0 to 255"));
}

// Capture and replay (include/kiln/capture.h): a replay computes what running the step computes,
// on every device; it launches the captured kernels only; inputs that do not match are refused by
// name; each call's outputs are its own.

#include <catch2/catch.hpp>

#include <kiln/kiln.h>

#include "runtime/registry.h"
#include "tests/scoped_settings.h"
#include "tests/test_support.h"

using namespace kiln;
using testing::contains;

namespace {

std::vector<float> values_of(const Tensor& tensor) {
  return tensor.cast(dtypes::float32).to_vector<float>();
}

void check_close(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t index = 0; index < want.size(); ++index)
    CHECK(got[index] == Approx(want[index]).epsilon(1e-5).margin(1e-6));
}

}  // namespace

TEST_CASE("a replayed step computes what the step computes", "[capture]") {
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    const Tensor weights = Tensor::rand({32, 16}, 7, device);
    const Tensor bias = Tensor::rand({16}, 8, device);
    auto step_function = [&](const std::vector<Tensor>& in) {
      const Tensor hidden = (in[0].matmul(weights) + bias).relu();
      return std::vector<Tensor>{hidden.softmax(-1), (hidden * in[1]).sum({1}), in[1]};
    };
    CapturedStep step(step_function);
    CHECK_FALSE(step.captured());
    for (uint64_t call = 0; call < 5; ++call) {
      const Tensor x = Tensor::rand({8, 32}, 100 + call, device);
      const Tensor scale = Tensor::rand({8, 16}, 200 + call, device);
      const std::vector<Tensor> replayed = step({x, scale});
      const std::vector<Tensor> direct = step_function({x, scale});
      REQUIRE(replayed.size() == direct.size());
      for (size_t output = 0; output < direct.size(); ++output) {
        CHECK(replayed[output].shape() == direct[output].shape());
        check_close(values_of(replayed[output]), values_of(direct[output]));
      }
    }
    CHECK(step.captured());
    CHECK(step.kernels() >= 2);
  }
}

TEST_CASE("each replay's outputs are its own", "[capture]") {
  CapturedStep twice([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * 2}; });
  std::vector<std::vector<Tensor>> results;
  for (int call = 0; call < 4; ++call)
    results.push_back(twice({Tensor::full({5}, call, dtypes::float32)}));
  for (int call = 0; call < 4; ++call)
    CHECK(values_of(results[call][0]) == std::vector<float>(5, 2.0f * call));
}

TEST_CASE("a replay takes inputs that match the capture and names the one that does not",
          "[capture]") {
  CapturedStep step(
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] + in[1].sum()}; });
  const Tensor a = Tensor::rand({4, 3}, 1), b = Tensor::rand({6}, 2);
  step({a, b});
  step({a, b});
  REQUIRE(step.captured());
  try {
    step({a, Tensor::rand({7}, 3)});
    FAIL("a replay took an input of another shape");
  } catch (const ShapeError& error) {
    CHECK(contains(error.what(), "input 1"));
    CHECK(contains(error.what(), "(6,)"));
  }
  CHECK_THROWS_AS(step({a, b.cast(dtypes::float64)}), DTypeError);
  CHECK_THROWS_AS(step({a}), ShapeError);
  // A non-contiguous input of the captured shape is made contiguous first.
  const Tensor transposed = Tensor::rand({3, 4}, 4).transpose();
  const std::vector<float> got = values_of(step({transposed, b})[0]);
  check_close(got, values_of(transposed + b.sum()));
}

TEST_CASE("a replay builds no graph and compiles nothing", "[capture]") {
  int built = 0;
  CapturedStep step([&](const std::vector<Tensor>& in) {
    ++built;
    Tensor value = in[0];
    for (int kernel = 0; kernel < 10; ++kernel) value = (value * 1.5f + 1).contiguous();
    return std::vector<Tensor>{value};
  });
  const Tensor x = Tensor::rand({64}, 9);
  step({x});
  step({x});
  CHECK(step.kernels() == 10);
  std::vector<Tensor> inputs;
  for (int call = 0; call < 3; ++call) inputs.push_back(Tensor::rand({64}, 10 + call).realize());
  const int64_t compiles = open_device(default_device())->stats().compiles;
  for (const Tensor& input : inputs) step({input});
  CHECK(built == 2);
  CHECK(open_device(default_device())->stats().compiles == compiles);
}

TEST_CASE("captured inputs never share a buffer", "[capture]") {
  // The same tensor twice, and a tensor the step also holds: each input gets its own buffer at
  // capture, so a replay swaps each for the call's input without touching the others.
  const Tensor weights = Tensor::rand({6}, 21).realize();
  CapturedStep step([&](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{in[0] * 2 + in[1] * 3 + weights};
  });
  const Tensor x = Tensor::rand({6}, 22).realize();
  step({x, x});
  step({weights, weights});
  const Tensor a = Tensor::rand({6}, 23).realize(), b = Tensor::rand({6}, 24).realize();
  check_close(values_of(step({a, b})[0]), values_of(a * 2 + b * 3 + weights));
  check_close(values_of(step({weights, a})[0]), values_of(weights * 2 + a * 3 + weights));
}

TEST_CASE("a capture that throws leaves the step as it was", "[capture]") {
  int calls = 0;
  CapturedStep step([&](const std::vector<Tensor>& in) {
    if (++calls == 2) throw ShapeError("[test] the second call fails");
    return std::vector<Tensor>{in[0] + 1};
  });
  const Tensor x = Tensor::rand({4}, 31).realize();
  step({x});
  CHECK_THROWS_AS(step({x}), ShapeError);
  CHECK_FALSE(step.captured());
  check_close(values_of(step({x})[0]), values_of(x + 1));  // captures now
  CHECK(step.captured());
  check_close(values_of(step({x})[0]), values_of(x + 1));
}

TEST_CASE("KILN_GRAPHS=0 replays kernel by kernel, an invalid value is refused by name",
          "[capture]") {
  const kiln::testing::ScopedEnvironment graphs("KILN_GRAPHS", "0");
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    auto doubled_sum = [](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{(in[0] * 2).sum({1}), in[0].exp()};
    };
    graphs.set("0");
    CapturedStep step(doubled_sum);
    for (uint64_t call = 0; call < 3; ++call) {
      const Tensor x = Tensor::rand({4, 8}, 300 + call, device);
      const std::vector<Tensor> replayed = step({x});
      const std::vector<Tensor> direct = doubled_sum({x});
      for (size_t output = 0; output < direct.size(); ++output)
        check_close(values_of(replayed[output]), values_of(direct[output]));
    }
    CapturedStep refused(doubled_sum);
    graphs.set("yes");
    const Tensor x = Tensor::rand({4, 8}, 400, device);
    refused({x});
    refused({x});  // the capture
    CHECK_THROWS_WITH(refused({x}), Catch::Contains("KILN_GRAPHS") && Catch::Contains("'yes'"));
    // The refusal changed nothing: with a valid value the next replay runs.
    graphs.set("1");
    check_close(values_of(refused({x})[0]), values_of(doubled_sum({x})[0]));
  }
}

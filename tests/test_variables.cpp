// Symbolic sizes (include/kiln/variable.h): a program over a variable size computes what the same
// program over the number computes, on every device, and binding another value compiles nothing.
// References are plain C++ in double precision.

#include <catch2/catch.hpp>

#include <kiln/kiln.h>

#include <cmath>
#include <functional>

#include "runtime/registry.h"
#include "tests/index_checks.h"
#include "tests/scoped_settings.h"
#include "tests/test_support.h"

using namespace kiln;
using testing::check_same;
using testing::contains;

namespace {

// Kernels the device built or loaded: a kernel served from the in-memory cache adds nothing.
int64_t kernels_built(const std::string& device) {
  const auto& stats = open_device(device)->stats();
  return stats.compiles + stats.disk_hits;
}

std::vector<float> ramp(int64_t count, float scale) {
  std::vector<float> values(static_cast<size_t>(count));
  for (int64_t index = 0; index < count; ++index)
    values[static_cast<size_t>(index)] = std::sin(static_cast<float>(index) * scale) * 3.0f;
  return values;
}

void check_close(const std::vector<float>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t index = 0; index < want.size(); ++index)
    CHECK(got[index] == Approx(want[index]).epsilon(1e-5).margin(1e-5));
}

}  // namespace

TEST_CASE("variables check their names, bounds and values", "[variables]") {
  CHECK_THROWS_AS(Variable("2n", 1, 8), ShapeError);
  CHECK_THROWS_AS(Variable("n", 5, 4), ShapeError);
  CHECK_THROWS_AS(Variable("n", -1, 4), ShapeError);
  const Variable n("n", 1, 8);
  try {
    n.bind(9);
    FAIL("binding outside the bounds was accepted");
  } catch (const ShapeError& error) {
    CHECK(contains(error.what(), "'n'"));
    CHECK(contains(error.what(), "[1, 8]"));
  }
  const Dim five = n.bind(5);
  CHECK(five.is_symbolic());
  CHECK(five.value() == 5);
  CHECK((five * 16).value() == 80);
  CHECK(Dim(7).value() == 7);
  CHECK_FALSE(Dim(7).is_symbolic());
}

TEST_CASE("shapes print with the variable's name", "[variables]") {
  const Variable n("rows", 1, 64);
  const Tensor x = Tensor::zeros({n.bind(5), 16}, dtypes::float32, "CPU");
  CHECK(x.shape() == Shape{5, 16});
  CHECK(x.shape_string() == "(rows=5, 16)");
  CHECK(x.dims()[0].is_symbolic());
  try {
    (void)(x + Tensor::zeros(Shape{4, 16}, dtypes::float32, "CPU"));
    FAIL("adding (rows=5, 16) and (4, 16) was accepted");
  } catch (const ShapeError& error) {
    CHECK(contains(error.what(), "add"));
    CHECK(contains(error.what(), "(rows=5, 16)"));
  }
  CHECK(x.reshape({n.bind(5) * 16}).shape_string() == "((rows*16)=80,)");
}

TEST_CASE("a symbolic size does not broadcast like a 1", "[variables]") {
  const Tensor single = Tensor::zeros({Variable("m", 1, 8).bind(1), 16}, dtypes::float32, "CPU");
  try {
    (void)(single + Tensor::zeros(Shape{4, 16}, dtypes::float32, "CPU"));
    FAIL("a variable bound to 1 was broadcast to 4");
  } catch (const ShapeError& error) {
    CHECK(contains(error.what(), "m=1"));
    CHECK(contains(error.what(), "cannot broadcast"));
  }
}

TEST_CASE("sizes whose bounds could pass 2^60 elements are refused at the op", "[variables]") {
  // Before: the kernel's int64 size arithmetic overflowed at the bounds, and (y + 1) read
  // garbage on the CPU and OpenCL for a 2x3 tensor.
  const Variable a("a", 1, int64_t{1} << 32), b("b", 1, int64_t{1} << 32);
  const Tensor values = Tensor::arange(6, "CPU").cast(dtypes::float32);
  auto refused = [](const std::function<void()>& build, const char* op) {
    try {
      build();
      FAIL(op << " accepted sizes that may hold 2^64 elements");
    } catch (const ShapeError& error) {
      CHECK(contains(error.what(), std::string("[") + op + "]"));
      CHECK(contains(error.what(), "a in [1, 4294967296]"));
      CHECK(contains(error.what(), "2^60"));
    }
  };
  refused([&] { (void)values.reshape({a.bind(2), b.bind(3)}); }, "reshape");
  refused([&] { (void)Tensor::zeros({a.bind(2), b.bind(3)}, dtypes::float32, "CPU"); }, "full");
  const Tensor column = values.reshape({a.bind(6), 1}), row = values.reshape({1, b.bind(6)});
  refused([&] { (void)(column + row); }, "add");
  refused([&] { (void)column.expand({a.bind(6), b.bind(6)}); }, "expand");
  // One large bound alone is fine, and so are two whose product stays under 2^60.
  const Variable c("c", 1, int64_t{1} << 30), d("d", 1, int64_t{1} << 30);
  CHECK((values.reshape({c.bind(2), d.bind(3)}) + 1.0f).to_vector<float>() ==
        std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(values.reshape({Variable("e", 1, int64_t{1} << 50).bind(6)}).sum().item<float>() == 15);
}

TEST_CASE("one name with two bounds is an error", "[variables]") {
  const Tensor a = Tensor::zeros({Variable("n", 1, 8).bind(4)}, dtypes::float32, "CPU");
  const Tensor b = Tensor::zeros({Variable("n", 1, 16).bind(4)}, dtypes::float32, "CPU");
  try {
    (void)(a + b);
    FAIL("two variables named n with different bounds were mixed");
  } catch (const ShapeError& error) {
    CHECK(contains(error.what(), "'n'"));
    CHECK(contains(error.what(), "[1, 8]"));
    CHECK(contains(error.what(), "[1, 16]"));
  }
}

TEST_CASE("dynamic batching compiles each kernel once", "[variables]") {
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    const Variable batch("batch", 1, 64);
    const Tensor weights = Tensor::from_vector(ramp(16, 0.37f), {16}, device);
    int64_t built_after_first = -1;
    for (int64_t rows : {3, 1, 7, 64, 33, 2}) {
      INFO("batch " << rows);
      const std::vector<float> data = ramp(rows * 16, 0.11f + 0.01f * static_cast<float>(rows));
      const Tensor x =
          Tensor::from_vector(data, {rows, 16}, device).reshape({batch.bind(rows), 16});
      // Elementwise with a broadcast operand, a row reduction and a softmax.
      const Tensor scaled = x * weights + 1.0;
      const Tensor sums = scaled.sum({1});
      const Tensor soft = scaled.softmax(-1);
      std::vector<double> want_sums(static_cast<size_t>(rows)), want_soft(data.size());
      const std::vector<float> w = ramp(16, 0.37f);
      for (int64_t row = 0; row < rows; ++row) {
        double total = 0, peak = -INFINITY;
        std::vector<double> values(16);
        for (int col = 0; col < 16; ++col) {
          values[col] = static_cast<double>(data[row * 16 + col]) * w[col] + 1.0;
          total += values[col];
          peak = std::max(peak, values[col]);
        }
        want_sums[row] = total;
        double denominator = 0;
        for (int col = 0; col < 16; ++col) denominator += std::exp(values[col] - peak);
        for (int col = 0; col < 16; ++col)
          want_soft[row * 16 + col] = std::exp(values[col] - peak) / denominator;
      }
      check_close(sums.to_vector<float>(), want_sums);
      check_close(soft.to_vector<float>(), want_soft);
      if (built_after_first < 0) {
        built_after_first = kernels_built(device);
      } else {
        CHECK(kernels_built(device) == built_after_first);
      }
    }
  }
}

TEST_CASE("a growing length reads the first n rows of a cache", "[variables]") {
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    constexpr int64_t kCapacity = 300, kWidth = 8;
    const std::vector<float> data = ramp(kCapacity * kWidth, 0.013f);
    const Tensor cache = Tensor::from_vector(data, {kCapacity, kWidth}, device);
    const Tensor query = Tensor::from_vector(ramp(kWidth, 0.5f), {1, kWidth}, device);
    const Variable length("length", 1, kCapacity);
    int64_t built_after_first = -1;
    for (int64_t n : {1, 2, 5, 64, 299, 300, 17}) {
      INFO("length " << n);
      const Tensor keys = cache.shrink({{0, length.bind(n)}, {0, kWidth}});
      CHECK(keys.shape() == Shape{n, kWidth});
      // Attention-like: scores over the n rows, their softmax, and the weighted column sums.
      const Tensor scores = (keys * query).sum({1});
      const Tensor weights = scores.softmax(0);
      const Tensor mixed = (keys * weights.unsqueeze(1)).sum({0});
      std::vector<double> want_scores(static_cast<size_t>(n));
      const std::vector<float> q = ramp(kWidth, 0.5f);
      double peak = -INFINITY;
      for (int64_t row = 0; row < n; ++row) {
        double score = 0;
        for (int col = 0; col < kWidth; ++col)
          score += static_cast<double>(data[row * kWidth + col]) * q[col];
        want_scores[row] = score;
        peak = std::max(peak, score);
      }
      double denominator = 0;
      for (double score : want_scores) denominator += std::exp(score - peak);
      std::vector<double> want_mixed(kWidth, 0.0);
      for (int64_t row = 0; row < n; ++row) {
        const double weight = std::exp(want_scores[row] - peak) / denominator;
        for (int col = 0; col < kWidth; ++col) want_mixed[col] += weight * data[row * kWidth + col];
      }
      check_close(scores.to_vector<float>(), want_scores);
      check_close(mixed.to_vector<float>(), want_mixed);
      if (built_after_first < 0) {
        built_after_first = kernels_built(device);
      } else {
        CHECK(kernels_built(device) == built_after_first);
      }
    }
  }
}

TEST_CASE("cat and pad and arange along a variable size build each kernel once", "[variables]") {
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    constexpr int64_t kWidth = 4;
    const std::vector<float> data = ramp(40 * kWidth, 0.21f);
    const Tensor cache = Tensor::from_vector(data, {40, kWidth}, device);
    const Tensor step = Tensor::full({1, kWidth}, 2.5f, dtypes::float32, device);
    const Variable length("length", 1, 39);
    int64_t built_after_first = -1;
    for (int64_t n : {3, 1, 39, 8}) {
      INFO("length " << n);
      const Tensor keys = cache.shrink({{0, length.bind(n)}, {0, kWidth}});
      // A cache that grows by one row, the positions of its rows, and its rows padded to the
      // next multiple of nothing but the variable (n rows of -1 after them).
      const Tensor grown = cat({keys, step}, 0);
      const Tensor positions = Tensor::arange(keys.dims()[0], dtypes::int64, device);
      const Tensor padded = keys.pad({{Dim(0), keys.dims()[0]}, {Dim(0), Dim(0)}}, -1.0);
      CHECK(grown.shape_string() == "((length+1)=" + std::to_string(n + 1) + ", 4)");
      std::vector<float> want_grown(data.begin(), data.begin() + n * kWidth);
      want_grown.insert(want_grown.end(), kWidth, 2.5f);
      std::vector<int64_t> want_positions(static_cast<size_t>(n));
      for (int64_t row = 0; row < n; ++row) want_positions[static_cast<size_t>(row)] = row;
      std::vector<float> want_padded(data.begin(), data.begin() + n * kWidth);
      want_padded.insert(want_padded.end(), static_cast<size_t>(n * kWidth), -1.0f);
      CHECK(grown.to_vector<float>() == want_grown);
      CHECK(positions.to_vector<int64_t>() == want_positions);
      CHECK(padded.to_vector<float>() == want_padded);
      if (built_after_first < 0) {
        built_after_first = kernels_built(device);
      } else {
        CHECK(kernels_built(device) == built_after_first);
      }
    }
  }
  // A symbolic amount that some value of its variable makes negative is refused at once.
  const Variable rows("rows", 1, 39);
  const Tensor some = Tensor::zeros({rows.bind(10), Dim(2)});
  CHECK_THROWS_AS(some.pad({{Dim(0), some.dims()[0] - Dim(5)}, {Dim(0), Dim(0)}}), ShapeError);
  // arange checks its dtype against the variable's largest value.
  const Variable big("big", 1, 300);
  CHECK_THROWS_AS(Tensor::arange(big.bind(5), dtypes::int8), DTypeError);
  CHECK_THROWS_AS(Tensor::arange(big.bind(5), dtypes::bool_), DTypeError);
  CHECK(Tensor::arange(Dim(3), dtypes::float32).to_vector<float>() == std::vector<float>{0, 1, 2});
}

TEST_CASE("gather and index_select keep variable sizes, captured or not", "[variables]") {
  // A table whose length varies (a cache's first n rows) read at positions whose count varies:
  // one kernel for every value, and a captured step replays right at other values (it once read
  // zeros, read past the table, or kept the capture call's shape).
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    constexpr int64_t kRows = 40, kWidth = 3;
    const std::vector<float> data = ramp(kRows * kWidth, 0.37f);
    const Tensor table = Tensor::from_vector(data, {kRows, kWidth}, device);
    const Variable length("length", 1, kRows), count("count", 1, 16);
    auto positions_for = [](int64_t rows, int64_t wanted) {
      // Counted from the start and from the end of the current length.
      std::vector<int32_t> at(static_cast<size_t>(wanted));
      for (int64_t index = 0; index < wanted; ++index)
        at[static_cast<size_t>(index)] =
            static_cast<int32_t>(index % 5 == 4 ? -1 - (index * 3) % rows : (index * 7) % rows);
      return at;
    };
    auto expected = [&](const std::vector<int32_t>& at, int64_t rows) {
      std::vector<double> values;
      for (int32_t position : at) {
        const int64_t row = position < 0 ? position + rows : position;
        for (int64_t column = 0; column < kWidth; ++column)
          values.push_back(data[static_cast<size_t>(row * kWidth + column)]);
      }
      return values;
    };
    auto step_function = [&](const std::vector<Tensor>& in) {
      const Tensor rows_so_far = in[0];
      const Tensor gather_index =
          in[1].reshape({in[1].dims()[0], Dim(1)}).expand({in[1].dims()[0], Dim(kWidth)});
      return std::vector<Tensor>{rows_so_far.index_select(0, in[1]),
                                 rows_so_far.gather(0, gather_index)};
    };
    CapturedStep step(step_function);
    int64_t built = -1;
    for (auto [rows, wanted] : std::vector<std::pair<int64_t, int64_t>>{
             {10, 5}, {10, 5}, {10, 5}, {40, 16}, {3, 1}, {25, 9}}) {
      INFO("length " << rows << ", count " << wanted);
      const std::vector<int32_t> at = positions_for(rows, wanted);
      const Tensor keys = table.shrink({{0, length.bind(rows)}, {0, kWidth}});
      const Tensor positions =
          Tensor::from_vector(at, {wanted}, device).reshape({count.bind(wanted)});
      const std::vector<double> want = expected(at, rows);
      const std::vector<Tensor> direct = step_function({keys, positions});
      CHECK(direct[0].shape_string() == "(count=" + std::to_string(wanted) + ", 3)");
      check_close(direct[0].to_vector<float>(), want);
      check_close(direct[1].to_vector<float>(), want);
      const std::vector<Tensor> replayed = step({keys, positions});
      CHECK(replayed[0].shape_string() == "(count=" + std::to_string(wanted) + ", 3)");
      check_close(replayed[0].to_vector<float>(), want);
      check_close(replayed[1].to_vector<float>(), want);
      // Captured and uncaptured, one set of kernels serves every value.
      if (step.captured() && built < 0) built = kernels_built(device);
      if (built >= 0) CHECK(kernels_built(device) == built);
    }
    // A position past the current length (inside the buffer) is out of range at this value:
    // the replay raises, and the next one is right again.
    const Tensor keys = table.shrink({{0, length.bind(10)}, {0, kWidth}});
    const Tensor past_end =
        Tensor::from_vector(std::vector<int32_t>{3, 10}, {2}, device).reshape({count.bind(2)});
    try {
      step({keys, past_end});
      FAIL("a replay read position 10 of 10 rows");
    } catch (const IndexError& error) {
      CHECK_THAT(error.what(), Catch::Contains("] index 10 is out of range for axis 0 of size 10"));
    }
    const std::vector<int32_t> at = positions_for(10, 5);
    const Tensor positions = Tensor::from_vector(at, {5}, device).reshape({count.bind(5)});
    check_close(step({keys, positions})[0].to_vector<float>(), expected(at, 10));
  }
}

TEST_CASE("a variable may be zero and sizes mix with numbers", "[variables]") {
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    const Variable n("n", 0, 40);
    const Tensor base = Tensor::arange(40, device).cast(dtypes::float32);
    for (int64_t value : {0, 1, 39, 40}) {
      INFO("n " << value);
      const Tensor part = base.shrink({{Dim(0), n.bind(value)}});
      const Tensor padded = part.pad({{2, 3}}, -1.0);  // (n + 5,)
      CHECK(padded.shape() == Shape{value + 5});
      std::vector<double> want(static_cast<size_t>(value + 5), -1.0);
      for (int64_t index = 0; index < value; ++index) want[index + 2] = static_cast<double>(index);
      check_close(padded.to_vector<float>(), want);
      CHECK(part.sum().item<float>() == Approx(value * (value - 1) / 2.0));
    }
  }
}

TEST_CASE("a captured step replays at other values of its variables", "[variables][capture]") {
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    const Variable batch("batch", 1, 48);
    const Tensor weights = Tensor::from_vector(ramp(8 * 5, 0.21f), {8, 5}, device);
    auto step_function = [&](const std::vector<Tensor>& in) {
      const Tensor hidden = (in[0].matmul(weights) + 0.5).relu();
      // Counts and indices along the batch (mean, argmax, cumsum, a -1) come from the kernels,
      // so a replay at another batch size gets them right.
      return std::vector<Tensor>{hidden.softmax(-1),      hidden.sum({1}),  hidden.max(),
                                 hidden.mean({0}),        hidden.argmax(0), hidden.cumsum(0),
                                 hidden.reshape({-1}) + 1};
    };
    CapturedStep step(step_function);
    auto input_of = [&](int64_t rows) {
      return Tensor::from_vector(ramp(rows * 8, 0.07f * static_cast<float>(rows)), {rows, 8},
                                 device)
          .reshape({batch.bind(rows), 8});
    };
    int64_t built = -1;
    for (int64_t rows : {4, 4, 9, 1, 48, 4, 17}) {
      INFO("batch " << rows);
      const Tensor input = input_of(rows);
      const std::vector<Tensor> got = step({input});
      if (step.captured()) {
        if (built < 0) built = kernels_built(device);
        CHECK(kernels_built(device) == built);
      }
      const std::vector<Tensor> want = step_function({input});
      REQUIRE(got.size() == want.size());
      for (size_t output = 0; output < got.size(); ++output) {
        INFO("output " << output);
        CHECK(got[output].shape() == want[output].shape());
        const std::vector<float> expected = want[output].to_vector<float>();
        check_close(got[output].to_vector<float>(),
                    std::vector<double>(expected.begin(), expected.end()));
      }
      CHECK(got[0].shape_string() == "(batch=" + std::to_string(rows) + ", 5)");
    }
    // A number where the capture had the variable, and another variable, are refused by name.
    try {
      step({Tensor::zeros(Shape{4, 8}, dtypes::float32, device)});
      FAIL("a concrete input replayed a symbolic capture");
    } catch (const ShapeError& error) {
      CHECK(contains(error.what(), "input 0"));
      CHECK(contains(error.what(), "batch"));
    }
    CHECK_THROWS_AS(
        step({Tensor::zeros({Variable("batch", 1, 64).bind(4), 8}, dtypes::float32, device)}),
        ShapeError);
  }
}

TEST_CASE("the same graph over 64 batch sizes builds each kernel once", "[variables]") {
  const std::string device = default_device();
  const Variable batch("batch", 1, 64);
  const Tensor weights = Tensor::from_vector(ramp(24 * 6, 0.3f), {24, 6}, device);
  int64_t built = -1;
  for (int64_t rows = 1; rows <= 64; ++rows) {
    const Tensor x = Tensor::from_vector(ramp(rows * 24, 0.05f), {rows, 24}, device)
                         .reshape({batch.bind(rows), 24});
    // Several kernels: a matmul, a softmax (three), a column sum over the batch.
    const Tensor hidden = x.matmul(weights).relu();
    const Tensor out = hidden.softmax(-1) + hidden.sum({0}) / 64.0;
    out.realize();
    CHECK(out.shape() == Shape{rows, 6});
    if (rows == 1) {
      built = kernels_built(device);
    } else {
      CHECK(kernels_built(device) == built);
    }
  }
}

TEST_CASE("creation and movement keep a variable size", "[variables]") {
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    const Variable n("n", 1, 32);
    for (int64_t value : {3, 32, 1}) {
      const Tensor ones = Tensor::ones({n.bind(value), 4}, dtypes::int32, device);
      const Tensor flat = (ones * 2).flatten();
      CHECK(flat.shape_string() == "((n*4)=" + std::to_string(4 * value) + ",)");
      CHECK(flat.sum().item<int64_t>() == 8 * value);
      const Tensor moved = ones.transpose(0, 1).unsqueeze(0).squeeze(0);
      CHECK(moved.dims()[1].is_symbolic());
      CHECK(moved.sum({1}).to_vector<int64_t>() == std::vector<int64_t>(4, value));
      const Tensor wide = ones.reshape({n.bind(value), 4, 1}).expand({-1, -1, 3});
      CHECK(wide.dims()[0].is_symbolic());
      CHECK(wide.sum().item<int64_t>() == 12 * value);
    }
  }
}

TEST_CASE("a kernel first realized with no rows serves every value", "[variables]") {
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    const Variable n("rows", 0, 64);
    for (int64_t value : {0, 3, 64, 0, 1}) {
      INFO("rows " << value);
      const Tensor out = Tensor::ones({n.bind(value), 4}, dtypes::int32, device) + 1;
      CHECK(out.to_vector<int32_t>() == std::vector<int32_t>(static_cast<size_t>(4 * value), 2));
    }
  }
}

TEST_CASE("one name with other bounds is another kernel", "[variables]") {
  // The simplifier drops a modulo that the bounds [0, 15] make needless; with [0, 150] it must
  // stay: a kernel over the first bounds must not serve the second.
  const std::string device = default_device();
  const Tensor x = Tensor::arange(200, device).reshape({10, 20});
  const std::vector<int32_t> flat =
      x.transpose(0, 1).contiguous().reshape({200}).to_vector<int32_t>();
  for (const auto& [high, start] : std::vector<std::pair<int64_t, int64_t>>{{15, 3}, {150, 100}}) {
    INFO("bounds [0, " << high << "], start " << start);
    const Variable n("n", 0, high);
    const Tensor window =
        x.transpose(0, 1).reshape({200}).shrink({{n.bind(start), n.bind(start) + 4}}) + 1;
    std::vector<int32_t> want;
    for (int64_t at = start; at < start + 4; ++at) want.push_back(flat[at] + 1);
    CHECK(window.to_vector<int32_t>() == want);
  }
}

TEST_CASE("two values of one name in one shape stay apart", "[variables]") {
  const std::string device = default_device();
  const Variable n("n", 1, 8);
  for (const auto& [rows, columns] : std::vector<std::pair<int64_t, int64_t>>{{3, 5}, {2, 4}}) {
    const Tensor out =
        Tensor::full({n.bind(rows), n.bind(columns)}, 1.0, dtypes::float32, device).flatten() + 1;
    CHECK(out.to_vector<float>() == std::vector<float>(static_cast<size_t>(rows * columns), 2.0f));
  }
}

// Issue 26 item 15: a 3,000-character name was accepted, then failed in the shader compiler.
TEST_CASE("a Variable's name is an identifier of at most 64 characters", "[variables][errors]") {
  try {
    Variable long_name(std::string(3000, 'a'), 1, 10);
    FAIL("a 3,000-character name was accepted");
  } catch (const ShapeError& error) {
    CHECK_THAT(error.what(), Catch::Matchers::Contains("at most 64"));
    CHECK_THAT(error.what(), Catch::Matchers::Contains("3000 characters"));
  }
  CHECK_THROWS_AS(Variable(std::string(65, 'n'), 1, 10), ShapeError);
  const Variable longest(std::string(64, 'n'), 1, 10);
  for (const std::string& device : devices()) {
    INFO(device);
    const Tensor x = Tensor::ones({longest.bind(5)}, dtypes::float32, device).contiguous();
    CHECK((x * 2).to_vector<float>() == std::vector<float>(5, 2.0f));
  }
}

// Issue 26 item 15: a bound of 2^42 made `x * 2` a CompileError on VULKAN (its 64-bit launch
// index written into a GLSL int), then a DeviceError refusing the bound. A variable bounded past
// 2^31 used at a small value computes on every device: GLSL holds it in 64 bits.
TEST_CASE("a variable bound past 2^31 computes at a small value", "[variables]") {
  const Variable n("huge_n", 1, int64_t{1} << 42);
  const Variable rows("huge_rows", 1, 4);
  const Variable far("far_n", 1, int64_t{1} << 40);
  for (const OptPolicy policy : {OptPolicy::Default, OptPolicy::Gpu}) {
    const testing::ScopedOptSettings settings(OptSettings{policy, 0});
    for (const std::string& device : devices()) {
      INFO(device << (policy == OptPolicy::Gpu ? " gpu" : " default"));
      for (const int64_t value : {int64_t{5}, int64_t{1000}}) {
        const Tensor x =
            Tensor::arange(value, device).cast(dtypes::float32).reshape({n.bind(value)});
        std::vector<float> want(static_cast<size_t>(value));
        for (int64_t index = 0; index < value; ++index)
          want[static_cast<size_t>(index)] = static_cast<float>(index * 2);
        CHECK((x * 2).to_vector<float>() == want);
        // A reduction along it is split by its bound (issue 26 item 14) in 64-bit index steps.
        const Tensor along =
            Tensor::arange(value, device).cast(dtypes::float32).reshape({far.bind(value)});
        CHECK(along.sum().item<float>() == static_cast<float>(value * (value - 1) / 2));
        CHECK(along.max().item<float>() == static_cast<float>(value - 1));
        // Two axes: the flat index's steps pass 2^31 only at the bounds.
        const Tensor grid = Tensor::ones({rows.bind(3), n.bind(value)}, dtypes::float32, device);
        const std::vector<float> sums = (grid + x).to_vector<float>();
        REQUIRE(sums.size() == static_cast<size_t>(3 * value));
        for (size_t index = 0; index < sums.size(); ++index)
          CHECK(sums[index] == static_cast<float>(index % static_cast<size_t>(value)) + 1.0f);
      }
    }
  }
}

// Issue 26 item 14: on VULKAN (lavapipe stops a work item's loops after 65535 iterations) a
// symbolic reduction was not split, and its kernel was refused by the variables' bounds: sums
// along a variable of 70,000 and a matmul with a variable K of 100,000 were DeviceErrors though
// the same numbers ran. Such a reduction is split by its bound: every value in range computes,
// with one set of kernels, captured or not.
TEST_CASE("a reduction along a variable longer than a device loops computes at every value",
          "[variables]") {
  const Variable length("long_n", 1, 150000), depth("long_k", 1, 120000);
  const std::vector<OptSettings> all_opts = {
      {OptPolicy::Default, 0}, {OptPolicy::Gpu, 0}, {OptPolicy::Random, 3}};
  for (const OptSettings& opts : all_opts) {
    const testing::ScopedOptSettings settings(opts);
    for (const std::string& device : devices()) {
      INFO(device << " opts " << static_cast<int>(opts.policy));
      const Tensor data = Tensor::arange(150000, device).cast(dtypes::float32) % 7.0f;
      const Tensor left =
          (Tensor::arange(120000 * 3, device).cast(dtypes::float32) % 5.0f).reshape({3, 120000});
      auto step_function = [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{in[0].sum(), in[0].max(), in[1].matmul(in[2])};
      };
      CapturedStep step(step_function);
      int64_t built = -1;
      for (const int64_t value : {int64_t{70000}, int64_t{222}, int64_t{1}, int64_t{16383},
                                  int64_t{16384}, int64_t{65536}, int64_t{150000}}) {
        INFO("value " << value);
        const int64_t k = std::min<int64_t>(value, 120000);
        const Tensor x = data.shrink({{Dim(0), length.bind(value)}});
        const Tensor a = left.shrink({{Dim(0), Dim(3)}, {Dim(0), depth.bind(k)}});
        const Tensor b = Tensor::ones({depth.bind(k), Dim(2)}, dtypes::float32, device);
        double sum = 0, max = 0;
        for (int64_t index = 0; index < value; ++index) {
          sum += static_cast<double>(index % 7);
          max = std::max(max, static_cast<double>(index % 7));
        }
        std::vector<double> rows(3, 0.0);
        for (int64_t row = 0; row < 3; ++row)
          for (int64_t column = 0; column < k; ++column)
            rows[static_cast<size_t>(row)] += static_cast<double>((row * 120000 + column) % 5);
        const std::vector<double> matmul = {rows[0], rows[0], rows[1], rows[1], rows[2], rows[2]};
        for (int round = 0; round < 2; ++round) {
          const std::vector<Tensor> got = round == 0 ? step_function({x, a, b}) : step({x, a, b});
          CHECK(got[0].item<float>() == Approx(sum).epsilon(1e-6));
          CHECK(got[1].item<float>() == static_cast<float>(max));
          check_close(got[2].to_vector<float>(), matmul);
        }
        // One set of kernels serves every value once the step is captured.
        if (step.captured() && built < 0) built = kernels_built(device);
        if (built >= 0) CHECK(kernels_built(device) == built);
      }
    }
  }
}

TEST_CASE("a position given by a variable reads and writes with one kernel for every value",
          "[variables][slicing][assign]") {
  using namespace kiln::indexing;
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    // A key/value cache (heads, positions, width) written a position at a time, and read back.
    const int64_t heads = 3, positions = 7, width = 5;
    Tensor cache = Tensor::zeros({heads, positions, width}, dtypes::float32, device).contiguous();
    cache.realize();
    std::vector<float> want(static_cast<size_t>(heads * positions * width), 0.0f);
    const Variable pos("pos", 0, positions - 1);
    const Variable following("following", 1, positions - 1);
    int64_t built_after_first = -1;
    for (int64_t t : {0, 4, 6, 1, 2}) {
      INFO("position " << t);
      std::vector<float> row(static_cast<size_t>(heads * width));
      for (size_t element = 0; element < row.size(); ++element)
        row[element] = static_cast<float>(t * 100) + static_cast<float>(element);
      const Tensor values = Tensor::from_vector(row, {heads, width}, device);
      cache.index_put_({Slice(), pos.bind(t)}, values);
      // Accumulated at the next position, where there is one.
      if (t + 1 < positions) cache.index_put_({Slice(), following.bind(t + 1)}, values, true);
      for (int64_t head = 0; head < heads; ++head) {
        for (int64_t column = 0; column < width; ++column) {
          const float value = row[static_cast<size_t>(head * width + column)];
          want[static_cast<size_t>((head * positions + t) * width + column)] = value;
          if (t + 1 < positions)
            want[static_cast<size_t>((head * positions + t + 1) * width + column)] += value;
        }
      }
      check_same(cache.to_vector<float>(), want);
      // Read back at the variable position, and the whole tensor with the write given lazily.
      const Tensor read = cache.index({Slice(), pos.bind(t)});
      CHECK(read.shape() == Shape{heads, width});
      check_same(read.to_vector<float>(), row);
      const Tensor rewritten = cache.index_put({Slice(), pos.bind(t)}, values * 0);
      CHECK(rewritten.index({1, pos.bind(t), 2}).item<float>() == 0);
      CHECK(rewritten.sum().item<float>() ==
            Approx(cache.sum().item<float>() - read.sum().item<float>()));
      if (built_after_first < 0) {
        built_after_first = kernels_built(device);
      } else {
        CHECK(kernels_built(device) == built_after_first);
      }
    }
  }
}

TEST_CASE("a variable position must stay inside the axis at every value of its bounds",
          "[variables][slicing][errors]") {
  using namespace kiln::indexing;
  const Tensor x = Tensor::zeros({4, 6}, dtypes::float32, "CPU");
  const Variable past("past", 0, 6), fits("fits", 0, 5);
  CHECK_THROWS_AS(x.index({Slice(), past.bind(2)}), IndexError);
  CHECK_THROWS_WITH(
      x.select(1, past.bind(2)),
      Catch::Matchers::Contains("may be any of 0 to 6 (its variable's bounds), outside axis 1"));
  CHECK_THROWS_WITH(x.select(1, fits.bind(5) + 1),
                    Catch::Matchers::Contains("may be any of 1 to 6"));
  CHECK_THROWS_AS(x.index({fits.bind(0)}), IndexError);  // axis 0 has 4 positions
  // A Dim that is a number is that integer, negative ones counting from the end.
  CHECK(x.select(1, Dim(-1)).shape() == Shape{4});
  CHECK(x.index({Slice(), Dim(2)}).shape() == Shape{4});
}

TEST_CASE("a captured step writes a cache at the position an input's size gives",
          "[variables][capture][assign]") {
  using namespace kiln::indexing;
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    const int64_t positions = 6;
    Tensor cache = Tensor::zeros({2, positions, 3}, dtypes::float32, device).contiguous();
    cache.realize();
    const Variable pos("pos", 0, positions - 1);
    CapturedStep step([&](const std::vector<Tensor>& in) {
      const Dim at = in[1].dims()[1];
      cache.index_put_({Slice(), at}, in[0]);
      return std::vector<Tensor>{cache.index({Slice(), at}) * 2 + cache.sum()};
    });
    float total = 0;
    for (int64_t t = 0; t < positions; ++t) {
      INFO("position " << t);
      const float value = static_cast<float>(t + 1);
      const Tensor row = Tensor::full({2, 3}, value, dtypes::float32, device);
      const Tensor marker = Tensor::zeros({0, pos.bind(t)}, dtypes::float32, device);
      const std::vector<Tensor> out = step({row, marker});
      total += 6 * value;
      check_same(out[0].to_vector<float>(), std::vector<float>(6, 2 * value + total));
    }
    CHECK(step.captured());
    std::vector<float> want;
    for (int64_t head = 0; head < 2; ++head) {
      for (int64_t t = 0; t < positions; ++t) {
        for (int column = 0; column < 3; ++column) want.push_back(static_cast<float>(t + 1));
      }
    }
    check_same(cache.to_vector<float>(), want);
  }
}

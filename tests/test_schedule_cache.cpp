// The schedule cache: a graph built again over other buffers reuses the plan made for the first,
// and every graph whose structure differs (its leaves' dtypes, devices or sharing, its constants,
// views, ops) gets its own, so the values are those of a fresh schedule.

#include <catch2/catch.hpp>

#include <kiln/kiln.h>
#include <kiln/memory.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "runtime/opt_policy.h"
#include "runtime/realize.h"
#include "runtime/schedule_cache.h"

using namespace kiln;

namespace {

std::vector<float> values_from(float start, int64_t count) {
  std::vector<float> values(count);
  for (int64_t i = 0; i < count; ++i) values[i] = start + static_cast<float>(i) * 0.5f;
  return values;
}

// Runs `realize` and returns how many cached plans it used.
int64_t hits_while(const std::function<void()>& realize) {
  const int64_t before = schedule_cache().hits();
  realize();
  return schedule_cache().hits() - before;
}

void check_values(const Tensor& tensor, const std::function<double(size_t)>& expected) {
  const std::vector<float> got = tensor.to_vector<float>();
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    CHECK(got[i] == Approx(expected(i)).epsilon(1e-6));
  }
}

}  // namespace

TEST_CASE("schedule cache: the same graph over other buffers reuses its plan, with their values",
          "[runtime][schedule_cache]") {
  const int64_t n = 37;
  std::vector<Tensor> results;
  std::vector<std::vector<float>> inputs;
  for (int step = 0; step < 3; ++step) {
    inputs.push_back(values_from(static_cast<float>(step), n));
    const Tensor x = Tensor::from_vector(inputs.back(), {n}, "CPU");
    Tensor y = ((x + 1) * 2).sum();
    const int64_t hits = hits_while([&] { y.realize(); });
    if (step > 0) CHECK(hits == 1);
    results.push_back(y);
  }
  // Each realize wrote buffers of its own: the earlier results are intact.
  for (int step = 0; step < 3; ++step) {
    double expected = 0;
    for (float value : inputs[step]) expected += (value + 1.0) * 2.0;
    CHECK(results[step].item<float>() == Approx(expected).epsilon(1e-6));
  }
}

TEST_CASE(
    "schedule cache: graphs that differ only in what the walk cannot hash get their own plans",
    "[runtime][schedule_cache]") {
  const int64_t n = 6;
  const std::vector<float> a_values = values_from(1, n * n), b_values = values_from(-7, n * n);
  const Tensor a = Tensor::from_vector(a_values, {n, n}, "CPU");
  const Tensor b = Tensor::from_vector(b_values, {n, n}, "CPU");
  auto at = [&](const std::vector<float>& values, size_t row, size_t column) {
    return static_cast<double>(values[row * n + column]);
  };
  SECTION("which leaf is which") {
    const Tensor difference = a - b;
    check_values(difference,
                 [&](size_t i) { return at(a_values, i / n, i % n) - at(b_values, i / n, i % n); });
    const Tensor reversed = b - a;
    check_values(reversed,
                 [&](size_t i) { return at(b_values, i / n, i % n) - at(a_values, i / n, i % n); });
    // One buffer read twice is another graph than two buffers.
    const Tensor twice = a - a;
    check_values(twice, [](size_t) { return 0.0; });
  }
  SECTION("a view (a transpose keeps the shape of a square)") {
    check_values(a.transpose() + b,
                 [&](size_t i) { return at(a_values, i % n, i / n) + at(b_values, i / n, i % n); });
    check_values(a + b.transpose(),
                 [&](size_t i) { return at(a_values, i / n, i % n) + at(b_values, i % n, i / n); });
    check_values(a.flip({1}) + b, [&](size_t i) {
      return at(a_values, i / n, n - 1 - i % n) + at(b_values, i / n, i % n);
    });
  }
  SECTION("a constant, and its sign") {
    check_values(a * 3, [&](size_t i) { return at(a_values, i / n, i % n) * 3; });
    check_values(a * 4, [&](size_t i) { return at(a_values, i / n, i % n) * 4; });
    check_values(a + 0.0, [&](size_t i) { return at(a_values, i / n, i % n); });
    // a is positive: times -0 it is -0, times +0 it is +0.
    for (float zero : {-0.0f, 0.0f, -0.0f}) {
      const std::vector<float> product = (a * zero).to_vector<float>();
      for (float value : product) CHECK(std::signbit(value) == std::signbit(zero));
    }
  }
  SECTION("a reduction's axes") {
    check_values(a.sum(0), [&](size_t column) {
      double total = 0;
      for (size_t row = 0; row < n; ++row) total += at(a_values, row, column);
      return total;
    });
    check_values(a.sum(1), [&](size_t row) {
      double total = 0;
      for (size_t column = 0; column < n; ++column) total += at(a_values, row, column);
      return total;
    });
  }
  SECTION("a leaf's dtype") {
    const Tensor as_int = a.cast(dtypes::int32).realize();
    const std::vector<float> from_float = (a + 1).to_vector<float>();
    const std::vector<int32_t> from_int = (as_int + 1).to_vector<int32_t>();
    for (size_t i = 0; i < from_int.size(); ++i)
      CHECK(from_int[i] == static_cast<int32_t>(a_values[i]) + 1);
    CHECK(from_float[1] == Approx(a_values[1] + 1));
  }
}

TEST_CASE("schedule cache: a node realized before is read while its tensor lives, computed after",
          "[runtime][schedule_cache]") {
  const std::vector<float> values = values_from(2, 10);
  const Tensor x = Tensor::from_vector(values, {10}, "CPU");
  auto expected = [&](size_t i) { return (values[i] + 1.0) * 2.0; };
  {
    const Tensor inner = (x + 1).realize();
    check_values(inner * 2, expected);
    check_values(inner * 2, expected);
  }
  // `inner` is gone: the same nodes are built again and computed from x.
  check_values((x + 1) * 2, expected);
  check_values((x + 1) * 2, expected);
}

TEST_CASE("schedule cache: a plan is kept per opt policy", "[runtime][schedule_cache]") {
  const std::vector<float> values = values_from(-3, 300);
  const Tensor x = Tensor::from_vector(values, {300}, "CPU");
  const OptSettings before = opt_settings();
  for (OptPolicy policy : {OptPolicy::Default, OptPolicy::None, OptPolicy::Random}) {
    set_opt_settings({policy, 7});
    const size_t size_before = schedule_cache().size();
    check_values(x.exp2() - 1, [&](size_t i) { return std::exp2(values[i]) - 1.0; });
    check_values(x.exp2() - 1, [&](size_t i) { return std::exp2(values[i]) - 1.0; });
    CHECK(schedule_cache().size() <= size_before + 1);
  }
  set_opt_settings(before);
}

TEST_CASE("schedule cache: symbolic, multi-root and cross-device graphs are cached",
          "[runtime][schedule_cache]") {
  const std::vector<float> values = values_from(1, 12);
  const Tensor x = Tensor::from_vector(values, {12}, "CPU");
  SECTION("a symbolic graph, at every value of its variable") {
    const Variable rows("rows", 1, 12);
    for (int64_t count : {4, 7, 4, 12, 1}) {
      const Tensor part = x.shrink({{0, rows.bind(count)}});
      const GraphWalk walk = walk_graph({(part * 2).node()}, "CPU");
      CHECK(walk.cacheable);
      const Tensor doubled = part * 2;
      const int64_t hits = hits_while([&] { doubled.realize(); });
      if (count != 4 || hits != 0) CHECK(hits == 1);  // the first realize makes the plan
      CHECK(doubled.shape() == Shape{count});
      const std::vector<float> got = doubled.to_vector<float>();
      REQUIRE(got.size() == static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i) CHECK(got[i] == values[i] * 2);
    }
  }
  SECTION("one name bound to two values in one graph") {
    const Variable rows("rows", 1, 12);
    const Tensor three = x.shrink({{0, rows.bind(3)}}).sum();
    const Tensor five = x.shrink({{0, rows.bind(5)}}).sum();
    CHECK_FALSE(walk_graph({(three + five).node()}, "CPU").cacheable);
    CHECK((three + five).item<float>() == Approx(1 + 1.5 + 2 + 1 + 1.5 + 2 + 2.5 + 3));
  }
  SECTION("a graph of many nodes") {
    Tensor chain = x;
    for (int step = 0; step < 3000; ++step) chain = chain * 1.0001f + 0.5f;
    CHECK_FALSE(walk_graph({chain.node()}, "CPU").cacheable);
    CHECK(walk_graph({(x * 2).node()}, "CPU").cacheable);
  }
  SECTION("two roots in one realize") {
    for (int step = 0; step < 2; ++step) {
      const Tensor sum = x.sum(), doubled = x * 2 + static_cast<double>(step);
      const int64_t hits = hits_while([&] {
        const std::vector<UOpRef> results = realize_nodes({sum.node(), doubled.node()}, "CPU");
        CHECK(results.size() == 2);
      });
      if (step == 1) CHECK(hits == 0);  // the constant differs
      CHECK(sum.item<float>() == Approx(std::accumulate(values.begin(), values.end(), 0.0)));
      const std::vector<float> got = doubled.to_vector<float>();
      for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == values[i] * 2 + step);
    }
  }
  SECTION("copies between devices") {
    for (const std::string& other : devices()) {
      for (int step = 0; step < 3; ++step) {
        const std::vector<float> step_values = values_from(static_cast<float>(step), 12);
        const Tensor here = Tensor::from_vector(step_values, {12}, "CPU");
        const Tensor there = (here.to(other) * 3).to("CPU") + 1;
        const int64_t hits = hits_while([&] { there.realize(); });
        if (step == 2) CHECK(hits == 1);
        check_values(there, [&](size_t i) { return step_values[i] * 3.0 + 1; });
      }
    }
  }
}

TEST_CASE("schedule cache: a kept plan holds none of the graph's buffers",
          "[runtime][schedule_cache]") {
  const int64_t n = 1 << 20;  // 4 MiB: more than the allocator's bookkeeping moves
  const size_t before = active_bytes("CPU");
  {
    const Tensor x = Tensor::full({n}, 3.0f, dtypes::float32, "CPU").contiguous().realize();
    const Tensor y = ((x + 1) * 2).realize();
    CHECK(y.to_vector<float>()[n - 1] == 8.0f);
    CHECK(active_bytes("CPU") >= before + 2 * n * sizeof(float));
  }
  // The plan for (x + 1) * 2 stays in the cache; x's and y's memory does not.
  CHECK(active_bytes("CPU") == before);
}

TEST_CASE("schedule cache: a plan over a variable serves other values with their sizes",
          "[runtime][schedule_cache][variables]") {
  constexpr int64_t kCapacity = 40, kWidth = 24, kOut = 16;
  std::vector<float> cache_values(2 * kCapacity * kWidth), weight_values(kWidth * kOut);
  for (size_t i = 0; i < cache_values.size(); ++i)
    cache_values[i] = std::sin(0.1f * static_cast<float>(i));
  for (size_t i = 0; i < weight_values.size(); ++i)
    weight_values[i] = std::cos(0.2f * static_cast<float>(i));
  for (const std::string& device : devices()) {
    INFO(device);
    const Tensor cache = Tensor::from_vector(cache_values, {2, kCapacity, kWidth}, device);
    const Tensor weight = Tensor::from_vector(weight_values, {kWidth, kOut}, device);
    const Variable length("length", 1, kCapacity);
    int64_t total_hits = 0;
    for (int64_t n : {9, 33, 1, 40, 9}) {
      INFO("n = " << n);
      const Tensor rows = cache.shrink({{0, 2}, {0, length.bind(n)}, {0, kWidth}});
      const Tensor out = rows.matmul(weight).softmax(-1) + rows.sum(-1, true);
      total_hits += hits_while([&] { out.realize(); });
      REQUIRE(out.shape() == Shape{2, n, kOut});
      const std::vector<float> got = out.to_vector<float>();
      for (int64_t batch = 0; batch < 2; ++batch) {
        for (int64_t row = 0; row < n; ++row) {
          const float* in = cache_values.data() + (batch * kCapacity + row) * kWidth;
          std::vector<double> logits(kOut, 0.0);
          double row_sum = 0;
          for (int64_t k = 0; k < kWidth; ++k) {
            row_sum += in[k];
            for (int64_t column = 0; column < kOut; ++column)
              logits[column] += static_cast<double>(in[k]) * weight_values[k * kOut + column];
          }
          const double largest = *std::max_element(logits.begin(), logits.end());
          double total = 0;
          for (double logit : logits) total += std::exp(logit - largest);
          for (int64_t column = 0; column < kOut; ++column) {
            const double expected = std::exp(logits[column] - largest) / total + row_sum;
            CHECK(got[(batch * n + row) * kOut + column] ==
                  Approx(expected).epsilon(1e-5).margin(1e-5));
          }
        }
      }
    }
    CHECK(total_hits >= 4);  // every value after the first found the plan
  }
}

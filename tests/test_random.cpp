// kiln/random.h: Threefry's known answers, every draw against the generator run on the host,
// the same numbers on every device, the generator's offset (in a captured step too), the
// distributions' moments and chi-square tests, and typed errors.

#include <catch2/catch.hpp>

#include <kiln/capture.h>
#include <kiln/kiln.h>
#include <kiln/random.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>
#include <thread>
#include <vector>

#include "runtime/registry.h"

using namespace kiln;

namespace {

// Word `which` of element `index` of the draw at `offset` from a generator of `seed`.
uint32_t host_word(uint64_t seed, uint32_t offset, uint32_t index, int which) {
  const uint32_t key[2] = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  const uint32_t counter[2] = {index, offset};
  uint32_t out[2];
  random::threefry2x32(key, counter, out);
  return out[which];
}

// Pearson's chi-square statistic of `counts` against `expected` (same length).
double chi_square(const std::vector<int64_t>& counts, const std::vector<double>& expected) {
  double statistic = 0;
  for (size_t bin = 0; bin < counts.size(); ++bin) {
    const double gap = static_cast<double>(counts[bin]) - expected[bin];
    statistic += gap * gap / expected[bin];
  }
  return statistic;
}

// A bound the statistic of `bins - 1` degrees of freedom passes with probability ~1e-6 (the
// Wilson-Hilferty normal approximation at z = 4.75): a failure is a defect, not bad luck.
double chi_square_limit(size_t bins) {
  const double freedom = static_cast<double>(bins) - 1;
  const double spread = 2.0 / (9.0 * freedom);
  return freedom * std::pow(1 - spread + 4.75 * std::sqrt(spread), 3);
}

double normal_cdf(double x) {
  return 0.5 * std::erfc(-x / std::sqrt(2.0));
}

int64_t kernels_built(const std::string& device) {
  const auto& stats = open_device(device)->stats();
  return stats.compiles + stats.disk_hits;
}

}  // namespace

TEST_CASE("Threefry-2x32-20 gives Random123's known answers", "[random]") {
  struct Known {
    uint32_t key[2], counter[2], out[2];
  };
  const Known answers[] = {
      {{0, 0}, {0, 0}, {0x6b200159u, 0x99ba4efeu}},
      {{0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu}, {0x1cb996fcu, 0xbb002be7u}},
      {{0x13198a2eu, 0x03707344u}, {0x243f6a88u, 0x85a308d3u}, {0xc4923a9cu, 0x483df7a0u}},
  };
  for (const Known& known : answers) {
    uint32_t out[2];
    random::threefry2x32(known.key, known.counter, out);
    CHECK(out[0] == known.out[0]);
    CHECK(out[1] == known.out[1]);
  }
}

TEST_CASE("draws are the host generator's numbers, the same on every device", "[random]") {
  const uint64_t seed = 0x0123456789abcdefULL;
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    Generator generator(seed, device);
    generator.set_offset(7);
    const std::vector<float> uniform = random::uniform(generator, {5, 77}).to_vector<float>();
    CHECK(generator.offset() == 8);
    for (uint32_t at = 0; at < uniform.size(); ++at) {
      const float expected = static_cast<float>(host_word(seed, 7, at, 0) >> 8) * 0x1p-24f;
      REQUIRE(uniform[at] == expected);
    }
    const std::vector<int32_t> integers =
        random::randint(generator, -3, 3000000007 - 3, {300}, dtypes::int64)
            .cast(dtypes::int32)
            .to_vector<int32_t>();
    for (uint32_t at = 0; at < integers.size(); ++at) {
      // A range past 2^16 uses every 16-bit piece of the product.
      const uint64_t product = uint64_t{host_word(seed, 8, at, 0)} * 3000000007u;
      REQUIRE(integers[at] == static_cast<int32_t>(static_cast<int64_t>(product >> 32) - 3));
    }
    const std::vector<float> normals =
        random::normal(generator, {400}, 1.0, 2.0).to_vector<float>();
    for (uint32_t at = 0; at < normals.size(); ++at) {
      const double radius = (static_cast<double>(host_word(seed, 9, at, 0) >> 8) + 1) * 0x1p-24;
      const double angle = static_cast<double>(host_word(seed, 9, at, 1) >> 8) * 0x1p-24;
      const double length = std::sqrt(-2 * std::log(radius));
      const double expected = 1 + 2 * length * std::cos(2 * std::numbers::pi * angle);
      // float32's log, sqrt and cos: a few eps of the radius' size.
      REQUIRE(std::fabs(normals[at] - expected) <= 2e-6 * (2 * length + 1));
    }
    const std::vector<int64_t> permutation = random::randperm(generator, 1000).to_vector<int64_t>();
    std::vector<int64_t> expected(1000);
    std::iota(expected.begin(), expected.end(), 0);
    std::stable_sort(expected.begin(), expected.end(), [&](int64_t a, int64_t b) {
      auto key = [&](int64_t at) {
        const auto index = static_cast<uint32_t>(at);
        return (uint64_t{host_word(seed, 10, index, 0)} << 32) | host_word(seed, 10, index, 1);
      };
      return key(a) < key(b);
    });
    CHECK(permutation == expected);
  }
}

TEST_CASE("uniform uses each float dtype's mantissa and never reaches high", "[random]") {
  const uint64_t seed = 99;
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    Generator generator(seed, device);
    const std::vector<double> wide =
        random::uniform(generator, {257}, 0, 1, dtypes::float64).to_vector<double>();
    for (uint32_t at = 0; at < wide.size(); ++at) {
      const double high = static_cast<double>(host_word(seed, 0, at, 0) >> 5);
      const double low = static_cast<double>(host_word(seed, 0, at, 1) >> 6);
      REQUIRE(wide[at] == (high * 67108864.0 + low) * 0x1p-53);
    }
  }
  Generator generator(seed, "CPU");
  const std::vector<half> halves =
      random::uniform(generator, {4096}, 0, 1, dtypes::float16).to_vector<half>();
  for (uint32_t at = 0; at < halves.size(); ++at) {
    REQUIRE(static_cast<float>(halves[at]) ==
            static_cast<float>(host_word(seed, 0, at, 0) >> 21) * 0x1p-11f);
  }
  // [1, 1 + 2^-10) holds one float16 value: every draw rounds to 1 or up to high, clamped to 1.
  const std::vector<half> narrow =
      random::uniform(generator, {1000}, 1.0, 1.0009765625, dtypes::float16).to_vector<half>();
  for (half value : narrow) REQUIRE(static_cast<float>(value) == 1.0f);
  // The same for float32 at 1 + 2^-23, and a range whose rounding reaches high now and then.
  const std::vector<float> narrow32 =
      random::uniform(generator, {1000}, 1.0, 1.0 + 0x1p-23).to_vector<float>();
  for (float value : narrow32) REQUIRE(value == 1.0f);
  const std::vector<float> near =
      random::uniform(generator, {1 << 20}, 100.0, 101.0).to_vector<float>();
  CHECK(*std::max_element(near.begin(), near.end()) < 101.0f);
  const std::vector<float> shifted =
      random::uniform(generator, {20000}, -2.5, 4.0).to_vector<float>();
  CHECK(*std::min_element(shifted.begin(), shifted.end()) >= -2.5f);
  CHECK(*std::max_element(shifted.begin(), shifted.end()) < 4.0f);
}

TEST_CASE("uniform, normal and randint pass moment and chi-square tests", "[random]") {
  Generator generator(2026, "CPU");
  constexpr int64_t kCount = 1 << 20;
  const std::vector<float> uniform = random::uniform(generator, {kCount}).to_vector<float>();
  double sum = 0, squares = 0;
  std::vector<int64_t> bins(100, 0);
  for (float value : uniform) {
    sum += value;
    squares += double{value} * value;
    ++bins[static_cast<size_t>(value * 100)];
  }
  const double count = static_cast<double>(kCount);
  // Means within 5 standard errors.
  CHECK(std::fabs(sum / count - 0.5) < 5 * std::sqrt(1.0 / 12 / count));
  CHECK(std::fabs(squares / count - 1.0 / 3) < 5 * std::sqrt(4.0 / 45 / count));
  CHECK(chi_square(bins, std::vector<double>(100, count / 100)) < chi_square_limit(100));

  const std::vector<float> normal = random::normal(generator, {kCount}).to_vector<float>();
  double moments[4] = {0, 0, 0, 0};
  std::vector<int64_t> normal_bins(40, 0);
  for (float value : normal) {
    double power = 1;
    for (double& moment : moments) moment += (power *= value);
    const double clamped = std::clamp(double{value}, -3.9999, 3.9999);
    ++normal_bins[static_cast<size_t>((clamped + 4) * 5)];
  }
  CHECK(std::fabs(moments[0] / count) < 5 * std::sqrt(1 / count));
  CHECK(std::fabs(moments[1] / count - 1) < 5 * std::sqrt(2 / count));
  CHECK(std::fabs(moments[2] / count) < 5 * std::sqrt(15 / count));
  CHECK(std::fabs(moments[3] / count - 3) < 5 * std::sqrt(96 / count));
  std::vector<double> expected(40);
  for (size_t bin = 0; bin < 40; ++bin) {
    const double low = bin == 0 ? -INFINITY : -4 + 0.2 * static_cast<double>(bin);
    const double high = bin == 39 ? INFINITY : -4 + 0.2 * static_cast<double>(bin + 1);
    expected[bin] = count * (normal_cdf(high) - normal_cdf(low));
  }
  // The two outer bins hold ~33 draws each: enough for the approximation.
  CHECK(chi_square(normal_bins, expected) < chi_square_limit(40));

  const std::vector<int64_t> dice = random::randint(generator, 1, 8, {70000}).to_vector<int64_t>();
  std::vector<int64_t> faces(7, 0);
  for (int64_t face : dice) {
    REQUIRE(face >= 1);
    REQUIRE(face < 8);
    ++faces[static_cast<size_t>(face - 1)];
  }
  CHECK(chi_square(faces, std::vector<double>(7, 10000)) < chi_square_limit(7));
  // The whole 32-bit range, and one of int8's.
  const std::vector<int64_t> wide =
      random::randint(generator, -(int64_t{1} << 31), int64_t{1} << 31, {1000})
          .to_vector<int64_t>();
  CHECK(*std::min_element(wide.begin(), wide.end()) < -(int64_t{1} << 29));
  CHECK(*std::max_element(wide.begin(), wide.end()) > (int64_t{1} << 29));
  const std::vector<int8_t> small =
      random::randint(generator, -128, 128, {4000}, dtypes::int8).to_vector<int8_t>();
  CHECK(*std::min_element(small.begin(), small.end()) == -128);
  CHECK(*std::max_element(small.begin(), small.end()) == 127);
}

TEST_CASE("bernoulli, dropout, randperm and multinomial follow their distributions", "[random]") {
  Generator generator(5, "CPU");
  // Probabilities 0, 0.25, 0.5, 1 each over 20000 draws.
  std::vector<float> levels;
  for (float level : {0.0f, 0.25f, 0.5f, 1.0f}) levels.insert(levels.end(), 20000, level);
  const Tensor probabilities = Tensor::from_vector(levels, {4, 20000}, "CPU");
  const std::vector<float> heads =
      random::bernoulli(generator, probabilities).sum(1).to_vector<float>();
  CHECK(heads[0] == 0);
  CHECK(std::fabs(heads[1] - 5000) < 5 * std::sqrt(20000 * 0.25 * 0.75));
  CHECK(std::fabs(heads[2] - 10000) < 5 * std::sqrt(20000 * 0.25));
  CHECK(heads[3] == 20000);

  const Tensor ones = Tensor::ones({50000}, dtypes::float32, "CPU");
  const std::vector<float> dropped = random::dropout(generator, ones, 0.2).to_vector<float>();
  int64_t kept = 0;
  for (float value : dropped) {
    REQUIRE((value == 0.0f || value == 1.25f));
    kept += value != 0.0f;
  }
  CHECK(std::fabs(static_cast<double>(kept) - 40000) < 5 * std::sqrt(50000 * 0.16));
  CHECK(random::dropout(generator, ones, 0.2, false).to_vector<float>() == ones.to_vector<float>());
  const std::vector<float> with_nan =
      random::dropout(generator, Tensor::full({3}, NAN, dtypes::float32, "CPU"), 1.0)
          .to_vector<float>();
  CHECK(std::isnan(with_nan[0]));  // a multiply, as PyTorch's

  // Where each value of a 5-permutation lands over 5000 permutations: uniform over positions.
  std::vector<int64_t> lands(25, 0);
  for (int draw = 0; draw < 5000; ++draw) {
    const std::vector<int64_t> permutation = random::randperm(generator, 5).to_vector<int64_t>();
    for (size_t at = 0; at < 5; ++at) ++lands[static_cast<size_t>(permutation[at]) * 5 + at];
  }
  // (5 - 1)^2 free cells: each value's row and each position's column sum to 5000.
  CHECK(chi_square(lands, std::vector<double>(25, 1000)) < chi_square_limit(17));
  CHECK(random::randperm(generator, 0).numel() == 0);

  const std::vector<float> weights = {1, 0, 3, 4};
  const Tensor rows = Tensor::from_vector(weights, {1, 4}, "CPU");
  const std::vector<int64_t> drawn =
      random::multinomial(generator, rows, 40000, true).to_vector<int64_t>();
  std::vector<int64_t> counts(4, 0);
  for (int64_t category : drawn) ++counts[static_cast<size_t>(category)];
  CHECK(counts[1] == 0);
  counts.erase(counts.begin() + 1);
  CHECK(chi_square(counts, {5000, 15000, 20000}) < chi_square_limit(3));
  // Without replacement: each draw of 2 of {0, 2, 3} is two different categories, never 1; the
  // first is category c with probability weight / 8.
  std::vector<int64_t> firsts(4, 0);
  for (int draw = 0; draw < 2000; ++draw) {
    const std::vector<int64_t> pair =
        random::multinomial(generator, Tensor::from_vector(weights, {4}, "CPU"), 2)
            .to_vector<int64_t>();
    REQUIRE(pair.size() == 2);
    REQUIRE(pair[0] != pair[1]);
    REQUIRE(pair[0] != 1);
    REQUIRE(pair[1] != 1);
    ++firsts[static_cast<size_t>(pair[0])];
  }
  firsts.erase(firsts.begin() + 1);
  CHECK(chi_square(firsts, {250, 750, 1000}) < chi_square_limit(3));
  // Three categories of three nonzero weights: all of them, in some order.
  std::vector<int64_t> all = random::multinomial(generator, rows, 3).to_vector<int64_t>();
  std::sort(all.begin(), all.end());
  CHECK(all == std::vector<int64_t>{0, 2, 3});
}

TEST_CASE("a generator's offset counts draws: set_offset repeats one, a seed compiles nothing",
          "[random]") {
  Generator generator(11, "CPU");
  const std::vector<float> first = random::normal(generator, {64}).to_vector<float>();
  const std::vector<float> second = random::normal(generator, {64}).to_vector<float>();
  CHECK(first != second);
  CHECK(generator.offset() == 2);
  generator.set_offset(1);
  CHECK(random::normal(generator, {64}).to_vector<float>() == second);
  Generator copy = generator;  // shares the state
  random::normal(copy, {64}).realize();
  CHECK(generator.offset() == 3);
  generator.manual_seed(11);
  CHECK(generator.offset() == 0);
  CHECK(random::normal(generator, {64}).to_vector<float>() == first);
  // Another seed and offset read the state buffer: the kernels are already built.
  const int64_t built = kernels_built("CPU");
  Generator other(12345, "CPU");
  other.set_offset(99);
  random::normal(other, {64}).realize();
  CHECK(kernels_built("CPU") == built);
  // Tensor::rand is a fresh generator's first uniform draw.
  Generator fresh(77, "CPU");
  CHECK(Tensor::rand({3, 5}, 77, "CPU").to_vector<float>() ==
        random::uniform(fresh, {3, 5}).to_vector<float>());
  // The default generators: manual_seed rewinds them.
  manual_seed(3);
  const std::vector<float> seeded =
      random::uniform(default_generator("CPU"), {8}).to_vector<float>();
  manual_seed(3);
  CHECK(random::uniform(default_generator("CPU"), {8}).to_vector<float>() == seeded);
  CHECK(default_generator("CPU").seed() == 3);
}

TEST_CASE("dropout in a captured step draws a new mask at every replay", "[random][capture]") {
  Generator generator(21, "CPU");
  const Variable batch("dropout_batch", 1, 64);
  CapturedStep step([&](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{random::dropout(generator, in[0], 0.5)};
  });
  const Tensor data = Tensor::ones({64, 8}, dtypes::float32, "CPU").realize();
  std::vector<std::vector<float>> masks;
  for (int64_t rows : {64, 64, 64, 40, 64}) {
    const Tensor input = data.shrink({{Dim(0), batch.bind(rows)}, {Dim(0), Dim(8)}});
    masks.push_back(step({input})[0].to_vector<float>());
  }
  CHECK(step.captured());
  CHECK(generator.offset() == 5);
  // Each call's mask is the draw at its offset, as an uncaptured run makes it.
  Generator replay(21, "CPU");
  for (size_t call = 0; call < masks.size(); ++call) {
    const int64_t rows = static_cast<int64_t>(masks[call].size()) / 8;
    CHECK(random::dropout(
              replay, data.shrink(std::vector<std::pair<int64_t, int64_t>>{{0, rows}, {0, 8}}), 0.5)
              .to_vector<float>() == masks[call]);
  }
  CHECK(masks[1] != masks[2]);
}

TEST_CASE("a draw is one kernel beside the generator's advance (two)", "[random]") {
  Generator generator(8, "CPU");
  const Tensor x = Tensor::ones({4096}, dtypes::float32, "CPU").realize();
  random::dropout(generator, x, 0.5).realize();  // compiles
  const auto& stats = open_device("CPU")->stats();
  const int64_t before = stats.launches.load();
  const Tensor dropped = random::dropout(generator, x, 0.5);  // the advance runs here
  CHECK(stats.launches.load() == before + 2);
  dropped.realize();
  CHECK(stats.launches.load() == before + 3);
}

TEST_CASE("threads drawing from one generator take distinct offsets", "[random]") {
  Generator generator(31, "CPU");
  std::vector<std::vector<float>> drawn(4);
  std::vector<std::thread> threads;
  for (size_t thread = 0; thread < drawn.size(); ++thread) {
    threads.emplace_back([&, thread] {
      std::vector<float> values;
      for (int draw = 0; draw < 8; ++draw) {
        const std::vector<float> one = random::uniform(generator, {2}).to_vector<float>();
        values.insert(values.end(), one.begin(), one.end());
      }
      drawn[thread] = values;
    });
  }
  for (std::thread& thread : threads) thread.join();
  CHECK(generator.offset() == 32);
  // The 32 draws are the draws at offsets 0 .. 31, each once.
  std::vector<float> all, expected;
  for (const auto& values : drawn) all.insert(all.end(), values.begin(), values.end());
  Generator replay(31, "CPU");
  for (int draw = 0; draw < 32; ++draw) {
    const std::vector<float> one = random::uniform(replay, {2}).to_vector<float>();
    expected.insert(expected.end(), one.begin(), one.end());
  }
  std::sort(all.begin(), all.end());
  std::sort(expected.begin(), expected.end());
  CHECK(all == expected);
}

TEST_CASE("empty and 0-d draws", "[random]") {
  Generator generator(1, "CPU");
  CHECK(random::uniform(generator, {0, 3}).numel() == 0);
  CHECK(random::normal(generator, {}).ndim() == 0);
  CHECK(random::randint(generator, 0, 1, {}).item<int64_t>() == 0);
  CHECK(random::bernoulli(generator, {2}, 1.0).to_vector<float>() == std::vector<float>{1, 1});
  CHECK(random::dropout(generator, Tensor::zeros({0}, dtypes::float32, "CPU"), 0.5).numel() == 0);
}

TEST_CASE("random draws refuse bad arguments, naming the function", "[random][errors]") {
  Generator generator(1, "CPU");
  CHECK_THROWS_AS(random::uniform(generator, {3}, 1.0, 1.0), ValueError);
  CHECK_THROWS_AS(random::uniform(generator, {3}, 0, INFINITY), ValueError);
  CHECK_THROWS_AS(random::uniform(generator, {3}, 0, 1, dtypes::int32), DTypeError);
  CHECK_THROWS_AS(random::uniform(generator, {-1}), ShapeError);
  CHECK_THROWS_AS(random::normal(generator, {3}, 0, -1), ValueError);
  CHECK_THROWS_AS(random::randint(generator, 5, 5, {3}), ValueError);
  CHECK_THROWS_AS(random::randint(generator, 0, 300, {3}, dtypes::uint8), ValueError);
  CHECK_THROWS_AS(random::randint(generator, 0, int64_t{1} << 33, {3}), ValueError);
  CHECK_THROWS_AS(random::randint(generator, 0, 3, {3}, dtypes::float32), DTypeError);
  CHECK_THROWS_AS(random::randperm(generator, -1), ValueError);
  CHECK_THROWS_AS(random::randperm(generator, 300, dtypes::uint8), ValueError);
  CHECK_THROWS_AS(random::dropout(generator, Tensor::ones({3}, dtypes::float32, "CPU"), 1.5),
                  ValueError);
  CHECK_THROWS_AS(random::dropout(generator, Tensor::ones({3}, dtypes::int32, "CPU"), 0.5),
                  DTypeError);
  CHECK_THROWS_WITH(
      random::bernoulli(generator, Tensor::from_vector<float>({0.5f, 1.5f}, {2}, "CPU")),
      Catch::Contains("[bernoulli]") && Catch::Contains("1.5") && Catch::Contains("[0, 1]"));
  CHECK_THROWS_AS(random::bernoulli(generator, {2}, -0.1), ValueError);
  const Tensor negative = Tensor::from_vector<float>({0.5f, -1.0f}, {2}, "CPU");
  CHECK_THROWS_WITH(random::multinomial(generator, negative, 1),
                    Catch::Contains("[multinomial]") && Catch::Contains(">= 0"));
  const Tensor zero = Tensor::from_vector<float>({0, 0, 1, 0}, {2, 2}, "CPU");
  CHECK_THROWS_WITH(random::multinomial(generator, zero, 1, true),
                    Catch::Contains("[multinomial]") && Catch::Contains("positive sum"));
  const Tensor sparse = Tensor::from_vector<float>({0, 1, 0}, {3}, "CPU");
  CHECK_THROWS_WITH(random::multinomial(generator, sparse, 2), Catch::Contains("nonzero weights"));
  CHECK_THROWS_AS(random::multinomial(generator, sparse, 4), ValueError);
  CHECK_THROWS_AS(
      random::multinomial(generator, Tensor::ones({2, 2, 2}, dtypes::float32, "CPU"), 1),
      ShapeError);
  CHECK_THROWS_AS(generator.set_offset(uint64_t{1} << 32), ValueError);
  // Nothing drew: the offset is where it was.
  CHECK(generator.offset() == 0);
  for (const std::string& device : kiln::devices()) {
    if (device == "CPU") continue;
    CHECK_THROWS_WITH(random::dropout(generator, Tensor::ones({3}, dtypes::float32, device), 0.5),
                      Catch::Contains("[dropout]") && Catch::Contains("generator is on CPU") &&
                          Catch::Contains(device));
    Generator elsewhere(0, device);
    CHECK_THROWS_AS(random::bernoulli(elsewhere, Tensor::ones({3}, dtypes::float32, "CPU")),
                    DeviceError);
  }
}

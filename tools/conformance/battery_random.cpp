// Random draws (kiln/random.h) against the generator run on the host: Threefry-2x32-20 words for
// each element, turned into each distribution in double precision. Every device must give the
// same bits (uniform, randint, bernoulli, dropout's mask, randperm); normal goes through the
// device's log, sqrt and cos; multinomial is checked by its properties.

#include <kiln/random.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>
#include <string>

#include "tools/conformance/battery.h"

namespace kiln::conformance::detail {
namespace {

constexpr uint64_t kSeed = 0x9e3779b97f4a7c15ULL;
constexpr uint64_t kOffset = 1234;
constexpr int64_t kCount = 1000;

uint32_t host_word(uint32_t index, int which) {
  const uint32_t key[2] = {static_cast<uint32_t>(kSeed), static_cast<uint32_t>(kSeed >> 32)};
  const uint32_t counter[2] = {index, static_cast<uint32_t>(kOffset)};
  uint32_t out[2];
  random::threefry2x32(key, counter, out);
  return out[which];
}

// The generator every case draws from, at the same place.
Generator generator_on(const std::string& device) {
  Generator generator(kSeed, device);
  generator.set_offset(kOffset);
  return generator;
}

// Uniform in [0, 1) at `dtype`'s precision, as kiln computes it.
double host_unit(uint32_t index, DType dtype) {
  if (dtype == dtypes::float64)
    return (static_cast<double>(host_word(index, 0) >> 5) * 67108864.0 +
            static_cast<double>(host_word(index, 1) >> 6)) *
           0x1p-53;
  const int bits = dtype == dtypes::float16 ? 11 : dtype == dtypes::bfloat16 ? 8 : 24;
  return std::ldexp(static_cast<double>(host_word(index, 0) >> (32 - bits)), -bits);
}

// Uniform at the precision a comparison against a `dtype` probability uses.
double compare_unit(uint32_t index, DType dtype) {
  return host_unit(index, dtype == dtypes::float64 ? dtypes::float64 : dtypes::float32);
}

std::string dtype_text(DType dtype) {
  return std::string("kiln::dtypes::") + dtype.name();
}

void add_uniforms(BatteryBuilder& builder) {
  for (DType dtype : kFloatDtypes) {
    builder.add(make_created_case(
        "random", "uniform", dtype, {kCount},
        [=](const std::string& device) {
          Generator generator = generator_on(device);
          return random::uniform(generator, {kCount}, 0, 1, dtype);
        },
        [=](const std::vector<HostTensor>&) {
          HostTensor values(dtype, {kCount});
          for (uint32_t at = 0; at < kCount; ++at) values.data[at].f = host_unit(at, dtype);
          return Expected(values);
        },
        "kiln::random::uniform(generator, {1000}, 0, 1, " + dtype_text(dtype) + ")",
        exact_tolerance()));
    builder.add(make_created_case(
        "random", "uniform_range", dtype, {kCount},
        [=](const std::string& device) {
          Generator generator = generator_on(device);
          return random::uniform(generator, {kCount}, -2.5, 4.0, dtype);
        },
        [=](const std::vector<HostTensor>&) {
          HostTensor values(dtype, {kCount});
          // Rounding u * 6.5 and the sum: errors of the terms' size, not the result's.
          std::vector<double> scale(kCount, 2.5 + 6.5);
          for (uint32_t at = 0; at < kCount; ++at) {
            const double value = round_to(dtype, -2.5 + 6.5 * host_unit(at, dtype));
            values.data[at].f =
                value < 4.0 ? value : float_from_bits(dtype, float_bits(dtype, 4.0) - 1);
          }
          return Expected(values, scale);
        },
        "kiln::random::uniform(generator, {1000}, -2.5, 4.0, " + dtype_text(dtype) + ")",
        tolerance_for(dtype, 2, 2)));
    builder.add(make_created_case(
        "random", "normal", dtype, {kCount},
        [=](const std::string& device) {
          Generator generator = generator_on(device);
          return random::normal(generator, {kCount}, 1.0, 2.0, dtype);
        },
        [=](const std::vector<HostTensor>&) {
          HostTensor values(dtype, {kCount});
          std::vector<double> scale(kCount);
          const bool wide = dtype == dtypes::float64;
          for (uint32_t at = 0; at < kCount; ++at) {
            const uint32_t first = host_word(at, 0), second = host_word(at, 1);
            const double radius = wide ? (static_cast<double>(first) + 1) * 0x1p-32
                                       : (static_cast<double>(first >> 8) + 1) * 0x1p-24;
            const double angle = wide ? static_cast<double>(second) * 0x1p-32
                                      : static_cast<double>(second >> 8) * 0x1p-24;
            const double length = std::sqrt(-2 * std::log(radius));
            values.data[at] =
                make_scalar(dtype, 1 + 2 * length * std::cos(2 * std::numbers::pi * angle));
            // log, sqrt and cos each within a few ulps: errors of the radius' size.
            scale[at] = 2 * length + 1;
          }
          return Expected(values, scale);
        },
        "kiln::random::normal(generator, {1000}, 1.0, 2.0, " + dtype_text(dtype) + ")",
        tolerance_for(dtype, 2, 16)));
  }
}

void add_integers(BatteryBuilder& builder) {
  struct Spec {
    DType dtype;
    int64_t low, high;
  };
  const Spec specs[] = {{dtypes::int8, -128, 128},
                        {dtypes::int16, -300, 17},
                        {dtypes::int32, -1000, 5001},
                        {dtypes::int64, -(int64_t{1} << 31), int64_t{1} << 31},
                        {dtypes::uint8, 0, 256},
                        {dtypes::uint16, 7, 60000},
                        {dtypes::uint32, 0, int64_t{1} << 32},
                        {dtypes::uint64, 5, 1000000007}};
  for (const Spec& spec : specs) {
    builder.add(make_created_case(
        "random", "randint", spec.dtype, {kCount},
        [=](const std::string& device) {
          Generator generator = generator_on(device);
          return random::randint(generator, spec.low, spec.high, {kCount}, spec.dtype);
        },
        [=](const std::vector<HostTensor>&) {
          HostTensor values(spec.dtype, {kCount});
          const uint64_t range = static_cast<uint64_t>(spec.high - spec.low);
          for (uint32_t at = 0; at < kCount; ++at) {
            const uint64_t offset = (uint64_t{host_word(at, 0)} * range) >> 32;
            values.data[at].i = spec.low + static_cast<int64_t>(offset);
          }
          return Expected(values);
        },
        "kiln::random::randint(generator, " + std::to_string(spec.low) + ", " +
            std::to_string(spec.high) + ", {1000}, " + dtype_text(spec.dtype) + ")",
        exact_tolerance()));
  }
  for (DType dtype : {dtypes::int64, dtypes::int32}) {
    builder.add(make_created_case(
        "random", "randperm", dtype, {kCount},
        [=](const std::string& device) {
          Generator generator = generator_on(device);
          return random::randperm(generator, kCount, dtype);
        },
        [=](const std::vector<HostTensor>&) {
          std::vector<int64_t> order(kCount);
          std::iota(order.begin(), order.end(), 0);
          auto key = [](int64_t at) {
            const auto index = static_cast<uint32_t>(at);
            return (uint64_t{host_word(index, 0)} << 32) | host_word(index, 1);
          };
          std::stable_sort(order.begin(), order.end(),
                           [&](int64_t a, int64_t b) { return key(a) < key(b); });
          HostTensor values(dtype, {kCount});
          for (int64_t at = 0; at < kCount; ++at) values.data[at].i = order[at];
          return Expected(values);
        },
        "kiln::random::randperm(generator, 1000, " + dtype_text(dtype) + ")", exact_tolerance()));
  }
}

void add_masks(BatteryBuilder& builder) {
  for (DType dtype : kFloatDtypes) {
    // Probabilities k / 16 for k = 0 .. 16, exact in every float dtype.
    builder.add(make_created_case(
        "random", "bernoulli", dtype, {kCount},
        [=](const std::string& device) {
          Generator generator = generator_on(device);
          const Tensor levels =
              (Tensor::arange(0, kCount, 1, dtypes::int32, device) % 17).cast(dtype) / 16.0;
          return random::bernoulli(generator, levels);
        },
        [=](const std::vector<HostTensor>&) {
          HostTensor values(dtype, {kCount});
          for (uint32_t at = 0; at < kCount; ++at)
            values.data[at].f = compare_unit(at, dtype) < (at % 17) / 16.0 ? 1.0 : 0.0;
          return Expected(values);
        },
        "kiln::random::bernoulli(generator, (arange(1000) % 17).cast(" + dtype_text(dtype) +
            ") / 16)",
        exact_tolerance()));
    builder.add(make_created_case(
        "random", "bernoulli_scalar", dtype, {kCount},
        [=](const std::string& device) {
          Generator generator = generator_on(device);
          return random::bernoulli(generator, {kCount}, 0.3, dtype);
        },
        [=](const std::vector<HostTensor>&) {
          HostTensor values(dtype, {kCount});
          const double p = dtype == dtypes::float64 ? 0.3 : round_to(dtypes::float32, 0.3);
          for (uint32_t at = 0; at < kCount; ++at)
            values.data[at].f = compare_unit(at, dtype) < p ? 1.0 : 0.0;
          return Expected(values);
        },
        "kiln::random::bernoulli(generator, {1000}, 0.3, " + dtype_text(dtype) + ")",
        exact_tolerance()));
    // x = (k % 64 - 32) / 4, exact in every float dtype.
    builder.add(make_created_case(
        "random", "dropout", dtype, {kCount},
        [=](const std::string& device) {
          Generator generator = generator_on(device);
          const Tensor x =
              ((Tensor::arange(0, kCount, 1, dtypes::int32, device) % 64) - 32).cast(dtype) / 4.0;
          return random::dropout(generator, x, 0.25);
        },
        [=](const std::vector<HostTensor>&) {
          HostTensor values(dtype, {kCount});
          for (uint32_t at = 0; at < kCount; ++at) {
            const double x = (static_cast<double>(at % 64) - 32) / 4;
            const bool keep = compare_unit(at, dtype) >= 0.25;
            values.data[at] = make_scalar(dtype, keep ? x / 0.75 : 0.0);
          }
          return Expected(values);
        },
        "kiln::random::dropout(generator, x, 0.25)", tolerance_for(dtype, 2)));
  }
}

void add_multinomials(BatteryBuilder& builder) {
  for (bool replacement : {true, false}) {
    Case drawn = make_created_case(
        "random", replacement ? "multinomial_replacement" : "multinomial", dtypes::int64,
        {4, replacement ? 64 : 5},
        [=](const std::string& device) {
          Generator generator = generator_on(device);
          // Rows of 9 weights, every third zero.
          const Tensor index = Tensor::arange(0, 36, 1, dtypes::int32, device).reshape({4, 9});
          const Tensor weights =
              where((index % 3) == 0.0, 0.0, (index % 7 + 1).cast(dtypes::float32));
          return random::multinomial(generator, weights, replacement ? 64 : 5, replacement);
        },
        nullptr,
        std::string("kiln::random::multinomial(generator, weights, ") +
            (replacement ? "64, true)" : "5, false)"),
        exact_tolerance());
    drawn.property = [=](const HostTensor& got) -> std::string {
      if (got.dtype != dtypes::int64) return "multinomial must give int64";
      for (int64_t row = 0; row < 4; ++row) {
        std::vector<int64_t> seen;
        for (int64_t at = 0; at < got.shape[1]; ++at) {
          const int64_t category = got.data[row * got.shape[1] + at].i;
          if (category < 0 || category >= 9) return "category outside [0, 9)";
          if ((row * 9 + category) % 3 == 0) return "a category of weight 0 was drawn";
          seen.push_back(category);
        }
        std::sort(seen.begin(), seen.end());
        if (!replacement && std::adjacent_find(seen.begin(), seen.end()) != seen.end())
          return "a category was drawn twice without replacement";
      }
      return "";
    };
    builder.add(std::move(drawn));
  }
}

}  // namespace

void add_random_cases(BatteryBuilder& builder) {
  add_uniforms(builder);
  add_integers(builder);
  add_masks(builder);
  add_multinomials(builder);
}

}  // namespace kiln::conformance::detail

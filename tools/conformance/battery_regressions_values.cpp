// Cases for values an independent check found wrong (issue 26): half-type constants used at
// float32 precision where they are stored, compared or converted, and integer powers computed in
// float32. Each failed on every device on the head it was found on; every case is built twice,
// from constants (folded on the host) and from a buffer (computed by a kernel).

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tools/conformance/battery.h"

namespace kiln::conformance::detail {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

HostTensor host_values(DType dtype, const std::vector<double>& values) {
  HostTensor tensor(dtype, {static_cast<int64_t>(values.size())});
  for (size_t index = 0; index < values.size(); ++index)
    tensor.data[index] = make_scalar(dtype, values[index]);
  return tensor;
}

// Integers exactly (a double holds only 53 bits), as two's complement bit patterns.
HostTensor host_integers(DType dtype, const std::vector<int64_t>& values) {
  HostTensor tensor(dtype, {static_cast<int64_t>(values.size())});
  for (size_t index = 0; index < values.size(); ++index) tensor.data[index].i = values[index];
  return tensor;
}

// `values` of `dtype` as a constant (folded) or in a buffer (read by a kernel).
Tensor values_of(DType dtype, const std::vector<double>& values, bool folded,
                 const std::string& device) {
  const int64_t count = static_cast<int64_t>(values.size());
  if (folded && values.size() == 1) return Tensor::full({1}, values[0], dtype, device);
  return upload(host_values(dtype, values), device).reshape({count});
}

void add_case(BatteryBuilder& builder, const std::string& op, DType dtype, Shape shape,
              std::function<Tensor(const std::string&, bool)> create, HostTensor expected,
              const std::string& code) {
  for (bool folded : {true, false}) {
    builder.add(make_created_case(
        "regression", op + (folded ? "/constant" : "/buffer"), dtype, shape,
        [create, folded](const std::string& device) { return create(device, folded); },
        [expected](const std::vector<HostTensor>&) { return Expected(expected); },
        code + (folded ? " (constants)" : " (in a buffer)"), exact_tolerance(true)));
  }
}

// A half value is rounded to its 16 bits where it is stored, compared or converted.
void add_half_constant_cases(BatteryBuilder& builder) {
  add_case(
      builder, "full_float16_overflows", dtypes::float32, {1},
      [](const std::string& device, bool folded) {
        return values_of(dtypes::float16, {70000}, folded, device).cast(dtypes::float32);
      },
      host_values(dtypes::float32, {kInf}), "full({1}, 70000, float16).cast(float32)");
  add_case(
      builder, "full_bfloat16_rounds", dtypes::float32, {1},
      [](const std::string& device, bool folded) {
        return values_of(dtypes::bfloat16, {1.00390625}, folded, device).cast(dtypes::float32);
      },
      host_values(dtypes::float32, {1.0}), "full({1}, 1.00390625, bfloat16).cast(float32)");
  add_case(
      builder, "int_cast_to_float16_compares_rounded", dtypes::bool_, {1},
      [](const std::string& device, bool folded) {
        return values_of(dtypes::int32, {2049}, folded, device).cast(dtypes::float16) == 2048.0;
      },
      host_values(dtypes::bool_, {1}), "full({1}, 2049, int32).cast(float16) == 2048");
  add_case(
      builder, "uint16_mod_float16", dtypes::float16, {1},
      [](const std::string& device, bool folded) {
        return values_of(dtypes::uint16, {65532}, folded, device) %
               values_of(dtypes::float16, {2}, folded, device);
      },
      host_values(dtypes::float16, {kNaN}), "full({1}, 65532, uint16) % full({1}, 2, float16)");
}

// Integer powers: exact in the operands' dtype, wrapping modulo 2^bits; a negative exponent
// gives 1 / base^-n truncated toward zero.
void add_integer_pow_cases(BatteryBuilder& builder) {
  add_case(
      builder, "int64_pow_exact", dtypes::int64, {3},
      [](const std::string& device, bool folded) {
        return pow(values_of(dtypes::int64, {3, -3, 7}, folded, device),
                   values_of(dtypes::int64, {35, 35, 22}, folded, device));
      },
      host_integers(dtypes::int64, {50031545098999707, -50031545098999707, 3909821048582988049}),
      "pow(int64 {3, -3, 7}, int64 {35, 35, 22})");
  add_case(
      builder, "int32_pow_wraps", dtypes::int32, {4},
      [](const std::string& device, bool folded) {
        return pow(values_of(dtypes::int32, {3, 3, 2, -2}, folded, device),
                   values_of(dtypes::int32, {19, 21, 31, 33}, folded, device));
      },
      // 3^21 = 10460353203 wraps to 1870418611; 2^31 wraps to INT_MIN; (-2)^33 to 0.
      host_integers(dtypes::int32, {1162261467, 1870418611, -2147483648, 0}),
      "pow(int32 {3, 3, 2, -2}, {19, 21, 31, 33})");
  add_case(
      builder, "int_pow_negative_exponent", dtypes::int32, {5},
      [](const std::string& device, bool folded) {
        return pow(values_of(dtypes::int32, {1, -1, -1, 2, 0}, folded, device),
                   values_of(dtypes::int32, {-5, -3, -4, -1, -2}, folded, device));
      },
      host_integers(dtypes::int32, {1, -1, 1, 0, 0}),
      "pow(int32 {1, -1, -1, 2, 0}, {-5, -3, -4, -1, -2})");
  add_case(
      builder, "int32_pow_integral_scalar", dtypes::int32, {3},
      [](const std::string& device, bool folded) {
        (void)folded;
        return values_of(dtypes::int32, {46341, -7, 12}, false, device).pow(2.0);
      },
      host_integers(dtypes::int32, {-2147479015, 49, 144}), "int32 {46341, -7, 12}.pow(2.0)");
  add_case(
      builder, "uint64_pow", dtypes::uint64, {2},
      [](const std::string& device, bool folded) {
        return pow(values_of(dtypes::uint64, {3, 2}, folded, device),
                   values_of(dtypes::uint64, {40, 63}, folded, device));
      },
      host_integers(dtypes::uint64, {static_cast<int64_t>(12157665459056928801ull),
                                     std::numeric_limits<int64_t>::min()}),
      "pow(uint64 {3, 2}, {40, 63})");
  add_case(
      builder, "int8_pow_wraps", dtypes::int8, {2},
      [](const std::string& device, bool folded) {
        return pow(values_of(dtypes::int8, {3, -5}, folded, device),
                   values_of(dtypes::int8, {5, 3}, folded, device));
      },
      host_integers(dtypes::int8, {-13, -125}), "pow(int8 {3, -5}, {5, 3})");
}

// Where lavapipe's compiler gave wrong values (each is also every other device's case): a
// comparison of an int64 sum of zeros, a dividend near FLT_MAX (its fma does not fuse, and the
// correction step's product overflowed), and false * x folded to 0 for a NaN or infinite x.
void add_driver_numerics_cases(BatteryBuilder& builder) {
  for (int64_t count : {int64_t{1}, int64_t{5}, int64_t{100}}) {
    builder.add(make_created_case(
        "regression", "int64_zero_sum_compares_" + std::to_string(count), dtypes::bool_, {1},
        [count](const std::string& device) {
          const Tensor x = Tensor::from_vector(std::vector<int64_t>(static_cast<size_t>(count), 3),
                                               {count}, device);
          return ((x * 0).sum() < 0.0).reshape({1});
        },
        [](const std::vector<HostTensor>&) { return Expected(host_values(dtypes::bool_, {0})); },
        "(int64 " + std::to_string(count) + " threes * 0).sum() < 0", exact_tolerance()));
  }
  std::vector<float> divisors;
  for (int step = 0; step < 64; ++step)
    divisors.push_back(std::ldexp(1.0f + static_cast<float>(step) / 64.0f, step % 9 - 2) *
                       (step % 2 ? -1.0f : 1.0f));
  const float largest = std::numeric_limits<float>::max();
  builder.add(make_created_case(
      "regression", "largest_float_divided", dtypes::float32,
      {static_cast<int64_t>(divisors.size())},
      [divisors, largest](const std::string& device) {
        const int64_t count = static_cast<int64_t>(divisors.size());
        std::vector<float> dividends(divisors.size(), largest);
        for (size_t at = 0; at < dividends.size(); at += 3) dividends[at] = -largest;
        return Tensor::from_vector(dividends, {count}, device) /
               Tensor::from_vector(divisors, {count}, device);
      },
      [divisors, largest](const std::vector<HostTensor>&) {
        std::vector<double> quotients;
        for (size_t at = 0; at < divisors.size(); ++at)
          quotients.push_back((at % 3 ? largest : -static_cast<double>(largest)) / divisors[at]);
        return Expected(host_values(dtypes::float32, quotients));
      },
      "(+-FLT_MAX) / y for 64 y in [1/4, 512)", tolerance_for(dtypes::float32, 1)));
  builder.add(make_created_case(
      "regression", "false_times_nan", dtypes::float32, {3},
      [](const std::string& device) {
        const Tensor small = Tensor::from_vector<uint8_t>({1, 2, 3}, {3}, device);
        const Tensor x = Tensor::from_vector<float>({NAN, INFINITY, 2}, {3}, device);
        return (small < 0.0).cast(dtypes::float32) * x;
      },
      [](const std::vector<HostTensor>&) {
        return Expected(host_values(dtypes::float32, {kNaN, kNaN, 0}));
      },
      "(uint8 {1, 2, 3} < 0).cast(float32) * {nan, inf, 2}", exact_tolerance()));
}

}  // namespace

void add_value_regression_cases(BatteryBuilder& builder) {
  add_half_constant_cases(builder);
  add_integer_pow_cases(builder);
  add_driver_numerics_cases(builder);
}

}  // namespace kiln::conformance::detail

// Tests for include/kiln/dtype.h: the promotion table against the rules in the header comment,
// the per-dtype facts, names, and the host half/bfloat16 conversions bit for bit against a
// reference that rounds in double arithmetic.

#include <catch2/catch.hpp>

#include <kiln/dtype.h>
#include <kiln/error.h>

#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

using namespace kiln;

namespace {

// The header's promotion rules, written out independently of dtype.cpp.
DType expected_promotion(DType a, DType b) {
  if (a == b) return a;
  if (a.is_bool()) return b;
  if (b.is_bool()) return a;
  if (a.is_float() && b.is_float()) {
    if (a.is_half() && b.is_half()) return dtypes::float32;  // float16 with bfloat16
    return a.itemsize() >= b.itemsize() ? a : b;
  }
  if (a.is_float()) return a;
  if (b.is_float()) return b;
  if (a.is_unsigned() == b.is_unsigned()) return a.itemsize() >= b.itemsize() ? a : b;
  // Signed with unsigned: the smallest signed type holding both; int64 when none does.
  const DType& signed_type = a.is_unsigned() ? b : a;
  const DType& unsigned_type = a.is_unsigned() ? a : b;
  for (DType candidate : {dtypes::int8, dtypes::int16, dtypes::int32, dtypes::int64}) {
    if (candidate.itemsize() >= signed_type.itemsize() &&
        candidate.itemsize() > unsigned_type.itemsize()) {
      return candidate;
    }
  }
  return dtypes::int64;
}

uint32_t float_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

float bits_float(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

// An IEEE binary format with `fraction_bits` stored fraction bits and normal exponents in
// [min_exponent, max_exponent] (half: 10, -14, 15; bfloat16: 7, -126, 127).
struct Format {
  int fraction_bits;
  int min_exponent;
  int max_exponent;
};
constexpr Format kHalf{10, -14, 15};
constexpr Format kBFloat16{7, -126, 127};

// Decodes 16 bits of `format` by the definition of the encoding.
double reference_decode(uint16_t bits, const Format& format) {
  const int exponent_bits = 15 - format.fraction_bits;
  const int bias = format.max_exponent;
  const double sign = (bits >> 15) ? -1.0 : 1.0;
  const int exponent = (bits >> format.fraction_bits) & ((1 << exponent_bits) - 1);
  const int fraction = bits & ((1 << format.fraction_bits) - 1);
  if (exponent == (1 << exponent_bits) - 1) {
    return fraction ? std::numeric_limits<double>::quiet_NaN() : sign * HUGE_VAL;
  }
  if (exponent == 0) return sign * std::ldexp(fraction, format.min_exponent - format.fraction_bits);
  return sign *
         std::ldexp(fraction + (1 << format.fraction_bits), exponent - bias - format.fraction_bits);
}

// Rounds a finite float to `format`, to nearest with ties to even, in double arithmetic (exact:
// a float has 24 significant bits, far fewer than a double's 53). Overflow gives infinity.
double reference_round(float value, const Format& format) {
  if (std::isinf(value)) return value;
  const double magnitude = std::fabs(static_cast<double>(value));
  int exponent;
  std::frexp(magnitude, &exponent);  // magnitude = f * 2^exponent, f in [0.5, 1)
  const int unbiased = std::max(exponent - 1, format.min_exponent);  // subnormals share min's step
  const double step = std::ldexp(1.0, unbiased - format.fraction_bits);
  double units = std::floor(magnitude / step);
  const double rest = magnitude / step - units;
  if (rest > 0.5 || (rest == 0.5 && std::fmod(units, 2.0) == 1.0)) units += 1;
  double rounded = units * step;
  const double largest =
      std::ldexp(2.0 - std::ldexp(1.0, -format.fraction_bits), format.max_exponent);
  if (rounded > largest) rounded = HUGE_VAL;
  return std::signbit(value) ? -rounded : rounded;
}

// Checks one conversion against the reference: same value and same sign (so -0.0 stays -0.0).
template <typename ToBits>
bool converts_like_reference(float value, ToBits to_bits, const Format& format) {
  const uint16_t bits = to_bits(value);
  const double got = reference_decode(bits, format);
  if (std::isnan(value)) return std::isnan(got);
  const double expected = reference_round(value, format);
  return got == expected && std::signbit(got) == std::signbit(expected);
}

// Floats that stress the rounding: every midpoint between neighbouring 16-bit values (ties), one
// float ulp either side of it, and random bit patterns (uniform, and concentrated on the
// exponents around the format's range, including the subnormal range and overflow).
std::vector<float> rounding_inputs(const Format& format, float (*decode)(uint16_t), uint32_t seed) {
  std::vector<float> inputs;
  for (uint32_t bits = 0; bits < 0x7fffu; ++bits) {
    const float low = decode(static_cast<uint16_t>(bits));
    const float high = decode(static_cast<uint16_t>(bits + 1));
    if (!std::isfinite(low) || !std::isfinite(high)) continue;
    const float middle = static_cast<float>((static_cast<double>(low) + high) / 2);
    for (float value : {middle, std::nextafter(middle, 0.0f), std::nextafter(middle, HUGE_VALF)}) {
      inputs.push_back(value);
      inputs.push_back(-value);
    }
  }
  const double largest =
      std::ldexp(2.0 - std::ldexp(1.0, -format.fraction_bits), format.max_exponent);
  const float overflow_edge =
      static_cast<float>(largest + std::ldexp(1.0, format.max_exponent - format.fraction_bits - 1));
  for (float value :
       {0.0f, -0.0f, HUGE_VALF, -HUGE_VALF, std::numeric_limits<float>::max(),
        std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min(),
        static_cast<float>(largest), overflow_edge, std::nextafter(overflow_edge, 0.0f),
        std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
        std::numeric_limits<float>::signaling_NaN()}) {
    inputs.push_back(value);
  }
  std::mt19937 rng(seed);
  std::uniform_int_distribution<uint32_t> any_bits;
  const int low_exponent = std::max(1, 127 + format.min_exponent - format.fraction_bits - 3);
  const int high_exponent = std::min(254, 127 + format.max_exponent + 2);
  std::uniform_int_distribution<uint32_t> near_exponent(low_exponent, high_exponent);
  for (int count = 0; count < 100000; ++count) {
    inputs.push_back(bits_float(any_bits(rng)));
    const uint32_t sign = any_bits(rng) & 0x80000000u;
    inputs.push_back(bits_float(sign | (near_exponent(rng) << 23) | (any_bits(rng) & 0x7fffffu)));
  }
  return inputs;
}

}  // namespace

TEST_CASE("dtype: promote_types follows the header's rules for every pair", "[dtype]") {
  for (DType a : dtypes::all) {
    for (DType b : dtypes::all) {
      INFO(a.name() << " with " << b.name());
      CHECK(promote_types(a, b) == promote_types(b, a));
      CHECK(promote_types(a, b) == expected_promotion(a, b));
    }
    CHECK(promote_types(a, a) == a);
    CHECK(promote_types(dtypes::bool_, a) == a);
  }
  // The examples written in the header, spelled out.
  CHECK(promote_types(dtypes::uint8, dtypes::int8) == dtypes::int16);
  CHECK(promote_types(dtypes::uint32, dtypes::int32) == dtypes::int64);
  CHECK(promote_types(dtypes::uint64, dtypes::int8) == dtypes::int64);
  CHECK(promote_types(dtypes::uint64, dtypes::int64) == dtypes::int64);
  CHECK(promote_types(dtypes::uint8, dtypes::int32) == dtypes::int32);
  CHECK(promote_types(dtypes::uint16, dtypes::int16) == dtypes::int32);
  CHECK(promote_types(dtypes::int8, dtypes::int64) == dtypes::int64);
  CHECK(promote_types(dtypes::uint8, dtypes::uint32) == dtypes::uint32);
  CHECK(promote_types(dtypes::float16, dtypes::bfloat16) == dtypes::float32);
  CHECK(promote_types(dtypes::float16, dtypes::float32) == dtypes::float32);
  CHECK(promote_types(dtypes::bfloat16, dtypes::float64) == dtypes::float64);
  CHECK(promote_types(dtypes::int64, dtypes::float16) == dtypes::float16);
  CHECK(promote_types(dtypes::uint64, dtypes::bfloat16) == dtypes::bfloat16);
  CHECK(promote_types(dtypes::bool_, dtypes::uint8) == dtypes::uint8);
}

TEST_CASE("dtype: itemsize, name, kind and range of every dtype", "[dtype]") {
  struct Fact {
    DType dtype;
    const char* name;
    int itemsize;
    bool is_float, is_int, is_unsigned;
  };
  const Fact facts[] = {
      {dtypes::bool_, "bool", 1, false, false, false},
      {dtypes::int8, "int8", 1, false, true, false},
      {dtypes::int16, "int16", 2, false, true, false},
      {dtypes::int32, "int32", 4, false, true, false},
      {dtypes::int64, "int64", 8, false, true, false},
      {dtypes::uint8, "uint8", 1, false, true, true},
      {dtypes::uint16, "uint16", 2, false, true, true},
      {dtypes::uint32, "uint32", 4, false, true, true},
      {dtypes::uint64, "uint64", 8, false, true, true},
      {dtypes::float16, "float16", 2, true, false, false},
      {dtypes::bfloat16, "bfloat16", 2, true, false, false},
      {dtypes::float32, "float32", 4, true, false, false},
      {dtypes::float64, "float64", 8, true, false, false},
  };
  REQUIRE(std::size(facts) == std::size(dtypes::all));
  for (size_t index = 0; index < std::size(facts); ++index) {
    const Fact& fact = facts[index];
    INFO(fact.name);
    CHECK(dtypes::all[index] == fact.dtype);  // dtypes::all is in ScalarType order
    CHECK(static_cast<size_t>(fact.dtype.type()) == index);
    CHECK(std::string(fact.dtype.name()) == fact.name);
    CHECK(fact.dtype.itemsize() == fact.itemsize);
    CHECK(fact.dtype.is_float() == fact.is_float);
    CHECK(fact.dtype.is_int() == fact.is_int);
    CHECK(fact.dtype.is_unsigned() == fact.is_unsigned);
    CHECK(fact.dtype.is_signed_int() == (fact.is_int && !fact.is_unsigned));
    CHECK(fact.dtype.is_half() == (fact.itemsize == 2 && fact.is_float));
    CHECK(fact.dtype.min_value() < fact.dtype.max_value());
  }
  CHECK(DType() == dtypes::float32);
  // Integer ranges are the representable ranges.
  CHECK(dtypes::bool_.min_value() == 0);
  CHECK(dtypes::bool_.max_value() == 1);
  CHECK(dtypes::int8.min_value() == -128);
  CHECK(dtypes::int8.max_value() == 127);
  CHECK(dtypes::uint16.max_value() == 65535);
  CHECK(dtypes::int32.min_value() == static_cast<double>(std::numeric_limits<int32_t>::min()));
  CHECK(dtypes::uint64.max_value() == static_cast<double>(std::numeric_limits<uint64_t>::max()));
  // Float ranges are the largest finite values, as the header says.
  CHECK(dtypes::float16.max_value() == 65504.0);
  CHECK(dtypes::float16.min_value() == -65504.0);
  CHECK(dtypes::bfloat16.max_value() == static_cast<double>(bfloat16_bits_to_float(0x7f7f)));
  CHECK(dtypes::float32.max_value() == static_cast<double>(std::numeric_limits<float>::max()));
  CHECK(dtypes::float32.min_value() == -static_cast<double>(std::numeric_limits<float>::max()));
  CHECK(dtypes::float64.max_value() == std::numeric_limits<double>::max());
  // Host element types map to their dtypes.
  CHECK(dtype_of<half>() == dtypes::float16);
  CHECK(dtype_of<bfloat16>() == dtypes::bfloat16);
  CHECK(dtype_of<uint32_t>() == dtypes::uint32);
  CHECK(dtype_of<double>() == dtypes::float64);
}

TEST_CASE("dtype: dtype_from_name parses every canonical name and nothing else", "[dtype]") {
  for (DType dtype : dtypes::all) {
    CHECK(dtype_from_name(dtype.name()) == dtype);
  }
  for (const char* bad :
       {"", "float", "Float32", "float32 ", "half", "int", "double", "uint", "bool_", "f32"}) {
    INFO("name '" << bad << "'");
    CHECK_THROWS_AS(dtype_from_name(bad), DTypeError);
  }
  // The message names the bad input and the valid choices.
  CHECK_THROWS_WITH(dtype_from_name("float8"),
                    Catch::Contains("float8") && Catch::Contains("bfloat16"));
}

TEST_CASE("dtype: every half bit pattern survives a round trip through float", "[dtype]") {
  for (uint32_t bits = 0; bits <= 0xffffu; ++bits) {
    const uint16_t half_bits = static_cast<uint16_t>(bits);
    const float value = half_bits_to_float(half_bits);
    const double expected = reference_decode(half_bits, kHalf);
    INFO("half bits 0x" << std::hex << bits);
    if (std::isnan(expected)) {
      CHECK(std::isnan(value));
      const uint16_t again = float_to_half_bits(value);
      CHECK((again & 0x7c00u) == 0x7c00u);  // still NaN: all-ones exponent, non-zero fraction
      CHECK((again & 0x03ffu) != 0);
      continue;
    }
    CHECK(static_cast<double>(value) == expected);
    CHECK(std::signbit(value) == ((bits & 0x8000u) != 0));
    CHECK(float_to_half_bits(value) == half_bits);
  }
  // The wrapper type converts the same way.
  CHECK(half(1.5f).bits == 0x3e00u);
  CHECK(static_cast<float>(half(-2.0f)) == -2.0f);
}

TEST_CASE("dtype: every bfloat16 bit pattern survives a round trip through float", "[dtype]") {
  for (uint32_t bits = 0; bits <= 0xffffu; ++bits) {
    const uint16_t bf_bits = static_cast<uint16_t>(bits);
    const float value = bfloat16_bits_to_float(bf_bits);
    const double expected = reference_decode(bf_bits, kBFloat16);
    INFO("bfloat16 bits 0x" << std::hex << bits);
    if (std::isnan(expected)) {
      CHECK(std::isnan(value));
      const uint16_t again = float_to_bfloat16_bits(value);
      CHECK((again & 0x7f80u) == 0x7f80u);
      CHECK((again & 0x007fu) != 0);
      continue;
    }
    CHECK(static_cast<double>(value) == expected);
    CHECK(float_to_bfloat16_bits(value) == bf_bits);
  }
  CHECK(bfloat16(1.0f).bits == 0x3f80u);
  CHECK(static_cast<float>(bfloat16(-3.0f)) == -3.0f);
}

TEST_CASE("dtype: float to half rounds to nearest even", "[dtype]") {
  const std::vector<float> inputs = rounding_inputs(kHalf, half_bits_to_float, 11);
  int failures = 0;
  for (float value : inputs) {
    if (!converts_like_reference(value, float_to_half_bits, kHalf) && ++failures <= 5) {
      FAIL_CHECK("float " << value << " (bits 0x" << std::hex << float_bits(value)
                          << ") gave half 0x" << float_to_half_bits(value) << ", reference value "
                          << reference_round(value, kHalf));
    }
  }
  CHECK(failures == 0);
  // A few by hand: ties go to the even neighbour, the overflow threshold, the smallest subnormal.
  CHECK(float_to_half_bits(1.0f + std::ldexp(1.0f, -11)) == 0x3c00u);      // tie, 1.0 is even
  CHECK(float_to_half_bits(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02u);  // tie, rounds up to even
  CHECK(float_to_half_bits(65504.0f) == 0x7bffu);
  CHECK(float_to_half_bits(65519.996f) == 0x7bffu);
  CHECK(float_to_half_bits(65520.0f) == 0x7c00u);  // tie with odd 65504: to infinity
  CHECK(float_to_half_bits(-1e10f) == 0xfc00u);
  CHECK(float_to_half_bits(std::ldexp(1.0f, -24)) == 0x0001u);
  CHECK(float_to_half_bits(std::ldexp(1.0f, -25)) == 0x0000u);  // tie with zero
  CHECK(float_to_half_bits(std::ldexp(1.5f, -25)) == 0x0001u);
  CHECK(float_to_half_bits(-0.0f) == 0x8000u);
  CHECK(float_to_half_bits(-std::ldexp(1.0f, -30)) == 0x8000u);  // underflow keeps the sign
}

TEST_CASE("dtype: float to bfloat16 rounds to nearest even", "[dtype]") {
  const std::vector<float> inputs = rounding_inputs(kBFloat16, bfloat16_bits_to_float, 12);
  int failures = 0;
  for (float value : inputs) {
    if (!converts_like_reference(value, float_to_bfloat16_bits, kBFloat16) && ++failures <= 5) {
      FAIL_CHECK("float " << value << " (bits 0x" << std::hex << float_bits(value)
                          << ") gave bfloat16 0x" << float_to_bfloat16_bits(value)
                          << ", reference value " << reference_round(value, kBFloat16));
    }
  }
  CHECK(failures == 0);
  CHECK(float_to_bfloat16_bits(bits_float(0x3f808000u)) == 0x3f80u);  // tie, even stays
  CHECK(float_to_bfloat16_bits(bits_float(0x3f818000u)) == 0x3f82u);  // tie, odd rounds up
  CHECK(float_to_bfloat16_bits(std::numeric_limits<float>::max()) == 0x7f80u);
  CHECK(float_to_bfloat16_bits(-0.0f) == 0x8000u);
  CHECK(float_to_bfloat16_bits(-HUGE_VALF) == 0xff80u);
}

TEST_CASE("dtype: every dtype has a distinct short name for tables", "[dtype]") {
  std::set<std::string> seen;
  for (DType dtype : dtypes::all) CHECK(seen.insert(dtype.short_name()).second);
  CHECK(std::string(dtypes::bfloat16.short_name()) == "bf16");
  CHECK(std::string(dtypes::uint64.short_name()) == "u64");
}

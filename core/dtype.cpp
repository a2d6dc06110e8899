#include <kiln/dtype.h>
#include <kiln/error.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace kiln {
namespace {

struct DTypeInfo {
  const char* name;
  const char* short_name;
  int itemsize;
  bool is_float;
  bool is_int;
  bool is_unsigned;
  double min_value;
  double max_value;
};

// Indexed by ScalarType.
const DTypeInfo kInfo[] = {
    {"bool", "bool", 1, false, false, true, 0, 1},
    {"int8", "i8", 1, false, true, false, -128.0, 127.0},
    {"int16", "i16", 2, false, true, false, -32768.0, 32767.0},
    {"int32", "i32", 4, false, true, false, -2147483648.0, 2147483647.0},
    {"int64", "i64", 8, false, true, false, -9223372036854775808.0, 9223372036854775807.0},
    {"uint8", "u8", 1, false, true, true, 0, 255.0},
    {"uint16", "u16", 2, false, true, true, 0, 65535.0},
    {"uint32", "u32", 4, false, true, true, 0, 4294967295.0},
    {"uint64", "u64", 8, false, true, true, 0, 18446744073709551615.0},
    {"float16", "f16", 2, true, false, false, -65504.0, 65504.0},
    {"bfloat16", "bf16", 2, true, false, false, -3.3895313892515355e38, 3.3895313892515355e38},
    {"float32", "f32", 4, true, false, false, -3.4028234663852886e38, 3.4028234663852886e38},
    {"float64", "f64", 8, true, false, false, -1.7976931348623157e308, 1.7976931348623157e308},
};

const DTypeInfo& info(DType dtype) {
  return kInfo[static_cast<int>(dtype.type())];
}

// Rank among floats for promotion; half and bfloat16 share a rank and meet at float32.
int float_rank(DType dtype) {
  switch (dtype.type()) {
    case ScalarType::Float16:
    case ScalarType::BFloat16:
      return 1;
    case ScalarType::Float32:
      return 2;
    default:
      return 3;
  }
}

DType signed_int_of_size(int bytes) {
  switch (bytes) {
    case 1:
      return dtypes::int8;
    case 2:
      return dtypes::int16;
    case 4:
      return dtypes::int32;
    default:
      return dtypes::int64;
  }
}

}  // namespace

int DType::itemsize() const {
  return info(*this).itemsize;
}
const char* DType::name() const {
  return info(*this).name;
}
const char* DType::short_name() const {
  return info(*this).short_name;
}
bool DType::is_float() const {
  return info(*this).is_float;
}
bool DType::is_int() const {
  return info(*this).is_int;
}
bool DType::is_unsigned() const {
  return info(*this).is_unsigned && is_int();
}
// The table holds the finite extremes, which is what the header promises (not +-infinity).
double DType::min_value() const {
  return info(*this).min_value;
}
double DType::max_value() const {
  return info(*this).max_value;
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a.is_bool()) return b;
  if (b.is_bool()) return a;
  if (a.is_float() || b.is_float()) {
    if (!b.is_float()) return a;
    if (!a.is_float()) return b;
    if (float_rank(a) == float_rank(b)) return dtypes::float32;  // float16 with bfloat16
    return float_rank(a) > float_rank(b) ? a : b;
  }
  if (a.is_unsigned() == b.is_unsigned()) return a.itemsize() >= b.itemsize() ? a : b;
  DType unsigned_type = a.is_unsigned() ? a : b;
  DType signed_type = a.is_unsigned() ? b : a;
  if (signed_type.itemsize() > unsigned_type.itemsize()) return signed_type;
  return signed_int_of_size(unsigned_type.itemsize() * 2);
}

DType dtype_from_name(const std::string& name) {
  for (DType dtype : dtypes::all) {
    if (name == dtype.name()) return dtype;
  }
  throw DTypeError("[dtype_from_name] unknown dtype '" + name +
                   "'; valid: bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, "
                   "float16, bfloat16, float32, float64");
}

uint16_t float_to_half_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t abs_bits = bits & 0x7fffffffu;
  if (abs_bits >= 0x7f800000u) {  // inf or NaN; keep NaN quiet and non-zero
    return static_cast<uint16_t>(sign | 0x7c00u | (abs_bits > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs_bits >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (abs_bits < 0x38800000u) {                                      // a half subnormal or zero
    if (abs_bits < 0x33000000u) return static_cast<uint16_t>(sign);  // below half the least step
    // value = mantissa * 2^(exponent - 150); in steps of 2^-24 that is mantissa >> (126 -
    // exponent).
    const uint32_t exponent = abs_bits >> 23;
    const uint32_t mantissa = (abs_bits & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exponent;
    uint32_t result = mantissa >> shift;
    const uint32_t dropped = mantissa & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1);
    if (dropped > halfway || (dropped == halfway && (result & 1u))) result += 1;
    return static_cast<uint16_t>(sign | result);
  }
  uint32_t result = ((abs_bits - 0x38000000u) >> 13);
  const uint32_t dropped = abs_bits & 0x1fffu;
  if (dropped > 0x1000u || (dropped == 0x1000u && (result & 1u))) result += 1;
  return static_cast<uint16_t>(sign | result);
}

float half_bits_to_float(uint16_t half_bits) {
  const uint32_t sign = (static_cast<uint32_t>(half_bits) & 0x8000u) << 16;
  const uint32_t exponent = (half_bits >> 10) & 0x1fu;
  const uint32_t mantissa = half_bits & 0x3ffu;
  float magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);
  } else if (exponent == 31) {
    magnitude =
        mantissa ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400u), static_cast<int>(exponent) - 25);
  }
  uint32_t bits;
  std::memcpy(&bits, &magnitude, 4);
  bits |= sign;
  float result;
  std::memcpy(&result, &bits, 4);
  return result;
}

uint16_t float_to_bfloat16_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float bfloat16_bits_to_float(uint16_t bfloat_bits) {
  const uint32_t bits = static_cast<uint32_t>(bfloat_bits) << 16;
  float result;
  std::memcpy(&result, &bits, 4);
  return result;
}

}  // namespace kiln

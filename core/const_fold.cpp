#include "core/const_fold.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace kiln {
namespace {

// An integer value as its 64-bit pattern, sign- or zero-extended from the dtype's width.
uint64_t wrap_to(uint64_t bits, DType dtype) {
  if (dtype.is_bool()) return bits != 0;
  const int width = dtype.itemsize() * 8;
  if (width == 64) return bits;
  const uint64_t mask = (uint64_t{1} << width) - 1;
  bits &= mask;
  if (dtype.is_signed_int() && (bits >> (width - 1)) != 0) bits |= ~mask;
  return bits;
}

ConstArg int_const(uint64_t bits, DType dtype) {
  ConstArg arg;
  arg.int_value = static_cast<int64_t>(wrap_to(bits, dtype));
  arg.float_value = dtype.is_unsigned() ? static_cast<double>(static_cast<uint64_t>(arg.int_value))
                                        : static_cast<double>(arg.int_value);
  return arg;
}

ConstArg float_const(double value, DType dtype) {
  ConstArg arg;
  arg.float_value = round_to_float_dtype(value, dtype);
  return arg;
}

// A value of a half type as its 16 bits hold it: kernels round it so where it is stored,
// compared or converted, and so does the folder.
double stored_value(const TypedConst& operand) {
  return round_to_stored_dtype(operand.value.float_value, operand.dtype);
}

double as_double(const TypedConst& operand) {
  if (operand.dtype.is_float()) return stored_value(operand);
  if (operand.dtype.is_unsigned())
    return static_cast<double>(static_cast<uint64_t>(operand.value.int_value));
  return static_cast<double>(operand.value.int_value);
}

bool is_true(const TypedConst& operand) {
  return operand.dtype.is_float() ? stored_value(operand) != 0 : operand.value.int_value != 0;
}

// Float to integer: truncate toward zero, saturate at the dtype's range, NaN gives 0.
ConstArg float_to_int(double value, DType dtype) {
  if (std::isnan(value)) return int_const(0, dtype);
  if (dtype.is_bool()) return int_const(value != 0, dtype);
  const double whole = std::trunc(value);
  if (dtype.is_unsigned()) {
    if (whole <= 0) return int_const(0, dtype);
    if (whole >= dtype.max_value() + 1.0) return int_const(~uint64_t{0}, dtype);
    return int_const(static_cast<uint64_t>(whole), dtype);
  }
  if (whole < dtype.min_value()) {
    const int64_t bottom = dtype == dtypes::int64 ? std::numeric_limits<int64_t>::min()
                                                  : static_cast<int64_t>(dtype.min_value());
    return int_const(static_cast<uint64_t>(bottom), dtype);
  }
  if (whole >= dtype.max_value() + 1.0) {
    const int64_t top = dtype == dtypes::int64 ? std::numeric_limits<int64_t>::max()
                                               : static_cast<int64_t>(dtype.max_value());
    return int_const(static_cast<uint64_t>(top), dtype);
  }
  return int_const(static_cast<uint64_t>(static_cast<int64_t>(whole)), dtype);
}

// A float op computed in the dtype's compute precision: float for float32 and the half types.
template <typename F>
std::optional<ConstArg> float_unary(Op op, F a, DType result) {
  F value;
  switch (op) {
    case Op::Neg:
      value = -a;
      break;
    case Op::Abs:
      value = std::fabs(a);
      break;
    case Op::Recip:
      value = F(1) / a;
      break;
    case Op::Sqrt:
      value = std::sqrt(a);
      break;
    case Op::Exp:
      value = std::exp(a);
      break;
    case Op::Exp2:
      value = std::exp2(a);
      break;
    case Op::Log:
      value = std::log(a);
      break;
    case Op::Log2:
      value = std::log2(a);
      break;
    case Op::Sin:
      value = std::sin(a);
      break;
    case Op::Cos:
      value = std::cos(a);
      break;
    case Op::Tan:
      value = std::tan(a);
      break;
    case Op::Tanh:
      value = std::tanh(a);
      break;
    case Op::Erf:
      value = std::erf(a);
      break;
    case Op::Asin:
      value = std::asin(a);
      break;
    case Op::Acos:
      value = std::acos(a);
      break;
    case Op::Atan:
      value = std::atan(a);
      break;
    case Op::Sinh:
      value = std::sinh(a);
      break;
    case Op::Cosh:
      value = std::cosh(a);
      break;
    case Op::Asinh:
      value = std::asinh(a);
      break;
    case Op::Acosh:
      value = std::acosh(a);
      break;
    case Op::Atanh:
      value = std::atanh(a);
      break;
    case Op::Log10:
      value = std::log10(a);
      break;
    case Op::Log1p:
      value = std::log1p(a);
      break;
    case Op::Expm1:
      value = std::expm1(a);
      break;
    case Op::Floor:
      value = std::floor(a);
      break;
    case Op::Ceil:
      value = std::ceil(a);
      break;
    case Op::Round:
      value = std::nearbyint(a);
      break;
    case Op::Trunc:
      value = std::trunc(a);
      break;
    default:
      return std::nullopt;
  }
  return float_const(static_cast<double>(value), result);
}

template <typename F>
std::optional<ConstArg> float_binary(Op op, F a, F b, DType result) {
  if (is_comparison(op)) {
    bool truth = false;
    switch (op) {
      case Op::CmpLt:
        truth = a < b;
        break;
      case Op::CmpLe:
        truth = a <= b;
        break;
      case Op::CmpGt:
        truth = a > b;
        break;
      case Op::CmpGe:
        truth = a >= b;
        break;
      case Op::CmpEq:
        truth = a == b;
        break;
      default:
        truth = a != b;
        break;
    }
    return int_const(truth, result);
  }
  F value;
  switch (op) {
    case Op::Add:
      value = a + b;
      break;
    case Op::Sub:
      value = a - b;
      break;
    case Op::Mul:
      value = a * b;
      break;
    case Op::Div:
      value = a / b;
      break;
    case Op::Mod:
      value = std::fmod(a, b);
      break;
    case Op::Max:
      value = (a != a || a > b) ? a : b;
      break;
    case Op::Min:
      value = (a != a || a < b) ? a : b;
      break;
    case Op::Pow:
      value = std::pow(a, b);
      break;
    case Op::Atan2:
      value = std::atan2(a, b);
      break;
    case Op::Hypot:
      value = std::hypot(a, b);
      break;
    case Op::Copysign:
      value = std::copysign(a, b);
      break;
    default:
      return std::nullopt;
  }
  return float_const(static_cast<double>(value), result);
}

std::optional<ConstArg> int_unary(Op op, uint64_t a, DType dtype) {
  switch (op) {
    case Op::Neg:
      return int_const(dtype.is_bool() ? !a : 0 - a, dtype);
    case Op::Not:
      return int_const(a == 0, dtype);
    case Op::Abs:
      return int_const(dtype.is_signed_int() && static_cast<int64_t>(a) < 0 ? 0 - a : a, dtype);
    default:
      return std::nullopt;
  }
}

std::optional<ConstArg> int_binary(Op op, uint64_t a, uint64_t b, DType operand, DType result) {
  const bool is_signed = operand.is_signed_int();
  const int64_t sa = static_cast<int64_t>(a), sb = static_cast<int64_t>(b);
  auto less = [&](uint64_t x, uint64_t y) {
    return is_signed ? static_cast<int64_t>(x) < static_cast<int64_t>(y) : x < y;
  };
  const int width = operand.is_bool() ? 1 : operand.itemsize() * 8;
  switch (op) {
    case Op::CmpLt:
      return int_const(less(a, b), result);
    case Op::CmpLe:
      return int_const(!less(b, a), result);
    case Op::CmpGt:
      return int_const(less(b, a), result);
    case Op::CmpGe:
      return int_const(!less(a, b), result);
    case Op::CmpEq:
      return int_const(a == b, result);
    case Op::CmpNe:
      return int_const(a != b, result);
    case Op::Add:
      return int_const(operand.is_bool() ? (a | b) : a + b, result);
    case Op::Sub:
      return int_const(a - b, result);
    case Op::Mul:
      return int_const(operand.is_bool() ? (a & b) : a * b, result);
    case Op::Div:
      if (b == 0) return int_const(0, result);
      if (!is_signed) return int_const(a / b, result);
      if (sb == -1) return int_const(0 - a, result);
      return int_const(static_cast<uint64_t>(sa / sb), result);
    case Op::Mod:
      if (b == 0) return int_const(0, result);
      if (!is_signed) return int_const(a % b, result);
      if (sb == -1) return int_const(0, result);
      return int_const(static_cast<uint64_t>(sa % sb), result);
    case Op::Max:
      return int_const(less(b, a) ? a : b, result);
    case Op::Min:
      return int_const(less(a, b) ? a : b, result);
    case Op::And:
      return int_const(a & b, result);
    case Op::Or:
      return int_const(a | b, result);
    case Op::Xor:
      return int_const(a ^ b, result);
    case Op::Pow: {
      // Exact modulo 2^width (codegen/linear_builder.h's integer_pow computes the same).
      if (is_signed && sb < 0) {
        if (sa == 1) return int_const(1, result);
        if (sa == -1) return int_const((b & 1) ? ~uint64_t{0} : 1, result);
        return int_const(0, result);
      }
      uint64_t product = 1, power = a;
      for (uint64_t left = b; left != 0; left >>= 1) {
        if (left & 1) product *= power;
        power *= power;
      }
      return int_const(product, result);
    }
    case Op::Shl:
      if (b >= static_cast<uint64_t>(width)) return std::nullopt;
      return int_const(a << b, result);
    case Op::Shr:
      if (b >= static_cast<uint64_t>(width)) return std::nullopt;
      return int_const(is_signed ? static_cast<uint64_t>(sa >> b) : a >> b, result);
    default:
      return std::nullopt;
  }
}

std::optional<ConstArg> fold_cast(const TypedConst& from, DType to) {
  if (to.is_bool()) return int_const(is_true(from), to);
  if (to.is_float()) {
    ConstArg arg;
    arg.float_value = round_to_stored_dtype(round_to_float_dtype(as_double(from), to), to);
    return arg;
  }
  if (from.dtype.is_float()) return float_to_int(stored_value(from), to);
  return int_const(static_cast<uint64_t>(from.value.int_value), to);
}

}  // namespace

double round_to_float_dtype(double value, DType dtype) {
  if (dtype == dtypes::float64) return value;
  return static_cast<double>(static_cast<float>(value));
}

double round_to_stored_dtype(double value, DType dtype) {
  const float narrow = static_cast<float>(value);
  if (dtype == dtypes::float16) return half_bits_to_float(float_to_half_bits(narrow));
  if (dtype == dtypes::bfloat16) return bfloat16_bits_to_float(float_to_bfloat16_bits(narrow));
  return value;
}

ConstArg make_const(double value, DType dtype) {
  if (dtype.is_float()) return float_const(value, dtype);
  if (dtype.is_bool()) return int_const(value != 0, dtype);
  // Integers wrap like a cast would: the value modulo 2^64, as two's complement.
  uint64_t bits = 0;
  if (std::isfinite(value)) {
    constexpr double kTwo63 = 9223372036854775808.0, kTwo64 = 18446744073709551616.0;
    double whole = std::trunc(value);
    if (whole < -kTwo63 || whole >= kTwo64) {
      whole = std::fmod(whole, kTwo64);
      if (whole < 0) whole += kTwo64;
      if (whole >= kTwo64) whole = 0;
    }
    bits = whole < 0 ? static_cast<uint64_t>(static_cast<int64_t>(whole))
                     : static_cast<uint64_t>(whole);
  }
  return int_const(bits, dtype);
}

std::optional<ConstArg> fold_constant(Op op, DType result,
                                      const std::vector<TypedConst>& operands) {
  if (operands.empty()) return std::nullopt;
  const TypedConst& a = operands[0];
  if (op == Op::Cast) return fold_cast(a, result);
  // Left to the kernel, which reads the bits as the device holds them.
  if (op == Op::Bitcast) return std::nullopt;
  if (op == Op::Where) {
    if (operands.size() != 3) return std::nullopt;
    return fold_cast(is_true(a) ? operands[1] : operands[2], result);
  }
  const DType operand = a.dtype;
  if (is_unary(op)) {
    if (operand.is_float()) {
      if (operand == dtypes::float64) return float_unary<double>(op, a.value.float_value, result);
      return float_unary<float>(op, static_cast<float>(a.value.float_value), result);
    }
    return int_unary(op, static_cast<uint64_t>(a.value.int_value), result);
  }
  if (!is_binary(op) || operands.size() != 2 || operands[1].dtype != operand) return std::nullopt;
  const TypedConst& b = operands[1];
  if (operand.is_float()) {
    if (operand == dtypes::float64)
      return float_binary<double>(op, a.value.float_value, b.value.float_value, result);
    // A comparison of half values compares them as stored (rounded to 16 bits).
    const bool stored = is_comparison(op);
    return float_binary<float>(
        op, static_cast<float>(stored ? stored_value(a) : a.value.float_value),
        static_cast<float>(stored ? stored_value(b) : b.value.float_value), result);
  }
  return int_binary(op, static_cast<uint64_t>(a.value.int_value),
                    static_cast<uint64_t>(b.value.int_value), operand, result);
}

}  // namespace kiln

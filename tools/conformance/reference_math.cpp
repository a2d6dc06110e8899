// References for the rest of elementwise math (kiln/tensor.h): the C library in double for the
// functions, and the rules kiln documents for floor division, remainder and shifts, written
// independently of its kernels.

#include <algorithm>
#include <cmath>

#include "tools/conformance/reference.h"

namespace kiln::conformance::ref {
namespace {

Scalar float_value(double value) {
  Scalar scalar;
  scalar.f = value;
  return scalar;
}

Scalar int_value(DType dtype, uint64_t value) {
  Scalar scalar;
  scalar.i = wrap(dtype, value);
  return scalar;
}

// CPython's float floor division (as PyTorch's floor_divide), and x / 0 where it raises.
double floor_divide(double a, double b) {
  if (b == 0) return a / b;
  const double mod = std::fmod(a, b);
  double quotient = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0)) quotient -= 1;
  if (quotient == 0) return std::copysign(0.0, a / b);
  double floored = std::floor(quotient);
  if (quotient - floored > 0.5) floored += 1;
  return floored;
}

// CPython's float %: the divisor's sign, a zero remainder included.
double remainder(double a, double b) {
  const double mod = std::fmod(a, b);
  if (mod == 0) return std::copysign(0.0, b);
  return (b < 0) != (mod < 0) ? mod + b : mod;
}

Scalar shift(DType dtype, int64_t value, int64_t amount, bool amount_signed, bool left) {
  const int width = 8 * dtype.itemsize();
  const bool negative_value = dtype.is_signed_int() && value < 0;
  const bool out_of_range = (amount_signed && amount < 0) ||
                            static_cast<uint64_t>(amount) >= static_cast<uint64_t>(width);
  if (out_of_range) return int_value(dtype, !left && negative_value ? ~uint64_t{0} : 0);
  const uint64_t bits = static_cast<uint64_t>(value);
  if (left) return int_value(dtype, bits << amount);
  if (dtype.is_signed_int()) return int_value(dtype, static_cast<uint64_t>(value >> amount));
  return int_value(dtype, bits >> amount);
}

double clamped(double x, double low, double high) {
  return std::isnan(x) ? x : std::min(std::max(x, low), high);
}

// Activations by their definitions (PyTorch's defaults).
std::optional<Scalar> activation_value(Unary op, double x) {
  constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
  constexpr double kSeluScale = 1.0507009873554804934193349852946;
  switch (op) {
    case Unary::LeakyRelu:
      return float_value(x > 0 ? x : 0.01 * x);
    case Unary::Elu:
      return float_value(x > 0 ? x : std::expm1(x));
    case Unary::Selu:
      return float_value(kSeluScale * (x > 0 ? x : kSeluAlpha * std::expm1(x)));
    case Unary::Celu:
      return float_value(x > 0 ? x : 2 * std::expm1(x / 2));
    case Unary::Softplus:
      return float_value(x > 20 ? x : std::log1p(std::exp(x)));
    case Unary::Softsign:
      return float_value(x / (1 + std::fabs(x)));
    case Unary::Mish:
      return float_value(x * std::tanh(x > 20 ? x : std::log1p(std::exp(x))));
    case Unary::Hardswish:
      return float_value(x * clamped(x + 3, 0, 6) / 6);
    case Unary::Hardsigmoid:
      return float_value(clamped(x + 3, 0, 6) / 6);
    case Unary::Hardtanh:
      return float_value(clamped(x, -1, 1));
    case Unary::Relu6:
      return float_value(clamped(x, 0, 6));
    case Unary::LogSigmoid:
      // log(1 / (1 + e^-x)), arranged so that e^-x cannot overflow.
      return float_value(x < 0 ? x - std::log1p(std::exp(x)) : -std::log1p(std::exp(-x)));
    case Unary::GeluTanh: {
      const double inner = std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x);
      return float_value(0.5 * x * (1 + std::tanh(inner)));
    }
    default:
      return std::nullopt;
  }
}

}  // namespace

std::optional<Scalar> math_unary_value(Unary op, DType dtype, const Scalar& in) {
  if (op == Unary::Square) {
    if (dtype.is_float()) return float_value(in.f * in.f);
    const auto x = static_cast<uint64_t>(in.i);
    return int_value(dtype, x * x);
  }
  const double x = in.f;
  switch (op) {
    case Unary::Asin:
      return float_value(std::asin(x));
    case Unary::Acos:
      return float_value(std::acos(x));
    case Unary::Atan:
      return float_value(std::atan(x));
    case Unary::Sinh:
      return float_value(std::sinh(x));
    case Unary::Cosh:
      return float_value(std::cosh(x));
    case Unary::Asinh:
      return float_value(std::asinh(x));
    case Unary::Acosh:
      return float_value(std::acosh(x));
    case Unary::Atanh:
      return float_value(std::atanh(x));
    case Unary::Log10:
      return float_value(std::log10(x));
    case Unary::Log1p:
      return float_value(std::log1p(x));
    case Unary::Expm1:
      return float_value(std::expm1(x));
    default:
      return activation_value(op, x);
  }
}

std::optional<Scalar> math_binary_value(Binary op, DType dtype, const Scalar& left,
                                        const Scalar& right) {
  if (dtype.is_float()) {
    const double a = left.f, b = right.f;
    switch (op) {
      case Binary::Atan2:
        return float_value(std::atan2(a, b));
      case Binary::Hypot:
        return float_value(std::hypot(a, b));
      case Binary::Copysign:
        return float_value(std::copysign(a, b));
      case Binary::FloorDivide:
        return float_value(floor_divide(a, b));
      case Binary::Remainder:
        return float_value(remainder(a, b));
      default:
        return std::nullopt;
    }
  }
  const int64_t a = left.i, b = right.i;
  switch (op) {
    case Binary::FloorDivide: {
      if (b == 0) return int_value(dtype, 0);
      if (dtype.is_unsigned())
        return int_value(dtype, static_cast<uint64_t>(a) / static_cast<uint64_t>(b));
      if (b == -1) return int_value(dtype, 0 - static_cast<uint64_t>(a));  // INT_MIN wraps
      const int64_t quotient = a / b, rest = a % b;
      return int_value(dtype, static_cast<uint64_t>(
                                  rest != 0 && (rest < 0) != (b < 0) ? quotient - 1 : quotient));
    }
    case Binary::Remainder: {
      if (b == 0 || (!dtype.is_unsigned() && b == -1)) return int_value(dtype, 0);
      if (dtype.is_unsigned())
        return int_value(dtype, static_cast<uint64_t>(a) % static_cast<uint64_t>(b));
      const int64_t rest = a % b;
      return int_value(dtype,
                       static_cast<uint64_t>(rest != 0 && (rest < 0) != (b < 0) ? rest + b : rest));
    }
    case Binary::ShiftLeft:
    case Binary::ShiftRight:
      return shift(dtype, a, b, !dtype.is_unsigned(), op == Binary::ShiftLeft);
    default:
      return std::nullopt;
  }
}

DType binary_compute_dtype(Binary op, DType a, DType b) {
  const DType promoted = promote(a, b);
  switch (op) {
    case Binary::Pow:
      return pow_dtype_for(promoted);
    case Binary::Atan2:
    case Binary::Hypot:
    case Binary::Copysign:
      return float_for(promoted);
    case Binary::FloorDivide:
    case Binary::Remainder:
      return promoted.is_bool() ? dtypes::int32 : promoted;
    case Binary::ShiftLeft:
    case Binary::ShiftRight:
      return a;
    default:
      return promoted;
  }
}

}  // namespace kiln::conformance::ref

// The rest of the elementwise math: the C library's inverse and hyperbolic functions, log10,
// log1p and expm1 (primitives every dialect renders), atan2, hypot and copysign; and the ops built
// from existing ones: square, lerp, Python's floor division and remainder, bitwise not, shifts
// and isclose.

#include <cmath>
#include <limits>

#include "runtime/tensor_internal.h"

namespace kiln {
namespace {

DType float_operands_dtype(const Tensor& a, const Tensor& b) {
  return float_dtype_for(promote_types(a.dtype(), b.dtype()));
}

// A float-only binary function of the promoted operands.
Tensor math_binary(Op op, const Tensor& a, const Tensor& b, const char* name) {
  const DType dtype = float_operands_dtype(a, b);
  return binary_op(op, a.cast(dtype), b.cast(dtype), name);
}

Tensor filled(const Tensor& like, double value) {
  return make_tensor(const_like(value, like.dtype(), node_of(like)), like.device());
}

void check_integer(const Tensor& tensor, const char* op, const char* role) {
  if (tensor.dtype().is_float() || tensor.dtype().is_bool())
    throw DTypeError(std::string("[") + op + "] " + role + " must be an integer tensor, got " +
                     describe(tensor) + "; valid: int8 to int64 and uint8 to uint64");
}

// The unsigned (or signed, for an arithmetic right shift) integer of at least 32 bits that a
// shift of `dtype` is computed in: C promotes narrower operands to int, where a shift can
// overflow.
DType shift_dtype(DType dtype, bool is_signed) {
  if (dtype.itemsize() == 8) return is_signed ? dtypes::int64 : dtypes::uint64;
  return is_signed ? dtypes::int32 : dtypes::uint32;
}

Tensor shift(const Tensor& a, const Tensor& bits, bool left) {
  const char* name = left ? "shift_left" : "shift_right";
  check_integer(a, name, "the shifted value");
  check_integer(bits, name, "the shift amount");
  check_same_device(a, bits, name);
  const DType dtype = a.dtype();
  const double width = 8.0 * dtype.itemsize();
  // uint64 amounts past 2^63 become negative here, out of range as well.
  const Tensor amount = bits.cast(dtypes::int64);
  const Tensor out_of_range = (amount < 0.0) | (amount >= width);
  const bool arithmetic = !left && dtype.is_signed_int();
  const DType compute = shift_dtype(dtype, arithmetic);
  const Tensor in_range = where(out_of_range, 0.0, amount).cast(compute);
  const Tensor shifted =
      binary_op(left ? Op::Shl : Op::Shr, a.cast(compute), in_range, name).cast(dtype);
  Tensor emptied = filled(shifted, 0);
  if (arithmetic) emptied = where(a < 0.0, filled(shifted, -1), emptied);
  return where(out_of_range, emptied, shifted);
}

Tensor shift_by(const Tensor& a, int64_t bits, bool left) {
  return shift(a, make_tensor(const_node(static_cast<double>(bits), dtypes::int64, {}), a.device()),
               left);
}

// bool operands of floor division and remainder compute in int32, as other arithmetic.
DType division_dtype(const Tensor& a, const Tensor& b) {
  const DType dtype = promote_types(a.dtype(), b.dtype());
  return dtype.is_bool() ? dtypes::int32 : dtype;
}

}  // namespace

Tensor Tensor::asin() const {
  return float_unary(Op::Asin, *this);
}
Tensor Tensor::acos() const {
  return float_unary(Op::Acos, *this);
}
Tensor Tensor::atan() const {
  return float_unary(Op::Atan, *this);
}
Tensor Tensor::sinh() const {
  return float_unary(Op::Sinh, *this);
}
Tensor Tensor::cosh() const {
  return float_unary(Op::Cosh, *this);
}
Tensor Tensor::asinh() const {
  return float_unary(Op::Asinh, *this);
}
Tensor Tensor::acosh() const {
  return float_unary(Op::Acosh, *this);
}
Tensor Tensor::atanh() const {
  return float_unary(Op::Atanh, *this);
}
Tensor Tensor::log10() const {
  return float_unary(Op::Log10, *this);
}
Tensor Tensor::log1p() const {
  return float_unary(Op::Log1p, *this);
}
Tensor Tensor::expm1() const {
  return float_unary(Op::Expm1, *this);
}

Tensor Tensor::square() const {
  const Tensor x = dtype().is_bool() ? cast(dtypes::int32) : *this;
  return x * x;
}

Tensor atan2(const Tensor& y, const Tensor& x) {
  return math_binary(Op::Atan2, y, x, "atan2");
}
Tensor hypot(const Tensor& a, const Tensor& b) {
  return math_binary(Op::Hypot, a, b, "hypot");
}
Tensor copysign(const Tensor& a, const Tensor& b) {
  return math_binary(Op::Copysign, a, b, "copysign");
}

Tensor lerp(const Tensor& a, const Tensor& b, const Tensor& weight) {
  check_same_device(a, weight, "lerp");
  const DType dtype =
      float_dtype_for(promote_types(promote_types(a.dtype(), b.dtype()), weight.dtype()));
  const Tensor start = a.cast(dtype), end = b.cast(dtype), w = weight.cast(dtype);
  const Tensor difference = end - start;
  // From the nearer end: exact at both (PyTorch's formula).
  return where(w.abs() < 0.5, start + w * difference, end - difference * (1.0 - w));
}

Tensor lerp(const Tensor& a, const Tensor& b, double weight) {
  check_same_device(a, b, "lerp");
  const DType dtype = float_operands_dtype(a, b);
  const Tensor start = a.cast(dtype), end = b.cast(dtype);
  const Tensor difference = end - start;
  // The weight stays a host scalar (float32 for the 16-bit floats, as PyTorch keeps it).
  if (std::fabs(weight) < 0.5) return start + difference * weight;
  return end - difference * (1.0 - weight);
}

Tensor floor_divide(const Tensor& a, const Tensor& b) {
  const DType dtype = division_dtype(a, b);
  const Tensor x = a.cast(dtype), y = b.cast(dtype);
  if (!dtype.is_float()) {
    const Tensor quotient = x / y;  // toward zero; 0 for a divisor of 0
    if (dtype.is_unsigned()) return quotient;
    const Tensor rest = x % y;
    const Tensor below = (rest != 0.0) & ((rest < 0.0) ^ (y < 0.0));
    return quotient - below.cast(dtype);
  }
  // PyTorch's (and CPython's) floor division: from the exact fmod, not floor(x / y), whose
  // rounded quotient can land on the wrong side of an integer.
  const Tensor rest = x % y;
  Tensor quotient = (x - rest) / y;
  quotient = where((rest != 0.0) & ((y < 0.0) ^ (rest < 0.0)), quotient - 1.0, quotient);
  Tensor floored = quotient.floor();
  floored = where(quotient - floored > 0.5, floored + 1.0, floored);
  const Tensor ratio = x / y;
  floored = where(quotient != 0.0, floored, copysign(filled(ratio, 0), ratio));
  return where(y == 0.0, ratio, floored);
}

Tensor remainder(const Tensor& a, const Tensor& b) {
  const DType dtype = division_dtype(a, b);
  const Tensor x = a.cast(dtype), y = b.cast(dtype);
  const Tensor rest = x % y;
  if (dtype.is_unsigned()) return rest;
  const Tensor shifted = where((rest != 0.0) & ((rest < 0.0) ^ (y < 0.0)), rest + y, rest);
  if (!dtype.is_float()) return shifted;
  return where(rest == 0.0, copysign(filled(rest, 0), y), shifted);
}

Tensor operator~(const Tensor& a) {
  if (a.dtype().is_bool()) return a.logical_not();
  if (a.dtype().is_float())
    throw DTypeError("[bitwise_not] needs an integer or bool tensor, got " + describe(a));
  return a ^ filled(a, -1);  // every bit set (-1 wraps to the unsigned maximum)
}

Tensor operator<<(const Tensor& a, const Tensor& bits) {
  return shift(a, bits, true);
}
Tensor operator>>(const Tensor& a, const Tensor& bits) {
  return shift(a, bits, false);
}
Tensor operator<<(const Tensor& a, int64_t bits) {
  return shift_by(a, bits, true);
}
Tensor operator>>(const Tensor& a, int64_t bits) {
  return shift_by(a, bits, false);
}

Tensor isclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  if (!(rtol >= 0) || !(atol >= 0))
    throw ValueError("[isclose] rtol and atol must be zero or more, got rtol=" +
                     std::to_string(rtol) + ", atol=" + std::to_string(atol));
  check_same_device(a, b, "isclose");
  // 16-bit floats compare in float32, where the default atol (1e-8) is not rounded to 0.
  DType dtype = float_operands_dtype(a, b);
  if (dtype.is_half()) dtype = dtypes::float32;
  const Tensor x = a.cast(dtype), y = b.cast(dtype);
  const Tensor within = (x - y).abs() <= (y.abs() * rtol + atol);
  Tensor close = where(x.isfinite() & y.isfinite(), within, x == y);
  // Equal integers past float32's 2^24 are close even with zero tolerances.
  const DType promoted = promote_types(a.dtype(), b.dtype());
  if (!promoted.is_float()) close = close | (a.cast(promoted) == b.cast(promoted));
  if (equal_nan) close = close | (x.isnan() & y.isnan());
  return close;
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  return isclose(a, b, rtol, atol, equal_nan).all().item<bool>();
}

}  // namespace kiln

// Elementwise Tensor ops: arithmetic, comparisons, math functions, where and cast.

#include <cmath>
#include <cstdio>
#include <limits>

#include "runtime/autograd.h"
#include "runtime/tensor_internal.h"

namespace kiln {
namespace {

bool is_arithmetic(Op op) {
  return op == Op::Add || op == Op::Sub || op == Op::Mul || op == Op::Div || op == Op::Mod;
}

// `operands` describes them for the error: called only when there is one, since building the
// text on every op would be a good part of a small graph's host time.
template <typename Describe>
void check_operand_dtype(Op op, DType dtype, const char* name, const Describe& operands) {
  if (op == Op::Sub && dtype.is_bool()) {
    throw DTypeError(std::string("[") + name + "] bool tensors cannot be subtracted (" +
                     operands() + "); use ^ for logical xor or cast to an integer dtype");
  }
  if ((op == Op::And || op == Op::Or || op == Op::Xor) && dtype.is_float()) {
    throw DTypeError(std::string("[") + name + "] bitwise ops need integer or bool operands, got " +
                     operands());
  }
}

Tensor unary(Op op, const Tensor& tensor, DType dtype) {
  UOpRef src = cast_node(node_of(tensor), dtype);
  Tensor result = make_tensor(alu_node(op, dtype, {src}), tensor.device());
  return recorded(
      std::move(result), op_name(op),
      [op, tensor, dtype](const Tensor& gradient) {
        return std::vector<Tensor>{
            unary_gradient(op, tensor.cast(dtype), gradient).cast(tensor.dtype())};
      },
      tensor);
}

Tensor full_like(const Tensor& tensor, double value, DType dtype) {
  return make_tensor(const_like(value, dtype, node_of(tensor)), tensor.device());
}

// The broadcast of two operands' shapes; where one is symbolic, a failure also shows the shapes
// as given ("(n=3, 4)").
Shape broadcast_operand_shapes(const Tensor& a, const Tensor& b, const char* op) {
  try {
    return broadcast_shapes(a.shape(), b.shape(), op);
  } catch (const ShapeError& error) {
    if (!node_of(a)->is_symbolic() && !node_of(b)->is_symbolic()) throw;
    throw ShapeError(std::string(error.what()) + "; as given: " + a.shape_string() + " and " +
                     b.shape_string());
  }
}

// Broadcasts each operand to `shape`, symbolically where an operand is symbolic.
std::vector<UOpRef> broadcast_operands(const Shape& shape, const std::vector<UOpRef>& operands,
                                       const char* op) {
  const std::shared_ptr<const SymShape> symbolic = broadcast_sym_shape(shape, operands, op);
  std::vector<UOpRef> broadcast;
  for (const UOpRef& operand : operands)
    broadcast.push_back(symbolic ? broadcast_node(operand, *symbolic)
                                 : broadcast_node(operand, shape));
  return broadcast;
}

}  // namespace

Tensor float_unary(Op op, const Tensor& tensor) {
  return unary(op, tensor, float_dtype_for(tensor.dtype()));
}

Tensor binary_op(Op op, const Tensor& a, const Tensor& b, const char* name) {
  check_same_device(a, b, name);
  DType dtype = promote_types(a.dtype(), b.dtype());
  if (op == Op::Pow && dtype.is_bool()) dtype = dtypes::int32;  // integers raise exactly
  check_operand_dtype(op, dtype, name, [&] { return describe(a) + " and " + describe(b); });
  const Shape shape = broadcast_operand_shapes(a, b, name);
  std::vector<UOpRef> operands =
      broadcast_operands(shape, {cast_node(node_of(a), dtype), cast_node(node_of(b), dtype)}, name);
  const DType result = is_comparison(op) ? dtypes::bool_ : dtype;
  return recorded(
      make_tensor(alu_node(op, result, std::move(operands)), a.device()), name,
      [op, a, b, dtype](const Tensor& gradient) {
        const auto [to_a, to_b] = binary_gradient(op, a.cast(dtype), b.cast(dtype), gradient);
        return std::vector<Tensor>{gradient_for(a, to_a), gradient_for(b, to_b)};
      },
      a, b);
}

DType scalar_result_dtype(DType tensor_dtype, double scalar) {
  const bool integral = std::isfinite(scalar) && std::trunc(scalar) == scalar;
  return !tensor_dtype.is_float() && !integral ? dtypes::float32 : tensor_dtype;
}

Tensor scalar_op(Op op, const Tensor& a, double scalar, bool scalar_first, const char* name) {
  DType dtype = scalar_result_dtype(a.dtype(), scalar);
  if (dtype.is_bool() && (is_arithmetic(op) || op == Op::Pow)) dtype = dtypes::int32;
  check_operand_dtype(op, dtype, name, [&] { return describe(a) + " and a scalar"; });
  UOpRef tensor = cast_node(node_of(a), dtype);
  UOpRef constant = const_like(scalar, dtype, tensor);
  const DType result = is_comparison(op) ? dtypes::bool_ : dtype;
  std::vector<UOpRef> srcs =
      scalar_first ? std::vector<UOpRef>{constant, tensor} : std::vector<UOpRef>{tensor, constant};
  return recorded(
      make_tensor(alu_node(op, result, std::move(srcs)), a.device()), name,
      [op, a, scalar, scalar_first, dtype](const Tensor& gradient) {
        const Tensor x = a.cast(dtype);
        const Tensor value = Tensor::full(Shape{}, scalar, dtype, a.device());
        const auto [first, second] = scalar_first ? binary_gradient(op, value, x, gradient)
                                                  : binary_gradient(op, x, value, gradient);
        return std::vector<Tensor>{gradient_for(a, scalar_first ? second : first)};
      },
      a);
}

Tensor operator+(const Tensor& a, const Tensor& b) {
  return binary_op(Op::Add, a, b, "add");
}
Tensor operator-(const Tensor& a, const Tensor& b) {
  return binary_op(Op::Sub, a, b, "sub");
}
Tensor operator*(const Tensor& a, const Tensor& b) {
  return binary_op(Op::Mul, a, b, "mul");
}
Tensor operator/(const Tensor& a, const Tensor& b) {
  return binary_op(Op::Div, a, b, "div");
}
Tensor operator%(const Tensor& a, const Tensor& b) {
  return binary_op(Op::Mod, a, b, "mod");
}
Tensor operator+(const Tensor& a, double b) {
  return scalar_op(Op::Add, a, b, false, "add");
}
Tensor operator-(const Tensor& a, double b) {
  return scalar_op(Op::Sub, a, b, false, "sub");
}
Tensor operator*(const Tensor& a, double b) {
  return scalar_op(Op::Mul, a, b, false, "mul");
}
Tensor operator/(const Tensor& a, double b) {
  return scalar_op(Op::Div, a, b, false, "div");
}
Tensor operator%(const Tensor& a, double b) {
  return scalar_op(Op::Mod, a, b, false, "mod");
}
Tensor operator+(double a, const Tensor& b) {
  return scalar_op(Op::Add, b, a, true, "add");
}
Tensor operator-(double a, const Tensor& b) {
  return scalar_op(Op::Sub, b, a, true, "sub");
}
Tensor operator*(double a, const Tensor& b) {
  return scalar_op(Op::Mul, b, a, true, "mul");
}
Tensor operator/(double a, const Tensor& b) {
  return scalar_op(Op::Div, b, a, true, "div");
}
// The temporaries among an operator's operands give up their graph once `result` holds it.
template <typename... Temporaries>
Tensor releasing(Tensor result, Temporaries&&... temporaries) {
  (static_cast<void>(Tensor(std::move(temporaries))), ...);
  return result;
}

Tensor operator+(Tensor&& a, const Tensor& b) {
  return releasing(a + b, std::move(a));
}
Tensor operator+(const Tensor& a, Tensor&& b) {
  return releasing(a + b, std::move(b));
}
Tensor operator+(Tensor&& a, Tensor&& b) {
  return releasing(a + b, std::move(a), std::move(b));
}
Tensor operator+(Tensor&& a, double b) {
  return releasing(a + b, std::move(a));
}
Tensor operator+(double a, Tensor&& b) {
  return releasing(a + b, std::move(b));
}
Tensor operator-(Tensor&& a, const Tensor& b) {
  return releasing(a - b, std::move(a));
}
Tensor operator-(const Tensor& a, Tensor&& b) {
  return releasing(a - b, std::move(b));
}
Tensor operator-(Tensor&& a, Tensor&& b) {
  return releasing(a - b, std::move(a), std::move(b));
}
Tensor operator-(Tensor&& a, double b) {
  return releasing(a - b, std::move(a));
}
Tensor operator-(double a, Tensor&& b) {
  return releasing(a - b, std::move(b));
}
Tensor operator*(Tensor&& a, const Tensor& b) {
  return releasing(a * b, std::move(a));
}
Tensor operator*(const Tensor& a, Tensor&& b) {
  return releasing(a * b, std::move(b));
}
Tensor operator*(Tensor&& a, Tensor&& b) {
  return releasing(a * b, std::move(a), std::move(b));
}
Tensor operator*(Tensor&& a, double b) {
  return releasing(a * b, std::move(a));
}
Tensor operator*(double a, Tensor&& b) {
  return releasing(a * b, std::move(b));
}
Tensor operator/(Tensor&& a, const Tensor& b) {
  return releasing(a / b, std::move(a));
}
Tensor operator/(const Tensor& a, Tensor&& b) {
  return releasing(a / b, std::move(b));
}
Tensor operator/(Tensor&& a, Tensor&& b) {
  return releasing(a / b, std::move(a), std::move(b));
}
Tensor operator/(Tensor&& a, double b) {
  return releasing(a / b, std::move(a));
}
Tensor operator/(double a, Tensor&& b) {
  return releasing(a / b, std::move(b));
}
Tensor operator<(const Tensor& a, const Tensor& b) {
  return binary_op(Op::CmpLt, a, b, "lt");
}
Tensor operator<=(const Tensor& a, const Tensor& b) {
  return binary_op(Op::CmpLe, a, b, "le");
}
Tensor operator>(const Tensor& a, const Tensor& b) {
  return binary_op(Op::CmpGt, a, b, "gt");
}
Tensor operator>=(const Tensor& a, const Tensor& b) {
  return binary_op(Op::CmpGe, a, b, "ge");
}
Tensor operator==(const Tensor& a, const Tensor& b) {
  return binary_op(Op::CmpEq, a, b, "eq");
}
Tensor operator!=(const Tensor& a, const Tensor& b) {
  return binary_op(Op::CmpNe, a, b, "ne");
}
Tensor operator<(const Tensor& a, double b) {
  return scalar_op(Op::CmpLt, a, b, false, "lt");
}
Tensor operator<=(const Tensor& a, double b) {
  return scalar_op(Op::CmpLe, a, b, false, "le");
}
Tensor operator>(const Tensor& a, double b) {
  return scalar_op(Op::CmpGt, a, b, false, "gt");
}
Tensor operator>=(const Tensor& a, double b) {
  return scalar_op(Op::CmpGe, a, b, false, "ge");
}
Tensor operator==(const Tensor& a, double b) {
  return scalar_op(Op::CmpEq, a, b, false, "eq");
}
Tensor operator!=(const Tensor& a, double b) {
  return scalar_op(Op::CmpNe, a, b, false, "ne");
}
Tensor operator&(const Tensor& a, const Tensor& b) {
  return binary_op(Op::And, a, b, "bitwise_and");
}
Tensor operator|(const Tensor& a, const Tensor& b) {
  return binary_op(Op::Or, a, b, "bitwise_or");
}
Tensor operator^(const Tensor& a, const Tensor& b) {
  return binary_op(Op::Xor, a, b, "bitwise_xor");
}

Tensor maximum(const Tensor& a, const Tensor& b) {
  return binary_op(Op::Max, a, b, "maximum");
}
Tensor minimum(const Tensor& a, const Tensor& b) {
  return binary_op(Op::Min, a, b, "minimum");
}
Tensor pow(const Tensor& base, const Tensor& exponent) {
  return binary_op(Op::Pow, base, exponent, "pow");
}

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  if (!condition.dtype().is_bool()) {
    throw DTypeError("[where] condition must be bool, got " + describe(condition) +
                     "; compare it (e.g. x != 0) or cast it to bool");
  }
  check_same_device(condition, a, "where");
  check_same_device(condition, b, "where");
  const Shape shape =
      broadcast_shapes(broadcast_shapes(condition.shape(), a.shape(), "where"), b.shape(), "where");
  const DType dtype = promote_types(a.dtype(), b.dtype());
  std::vector<UOpRef> operands = broadcast_operands(
      shape, {node_of(condition), cast_node(node_of(a), dtype), cast_node(node_of(b), dtype)},
      "where");
  return recorded(
      make_tensor(UOp::make(Op::Where, dtype, std::move(operands), {}, shape), condition.device()),
      "where",
      [condition, a, b](const Tensor& gradient) {
        return std::vector<Tensor>{gradient_for(a, where(condition, gradient, 0.0)),
                                   gradient_for(b, where(condition, 0.0, gradient))};
      },
      a, b);
}

Tensor where(const Tensor& condition, double a, const Tensor& b) {
  const DType dtype = scalar_result_dtype(b.dtype(), a);
  return where(condition, make_tensor(const_node(a, dtype, {}), b.device()), b.cast(dtype));
}

Tensor where(const Tensor& condition, const Tensor& a, double b) {
  const DType dtype = scalar_result_dtype(a.dtype(), b);
  return where(condition, a.cast(dtype), make_tensor(const_node(b, dtype, {}), a.device()));
}

Tensor Tensor::operator-() const {
  if (dtype().is_bool())
    throw DTypeError("[neg] cannot negate a bool tensor (" + describe(*this) +
                     "); use logical_not");
  return unary(Op::Neg, *this, dtype());
}

Tensor Tensor::exp() const {
  return float_unary(Op::Exp, *this);
}
Tensor Tensor::log() const {
  return float_unary(Op::Log, *this);
}
Tensor Tensor::exp2() const {
  return float_unary(Op::Exp2, *this);
}
Tensor Tensor::log2() const {
  return float_unary(Op::Log2, *this);
}
Tensor Tensor::sqrt() const {
  return float_unary(Op::Sqrt, *this);
}
Tensor Tensor::rsqrt() const {
  return sqrt().reciprocal();
}
Tensor Tensor::sin() const {
  return float_unary(Op::Sin, *this);
}
Tensor Tensor::cos() const {
  return float_unary(Op::Cos, *this);
}
Tensor Tensor::tan() const {
  return float_unary(Op::Tan, *this);
}
Tensor Tensor::tanh() const {
  return float_unary(Op::Tanh, *this);
}
Tensor Tensor::erf() const {
  return float_unary(Op::Erf, *this);
}
Tensor Tensor::reciprocal() const {
  return float_unary(Op::Recip, *this);
}

Tensor Tensor::abs() const {
  if (dtype().is_bool() || dtype().is_unsigned()) return *this;
  return unary(Op::Abs, *this, dtype());
}

Tensor Tensor::sign() const {
  if (dtype().is_bool()) return *this;
  const Tensor zero = full_like(*this, 0, dtype());
  // x * 0 keeps NaN (and the sign of zero) where x is neither positive nor negative.
  const Tensor otherwise = where(*this < 0, full_like(*this, -1, dtype()), *this * 0.0);
  return where(*this > 0, full_like(*this, 1, dtype()), dtype().is_unsigned() ? zero : otherwise);
}

Tensor Tensor::relu() const {
  if (dtype().is_bool() || dtype().is_unsigned()) return *this;
  Tensor result;
  {
    NoGradGuard recorded_below;  // 0 at 0, as PyTorch's, not maximum's shared tie
    result = maximum(*this, full_like(*this, 0, dtype()));
  }
  const Tensor& x = *this;
  return recorded(
      std::move(result), "relu",
      [x](const Tensor& gradient) { return std::vector<Tensor>{where(x > 0.0, gradient, 0.0)}; },
      x);
}

Tensor Tensor::sigmoid() const {
  const Tensor x = cast(float_dtype_for(dtype()));
  return ((-x).exp() + 1.0).reciprocal();
}

Tensor Tensor::gelu() const {
  const Tensor x = cast(float_dtype_for(dtype()));
  return x * 0.5 * ((x * M_SQRT1_2).erf() + 1.0);
}

Tensor Tensor::silu() const {
  const Tensor x = cast(float_dtype_for(dtype()));
  return x * x.sigmoid();
}

Tensor Tensor::floor() const {
  return dtype().is_float() ? unary(Op::Floor, *this, dtype()) : *this;
}
Tensor Tensor::ceil() const {
  return dtype().is_float() ? unary(Op::Ceil, *this, dtype()) : *this;
}
Tensor Tensor::round() const {
  return dtype().is_float() ? unary(Op::Round, *this, dtype()) : *this;
}
Tensor Tensor::trunc() const {
  return dtype().is_float() ? unary(Op::Trunc, *this, dtype()) : *this;
}

Tensor Tensor::logical_not() const {
  if (dtype().is_bool()) return unary(Op::Not, *this, dtypes::bool_);
  return *this == 0.0;
}

Tensor Tensor::isnan() const {
  if (!dtype().is_float()) return full_like(*this, 0, dtypes::bool_);
  return *this != *this;
}

Tensor Tensor::isinf() const {
  if (!dtype().is_float()) return full_like(*this, 0, dtypes::bool_);
  return abs() == std::numeric_limits<double>::infinity();
}

Tensor Tensor::isfinite() const {
  if (!dtype().is_float()) return full_like(*this, 1, dtypes::bool_);
  // x - x is 0 for every finite x and NaN for infinities and NaN.
  return (*this - *this) == 0.0;
}

Tensor Tensor::clamp(double low, double high) const {
  if (dtype().is_bool())
    throw DTypeError("[clamp] needs a number tensor, got " + describe(*this) +
                     "; cast it first, e.g. x.cast(dtypes::int32).clamp(low, high)");
  // Whole bounds (or infinities) keep an integer tensor's dtype; others make it float32, as the
  // host-scalar rules do.
  auto whole = [](double bound) { return std::isinf(bound) || bound == std::floor(bound); };
  if (dtype().is_int() && !(whole(low) && whole(high)))
    return cast(dtypes::float32).clamp(low, high);
  if (dtype().is_int()) {
    // In the tensor's own dtype, where a bound would wrap: a bound past the end of the range on
    // its own side leaves that side open; one past the other end has no value to give. `past`
    // is the first whole number above the range, exact in a double (2^63 for int64: its largest
    // value, 2^63 - 1, is not).
    const int bits = 8 * dtype().itemsize();
    const double past = std::ldexp(1.0, dtype().is_unsigned() ? bits : bits - 1);
    const double least = dtype().is_unsigned() ? 0.0 : -past;
    if (low >= past || high < least) {
      auto text = [](double number) {
        char buffer[32];
        std::snprintf(buffer, sizeof(buffer), "%.17g", number);
        return std::string(buffer);
      };
      throw DTypeError("[clamp] bounds (" + text(low) + ", " + text(high) + ") of " +
                       describe(*this) + " leave no value of " + dtype().name() + " (from " +
                       text(least) + " to below " + text(past) +
                       "); cast the tensor to a wider dtype first");
    }
    Tensor result = *this;
    if (low > least) result = where(result < low, low, result);
    if (high < past - 1) result = where(result > high, high, result);
    return result;
  }
  // where(x < low, low, x) is max(x, low) with NaN kept; its dtype is the scalar rules'.
  const Tensor raised = where(*this < low, low, *this);
  if (std::isnan(low) || std::isnan(high))
    return full_like(raised, std::numeric_limits<double>::quiet_NaN(), raised.dtype());
  return where(raised > high, high, raised);
}

Tensor Tensor::pow(const Tensor& exponent) const {
  return kiln::pow(*this, exponent);
}
Tensor Tensor::pow(double exponent) const {
  return scalar_op(Op::Pow, *this, exponent, false, "pow");
}

Tensor Tensor::cast(DType dtype) const {
  if (dtype == this->dtype()) return *this;
  const Tensor& x = *this;
  return recorded(
      make_tensor(cast_node(node_of(*this), dtype), device()), "cast",
      [x](const Tensor& gradient) { return std::vector<Tensor>{gradient.cast(x.dtype())}; }, x);
}

Tensor Tensor::bitcast(DType dtype) const {
  const DType from = this->dtype();
  if (from.is_bool() || dtype.is_bool() || from.itemsize() != dtype.itemsize())
    throw DTypeError(std::string("[bitcast] ") + describe(*this) + " cannot be read as " +
                         dtype.name() + ": bitcast needs two non-bool dtypes of one size (" +
                         std::to_string(from.itemsize()) + " bytes here, " +
                         std::to_string(dtype.itemsize()) + " asked)",
                     dtype);
  if (dtype == from) return *this;
  const UOpRef node = node_of(*this);
  return make_tensor(UOp::make(Op::Bitcast, dtype, {node}, {}, node->shape()), device());
}

}  // namespace kiln

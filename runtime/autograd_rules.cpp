// The gradients of the elementwise ops (runtime/autograd.h), from public ops at the operands:
// what each derivative is where it exists; at a kink (abs at 0, maximum of two equal values) the
// value PyTorch gives.

#include <cmath>

#include "runtime/autograd.h"
#include "runtime/tensor_internal.h"

namespace kiln {
namespace {

constexpr double kLn2 = 0.69314718055994530942;
constexpr double kLn10 = 2.30258509299404568402;
constexpr double kTwoOverSqrtPi = 1.12837916709551257390;

Tensor zeros_of(const Tensor& like) {
  return Tensor::zeros(like.shape(), like.dtype(), like.device());
}

}  // namespace

Tensor unary_gradient(Op op, const Tensor& x, const Tensor& gradient) {
  switch (op) {
    case Op::Neg:
      return -gradient;
    case Op::Abs:
      return gradient * x.sign();
    case Op::Recip: {
      const Tensor inverse = x.reciprocal();
      return -gradient * inverse * inverse;
    }
    case Op::Sqrt:
      return gradient * 0.5 / x.sqrt();
    case Op::Exp:
      return gradient * x.exp();
    case Op::Exp2:
      return gradient * x.exp2() * kLn2;
    case Op::Log:
      return gradient / x;
    case Op::Log2:
      return gradient / (x * kLn2);
    case Op::Log10:
      return gradient / (x * kLn10);
    case Op::Log1p:
      return gradient / (x + 1.0);
    case Op::Expm1:
      return gradient * x.exp();
    case Op::Sin:
      return gradient * x.cos();
    case Op::Cos:
      return -gradient * x.sin();
    case Op::Tan: {
      const Tensor cosine = x.cos();
      return gradient / (cosine * cosine);
    }
    case Op::Tanh: {
      const Tensor value = x.tanh();
      return gradient * (1.0 - value * value);
    }
    case Op::Erf:
      return gradient * (-(x * x)).exp() * kTwoOverSqrtPi;
    case Op::Asin:
      return gradient / (1.0 - x * x).sqrt();
    case Op::Acos:
      return -gradient / (1.0 - x * x).sqrt();
    case Op::Atan:
      return gradient / (x * x + 1.0);
    case Op::Sinh:
      return gradient * x.cosh();
    case Op::Cosh:
      return gradient * x.sinh();
    case Op::Asinh:
      return gradient / (x * x + 1.0).sqrt();
    case Op::Acosh:
      return gradient / (x * x - 1.0).sqrt();
    case Op::Atanh:
      return gradient / (1.0 - x * x);
    // Steps: zero wherever the derivative exists.
    case Op::Floor:
    case Op::Ceil:
    case Op::Round:
    case Op::Trunc:
      return zeros_of(gradient);
    default:
      throw InternalError(std::string("[backward] no gradient rule for ") + op_name(op));
  }
}

std::pair<Tensor, Tensor> binary_gradient(Op op, const Tensor& a, const Tensor& b,
                                          const Tensor& gradient) {
  switch (op) {
    case Op::Add:
      return {gradient, gradient};
    case Op::Sub:
      return {gradient, -gradient};
    case Op::Mul:
      return {gradient * b, gradient * a};
    case Op::Div:
      return {gradient / b, -gradient * a / (b * b)};
    case Op::Max:
    case Op::Min: {
      // The larger (smaller) operand takes the gradient; equal operands share it.
      const Tensor a_wins = op == Op::Max ? a > b : a < b;
      const Tensor half = gradient * 0.5;
      const Tensor to_a = where(a_wins, gradient, where(a == b, half, 0.0));
      const Tensor to_b = where(a_wins, 0.0, where(a == b, half, gradient));
      return {to_a, to_b};
    }
    case Op::Pow: {
      const Tensor power = kiln::pow(a, b);
      const Tensor to_a = where(b == 0.0, 0.0, gradient * b * kiln::pow(a, b - 1.0));
      // 0^b for b >= 0 has no slope in b that the limit would not make 0 (PyTorch's choice).
      const Tensor to_b = where((a == 0.0) & (b >= 0.0), 0.0, gradient * power * a.log());
      return {to_a, to_b};
    }
    case Op::Atan2: {
      const Tensor norm = a * a + b * b;
      return {gradient * b / norm, -gradient * a / norm};
    }
    case Op::Hypot: {
      const Tensor length = kiln::hypot(a, b);
      return {gradient * a / length, gradient * b / length};
    }
    case Op::Copysign: {
      // |a| with b's sign: the slope in a is sign(a) * sign(b), 0 at a = 0 (as PyTorch).
      const Tensor result = kiln::copysign(a, b);
      const Tensor slope = where(a == 0.0, 0.0, result / a);
      return {gradient * slope, zeros_of(gradient)};
    }
    case Op::Mod:
      // fmod(a, b) = a - trunc(a / b) * b.
      return {gradient, -gradient * (a / b).trunc()};
    default:
      throw InternalError(std::string("[backward] no gradient rule for ") + op_name(op));
  }
}

}  // namespace kiln

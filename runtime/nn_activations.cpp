// Activation functions (kiln/activations.h), each a few elementwise ops that fuse.

#include <kiln/activations.h>

#include <cmath>
#include <string>

#include "runtime/tensor_internal.h"

namespace kiln::nn {
namespace {

Tensor as_float(const Tensor& x) {
  return x.cast(float_dtype_for(x.dtype()));
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

// alpha (e^(x / alpha) - 1) below 0 and x above: elu's and celu's shape.
Tensor exponential_linear(const Tensor& x, double alpha, double divisor) {
  const Tensor negative = (divisor == 1.0 ? x : x / divisor).expm1() * alpha;
  return where(x > 0.0, x, negative);
}

}  // namespace

Tensor leaky_relu(const Tensor& x, double negative_slope) {
  const Tensor value = as_float(x);
  return where(value > 0.0, value, value * negative_slope);
}

Tensor elu(const Tensor& x, double alpha) {
  return exponential_linear(as_float(x), alpha, 1.0);
}

Tensor selu(const Tensor& x) {
  constexpr double kAlpha = 1.6732632423543772848170429916717;
  constexpr double kScale = 1.0507009873554804934193349852946;
  return exponential_linear(as_float(x), kAlpha, 1.0) * kScale;
}

Tensor celu(const Tensor& x, double alpha) {
  if (alpha == 0.0)
    throw ValueError("[celu] alpha must not be 0 (it divides x), got 0 for " + describe(x));
  return exponential_linear(as_float(x), alpha, alpha);
}

Tensor softplus(const Tensor& x, double beta, double threshold) {
  if (beta == 0.0)
    throw ValueError("[softplus] beta must not be 0 (it divides the result), got 0 for " +
                     describe(x));
  const Tensor value = as_float(x);
  const Tensor scaled = value * beta;
  // log(1 + e^s) = max(s, 0) + log1p(e^-|s|): no overflow for large s, full accuracy for small
  // (a select, not maximum(s, 0 * s): 0 * -inf is NaN).
  const Tensor smooth = (where(scaled > 0.0, scaled, 0.0) + (-scaled.abs()).exp().log1p()) / beta;
  return where(scaled > threshold, value, smooth);
}

Tensor softsign(const Tensor& x) {
  const Tensor value = as_float(x);
  return value / (value.abs() + 1.0);
}

Tensor mish(const Tensor& x) {
  const Tensor value = as_float(x);
  return value * softplus(value).tanh();
}

Tensor hardsigmoid(const Tensor& x) {
  return relu6(as_float(x) + 3.0) / 6.0;
}

Tensor hardswish(const Tensor& x) {
  const Tensor value = as_float(x);
  return value * relu6(value + 3.0) / 6.0;
}

Tensor hardtanh(const Tensor& x, double min_value, double max_value) {
  if (!(min_value <= max_value))
    throw ValueError("[hardtanh] min_value (" + number(min_value) +
                     ") must not exceed max_value (" + number(max_value) + ") for " + describe(x));
  return as_float(x).clamp(min_value, max_value);
}

Tensor relu6(const Tensor& x) {
  return hardtanh(x, 0.0, 6.0);
}

Tensor logsigmoid(const Tensor& x) {
  const Tensor value = as_float(x);
  // min(x, 0) - log1p(e^-|x|).
  return where(value < 0.0, value, 0.0) - (-value.abs()).exp().log1p();
}

Tensor gelu_tanh(const Tensor& x) {
  const Tensor value = as_float(x);
  constexpr double kSqrt2OverPi = 0.79788456080286535587989211986876;
  const Tensor inner = (value + value * value * value * 0.044715) * kSqrt2OverPi;
  return value * 0.5 * (inner.tanh() + 1.0);
}

}  // namespace kiln::nn

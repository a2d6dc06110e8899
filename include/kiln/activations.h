#pragma once
// Activation functions beyond Tensor's relu, sigmoid, silu, tanh and gelu, as PyTorch's
// torch.nn.functional defines them (same defaults). Each is elementwise and built from kiln's
// primitives, so it fuses into the kernel around it; integer and bool inputs compute in float32,
// float inputs in their own dtype. The forms avoid cancellation and overflow: elu, selu and celu
// use expm1, softplus and logsigmoid log1p of exp(-|x|).

#include <kiln/tensor.h>

namespace kiln::nn {

// x for x > 0, else negative_slope * x.
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
// x for x > 0, else alpha * (exp(x) - 1).
Tensor elu(const Tensor& x, double alpha = 1.0);
// scale * elu(x, alpha) with SELU's fixed alpha (1.6732632...) and scale (1.0507009...).
Tensor selu(const Tensor& x);
// x for x > 0, else alpha * (exp(x / alpha) - 1); alpha != 0 (else a ValueError).
Tensor celu(const Tensor& x, double alpha = 1.0);
// log(1 + exp(beta x)) / beta, and x itself where beta x > threshold; beta != 0.
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);
// x / (1 + |x|).
Tensor softsign(const Tensor& x);
// x * tanh(softplus(x)).
Tensor mish(const Tensor& x);
// x * relu6(x + 3) / 6.
Tensor hardswish(const Tensor& x);
// relu6(x + 3) / 6.
Tensor hardsigmoid(const Tensor& x);
// x clamped to [min_value, max_value] (min_value <= max_value, else a ValueError); NaN stays NaN.
Tensor hardtanh(const Tensor& x, double min_value = -1.0, double max_value = 1.0);
// x clamped to [0, 6].
Tensor relu6(const Tensor& x);
// log(sigmoid(x)) = -softplus(-x), finite for every finite x.
Tensor logsigmoid(const Tensor& x);
// GELU's tanh approximation, 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) (PyTorch's
// approximate="tanh"); Tensor::gelu is the exact erf form.
Tensor gelu_tanh(const Tensor& x);

}  // namespace kiln::nn

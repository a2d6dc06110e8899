// The gradient of scaled_dot_product_attention: with the scores s = q k^T scale (+ a float
// mask, dropped keys at -inf) and p = softmax(s) along the keys, out = p v gives
//   dv = p^T g,  dp = g v^T,  ds = p (dp - sum(dp p)),  dq = ds k scale,  dk = ds^T q scale,
// and a float mask gets ds. A row whose keys are all dropped has p = 0 (its output is 0).

#include "runtime/nn_attention_backward.h"

#include <cmath>

#include "runtime/tensor_internal.h"

namespace kiln::nn::detail {

std::vector<Tensor> attention_gradients(const std::vector<Tensor>& operands, double scale,
                                        bool causal, const Tensor& gradient) {
  // In float32 at least, as the forward pass accumulates (float64 stays float64).
  const DType dtype = operands[0].dtype() == dtypes::float64 ? dtypes::float64 : dtypes::float32;
  const Tensor q = operands[0].cast(dtype), k = operands[1].cast(dtype),
               v = operands[2].cast(dtype), g = gradient.cast(dtype);
  const int64_t rank = q.ndim();
  Tensor scores = matmul(q, k.transpose(-1, -2)) * scale;
  const bool has_mask = operands.size() > 3;
  const bool bool_mask = has_mask && operands[3].dtype().is_bool();
  if (has_mask && !bool_mask) scores = scores + operands[3].cast(dtype);
  if (bool_mask) scores = where(operands[3], scores, -INFINITY);
  if (causal) {
    const int last = static_cast<int>(rank) - 1;
    const Tensor keep = index_along(scores, last) <= index_along(scores, last - 1);
    scores = where(keep, scores, -INFINITY);
  }
  const Tensor peak = scores.max({-1}, true);
  const Tensor weights = where(peak == -INFINITY, 0.0, scores.softmax(-1));
  // A key of weight 0 adds nothing, as in the forward pass, even where its value is inf or NaN.
  const Tensor to_weights = where(weights == 0.0, 0.0, matmul(g, v.transpose(-1, -2)));
  const Tensor to_scores = weights * (to_weights - (to_weights * weights).sum({-1}, true));
  const Tensor to_values = matmul(weights.transpose(-1, -2), g);
  const Tensor to_queries = matmul(to_scores, k) * scale;
  const Tensor to_keys = matmul(to_scores.transpose(-1, -2), q) * scale;
  std::vector<Tensor> gradients = {to_queries.cast(operands[0].dtype()),
                                   to_keys.cast(operands[1].dtype()),
                                   to_values.cast(operands[2].dtype())};
  if (has_mask) gradients.push_back(bool_mask ? Tensor() : to_scores.cast(operands[3].dtype()));
  return gradients;
}

}  // namespace kiln::nn::detail

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
  const Tensor &q = operands[0], &k = operands[1], &v = operands[2];
  const int64_t rank = q.ndim();
  Tensor scores = matmul(q, k.transpose(-1, -2)) * scale;
  const bool has_mask = operands.size() > 3;
  if (has_mask && !operands[3].dtype().is_bool()) scores = scores + operands[3];
  if (has_mask && operands[3].dtype().is_bool()) scores = where(operands[3], scores, -INFINITY);
  if (causal) {
    const int last = static_cast<int>(rank) - 1;
    const Tensor keep = index_along(scores, last) <= index_along(scores, last - 1);
    scores = where(keep, scores, -INFINITY);
  }
  const Tensor peak = scores.max({-1}, true);
  const Tensor weights = where(peak == -INFINITY, 0.0, scores.softmax(-1));
  const Tensor to_values = matmul(weights.transpose(-1, -2), gradient);
  const Tensor to_weights = matmul(gradient, v.transpose(-1, -2));
  const Tensor to_scores = weights * (to_weights - (to_weights * weights).sum({-1}, true));
  const Tensor to_queries = matmul(to_scores, k) * scale;
  const Tensor to_keys = matmul(to_scores.transpose(-1, -2), q) * scale;
  std::vector<Tensor> gradients = {to_queries, to_keys, to_values};
  if (has_mask) {
    const Tensor& mask = operands[3];
    gradients.push_back(mask.dtype().is_bool() ? Tensor() : to_scores.cast(mask.dtype()));
  }
  return gradients;
}

}  // namespace kiln::nn::detail

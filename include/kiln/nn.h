#pragma once
// Neural-network building blocks as PyTorch's torch.nn.functional defines them (same arguments
// and defaults): linear layers, normalizations, attention, one_hot and losses. Each is composed
// of kiln's ops (matmul, reductions, elementwise), so it stays lazy and fuses with its
// neighbours; inputs are float tensors (a DTypeError otherwise, naming the function), and shape
// mismatches are a ShapeError naming the function, the shapes and what would be valid.
// Activations are in kiln/activations.h.

#include <cstdint>
#include <optional>

#include <kiln/activations.h>
#include <kiln/tensor.h>

namespace kiln::nn {

// x @ weight^T + bias: x (..., in), weight (out, in), bias (out).
Tensor linear(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias = {});

// Normalizes over the last normalized_shape.size() axes (whose sizes must be normalized_shape):
// (x - mean) / sqrt(var + eps) with the biased variance, then * weight + bias (each of
// normalized_shape), as PyTorch's layer_norm.
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape,
                  const std::optional<Tensor>& weight = {}, const std::optional<Tensor>& bias = {},
                  double eps = 1e-5);
// x / sqrt(mean(x^2) + eps) over the last normalized_shape.size() axes, * weight. eps defaults to
// the machine epsilon of the dtype it computes in (float32's for the 16-bit floats, as PyTorch's
// rms_norm).
Tensor rms_norm(const Tensor& x, const Shape& normalized_shape,
                const std::optional<Tensor>& weight = {}, std::optional<double> eps = {});
// x (N, C, ...) in num_groups groups of C / num_groups channels, each normalized over its
// channels and the trailing axes; weight and bias (C) per channel.
Tensor group_norm(const Tensor& x, int64_t num_groups, const std::optional<Tensor>& weight = {},
                  const std::optional<Tensor>& bias = {}, double eps = 1e-5);
// x (N, C, ...) normalized per channel. training: by the batch's statistics (over N and the
// trailing axes, more than one value per channel), and running_mean / running_var (float (C),
// realized, on x's device, when given) updated in place: (1 - momentum) * running + momentum *
// batch (the variance unbiased); both or neither change. Not training: by the running
// statistics, which must be given. weight and bias (C) per channel.
Tensor batch_norm(const Tensor& x, Tensor* running_mean, Tensor* running_var,
                  const std::optional<Tensor>& weight = {}, const std::optional<Tensor>& bias = {},
                  bool training = false, double momentum = 0.1, double eps = 1e-5);

// softmax(q k^T * scale + mask) v: q (..., Hq, L, E), k (..., Hk, S, E), v (..., Hk, S, Ev).
// mask broadcasts to (..., Hq, L, S): bool (true keeps a score; false drops it) or float (added
// to the scores; another dtype is a DTypeError). is_causal keeps position j for query i where j <=
// i (the top-left triangle, PyTorch's convention), and is exclusive with a mask. scale defaults to
// 1 / sqrt(E). Hq may be a multiple of Hk (grouped-query attention): each group of Hq / Hk query
// heads shares one key and value head. A row with every score dropped is 0 (PyTorch's safe
// softmax), and a dropped key adds nothing even where its value is inf or NaN (a cache's unused
// slots behind a mask). Scores and sums are float32 (float64 for float64), the result in the
// promoted dtype of q, k and v. On a device with workgroups it is one kernel that never stores the
// scores (an online softmax over the keys); on the CPU two matrix products and a softmax.
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const std::optional<Tensor>& mask = {}, bool is_causal = false,
                                    std::optional<double> scale = {});

// Rows of the num_classes x num_classes identity at `indices` (integer, any shape): shape
// indices.shape() + [num_classes], int64. An index outside [0, num_classes) raises IndexError
// when the result is computed (Tensor::gather's check).
Tensor one_hot(const Tensor& indices, int64_t num_classes);

enum class Reduction { None, Mean, Sum };

// Cross entropy of logits (N, C, ...) or (C) against class indices (N, ...) or () of an integer
// dtype, or probabilities of the logits' shape. label_smoothing in [0, 1] mixes the target with
// the uniform distribution. With indices, targets equal to ignore_index contribute nothing and
// Mean divides by the targets not ignored (NaN where every one is). `weight` (C), as PyTorch's,
// scales each class's term: with indices a target's loss (and its smoothing term's classes), and
// Mean divides by the sum of the counted targets' weights; with probabilities each class's term,
// Mean dividing by the number of targets.
Tensor cross_entropy(const Tensor& logits, const Tensor& target,
                     Reduction reduction = Reduction::Mean, int64_t ignore_index = -100,
                     double label_smoothing = 0.0, const std::optional<Tensor>& weight = {});
// -log_probs at the target classes: log_probs (N, C, ...) or (C), target indices (N, ...) or ();
// `weight` (C) as cross_entropy's.
Tensor nll_loss(const Tensor& log_probs, const Tensor& target,
                Reduction reduction = Reduction::Mean, int64_t ignore_index = -100,
                const std::optional<Tensor>& weight = {});
// -(t log p + (1 - t) log(1 - p)), each log clamped to >= -100 (PyTorch's): p in [0, 1].
// `weight` (broadcast to p's shape) scales each element's loss; Mean still divides by the
// element count.
Tensor binary_cross_entropy(const Tensor& probs, const Tensor& target,
                            Reduction reduction = Reduction::Mean,
                            const std::optional<Tensor>& weight = {});
// binary_cross_entropy of sigmoid(logits), computed without its overflow; pos_weight (broadcast
// to the last axis) weights the positive term, `weight` each element's loss as above.
Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& target,
                                        Reduction reduction = Reduction::Mean,
                                        const std::optional<Tensor>& pos_weight = {},
                                        const std::optional<Tensor>& weight = {});
// (x - y)^2, |x - y|, and |d| < beta ? 0.5 d^2 / beta : |d| - 0.5 beta (beta >= 0; 0 is l1);
// input and target of one shape (PyTorch broadcasts them with a warning; kiln refuses).
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                      Reduction reduction = Reduction::Mean, double beta = 1.0);

}  // namespace kiln::nn

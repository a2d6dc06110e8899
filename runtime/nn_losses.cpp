// Losses (kiln/nn.h), each an elementwise loss then the reduction.

#include <kiln/nn.h>

#include <limits>
#include <string>
#include <utility>

#include "runtime/nn_checks.h"
#include "runtime/tensor_internal.h"

namespace kiln::nn {
namespace {

using detail::check_float;
using detail::shape_error;

Tensor reduced(const Tensor& loss, Reduction reduction) {
  switch (reduction) {
    case Reduction::Sum:
      return loss.sum();
    case Reduction::Mean:
      return loss.mean();
    case Reduction::None:
      break;
  }
  return loss;
}

// The class axis of (N, C, ...) or (C), and the check that target is that shape without it.
int64_t class_axis(const Tensor& scores, const Tensor& target, const char* op) {
  if (scores.ndim() < 1) shape_error(op, "the input needs a class axis, got a scalar");
  const int64_t axis = scores.ndim() >= 2 ? 1 : 0;
  Shape expected = scores.shape();
  expected.erase(expected.begin() + axis);
  if (target.shape() != expected)
    shape_error(op, "class indices must have the input's shape " + scores.shape_string() +
                        " without the class axis " + std::to_string(axis) + ", i.e. " +
                        shape_string(expected) + "; got " + target.shape_string());
  return axis;
}

void check_same_shape(const Tensor& input, const Tensor& target, const char* op) {
  if (input.shape() != target.shape())
    shape_error(op, "the input and target must have one shape, got " + input.shape_string() +
                        " and " + target.shape_string());
}

// -log_probs at the target classes (0 where ignored), and which targets count.
std::pair<Tensor, Tensor> picked_losses(const Tensor& log_probs, const Tensor& target, int64_t axis,
                                        int64_t ignore_index) {
  // In int64, where ignore_index cannot wrap into a class of a narrow or unsigned target.
  const Tensor wide = target.cast(dtypes::int64);
  const Tensor counted = wide != static_cast<double>(ignore_index);
  // A negative class is out of range (PyTorch's error), not counted from the end.
  const double classes = static_cast<double>(log_probs.shape()[axis]);
  const Tensor safe = where(counted, where(wide < 0.0, classes, wide), 0.0);
  const Tensor picked = log_probs.take_along_axis(safe.unsqueeze(axis), axis).squeeze(axis);
  return {where(counted, -picked, 0.0), counted};
}

// Sum over the counted targets / how many count (Mean), or the sum, or each.
Tensor reduced_counted(const Tensor& loss, const Tensor& counted, Reduction reduction) {
  if (reduction != Reduction::Mean) return reduced(loss, reduction);
  // Summed in float32 at least: a float16 sum of thousands of losses, or its count, overflows.
  const Tensor wide = detail::widened(loss);
  return (wide.sum() / counted.cast(wide.dtype()).sum()).cast(loss.dtype());
}

}  // namespace

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, Reduction reduction,
                int64_t ignore_index) {
  check_float(log_probs, "nll_loss", "log_probs");
  detail::check_integer(target, "nll_loss", "the target (class indices)");
  const int64_t axis = class_axis(log_probs, target, "nll_loss");
  const auto [loss, counted] = picked_losses(log_probs, target, axis, ignore_index);
  return reduced_counted(loss, counted, reduction);
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, Reduction reduction,
                     int64_t ignore_index, double label_smoothing) {
  check_float(logits, "cross_entropy", "the logits");
  if (!(label_smoothing >= 0 && label_smoothing <= 1))
    throw ValueError("[cross_entropy] label_smoothing must be in [0, 1], got " +
                     std::to_string(label_smoothing));
  if (logits.ndim() < 1) shape_error("cross_entropy", "the logits need a class axis");
  const int64_t axis = logits.ndim() >= 2 ? 1 : 0;
  const double classes = static_cast<double>(logits.shape()[axis]);
  const Tensor log_probs = logits.log_softmax(axis);
  if (target.dtype().is_float()) {
    check_same_shape(logits, target, "cross_entropy");
    const Tensor smoothed = target * (1 - label_smoothing) + label_smoothing / classes;
    return reduced(-(smoothed * log_probs).sum(axis), reduction);
  }
  detail::check_integer(target, "cross_entropy", "the target (class indices or probabilities)");
  class_axis(logits, target, "cross_entropy");
  auto [loss, counted] = picked_losses(log_probs, target, axis, ignore_index);
  if (label_smoothing > 0) {
    const Tensor uniform = where(counted, -log_probs.sum(axis) / classes, 0.0);
    loss = loss * (1 - label_smoothing) + uniform * label_smoothing;
  }
  return reduced_counted(loss, counted, reduction);
}

Tensor binary_cross_entropy(const Tensor& probs, const Tensor& target, Reduction reduction) {
  check_float(probs, "binary_cross_entropy", "the probabilities");
  check_same_shape(probs, target, "binary_cross_entropy");
  const Tensor t = target.cast(probs.dtype());
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor log_p = probs.log().clamp(-100, inf);
  const Tensor log_not_p = (-probs).log1p().clamp(-100, inf);
  return reduced(-(t * log_p + (1.0 - t) * log_not_p), reduction);
}

Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& target,
                                        Reduction reduction,
                                        const std::optional<Tensor>& pos_weight) {
  check_float(logits, "binary_cross_entropy_with_logits", "the logits");
  check_same_shape(logits, target, "binary_cross_entropy_with_logits");
  const Tensor t = target.cast(logits.dtype());
  // log(1 + e^-x) without overflow: max(-x, 0) + log1p(e^-|x|).
  const Tensor softplus_negative =
      where(logits < 0.0, -logits, 0.0) + (-logits.abs()).exp().log1p();
  const Tensor weighted =
      pos_weight ? ((*pos_weight - 1.0) * t + 1.0) * softplus_negative : softplus_negative;
  return reduced((1.0 - t) * logits + weighted, reduction);
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  check_float(input, "mse_loss", "the input");
  check_same_shape(input, target, "mse_loss");
  const Tensor difference = input - target;
  return reduced(difference * difference, reduction);
}

Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  check_float(input, "l1_loss", "the input");
  check_same_shape(input, target, "l1_loss");
  return reduced((input - target).abs(), reduction);
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction, double beta) {
  check_float(input, "smooth_l1_loss", "the input");
  check_same_shape(input, target, "smooth_l1_loss");
  if (!(beta >= 0))
    throw ValueError("[smooth_l1_loss] beta must be zero or more, got " + std::to_string(beta));
  const Tensor distance = (input - target).abs();
  if (beta == 0) return reduced(distance, reduction);
  return reduced(where(distance < beta, distance * distance * (0.5 / beta), distance - 0.5 * beta),
                 reduction);
}

}  // namespace kiln::nn

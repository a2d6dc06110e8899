// Losses (kiln/nn.h), each an elementwise loss then the reduction.

#include <kiln/nn.h>

#include <limits>
#include <optional>
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

// The class weights (C) of a loss over `scores` (N, C, ...) or (C), checked, in the scores'
// dtype.
Tensor class_weights(const Tensor& weight, const Tensor& scores, int64_t axis, const char* op) {
  check_defined(weight, op);
  check_same_device(weight, scores, op);
  const int64_t classes = scores.shape()[axis];
  if (weight.ndim() != 1 || weight.shape()[0] != classes)
    shape_error(op, "weight must hold one value per class, shape (" + std::to_string(classes) +
                        ") for the input " + scores.shape_string() + "; got " +
                        weight.shape_string());
  return weight.cast(scores.dtype());
}

// `weight` (C) shaped to broadcast along the class axis of scores of `ndim` axes.
Tensor along_classes(const Tensor& weight, int64_t ndim, int64_t axis) {
  Shape shape(static_cast<size_t>(ndim - axis), 1);
  shape[0] = weight.shape()[0];
  return weight.reshape(shape);
}

// The element weights of a pairwise loss, checked to broadcast to the input's shape.
Tensor element_weights(const Tensor& weight, const Tensor& input, const char* op) {
  check_defined(weight, op);
  check_same_device(weight, input, op);
  const Shape& shape = input.shape();
  const Shape& given = weight.shape();
  bool fits = given.size() <= shape.size();
  for (size_t at = 0; fits && at < given.size(); ++at) {
    const int64_t size = given[given.size() - 1 - at];
    fits = size == 1 || size == shape[shape.size() - 1 - at];
  }
  if (!fits)
    shape_error(op, "weight " + weight.shape_string() + " must broadcast to the input's shape " +
                        input.shape_string());
  return weight.cast(input.dtype());
}

struct PickedLosses {
  // -log_probs at the target class, times its weight (0 where ignored): weighted, in float32 at
  // least, where a float16 product of a large loss and weight would overflow before the Mean.
  Tensor loss;
  Tensor counted;  // bool: the target is not ignore_index
  Tensor weight;   // each target's weight in the Mean: 1 or its class's weight, 0 where ignored
};

PickedLosses picked_losses(const Tensor& log_probs, const Tensor& target, int64_t axis,
                           int64_t ignore_index, const std::optional<Tensor>& weight,
                           const char* op) {
  // In int64, where ignore_index cannot wrap into a class of a narrow or unsigned target.
  const Tensor wide = target.cast(dtypes::int64);
  const Tensor counted = wide != static_cast<double>(ignore_index);
  // A negative class is out of range (PyTorch's error), not counted from the end.
  const double classes = static_cast<double>(log_probs.shape()[axis]);
  const Tensor safe = where(counted, where(wide < 0.0, classes, wide), 0.0);
  const Tensor picked = log_probs.take_along_axis(safe.unsqueeze(axis), axis).squeeze(axis);
  if (!weight) return {where(counted, -picked, 0.0), counted, counted.cast(log_probs.dtype())};
  const Tensor target_weight = where(counted, taken(*weight, 0, safe, op), 0.0);
  const Tensor wide_weight = detail::widened(target_weight);
  return {where(counted, -detail::widened(picked) * wide_weight, 0.0), counted, wide_weight};
}

// Sum over the counted targets / their total weight (Mean), or the sum, or each, in `dtype`.
Tensor reduced_counted(const Tensor& loss, const Tensor& target_weight, Reduction reduction,
                       DType dtype) {
  if (reduction != Reduction::Mean) return reduced(loss, reduction).cast(dtype);
  // Summed in float32 at least: a float16 sum of thousands of losses, or its count, overflows.
  const Tensor wide = detail::widened(loss);
  return (wide.sum() / target_weight.cast(wide.dtype()).sum()).cast(dtype);
}

}  // namespace

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, Reduction reduction,
                int64_t ignore_index, const std::optional<Tensor>& weight) {
  check_float(log_probs, "nll_loss", "log_probs");
  detail::check_integer(target, "nll_loss", "the target (class indices)");
  const int64_t axis = class_axis(log_probs, target, "nll_loss");
  std::optional<Tensor> weights;
  if (weight) weights = class_weights(*weight, log_probs, axis, "nll_loss");
  const PickedLosses picked =
      picked_losses(log_probs, target, axis, ignore_index, weights, "nll_loss");
  return reduced_counted(picked.loss, picked.weight, reduction, log_probs.dtype());
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, Reduction reduction,
                     int64_t ignore_index, double label_smoothing,
                     const std::optional<Tensor>& weight) {
  check_float(logits, "cross_entropy", "the logits");
  if (!(label_smoothing >= 0 && label_smoothing <= 1))
    throw ValueError("[cross_entropy] label_smoothing must be in [0, 1], got " +
                     std::to_string(label_smoothing));
  if (logits.ndim() < 1) shape_error("cross_entropy", "the logits need a class axis");
  const int64_t axis = logits.ndim() >= 2 ? 1 : 0;
  const double classes = static_cast<double>(logits.shape()[axis]);
  std::optional<Tensor> weights;
  if (weight) weights = class_weights(*weight, logits, axis, "cross_entropy");
  const Tensor log_probs = logits.log_softmax(axis);
  // Each class's log-probability times its weight, for the sums over the classes.
  const Tensor weighted_log_probs =
      weights ? log_probs * along_classes(*weights, logits.ndim(), axis) : log_probs;
  if (target.dtype().is_float()) {
    check_same_shape(logits, target, "cross_entropy");
    const Tensor smoothed = target * (1 - label_smoothing) + label_smoothing / classes;
    return reduced(-(smoothed * weighted_log_probs).sum(axis), reduction);
  }
  detail::check_integer(target, "cross_entropy", "the target (class indices or probabilities)");
  class_axis(logits, target, "cross_entropy");
  const PickedLosses picked =
      picked_losses(log_probs, target, axis, ignore_index, weights, "cross_entropy");
  Tensor loss = picked.loss;
  if (label_smoothing > 0) {
    const Tensor uniform = where(picked.counted, -weighted_log_probs.sum(axis) / classes, 0.0);
    loss = loss * (1 - label_smoothing) + uniform.cast(loss.dtype()) * label_smoothing;
  }
  return reduced_counted(loss, picked.weight, reduction, logits.dtype());
}

Tensor binary_cross_entropy(const Tensor& probs, const Tensor& target, Reduction reduction,
                            const std::optional<Tensor>& weight) {
  check_float(probs, "binary_cross_entropy", "the probabilities");
  check_same_shape(probs, target, "binary_cross_entropy");
  const Tensor t = target.cast(probs.dtype());
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor log_p = probs.log().clamp(-100, inf);
  const Tensor log_not_p = (-probs).log1p().clamp(-100, inf);
  const Tensor loss = -(t * log_p + (1.0 - t) * log_not_p);
  if (!weight) return reduced(loss, reduction);
  return reduced(loss * element_weights(*weight, probs, "binary_cross_entropy"), reduction);
}

Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& target,
                                        Reduction reduction,
                                        const std::optional<Tensor>& pos_weight,
                                        const std::optional<Tensor>& weight) {
  check_float(logits, "binary_cross_entropy_with_logits", "the logits");
  check_same_shape(logits, target, "binary_cross_entropy_with_logits");
  const Tensor t = target.cast(logits.dtype());
  // log(1 + e^-x) without overflow: max(-x, 0) + log1p(e^-|x|).
  const Tensor softplus_negative =
      where(logits < 0.0, -logits, 0.0) + (-logits.abs()).exp().log1p();
  const Tensor weighted =
      pos_weight ? ((*pos_weight - 1.0) * t + 1.0) * softplus_negative : softplus_negative;
  const Tensor loss = (1.0 - t) * logits + weighted;
  if (!weight) return reduced(loss, reduction);
  return reduced(loss * element_weights(*weight, logits, "binary_cross_entropy_with_logits"),
                 reduction);
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

// The optimizers (include/kiln/optim.h): each step realizes the gradients together, then writes
// the state and the parameters in place with recording off.

#include <kiln/autograd.h>
#include <kiln/error.h>
#include <kiln/optim.h>

#include <cmath>
#include <limits>
#include <string>

#include "core/uop.h"
#include "runtime/tensor_internal.h"

namespace kiln::optim {
namespace {

void check_non_negative(double value, const char* optimizer, const char* name) {
  if (!(value >= 0) || std::isinf(value)) {
    throw ValueError(std::string("[") + optimizer + "] " + name +
                     " must be a finite number >= 0, got " + std::to_string(value));
  }
}

void check_beta(double value, const char* optimizer, const char* name) {
  if (!(value >= 0 && value < 1)) {
    throw ValueError(std::string("[") + optimizer + "] " + name + " must be in [0, 1), got " +
                     std::to_string(value));
  }
}

}  // namespace

Optimizer::Optimizer(std::vector<Tensor> parameters, double lr)
    : parameters_(std::move(parameters)), lr_(lr) {
  check_non_negative(lr, "optimizer", "lr");
  for (size_t index = 0; index < parameters_.size(); ++index) {
    const Tensor& parameter = parameters_[index];
    check_defined(parameter, "optimizer");
    if (!parameter.requires_grad() || !parameter.is_leaf()) {
      throw ValueError("[optimizer] parameter " + std::to_string(index) + ", " +
                       describe(parameter) +
                       ", must be a leaf that requires a gradient (made by the user and marked "
                       "with requires_grad_(), not computed from other tensors)");
    }
    // A constant's node is shared by every equal constant: a write needs memory of its own.
    if (parameter.node()->op() != Op::Buffer) {
      NoGradGuard copying;
      Tensor own = zeros_like(parameter);
      own.assign(parameter);
      parameter.shared_state()->set_node(own.node());
    }
  }
  for (const Tensor& parameter : parameters_) {
    const DType dtype = parameter.dtype() == dtypes::float64 ? dtypes::float64 : dtypes::float32;
    bool known = false;
    for (const Schedule& schedule : schedules_)
      known = known || (schedule.device == parameter.device() && schedule.dtype == dtype);
    if (known) continue;
    // Uploaded buffers of their own, written in place from then on.
    Schedule schedule{parameter.device(), dtype,
                      Tensor::from_vector(std::vector<double>{lr_}, {}, parameter.device()),
                      Tensor::from_vector(std::vector<double>{0.0}, {}, parameter.device())};
    if (dtype != dtypes::float64) {
      schedule.lr = schedule.lr.cast(dtype).contiguous().realize();
      schedule.step = schedule.step.cast(dtype).contiguous().realize();
    }
    schedules_.push_back(std::move(schedule));
  }
}

const Optimizer::Schedule& Optimizer::schedule_for(const Tensor& parameter) const {
  const DType dtype = parameter.dtype() == dtypes::float64 ? dtypes::float64 : dtypes::float32;
  for (const Schedule& schedule : schedules_)
    if (schedule.device == parameter.device() && schedule.dtype == dtype) return schedule;
  throw InternalError("[optimizer] no learning rate buffer for " + describe(parameter));
}

const Tensor& Optimizer::learning_rate(const Tensor& parameter) const {
  return schedule_for(parameter).lr;
}

const Tensor& Optimizer::step_count(const Tensor& parameter) const {
  return schedule_for(parameter).step;
}

void Optimizer::set_lr(double lr) {
  check_non_negative(lr, "optimizer", "lr");
  lr_ = lr;
  NoGradGuard writing;
  for (Schedule& schedule : schedules_)
    schedule.lr.assign(Tensor::scalar(lr, schedule.dtype, schedule.device));
}

void Optimizer::zero_grad() {
  for (const Tensor& parameter : parameters_) parameter.set_grad(Tensor());
}

Tensor Optimizer::zeros_like(const Tensor& parameter) {
  // Uploaded, not Tensor::zeros: equal constants share one node, and so would their buffers.
  const size_t count = static_cast<size_t>(parameter.numel());
  Tensor zeros = parameter.dtype() == dtypes::float64
                     ? Tensor::from_vector(std::vector<double>(count, 0.0), parameter.shape(),
                                           parameter.device())
                     : Tensor::from_vector(std::vector<float>(count, 0.0f), parameter.shape(),
                                           parameter.device())
                           .cast(parameter.dtype());
  zeros.realize();
  return zeros;
}

void Optimizer::step(const std::vector<Tensor>& together) {
  NoGradGuard updating;
  ++steps_;
  for (Schedule& schedule : schedules_) schedule.step.assign(schedule.step + 1.0);
  // Realized together (one schedule, shared work fused) and no longer a graph over the
  // parameters, whose in-place writes would otherwise keep a copy of each old value for it.
  std::vector<Tensor> gradients = together;
  for (const Tensor& parameter : parameters_) {
    const Tensor gradient = parameter.grad();
    if (gradient.defined()) gradients.push_back(gradient);
  }
  realize(gradients);
  for (size_t index = 0; index < parameters_.size(); ++index) {
    const Tensor gradient = parameters_[index].grad();
    if (gradient.defined()) update(index, parameters_[index], gradient);
  }
}

SGD::SGD(std::vector<Tensor> parameters, const SGDOptions& options)
    : Optimizer(std::move(parameters), options.lr), options_(options) {
  check_non_negative(options.momentum, "SGD", "momentum");
  check_non_negative(options.dampening, "SGD", "dampening");
  check_non_negative(options.weight_decay, "SGD", "weight_decay");
  if (options.nesterov && (options.momentum <= 0 || options.dampening != 0))
    throw ValueError("[SGD] nesterov needs momentum > 0 and dampening 0, got momentum " +
                     std::to_string(options.momentum) + " and dampening " +
                     std::to_string(options.dampening));
  momentum_.resize(this->parameters().size());
}

void SGD::update(size_t index, Tensor& parameter, const Tensor& gradient) {
  Tensor direction = gradient;
  if (options_.weight_decay != 0) direction = direction + parameter * options_.weight_decay;
  if (options_.momentum != 0) {
    Tensor& buffer = momentum_[index];
    if (!buffer.defined()) {
      buffer = zeros_like(parameter);
      buffer.assign(direction);
    } else {
      buffer.assign(buffer * options_.momentum + direction * (1 - options_.dampening));
    }
    direction = options_.nesterov ? direction + buffer * options_.momentum : buffer;
  }
  parameter.assign(parameter - direction * learning_rate(parameter));
}

Adam::Adam(std::vector<Tensor> parameters, const AdamOptions& options)
    : Optimizer(std::move(parameters), options.lr), options_(options) {
  check_beta(options.beta1, "Adam", "beta1");
  check_beta(options.beta2, "Adam", "beta2");
  if (!(options.eps > 0))
    throw ValueError("[Adam] eps must be > 0, got " + std::to_string(options.eps));
  check_non_negative(options.weight_decay, "Adam", "weight_decay");
  first_moment_.resize(this->parameters().size());
  second_moment_.resize(this->parameters().size());
}

void Adam::update(size_t index, Tensor& parameter, const Tensor& gradient) {
  Tensor direction = gradient;
  if (options_.weight_decay != 0) {
    if (decoupled()) {
      parameter.assign(parameter * (1.0 - learning_rate(parameter) * options_.weight_decay));
    } else {
      direction = direction + parameter * options_.weight_decay;
    }
  }
  Tensor& first = first_moment_[index];
  Tensor& second = second_moment_[index];
  if (!first.defined()) {
    first = zeros_like(parameter);
    second = zeros_like(parameter);
  }
  first.assign(first * options_.beta1 + direction * (1 - options_.beta1));
  second.assign(second * options_.beta2 + direction * direction * (1 - options_.beta2));
  // 1 - beta^t as -expm1(t log beta), which keeps its digits where beta^t is near 1 (beta2 =
  // 0.999 early on), computed in the kernel from the step count so a replay counts its step.
  const Tensor& t = step_count(parameter);
  const Tensor first_correction = -(t * std::log(options_.beta1)).expm1();
  const Tensor second_correction = -(t * std::log(options_.beta2)).expm1();
  const Tensor step_size = learning_rate(parameter) / first_correction;
  const Tensor root_correction = second_correction.sqrt();
  parameter.assign(parameter -
                   step_size * first / (second.sqrt() / root_correction + options_.eps));
}

AdamW::AdamW(std::vector<Tensor> parameters, const AdamWOptions& options)
    : Adam(std::move(parameters), AdamOptions{options.lr, options.beta1, options.beta2, options.eps,
                                              options.weight_decay}) {}

Tensor clip_grad_norm(const std::vector<Tensor>& parameters, double max_norm, double norm_type) {
  NoGradGuard clipping;
  if (!(max_norm >= 0))
    throw ValueError("[clip_grad_norm] max_norm must be >= 0, got " + std::to_string(max_norm));
  if (!(norm_type > 0))
    throw ValueError("[clip_grad_norm] norm_type must be > 0 (or infinity), got " +
                     std::to_string(norm_type));
  std::vector<Tensor> gradients;
  for (const Tensor& parameter : parameters) {
    check_defined(parameter, "clip_grad_norm");
    if (parameter.grad().defined()) gradients.push_back(parameter.grad());
  }
  if (gradients.empty()) return Tensor::zeros(Shape{}, dtypes::float32);
  const std::string device = gradients.front().device();
  Tensor total;
  for (const Tensor& gradient : gradients) {
    check_same_device(gradients.front(), gradient, "clip_grad_norm");
    const Tensor magnitude = gradient.cast(dtypes::float32).abs();
    const Tensor part = std::isinf(norm_type) ? magnitude.max() : magnitude.pow(norm_type).sum();
    total = !total.defined() ? part : std::isinf(norm_type) ? maximum(total, part) : total + part;
  }
  const Tensor norm = std::isinf(norm_type) ? total : total.pow(1.0 / norm_type);
  // The gradients are realized with the norm, so that each is computed once: a gradient left
  // lazy would be computed inside the norm's reduction and again where the step reads it.
  std::vector<Tensor> together = gradients;
  together.push_back(norm);
  kiln::realize(together);
  // Scaled only where the norm is larger (a factor of at most 1), without a host round trip.
  const Tensor factor = minimum(Tensor::scalar(max_norm, dtypes::float32, device) / (norm + 1e-6),
                                Tensor::full(Shape{}, 1.0, dtypes::float32, device));
  for (const Tensor& parameter : parameters) {
    const Tensor gradient = parameter.grad();
    if (gradient.defined()) parameter.set_grad((gradient * factor.cast(gradient.dtype())));
  }
  return norm;
}

}  // namespace kiln::optim

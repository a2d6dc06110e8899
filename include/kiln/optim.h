#pragma once
// Optimizers: update parameters in place from the gradients backward() accumulated.
//
//   kiln::optim::AdamW optimizer(model_parameters, {.lr = 3e-4});
//   for (...) {
//     optimizer.zero_grad();
//     loss(batch).backward();
//     kiln::optim::clip_grad_norm(model_parameters, 1.0);
//     optimizer.step();
//   }
//
// A step realizes the gradients together, then writes each parameter (and its state: momentum,
// moments) with Tensor::assign, recording no gradient. The values that change between steps
// live on the device, in one-element buffers the kernels read: the learning rate (set_lr writes
// it in place) and the step count (each step adds one, on the device; Adam's bias corrections
// are computed from it in the update's kernel). So changing them compiles nothing (every step
// after the first runs the kernels the first built), and a training step captured whole
// (kiln/capture.h: forward, backward and step in one CapturedStep) replays correctly: each
// replay counts its step, and reads the learning rate set_lr last wrote between replays.
// The state lives on each parameter's device, in its dtype; the learning rate and the step count
// in float32 (float64 for float64 parameters), one pair per device and dtype.

#include <kiln/tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::optim {

class Optimizer {
 public:
  // `parameters`: float leaves that require gradients (Tensor::requires_grad_); a ValueError
  // names the first that is not. One that is not a buffer of its own yet (Tensor::zeros, a
  // computed value) is given one, holding its value, so that a step can write it in place.
  explicit Optimizer(std::vector<Tensor> parameters, double lr);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter that has a gradient; one without is left as it is. `together`
  // are realized with the gradients (the loss the caller reads afterwards): one realize computes
  // the forward pass they share once, where a loss read after the step would compute it again
  // from copies of the parameters' old values.
  void step(const std::vector<Tensor>& together = {});
  // Clears every parameter's gradient (Tensor::set_grad with an empty tensor).
  void zero_grad();

  // The learning rate of the next steps: a schedule sets it before each step (outside a
  // captured step's function, whose host code runs only when it is captured).
  double lr() const { return lr_; }
  void set_lr(double lr);
  // Calls of step() on the host (a captured step's replays count on the device only).
  int64_t steps() const { return steps_; }
  const std::vector<Tensor>& parameters() const { return parameters_; }

 protected:
  // Updates parameter `index` from `gradient` (realized). What it writes must be computed on the
  // device from tensors (learning_rate, step_count, the state), not from host values that
  // change between steps, which a captured step would keep at their captured value.
  virtual void update(size_t index, Tensor& parameter, const Tensor& gradient) = 0;
  // The learning rate and the number of the step being taken (1 for the first), one-element
  // buffers on the parameter's device, float32 (float64 for a float64 parameter).
  const Tensor& learning_rate(const Tensor& parameter) const;
  const Tensor& step_count(const Tensor& parameter) const;
  // A buffer of zeros of the parameter's shape, dtype and device, its own (optimizer state).
  static Tensor zeros_like(const Tensor& parameter);

 private:
  struct Schedule {
    std::string device;
    DType dtype;
    Tensor lr;
    Tensor step;
  };
  const Schedule& schedule_for(const Tensor& parameter) const;

  std::vector<Tensor> parameters_;
  double lr_;
  int64_t steps_ = 0;
  std::vector<Schedule> schedules_;  // one per device and dtype of the parameters
};

struct SGDOptions {
  double lr = 1e-3;
  double momentum = 0;      // >= 0
  double dampening = 0;     // the gradient's weight in the momentum is 1 - dampening
  bool nesterov = false;    // needs momentum > 0 and dampening 0
  double weight_decay = 0;  // >= 0: weight_decay * parameter added to the gradient
};

// PyTorch's SGD: g = grad + weight_decay p; with momentum, b = g at the first step, then
// b = momentum b + (1 - dampening) g, and g = b (or g + momentum b with nesterov); p -= lr g.
class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> parameters, const SGDOptions& options);

 protected:
  void update(size_t index, Tensor& parameter, const Tensor& gradient) override;

 private:
  SGDOptions options_;
  std::vector<Tensor> momentum_;
};

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;       // in [0, 1)
  double beta2 = 0.999;     // in [0, 1)
  double eps = 1e-8;        // > 0
  double weight_decay = 0;  // >= 0; Adam adds it to the gradient, AdamW decays the parameter
};

// PyTorch's Adam: m = beta1 m + (1 - beta1) g, v = beta2 v + (1 - beta2) g^2, and
// p -= lr / (1 - beta1^t) m / (sqrt(v) / sqrt(1 - beta2^t) + eps).
class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> parameters, const AdamOptions& options);

 protected:
  void update(size_t index, Tensor& parameter, const Tensor& gradient) override;
  // Whether weight decay shrinks the parameter (AdamW) rather than adding to the gradient.
  virtual bool decoupled() const { return false; }

 private:
  AdamOptions options_;
  std::vector<Tensor> first_moment_, second_moment_;
};

struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.01;  // PyTorch's default for AdamW
};

// AdamW: Adam whose weight decay multiplies the parameter by 1 - lr weight_decay before the
// update instead of adding to the gradient.
class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> parameters, const AdamWOptions& options = {});

 protected:
  bool decoupled() const override { return true; }
};

// Scales every gradient by max_norm / total when their total norm (the `norm_type` norm of all
// of them together; infinity for the largest magnitude) is larger, as PyTorch's
// clip_grad_norm_. Returns the total norm before clipping (a one-element float32 tensor, lazy).
// Parameters without a gradient take no part.
Tensor clip_grad_norm(const std::vector<Tensor>& parameters, double max_norm,
                      double norm_type = 2.0);

}  // namespace kiln::optim

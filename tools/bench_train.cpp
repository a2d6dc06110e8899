// The `train` workload of `kiln bench`: one training step of a 784-64-10 MLP at batch 64
// (forward, backward, AdamW) as a user writes it with kiln's modules, autograd and optimizer,
// captured whole (CapturedStep), beside the same step's kernels written by hand: the backward
// pass and the AdamW update spelled out with tensor operations, captured the same way. Both
// start from the same weights; their losses must agree at every step.

#include <kiln/kiln.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tools/bench.h"

namespace kiln::tools::bench {

namespace {

constexpr int64_t kInputs = 784, kHidden = 64, kClasses = 10, kBatch = 64;
constexpr double kRate = 1e-3, kBeta1 = 0.9, kBeta2 = 0.999, kEps = 1e-8, kDecay = 0.01;
constexpr int kCheckedSteps = 6;

// AdamW's update of one parameter, written out: the moments and the parameter in place, the
// bias corrections from the step count on the device (as kiln::optim computes them).
void adamw_update(Tensor& parameter, Tensor& first, Tensor& second, const Tensor& gradient,
                  const Tensor& step) {
  first.assign(first * kBeta1 + gradient * (1 - kBeta1));
  second.assign(second * kBeta2 + gradient * gradient * (1 - kBeta2));
  const Tensor correction1 = -(step * std::log(kBeta1)).expm1();
  const Tensor correction2 = -(step * std::log(kBeta2)).expm1();
  parameter.assign(parameter * (1 - kRate * kDecay) -
                   first / correction1 * kRate / ((second / correction2).sqrt() + kEps));
}

// The hand-written model: the parameters in nn::Linear's layout (out, in) and AdamW's state.
struct HandWritten {
  std::vector<Tensor> parameters;  // w1, b1, w2, b2
  std::vector<Tensor> first, second;
  Tensor step;
};

Tensor hand_written_step(HandWritten& model, const Tensor& inputs, const Tensor& labels) {
  const Tensor &w1 = model.parameters[0], &b1 = model.parameters[1];
  const Tensor &w2 = model.parameters[2], &b2 = model.parameters[3];
  const Tensor hidden_in = inputs.matmul(w1.transpose()) + b1;
  const Tensor hidden = hidden_in.relu();
  const Tensor logits = hidden.matmul(w2.transpose()) + b2;
  const Tensor onehot = nn::one_hot(labels, kClasses).cast(dtypes::float32);
  const Tensor loss = -(onehot * logits.log_softmax(-1)).sum(1).mean();
  const Tensor dlogits = (logits.softmax(-1) - onehot) * (1.0 / kBatch);
  const Tensor dhidden = dlogits.matmul(w2) * (hidden_in > 0.0).cast(dtypes::float32);
  const std::vector<Tensor> gradients = {dhidden.transpose().matmul(inputs), dhidden.sum(0),
                                         dlogits.transpose().matmul(hidden), dlogits.sum(0)};
  realize({gradients[0], gradients[1], gradients[2], gradients[3], loss});
  model.step.assign(model.step + 1.0);
  for (size_t index = 0; index < gradients.size(); ++index)
    adamw_update(model.parameters[index], model.first[index], model.second[index], gradients[index],
                 model.step);
  realize({model.parameters[0], model.parameters[1], model.parameters[2], model.parameters[3],
           model.first[0], model.first[1], model.first[2], model.first[3], model.second[0],
           model.second[1], model.second[2], model.second[3], model.step});
  return loss;
}

Tensor own_copy(const Tensor& value) {
  return (value + 0.0).contiguous().realize();
}

}  // namespace

Result bench_train(Harness& harness) {
  Result result("train", "MLP 784-64-10 b64 AdamW");
  result.unit = Result::Unit::Seconds;
  const std::string& device = harness.device();
  const Tensor inputs = harness.realized_rand({kBatch, kInputs}, 21);
  std::vector<int64_t> label_values(kBatch);
  for (int64_t row = 0; row < kBatch; ++row) label_values[row] = (row * 7 + 3) % kClasses;
  const Tensor labels = Tensor::from_vector(label_values, {kBatch}, device);

  // As a user writes it.
  Generator generator(7, device);
  const nn::LayerOptions options{.device = device, .generator = generator};
  auto model = std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(kInputs, kHidden, true, options), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(kHidden, kClasses, true, options)});
  // The hand-written model starts from the same values, in buffers of its own.
  HandWritten hand;
  for (const Tensor& parameter : model->parameters()) {
    hand.parameters.push_back(own_copy(parameter.detach()));
    hand.first.push_back(own_copy(Tensor::zeros(parameter.shape(), dtypes::float32, device)));
    hand.second.push_back(own_copy(Tensor::zeros(parameter.shape(), dtypes::float32, device)));
  }
  hand.step = own_copy(Tensor::zeros(Shape{}, dtypes::float32, device));

  optim::AdamW optimizer(
      model->parameters(),
      {.lr = kRate, .beta1 = kBeta1, .beta2 = kBeta2, .eps = kEps, .weight_decay = kDecay});
  CapturedStep autograd_step([&](const std::vector<Tensor>& in) {
    optimizer.zero_grad();
    Tensor loss = nn::cross_entropy((*model)(in[0]), in[1]);
    loss.backward();
    optimizer.step({loss});
    return std::vector<Tensor>{loss};
  });
  CapturedStep written_step([&](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{hand_written_step(hand, in[0], in[1])};
  });

  // The two agree step by step (the first runs as written, the second is captured, the rest
  // replay).
  for (int step = 0; step < kCheckedSteps; ++step) {
    const double ours = autograd_step({inputs, labels})[0].item<float>();
    const double theirs = written_step({inputs, labels})[0].item<float>();
    if (!(std::fabs(ours - theirs) <= 1e-4 * std::fabs(theirs) + 1e-6)) {
      result.problem = "step " + std::to_string(step + 1) + ": loss " + std::to_string(ours) +
                       ", the hand-written step's " + std::to_string(theirs);
      return result;
    }
  }
  auto time_step = [&](CapturedStep& step) {
    return time_median(
        [&] {
          step({inputs, labels});
          harness.context().device().synchronize();
        },
        harness.repeat(), harness.sizes().budget_seconds);
  };
  result.timing = time_step(autograd_step);
  result.figure = result.timing.median_seconds;
  result.limit = time_step(written_step).median_seconds;
  result.limit_name = "hand-written";
  result.kernels = static_cast<int64_t>(autograd_step.kernels());
  result.note = std::to_string(autograd_step.kernels()) + " kernels per step, hand-written " +
                std::to_string(written_step.kernels()) + "; losses equal over " +
                std::to_string(kCheckedSteps) + " steps";
  return result;
}

}  // namespace kiln::tools::bench

#pragma once
// Reverse-mode differentiation over lazy tensors.
//
// An op records how to take its gradient back when one of its inputs requires a gradient
// (Tensor::requires_grad_, or computed from such a tensor) and recording is on (it is, outside a
// NoGradGuard). Tensor::backward() accumulates gradients into the leaves; kiln::grad returns
// them. Gradients are tensors like any other: lazy, on the inputs' device, realized when read,
// each fused with the rest of the work it is realized with.
//
//   Generator generator(/*seed=*/0);
//   Tensor w = random::normal(generator, {784, 64}, 0.0, 0.05);
//   w.realize().requires_grad_();                              // a buffer: written in place
//   Tensor loss = nn::cross_entropy(x.matmul(w), labels);
//   std::vector<Tensor> gradients = kiln::grad({loss}, {w});   // d loss / d w, shape (784, 64)
//   {
//     NoGradGuard updating;                                     // records nothing
//     w.assign(w - gradients[0] * 0.1);
//   }
//
// A backward pass reads the inputs' values as they are when it runs: an input written in place
// (Tensor::assign) after the forward pass and before the backward pass gives the gradient at its
// new value. A write in place while recording, to a tensor that requires a gradient or of a
// value that does, is a ValueError: write under a NoGradGuard.

#include <kiln/tensor.h>

#include <vector>

namespace kiln {

// The gradients of the sum of `outputs` (each weighted by its `output_gradients` entry; a
// one-element output may have none, then its weight is 1) with respect to each of `inputs`,
// which must require gradients (leaves or not). An input no output depends on gets zeros. Leaves'
// grad() is left as it was. The recorded graph is freed unless `retain_graph`.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& output_gradients = {},
                         bool retain_graph = false);

// While one lives, ops on this thread record nothing: their results do not require gradients.
// Nests; restores the previous state when it goes. An optimizer's update runs under one.
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// Whether ops on this thread record gradients now (no NoGradGuard alive).
bool grad_enabled();

}  // namespace kiln

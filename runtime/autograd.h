#pragma once
// Recording gradients (include/kiln/autograd.h): what an op keeps for the backward pass, and the
// helpers the ops' gradient rules share.
//
//   return recorded(result, "exp", [x](const Tensor& gradient) {
//     return std::vector<Tensor>{gradient * x.exp()};
//   }, x);
//
// records exp's rule on `result` when `x` requires a gradient and recording is on; otherwise it
// only returns `result`, and the rule is never built.

#include <kiln/autograd.h>
#include <kiln/tensor.h>

#include <functional>
#include <utility>
#include <vector>

#include "core/uop.h"

namespace kiln {

// One gradient per input, in order, from the gradient of the op's result; an empty tensor where
// an input gets none. Runs with recording off, built from public ops.
using BackwardFn = std::function<std::vector<Tensor>(const Tensor& output_gradient)>;

// The recorded op behind a tensor. It holds its inputs (not its result: a result that held its
// own node would never be freed).
struct GradNode {
  const char* op;
  std::vector<Tensor> inputs;
  BackwardFn backward;
};

// Recording is on for this thread and `tensor` requires a gradient.
bool needs_grad(const Tensor& tensor);
// Makes `output` the result of a recorded op on `inputs` (nothing when `output` is one of them:
// an op that returned its input unchanged).
void attach_grad(const Tensor& output, const char* op, std::vector<Tensor> inputs,
                 BackwardFn backward);

template <typename Backward, typename... Inputs>
Tensor recorded(Tensor output, const char* op, Backward&& backward, const Inputs&... inputs) {
  if ((needs_grad(inputs) || ...))
    attach_grad(output, op, {inputs...}, BackwardFn(std::forward<Backward>(backward)));
  return output;
}

// The gradient of an input that was broadcast to the gradient's shape: summed over the axes it
// was broadcast along (new leading ones, and its sizes of 1), in the input's shape and dtype.
Tensor gradient_for(const Tensor& input, const Tensor& gradient);

// The gradients of the elementwise ops, in the op's dtype: of unary `op` at `x`; of binary `op`
// with operands `a` and `b` (broadcast to one shape) for each operand.
Tensor unary_gradient(Op op, const Tensor& x, const Tensor& gradient);
std::pair<Tensor, Tensor> binary_gradient(Op op, const Tensor& a, const Tensor& b,
                                          const Tensor& gradient);

}  // namespace kiln

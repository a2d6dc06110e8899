// The backward pass (include/kiln/autograd.h): walks the recorded ops from the outputs back to
// the inputs, in reverse topological order, adding up each tensor's gradient before its op's rule
// takes it further back. The gradients are lazy tensors; nothing here realizes one.

#include "runtime/autograd.h"

#include <kiln/error.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "runtime/tensor_internal.h"

namespace kiln {
namespace {

thread_local bool recording = true;

// The tensors the outputs were computed from that require gradients, inputs before the tensors
// made from them. A tensor whose recorded op a backward pass freed cannot be walked through.
std::vector<std::shared_ptr<TensorState>> reachable(const std::vector<Tensor>& outputs,
                                                    const char* op) {
  std::vector<std::shared_ptr<TensorState>> order;
  std::unordered_set<const TensorState*> seen;
  // Depth first without recursion: (state, its inputs pushed yet).
  std::vector<std::pair<std::shared_ptr<TensorState>, bool>> stack;
  for (const Tensor& output : outputs) stack.emplace_back(output.shared_state(), false);
  while (!stack.empty()) {
    auto [state, expanded] = stack.back();
    stack.pop_back();
    if (expanded) {
      order.push_back(state);
      continue;
    }
    if (!seen.insert(state.get()).second) continue;
    stack.emplace_back(state, true);
    const std::shared_ptr<GradNode> node = state->grad_fn();
    if (!node) {
      if (state->graph_freed()) {
        throw ValueError(std::string("[") + op + "] the recorded graph of " +
                         describe(Tensor(state)) +
                         " was freed by an earlier backward pass; pass retain_graph = true to "
                         "that one to take gradients through it again");
      }
      continue;
    }
    for (const Tensor& input : node->inputs) {
      const std::shared_ptr<TensorState>& from = input.shared_state();
      if (from && from->requires_grad() && !seen.count(from.get())) stack.emplace_back(from, false);
    }
  }
  return order;
}

Tensor added(const Tensor& sum, const Tensor& term) {
  return sum.defined() ? sum + term : term;
}

struct Walk {
  std::vector<std::shared_ptr<TensorState>> order;
  std::unordered_map<const TensorState*, Tensor> gradients;
};

// The gradient of every tensor reachable from `outputs`, each output's seeded with its weight.
Walk walk_back(const std::vector<Tensor>& outputs, const std::vector<Tensor>& output_gradients,
               bool retain_graph, const char* op) {
  if (!output_gradients.empty() && output_gradients.size() != outputs.size()) {
    throw ValueError(std::string("[") + op + "] got " + std::to_string(output_gradients.size()) +
                     " output gradients for " + std::to_string(outputs.size()) +
                     " outputs; give one per output (an empty tensor for a one-element output)");
  }
  Walk walk;
  for (size_t at = 0; at < outputs.size(); ++at) {
    const Tensor& output = outputs[at];
    check_defined(output, op);
    if (!output.requires_grad()) {
      throw ValueError(std::string("[") + op + "] " + describe(output) +
                       " does not require a gradient: no tensor it was computed from had "
                       "requires_grad_() set (or it was computed under a NoGradGuard)");
    }
    const Tensor given = output_gradients.empty() ? Tensor() : output_gradients[at];
    Tensor seed;
    if (given.defined()) {
      if (given.shape() != output.shape()) {
        throw ShapeError(std::string("[") + op + "] the gradient " + describe(given) +
                         " must have the output's shape, " + describe(output));
      }
      check_same_device(output, given, op);
      seed = given.detach().cast(output.dtype());
    } else {
      if (output.numel() != 1) {
        throw ValueError(std::string("[") + op + "] " + describe(output) +
                         " has more than one element: give its gradient (the weight of each "
                         "element, its shape), or reduce it to one element first (e.g. sum())");
      }
      seed = Tensor::full(output.shape(), 1.0, output.dtype(), output.device());
    }
    Tensor& gradient = walk.gradients[output.shared_state().get()];
    gradient = added(gradient, seed);
  }
  walk.order = reachable(outputs, op);
  // Outputs first: each tensor's gradient is complete before its op passes it on.
  for (auto state = walk.order.rbegin(); state != walk.order.rend(); ++state) {
    const std::shared_ptr<GradNode> node = (*state)->grad_fn();
    if (!node) continue;
    const auto found = walk.gradients.find(state->get());
    if (found == walk.gradients.end()) continue;
    const Tensor gradient = found->second;
    const std::vector<Tensor> input_gradients = node->backward(gradient);
    for (size_t index = 0; index < node->inputs.size(); ++index) {
      const Tensor& input = node->inputs[index];
      if (index >= input_gradients.size() || !input_gradients[index].defined()) continue;
      if (!input.defined() || !input.requires_grad()) continue;
      Tensor& sum = walk.gradients[input.shared_state().get()];
      sum = added(sum, input_gradients[index]);
    }
  }
  if (!retain_graph) {
    for (const std::shared_ptr<TensorState>& state : walk.order)
      if (state->grad_fn()) state->free_graph();
  }
  return walk;
}

}  // namespace

bool grad_enabled() {
  return recording;
}

NoGradGuard::NoGradGuard() : previous_(recording) {
  recording = false;
}

NoGradGuard::~NoGradGuard() {
  recording = previous_;
}

bool needs_grad(const Tensor& tensor) {
  return recording && tensor.defined() && tensor.shared_state()->requires_grad();
}

void attach_grad(const Tensor& output, const char* op, std::vector<Tensor> inputs,
                 BackwardFn backward) {
  const std::shared_ptr<TensorState>& state = output.shared_state();
  for (const Tensor& input : inputs)
    if (input.shared_state() == state) return;
  // Integer and bool results (comparisons, casts to integers) carry no gradient.
  if (!output.dtype().is_float()) return;
  auto node = std::make_shared<GradNode>();
  node->op = op;
  node->inputs = std::move(inputs);
  node->backward = std::move(backward);
  state->set_grad_fn(std::move(node));
  state->set_requires_grad(true);
}

Tensor gradient_for(const Tensor& input, const Tensor& gradient) {
  const int64_t lead = gradient.ndim() - input.ndim();
  const DimShape sizes = input.dims(), spread_sizes = gradient.dims();
  std::vector<int64_t> axes;
  for (int64_t axis = 0; axis < gradient.ndim(); ++axis) {
    if (axis < lead) {
      axes.push_back(axis);
      continue;
    }
    const Dim& size = sizes[static_cast<size_t>(axis - lead)];
    const Dim& spread = spread_sizes[static_cast<size_t>(axis)];
    if (!size.is_symbolic() && size.value() == 1 && (spread.is_symbolic() || spread.value() != 1))
      axes.push_back(axis);
  }
  Tensor summed = axes.empty() ? gradient : gradient.sum(axes, /*keepdim=*/true);
  if (lead > 0 || !axes.empty()) summed = summed.reshape(input.dims());
  return summed.cast(input.dtype());
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& output_gradients, bool retain_graph) {
  NoGradGuard building;
  for (const Tensor& input : inputs) {
    check_defined(input, "grad");
    if (!input.requires_grad()) {
      throw ValueError("[grad] the input " + describe(input) +
                       " does not require a gradient; call requires_grad_() on it before "
                       "computing the outputs from it");
    }
  }
  const Walk walk = walk_back(outputs, output_gradients, retain_graph, "grad");
  std::vector<Tensor> result;
  for (const Tensor& input : inputs) {
    const auto found = walk.gradients.find(input.shared_state().get());
    result.push_back(found != walk.gradients.end()
                         ? found->second.cast(input.dtype())
                         : Tensor::zeros(input.shape(), input.dtype(), input.device()));
  }
  return result;
}

const Tensor& Tensor::requires_grad_(bool on) const {
  TensorState& held = state("requires_grad_");
  if (on && !dtype().is_float()) {
    throw DTypeError("[requires_grad_] only float tensors have gradients, got " + describe(*this) +
                         "; cast it to a float dtype first",
                     dtype());
  }
  if (held.grad_fn() || held.graph_freed()) {
    throw ValueError("[requires_grad_] " + describe(*this) +
                     " was computed by a recorded op; only leaves are marked (use detach() for a "
                     "leaf with its value)");
  }
  held.set_requires_grad(on);
  return *this;
}

bool Tensor::requires_grad() const {
  return state("requires_grad").requires_grad();
}

bool Tensor::is_leaf() const {
  const TensorState& held = state("is_leaf");
  return !held.grad_fn() && !held.graph_freed();
}

Tensor Tensor::grad() const {
  return state("grad").grad();
}

void Tensor::set_grad(const Tensor& gradient) const {
  TensorState& held = state("set_grad");
  if (gradient.defined() && gradient.shape() != shape()) {
    throw ShapeError("[set_grad] the gradient " + describe(gradient) + " must have the shape of " +
                     describe(*this));
  }
  if (gradient.defined()) check_same_device(*this, gradient, "set_grad");
  held.set_grad(gradient.defined() ? gradient.detach() : gradient);
}

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  NoGradGuard building;
  check_defined(*this, "backward");
  const Walk walk = walk_back({*this}, {gradient}, retain_graph, "backward");
  for (const std::shared_ptr<TensorState>& state : walk.order) {
    if (state->grad_fn() || !state->requires_grad() || state->graph_freed()) continue;
    const auto found = walk.gradients.find(state.get());
    if (found == walk.gradients.end()) continue;
    state->add_grad(found->second.cast(state->dtype()));
  }
}

Tensor Tensor::detach() const {
  return make_tensor(node(), state("detach").device());
}

}  // namespace kiln

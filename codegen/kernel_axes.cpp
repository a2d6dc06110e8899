#include "codegen/kernel_axes.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_set>

#include "core/view.h"

namespace kiln {

int64_t KernelAxes::size(int axis) const {
  const int outputs = static_cast<int>(output.size());
  return axis < outputs ? output[axis] : reduce_sizes[axis - outputs];
}

std::string KernelAxes::to_string() const {
  std::string text = "[";
  for (size_t axis = 0; axis < output.size(); ++axis)
    text += (axis ? " " : "") + sym_sizes[axis].key();
  if (!reduce.empty()) {
    text += " | " + std::string(reduce_op_name(reduce_op)) + " " + reduce_dtype.name();
    for (size_t at = 0; at < reduce.size(); ++at) text += " " + sym_sizes[output.size() + at].key();
  }
  if (owns_lines) text += " | LINES";
  return text + "]";
}

UOpRef kernel_reduce(const UOpRef& ast) {
  std::vector<UOpRef> stack{ast};
  std::unordered_set<const UOp*> seen{ast.get()};
  UOpRef found;
  while (!stack.empty()) {
    const UOpRef node = stack.back();
    stack.pop_back();
    if (node->op() == Op::Reduce) {
      if (found) return nullptr;
      found = node;
      continue;
    }
    if (!is_elementwise(node->op()) && node->op() != Op::View) continue;
    // A reduction read broadcast (fused into its row's kernel: codegen/row_fusion.h) is computed
    // once per row, not by the kernel's own reduction loop.
    if (node->op() == Op::View && !node->tracker().is_injective()) continue;
    for (const UOpRef& src : node->srcs()) {
      if (seen.insert(src.get()).second) stack.push_back(src);
    }
  }
  return found;
}

namespace {

bool mentions(const Sym& value, const std::string& var) {
  const std::vector<std::string> names = value.variables();
  return std::binary_search(names.begin(), names.end(), var);
}

// Fills source_axis and reduce_inputs where the reduction's source axes are the output axes plus
// the reduce axis: an output index of probe variables is carried through the Views between the
// output and the Reduce, and each must arrive as its own variable.
void find_matmul_shape(const UOpRef& ast, const UOpRef& reduce, KernelAxes& axes) {
  const Shape& source_shape = reduce->src()->shape();
  const int reduce_axis = reduce->reduce_arg().axes[0];
  // Nothing to stage where either side is empty (an output shrunk to nothing after the reduction
  // still holds it).
  if (std::count(source_shape.begin(), source_shape.end(), 0) > 0 ||
      std::count(axes.output.begin(), axes.output.end(), 0) > 0)
    return;
  // Every path from the output down to the Reduce must carry the output index there the same
  // way (elementwise ops keep it, Views map it).
  std::vector<Sym> probes;
  for (size_t axis = 0; axis < axes.output.size(); ++axis)
    probes.push_back(Sym::var("probe" + std::to_string(axis), 0, axes.output[axis] - 1));
  std::optional<std::vector<Sym>> arrived;
  bool consistent = true;
  std::set<std::pair<const UOp*, std::vector<Sym>>> walked;
  std::function<void(const UOpRef&, const std::vector<Sym>&)> walk =
      [&](const UOpRef& node, const std::vector<Sym>& index) {
        if (!consistent || !walked.emplace(node.get(), index).second) return;
        if (node == reduce) {
          if (arrived && *arrived != index) consistent = false;
          arrived = index;
          return;
        }
        if (node->op() == Op::View) {
          auto [flat, valid] = node->tracker().to_index(index);
          if (!(valid == Sym(1))) {
            consistent = false;
            return;
          }
          walk(node->src(), unravel_index(flat, to_sym_shape(node->src()->shape())));
          return;
        }
        for (const UOpRef& src : node->srcs()) {
          if (kernel_reduce(src) == reduce) walk(src, index);
        }
      };
  walk(ast, probes);
  if (!consistent || !arrived) return;
  const std::vector<Sym>& index = *arrived;
  if (index.size() != source_shape.size()) return;
  std::vector<int> source_axis(axes.output.size(), -1);
  for (size_t axis = 0; axis < index.size(); ++axis) {
    if (static_cast<int>(axis) == reduce_axis) {
      if (!(index[axis] == Sym(0))) return;
      continue;
    }
    if (index[axis].kind() != SymKind::Var) return;
    const std::string& name = index[axis].var_name();
    const int output = std::stoi(name.substr(5));
    if (source_axis[output] != -1 || index[axis].vmax() != source_shape[axis] - 1) return;
    source_axis[output] = static_cast<int>(axis);
  }
  if (std::count(source_axis.begin(), source_axis.end(), -1) > 0) return;
  for (size_t output = 1; output < source_axis.size(); ++output) {
    if (source_axis[output] < source_axis[output - 1]) return;  // the axes keep their order
  }
  // The source's index in probe variables; the reduce axis is a probe of its own.
  std::vector<Sym> source_index(source_shape.size());
  for (size_t output = 0; output < source_axis.size(); ++output)
    source_index[source_axis[output]] = index[source_axis[output]];
  source_index[reduce_axis] = Sym::var("probe_r", 0, source_shape[reduce_axis] - 1);
  std::vector<UOpRef> stack{reduce->src()};
  std::unordered_set<const UOp*> seen{reduce->src().get()};
  while (!stack.empty()) {
    const UOpRef node = stack.back();
    stack.pop_back();
    // A nested reduction, or loads from computed addresses: not matmul-shaped.
    if (node->op() == Op::Reduce || node->op() == Op::Gather) return;
    // A View of a constant or of indices reads no buffer.
    if (node->op() == Op::View && (node->src()->op() == Op::Const || node->src()->op() == Op::Iota))
      continue;
    if (node->op() == Op::View || node->op() == Op::Buffer) {
      Sym flat, valid(1);
      if (node->op() == Op::View) {
        std::tie(flat, valid) = node->tracker().to_index(source_index);
      } else {
        const SymShape strides = View::contiguous_strides(to_sym_shape(node->shape()));
        flat = Sym(0);
        for (size_t dim = 0; dim < source_index.size(); ++dim)
          flat = flat + source_index[dim] * strides[dim];
      }
      KernelAxes::ReduceInput input{node, {}};
      for (size_t output = 0; output < source_axis.size(); ++output) {
        const std::string var = "probe" + std::to_string(output);
        if (mentions(flat, var) || mentions(valid, var))
          input.output_axes.push_back(static_cast<int>(output));
      }
      axes.reduce_inputs.push_back(std::move(input));
      continue;
    }
    if (!is_elementwise(node->op()) && node->op() != Op::Cast) continue;
    for (const UOpRef& src : node->srcs()) {
      if (seen.insert(src.get()).second) stack.push_back(src);
    }
  }
  axes.source_axis = std::move(source_axis);
  const UOpRef& source = reduce->src();
  if (source->op() == Op::Mul && axes.reduce_inputs.size() == 2 && source->dtype().is_half()) {
    const UOp* first = axes.reduce_inputs[0].node.get();
    const UOp* second = axes.reduce_inputs[1].node.get();
    const UOp* left = source->srcs()[0].get();
    const UOp* right = source->srcs()[1].get();
    axes.products_of_halves =
        ((left == first && right == second) || (left == second && right == first)) &&
        left->dtype() == source->dtype() && right->dtype() == source->dtype();
  }
}

}  // namespace

KernelAxes kernel_axes(const UOpRef& ast) {
  KernelAxes axes;
  axes.output = ast->shape();
  axes.sym_sizes = ast->sym_shape();
  if (ast->op() == Op::Scatter || ast->op() == Op::Attention) {
    const int axis = ast->op() == Op::Scatter ? ast->scatter_arg().axis
                                              : static_cast<int>(axes.output.size()) - 1;
    axes.output[axis] = 1;
    axes.sym_sizes[axis] = Sym(1);
    axes.owns_lines = true;
  }
  if (const UOpRef reduce = kernel_reduce(ast)) {
    const ReduceArg& arg = reduce->reduce_arg();
    const SymShape source_sizes = reduce->src()->sym_shape();
    for (int axis : arg.axes) {
      axes.reduce.push_back(axis);
      axes.reduce_sizes.push_back(reduce->src()->shape()[axis]);
      axes.sym_sizes.push_back(source_sizes[axis]);
    }
    axes.reduce_op = arg.op;
    axes.reduce_dtype = reduce->dtype();
    axes.reassociable = !reduce->dtype().is_float() || arg.op != ReduceOp::Prod;
    // A symbolic kernel is not tiled (TILE divides its axes).
    if (arg.axes.size() == 1 && !ast->is_symbolic() && !reduce->src()->is_symbolic())
      find_matmul_shape(ast, reduce, axes);
  }
  std::unordered_set<const UOp*> read;
  for (const UOpRef& node : toposort({ast})) {
    if (node->op() == Op::Buffer) read.insert(node.get());
  }
  axes.buffers = 1 + static_cast<int64_t>(read.size());
  return axes;
}

bool reduce_steps_are_neighbours(const UOpRef& input, int reduce_axis) {
  if (input->op() != Op::View || input->src()->op() != Op::Buffer) return false;
  std::vector<Sym> index(input->sym_shape().size(), Sym(0));
  const Sym first = input->tracker().to_index(index).first;
  index[reduce_axis] = Sym(1);
  return input->tracker().to_index(index).first - first == Sym(1);
}

}  // namespace kiln

#include "codegen/kernel_variables.h"

#include <unordered_map>

#include "core/rewrite.h"

namespace kiln {
namespace {

bool has_symbolic_view(const UOp& node) {
  return node.op() == Op::View && node.tracker().is_symbolic();
}

}  // namespace

UnboundKernel unbind_variables(const ScheduleItem& item) {
  // Kernel variables in the order the bound ones are met (sources first), so that equal
  // kernels over other values unbind alike.
  std::map<Sym, Sym> replacement;  // bound variable -> kernel variable
  std::map<std::string, int> uses_of_name;
  UnboundKernel result;
  for (const UOpRef& node : toposort({item.ast})) {
    for_each_sym(*node, [&](const Sym& value) {
      if (value.is_const()) return;
      for (const Sym& variable : value.variable_nodes()) {
        if (!variable.is_bound() || replacement.count(variable)) continue;
        const int use = uses_of_name[variable.var_name()]++;
        const std::string name =
            "var_" + variable.var_name() + (use ? "_" + std::to_string(use) : "");
        replacement.emplace(variable, Sym::parameter(name, variable.vmin(), variable.vmax()));
        result.values[name] = variable.bound_value();
        result.bound.emplace(name, variable);
      }
    });
  }
  // By node: two values of one name (n=3 and n=5) may meet in one expression (a flattened
  // (n=3, n=5) shape), and each becomes its own kernel variable.
  auto unbind = [&](const Sym& value) {
    return value.is_const() ? value : value.substitute(replacement);
  };
  auto unbind_shape = [&](const SymShape& shape) {
    SymShape unbound;
    for (const Sym& size : shape) unbound.push_back(unbind(size));
    return unbound;
  };
  std::unordered_map<const UOp*, UOpRef> new_input;
  const RewriteRule rule = [&](const UOpRef& node) -> UOpRef {
    if (node->op() == Op::View && has_symbolic_view(*node)) {
      std::vector<View> views;
      for (const View& view : node->tracker().views()) {
        View unbound = view;
        unbound.shape = unbind_shape(view.shape);
        unbound.strides = unbind_shape(view.strides);
        unbound.offset = unbind(view.offset);
        if (view.mask) {
          for (auto& [begin, end] : *unbound.mask) {
            begin = unbind(begin);
            end = unbind(end);
          }
        }
        views.push_back(std::move(unbound));
      }
      ShapeTracker tracker(std::move(views));
      if (tracker == node->tracker()) return nullptr;
      return UOp::make(Op::View, node->dtype(), node->srcs(), tracker, node->shape());
    }
    if (node->srcs().empty() && node->is_symbolic()) {
      const SymShape shape = unbind_shape(node->sym_shape());
      if (shape == node->sym_shape()) return nullptr;
      UOpRef unbound = UOp::make_symbolic(node->op(), node->dtype(), {}, node->arg(), shape);
      if (node->op() == Op::Buffer) new_input[node.get()] = unbound;
      return unbound;
    }
    return nullptr;
  };
  result.item = item;
  if (replacement.empty()) return result;
  result.item.ast = graph_rewrite({item.ast}, rule)[0];
  if (UOpRef output = item.output->is_symbolic() ? rule(item.output) : nullptr)
    result.item.output = output;
  for (UOpRef& input : result.item.inputs) {
    auto found = new_input.find(input.get());
    if (found != new_input.end()) input = found->second;
  }
  return result;
}

std::vector<Sym> kernel_variables(const UOpRef& ast) {
  std::map<std::string, Sym> found;
  for (const UOpRef& node : toposort({ast})) {
    for_each_sym(*node, [&](const Sym& value) {
      if (value.is_const()) return;
      for (const Sym& variable : value.variable_nodes()) {
        if (!variable.is_bound()) found.emplace(variable.var_name(), variable);
      }
    });
  }
  std::vector<Sym> variables;
  for (auto& entry : found) variables.push_back(entry.second);
  return variables;
}

}  // namespace kiln

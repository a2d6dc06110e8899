// Graph builders and argument checks shared by the Tensor ops.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "core/const_fold.h"
#include "runtime/tensor_internal.h"

namespace kiln {

std::string shape_string(const Shape& shape) {
  std::string text = "(";
  for (size_t dim = 0; dim < shape.size(); ++dim)
    text += (dim ? ", " : "") + std::to_string(shape[dim]);
  if (shape.size() == 1) text += ",";
  return text + ")";
}

std::string shape_string(const SymShape& shape) {
  std::string text = "(";
  for (size_t dim = 0; dim < shape.size(); ++dim) {
    text += dim ? ", " : "";
    text += shape[dim].is_const()
                ? shape[dim].key()
                : shape[dim].to_string() + "=" + std::to_string(shape[dim].eval());
  }
  if (shape.size() == 1) text += ",";
  return text + ")";
}

std::string describe(const Tensor& tensor) {
  return std::string(tensor.dtype().name()) + tensor.shape_string() + " on " + tensor.device();
}

std::shared_ptr<const SymShape> broadcast_sym_shape(const Shape& shape,
                                                    const std::vector<UOpRef>& operands,
                                                    const char* op) {
  if (std::none_of(operands.begin(), operands.end(),
                   [](const UOpRef& operand) { return operand->is_symbolic(); }))
    return nullptr;
  SymShape result = to_sym_shape(shape);
  std::map<std::string, Sym> variable_of;  // by name, to find one name with two bounds
  for (const UOpRef& operand : operands) {
    if (!operand->is_symbolic()) continue;
    const SymShape sizes = operand->sym_shape();
    const size_t lead = shape.size() - sizes.size();
    for (size_t dim = 0; dim < sizes.size(); ++dim) {
      for (const Sym& variable : sizes[dim].variable_nodes()) {
        auto [known, fresh] = variable_of.emplace(variable.var_name(), variable);
        if (!fresh &&
            (known->second.vmin() != variable.vmin() || known->second.vmax() != variable.vmax())) {
          throw ShapeError(std::string("[") + op + "] variable '" + variable.var_name() +
                           "' appears with bounds [" + std::to_string(known->second.vmin()) + ", " +
                           std::to_string(known->second.vmax()) + "] and [" +
                           std::to_string(variable.vmin()) + ", " +
                           std::to_string(variable.vmax()) + "]; one name must mean one variable");
        }
      }
      Sym& size = result[lead + dim];
      if (sizes[dim].is_const()) continue;
      // A kernel is compiled for the variable, so a symbolic size may not broadcast: that
      // would hold only at the values where it is 1.
      if (operand->shape()[dim] != shape[lead + dim]) {
        throw ShapeError(std::string("[") + op + "] the symbolic size " + sizes[dim].to_string() +
                         "=" + std::to_string(operand->shape()[dim]) + " cannot broadcast to " +
                         std::to_string(shape[lead + dim]) +
                         "; only the number 1 broadcasts (expand the tensor before binding)");
      }
      if (size.is_const()) size = sizes[dim];
    }
  }
  check_symbolic_numel(result, op);
  return std::make_shared<const SymShape>(std::move(result));
}

int normalize_axis(int64_t axis, int64_t ndim, const char* op) {
  const int64_t normalized = axis < 0 ? axis + ndim : axis;
  if (normalized < 0 || normalized >= ndim) {
    throw ShapeError(std::string("[") + op + "] axis " + std::to_string(axis) +
                     " is out of range for " + std::to_string(ndim) + " dimension(s); valid: " +
                     std::to_string(-ndim) + " to " + std::to_string(ndim - 1));
  }
  return static_cast<int>(normalized);
}

std::vector<int> normalize_axes(const std::vector<int64_t>& axes, int64_t ndim, const char* op) {
  std::set<int> unique;
  for (int64_t axis : axes) {
    if (!unique.insert(normalize_axis(axis, ndim, op)).second) {
      throw ShapeError(std::string("[") + op + "] axis " + std::to_string(axis) + " is repeated");
    }
  }
  return {unique.begin(), unique.end()};
}

std::string relabel_error(const Error& error, const char* op, const std::string& operands) {
  std::string text = error.what();
  // "[where] variable 'n' ..." -> "variable 'n' ...".
  if (!text.empty() && text[0] == '[') {
    const size_t close = text.find("] ");
    if (close != std::string::npos) text = text.substr(close + 2);
  }
  return std::string("[") + op + "] " + text + " (operands: " + operands + ")";
}

void check_defined(const Tensor& tensor, const char* op) {
  if (!tensor.defined()) {
    throw Error(std::string("[") + op +
                "] the tensor is empty (default-constructed); assign it a value first");
  }
}

void check_same_device(const Tensor& a, const Tensor& b, const char* op) {
  check_defined(a, op);
  check_defined(b, op);
  if (a.device() != b.device()) {
    throw DeviceError(std::string("[") + op +
                      "] operands are on different devices: " + describe(a) + " and " +
                      describe(b) + "; move one with .to(\"" + a.device() + "\")");
  }
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const size_t ndim = std::max(a.size(), b.size());
  Shape result(ndim);
  for (size_t dim = 0; dim < ndim; ++dim) {
    const int64_t size_a = dim + a.size() >= ndim ? a[dim + a.size() - ndim] : 1;
    const int64_t size_b = dim + b.size() >= ndim ? b[dim + b.size() - ndim] : 1;
    if (size_a != size_b && size_a != 1 && size_b != 1) {
      throw ShapeError(std::string("[") + op + "] shapes " + shape_string(a) + " and " +
                       shape_string(b) + " cannot be broadcast: dimension " + std::to_string(dim) +
                       " is " + std::to_string(size_a) + " vs " + std::to_string(size_b) +
                       " (sizes must match or be 1)");
    }
    result[dim] = size_a == 1 ? size_b : size_a;
  }
  check_numel(result, op);
  return result;
}

int64_t check_numel(const Shape& shape, const char* op) {
  bool empty = false;
  for (int64_t size : shape) {
    if (size < 0)
      throw ShapeError(std::string("[") + op + "] shape " + shape_string(shape) +
                       " has a negative size; sizes must be 0 or more");
    empty |= size == 0;
  }
  if (empty) return 0;
  int64_t total = 1;
  for (int64_t size : shape) {
    if (total > kMaxElements / size) {
      double count = 1;
      for (int64_t each : shape) count *= static_cast<double>(each);
      char figure[32];
      std::snprintf(figure, sizeof(figure), "%.3g", count);
      throw ShapeError(std::string("[") + op + "] shape " + shape_string(shape) + " has " + figure +
                       " elements, more than the 2^60 a tensor may hold");
    }
    total *= size;
  }
  return total;
}

void check_symbolic_numel(const SymShape& shape, const char* op) {
  Shape largest;
  bool symbolic = false;
  for (const Sym& size : shape) {
    largest.push_back(std::max<int64_t>(size.vmax(), 0));
    symbolic |= !size.is_const();
  }
  if (!symbolic || std::count(largest.begin(), largest.end(), 0) > 0) return;
  int64_t total = 1;
  for (int64_t size : largest) {
    if (total <= kMaxElements / size) {
      total *= size;
      continue;
    }
    std::string bounds;
    for (const Sym& size : shape) {
      if (size.is_const()) continue;
      for (const Sym& variable : size.variable_nodes()) {
        const std::string text = variable.var_name() + " in [" + std::to_string(variable.vmin()) +
                                 ", " + std::to_string(variable.vmax()) + "]";
        if (bounds.find(text) == std::string::npos) bounds += (bounds.empty() ? "" : ", ") + text;
      }
    }
    double count = 1;
    for (int64_t each : largest) count *= static_cast<double>(each);
    char figure[32];
    std::snprintf(figure, sizeof(figure), "%.3g", count);
    throw ShapeError(std::string("[") + op + "] shape " + shape_string(shape) + " reaches " +
                     figure + " elements at its variables' bounds (" + bounds +
                     "), more than the 2^60 a tensor may hold; a kernel serves every value of its "
                     "variables, so give them smaller bounds");
  }
}

void check_fill_value(double value, DType dtype, const char* op, const std::string& operand) {
  if (dtype.is_float() || (std::isfinite(value) && std::trunc(value) == value)) return;
  char text[64];
  std::snprintf(text, sizeof(text), "%.17g", value);
  throw DTypeError(std::string("[") + op + "] value " + text + " is not a whole number, and the " +
                   "result keeps the dtype of " + operand +
                   "; pass a whole number, or cast the tensor to a float dtype first");
}

namespace {

// An op over constants only is a constant: folded here, so no kernel computes it.
UOpRef folded(Op op, DType dtype, const std::vector<UOpRef>& srcs, const Shape& shape) {
  std::vector<TypedConst> operands;
  for (const UOpRef& src : srcs) {
    if (src->op() != Op::Const) return nullptr;
    operands.push_back({src->dtype(), src->const_arg()});
  }
  std::optional<ConstArg> value = fold_constant(op, dtype, operands);
  if (!value) return nullptr;
  for (const UOpRef& src : srcs) {
    if (src->is_symbolic())
      return UOp::make_symbolic(Op::Const, dtype, {}, *value, src->sym_shape());
  }
  return UOp::make(Op::Const, dtype, {}, *value, shape);
}

}  // namespace

UOpRef cast_node(const UOpRef& node, DType dtype) {
  if (node->dtype() == dtype) return node;
  if (UOpRef constant = folded(Op::Cast, dtype, {node}, node->shape())) return constant;
  return UOp::make(Op::Cast, dtype, {node}, {}, node->shape());
}

UOpRef alu_node(Op op, DType dtype, std::vector<UOpRef> srcs) {
  Shape shape = srcs[0]->shape();
  if (UOpRef constant = folded(op, dtype, srcs, shape)) return constant;
  return UOp::make(op, dtype, std::move(srcs), {}, std::move(shape));
}

UOpRef broadcast_node(const UOpRef& node, const SymShape& shape) {
  const SymShape sizes = node->sym_shape();
  SymShape padded(shape.size() - sizes.size(), Sym(1));
  padded.insert(padded.end(), sizes.begin(), sizes.end());
  return expand_node(reshape_node(node, padded), shape);
}

UOpRef broadcast_node(const UOpRef& node, const Shape& shape) {
  Shape padded(shape.size() - node->shape().size(), 1);
  padded.insert(padded.end(), node->shape().begin(), node->shape().end());
  return expand_node(reshape_node(node, padded), shape);
}

DType float_dtype_for(DType dtype) {
  return dtype.is_float() ? dtype : dtypes::float32;
}

}  // namespace kiln

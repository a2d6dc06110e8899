#include "codegen/bound_reduce.h"

#include <cmath>
#include <limits>

#include "core/graph_build.h"

namespace kiln {
namespace {

// The identity of `op` in `dtype` where it is not the +0 (or false) a padded View reads.
std::optional<ConstArg> identity(ReduceOp op, DType dtype) {
  ConstArg value;
  if (op == ReduceOp::Sum) {
    if (!dtype.is_float()) return std::nullopt;
    value.float_value = -0.0;  // -0 + x is x for every x; +0 would make a sum of -0s +0
    return value;
  }
  if (op == ReduceOp::Prod) {
    value.float_value = 1;
    value.int_value = 1;
    return value;
  }
  const bool max = op == ReduceOp::Max;
  if (dtype.is_float()) {
    value.float_value =
        max ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    return value;
  }
  if (dtype.is_bool()) {
    if (max) return std::nullopt;  // false
    value.int_value = 1;
    value.float_value = 1;
    return value;
  }
  const int bits = static_cast<int>(dtype.itemsize()) * 8;
  if (dtype.is_unsigned()) {
    if (max) return std::nullopt;  // 0
    // All ones: the largest value (uint64's as its bit pattern).
    value.int_value = bits == 64 ? -1 : static_cast<int64_t>((uint64_t{1} << bits) - 1);
    value.float_value = dtype.max_value();
  } else {
    const int64_t largest =
        bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bits - 1)) - 1;
    value.int_value = max ? -largest - 1 : largest;
    value.float_value = max ? dtype.min_value() : dtype.max_value();
  }
  return value;
}

int64_t saturating_mul(int64_t a, int64_t b) {
  int64_t product;
  return __builtin_mul_overflow(a, b, &product) ? std::numeric_limits<int64_t>::max() : product;
}

// `node` (shape [..., length]) padded at the end of its last axis to `padded` with the identity
// of `op`.
UOpRef pad_last_axis(const UOpRef& node, const Sym& padded, ReduceOp op) {
  const SymShape shape = node->sym_shape();
  SymShape padded_shape = shape;
  padded_shape.back() = padded;
  std::vector<std::pair<Sym, Sym>> amounts(shape.size(), {Sym(0), Sym(0)});
  amounts.back().second = padded - shape.back();
  auto pad = [&](const ShapeTracker& tracker) { return tracker.pad(amounts); };
  const Shape padded_values = shape_values(padded_shape);
  const UOpRef padded_node = movement_node(node, padded_values, pad);
  const std::optional<ConstArg> fill = identity(op, node->dtype());
  if (!fill) return padded_node;
  // The masked-off part reads +0: a padded all-true mask selects the identity there.
  const UOpRef inside =
      movement_node(symbolic_const_node(1, dtypes::bool_, shape), padded_values, pad);
  const UOpRef fill_node = UOp::make_symbolic(Op::Const, node->dtype(), {}, *fill, padded_shape);
  return UOp::make(Op::Where, node->dtype(), {inside, padded_node, fill_node}, {}, padded_values);
}

// `reduce` with each kernel reducing at most `limit` elements per output; nullptr where it does
// already. A symbolic length is split by its largest value: parts of one constant length, their
// count symbolic, so that one set of kernels serves every value.
UOpRef bounded(const UOpRef& reduce, int64_t limit) {
  const ReduceArg& arg = reduce->reduce_arg();
  const UOpRef& src = reduce->src();
  const SymShape source_shape = src->sym_shape();
  Sym length(1);
  int64_t largest = 1;
  for (int axis : arg.axes) {
    length = length * source_shape[axis];
    largest = saturating_mul(largest, std::max<int64_t>(source_shape[axis].vmax(), 0));
  }
  if (largest <= limit) return nullptr;

  // Kept axes first, reduced axes last, flattened into one.
  std::vector<bool> reduced(source_shape.size(), false);
  for (int axis : arg.axes) reduced[axis] = true;
  std::vector<int> order;
  SymShape kept;
  for (size_t axis = 0; axis < source_shape.size(); ++axis) {
    if (reduced[axis]) continue;
    order.push_back(static_cast<int>(axis));
    kept.push_back(source_shape[axis]);
  }
  SymShape permuted = kept;
  for (int axis : arg.axes) {
    order.push_back(axis);
    permuted.push_back(source_shape[axis]);
  }
  UOpRef node = movement_node(src, shape_values(permuted),
                              [&](const ShapeTracker& tracker) { return tracker.permute(order); });
  SymShape flat = kept;
  flat.push_back(length);
  node = reshape_node(node, flat);

  // Parts of at most `limit` elements, as even as they can be at the largest length.
  int64_t parts_at_largest = (largest + limit - 1) / limit;
  int64_t part_length = limit;
  if (parts_at_largest <= limit) part_length = (largest + parts_at_largest - 1) / parts_at_largest;
  const Sym parts = floordiv(length + (part_length - 1), Sym(part_length));
  const Sym padded = parts * part_length;
  if (!(padded == length)) node = pad_last_axis(node, padded, arg.op);
  SymShape split = kept;
  split.push_back(parts);
  split.push_back(part_length);
  node = reshape_node(node, split);

  const int part_axis = static_cast<int>(kept.size());
  SymShape partial_shape = split;
  partial_shape.back() = 1;
  const Shape partial_values = shape_values(partial_shape);
  const UOpRef partial = UOp::make(Op::Reduce, reduce->dtype(), {node},
                                   ReduceArg{arg.op, {part_axis + 1}}, partial_values);
  const UOpRef stored = UOp::make(Op::Contiguous, reduce->dtype(), {partial}, {}, partial_values);
  Shape total_values = partial_values;
  total_values[static_cast<size_t>(part_axis)] = 1;
  // Too many parts for one kernel: graph_rewrite applies the rule to this new Reduce too.
  const UOpRef total = UOp::make(Op::Reduce, reduce->dtype(), {stored},
                                 ReduceArg{arg.op, {part_axis}}, total_values);
  return reduce->is_symbolic() ? reshape_node(total, reduce->sym_shape())
                               : reshape_node(total, reduce->shape());
}

}  // namespace

UOpRef bound_reduce_length(const UOpRef& node, int64_t limit) {
  if (node->op() != Op::Reduce || limit <= 0) return nullptr;
  return bounded(node, limit);
}

}  // namespace kiln

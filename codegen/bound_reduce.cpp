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

// `node` (shape [..., length]) padded at the end of its last axis to `padded` with the identity
// of `op`.
UOpRef pad_last_axis(const UOpRef& node, int64_t padded, ReduceOp op) {
  const Shape& shape = node->shape();
  Shape padded_shape = shape;
  padded_shape.back() = padded;
  std::vector<std::pair<Sym, Sym>> amounts(shape.size(), {Sym(0), Sym(0)});
  amounts.back().second = Sym(padded - shape.back());
  auto pad = [&](const ShapeTracker& tracker) { return tracker.pad(amounts); };
  const UOpRef padded_node = movement_node(node, padded_shape, pad);
  const std::optional<ConstArg> fill = identity(op, node->dtype());
  if (!fill) return padded_node;
  // The masked-off part reads +0: a padded all-true mask selects the identity there.
  const UOpRef inside = movement_node(const_node(1, dtypes::bool_, shape), padded_shape, pad);
  const UOpRef fill_node = UOp::make(Op::Const, node->dtype(), {}, *fill, padded_shape);
  return UOp::make(Op::Where, node->dtype(), {inside, padded_node, fill_node}, {}, padded_shape);
}

// `reduce` with each kernel reducing at most `limit` elements per output; nullptr where it does
// already.
UOpRef bounded(const UOpRef& reduce, int64_t limit) {
  const ReduceArg& arg = reduce->reduce_arg();
  const UOpRef& src = reduce->src();
  const Shape& source_shape = src->shape();
  int64_t length = 1;
  for (int axis : arg.axes) length *= source_shape[axis];
  if (length <= limit) return nullptr;

  // Kept axes first, reduced axes last, flattened into one.
  std::vector<bool> reduced(source_shape.size(), false);
  for (int axis : arg.axes) reduced[axis] = true;
  std::vector<int> order;
  Shape kept;
  for (size_t axis = 0; axis < source_shape.size(); ++axis) {
    if (reduced[axis]) continue;
    order.push_back(static_cast<int>(axis));
    kept.push_back(source_shape[axis]);
  }
  Shape permuted = kept;
  for (int axis : arg.axes) {
    order.push_back(axis);
    permuted.push_back(source_shape[axis]);
  }
  UOpRef node = movement_node(src, permuted,
                              [&](const ShapeTracker& tracker) { return tracker.permute(order); });
  Shape flat = kept;
  flat.push_back(length);
  node = reshape_node(node, flat);

  // Parts of at most `limit` elements, as even as they can be.
  int64_t parts = (length + limit - 1) / limit;
  int64_t part_length = limit;
  if (parts <= limit) part_length = (length + parts - 1) / parts;
  parts = (length + part_length - 1) / part_length;
  if (parts * part_length > length) node = pad_last_axis(node, parts * part_length, arg.op);
  Shape split = kept;
  split.push_back(parts);
  split.push_back(part_length);
  node = reshape_node(node, split);

  const int part_axis = static_cast<int>(kept.size());
  Shape partial_shape = split;
  partial_shape.back() = 1;
  const UOpRef partial = UOp::make(Op::Reduce, reduce->dtype(), {node},
                                   ReduceArg{arg.op, {part_axis + 1}}, partial_shape);
  const UOpRef stored = UOp::make(Op::Contiguous, reduce->dtype(), {partial}, {}, partial_shape);
  Shape total_shape = partial_shape;
  total_shape[static_cast<size_t>(part_axis)] = 1;
  // Too many parts for one kernel: graph_rewrite applies the rule to this new Reduce too.
  const UOpRef total =
      UOp::make(Op::Reduce, reduce->dtype(), {stored}, ReduceArg{arg.op, {part_axis}}, total_shape);
  return reshape_node(total, reduce->shape());
}

}  // namespace

UOpRef bound_reduce_length(const UOpRef& node, int64_t limit) {
  if (node->op() != Op::Reduce || limit <= 0) return nullptr;
  // A symbolic reduction is not split (its parts would depend on the value); realize refuses
  // its kernel where the variable's largest value would pass the device's loop limit.
  if (node->src()->is_symbolic()) return nullptr;
  return bounded(node, limit);
}

}  // namespace kiln

#include "codegen/unfused_attention.h"

#include <limits>

#include "core/graph_build.h"

namespace kiln {
namespace {

UOpRef binary(Op op, DType dtype, const UOpRef& left, const UOpRef& right) {
  return UOp::make(op, dtype, {left, right}, {}, left->shape());
}

UOpRef cast(const UOpRef& node, DType dtype) {
  if (node->dtype() == dtype) return node;
  return UOp::make(Op::Cast, dtype, {node}, {}, node->shape());
}

UOpRef select(const UOpRef& condition, const UOpRef& chosen, const UOpRef& otherwise) {
  return UOp::make(Op::Where, chosen->dtype(), {condition, chosen, otherwise}, {}, chosen->shape());
}

// `lead` followed by `tail`.
SymShape with_tail(const SymShape& lead, std::initializer_list<Sym> tail) {
  SymShape shape = lead;
  shape.insert(shape.end(), tail.begin(), tail.end());
  return shape;
}

}  // namespace

UOpRef unfused_attention(const UOpRef& attention) {
  const AttentionArg& arg = attention->attention_arg();
  const DType dtype = attention->dtype();
  const DType acc = dtype == dtypes::float64 ? dtypes::float64 : dtypes::float32;
  const UOpRef query = cast(attention->src(0), acc);
  const UOpRef key = cast(attention->src(1), acc);
  const UOpRef value = cast(attention->src(2), acc);
  const SymShape query_shape = query->sym_shape();
  const SymShape lead(query_shape.begin(), query_shape.end() - 2);
  const int rank = static_cast<int>(lead.size());
  const Sym length = query_shape[rank], features = query_shape[rank + 1];
  const Sym keys = key->sym_shape()[rank];
  const Sym value_features = value->sym_shape()[rank + 1];
  const double infinity = std::numeric_limits<double>::infinity();

  // scores (..., L, S): (..., L, 1, E) * (..., 1, S, E) summed over E, times the scale.
  const SymShape products_shape = with_tail(lead, {length, keys, features});
  const UOpRef products = binary(
      Op::Mul, acc,
      expand_node(reshape_node(query, with_tail(lead, {length, Sym(1), features})), products_shape),
      expand_node(reshape_node(key, with_tail(lead, {Sym(1), keys, features})), products_shape));
  const SymShape scores_shape = with_tail(lead, {length, keys});
  UOpRef scores = reshape_node(reduce_node(products, ReduceOp::Sum, {rank + 2}), scores_shape);
  scores = binary(Op::Mul, acc, scores, const_like(arg.scale, acc, scores));
  const UOpRef dropped = const_like(-infinity, acc, scores);
  if (attention->srcs().size() > 3) {
    const UOpRef& mask = attention->src(3);
    scores = mask->dtype().is_bool() ? select(mask, scores, dropped)
                                     : binary(Op::Add, acc, scores, cast(mask, acc));
  }
  if (arg.causal) {
    SymShape row_shape(lead.size(), Sym(1)), column_shape(lead.size(), Sym(1));
    row_shape.insert(row_shape.end(), {length, Sym(1)});
    column_shape.insert(column_shape.end(), {Sym(1), keys});
    const UOpRef rows = expand_node(
        reshape_node(UOp::make_symbolic(Op::Iota, dtypes::int32, {}, {}, SymShape{length}),
                     row_shape),
        scores_shape);
    const UOpRef columns = expand_node(
        reshape_node(UOp::make_symbolic(Op::Iota, dtypes::int32, {}, {}, SymShape{keys}),
                     column_shape),
        scores_shape);
    scores = select(binary(Op::CmpLe, dtypes::bool_, columns, rows), scores, dropped);
  }
  // The softmax over S, shifted by a row's largest score (by 0 where all are -inf: its weights
  // are then 0, not NaN, and the row's result 0).
  const UOpRef peak = expand_node(reduce_node(scores, ReduceOp::Max, {rank + 1}), scores_shape);
  const UOpRef shift =
      select(binary(Op::CmpEq, dtypes::bool_, peak, dropped), const_like(0, acc, peak), peak);
  const UOpRef exponent =
      UOp::make(Op::Exp, acc, {binary(Op::Sub, acc, scores, shift)}, {}, scores->shape());
  const UOpRef total = expand_node(reduce_node(exponent, ReduceOp::Sum, {rank + 1}), scores_shape);
  const UOpRef zero = const_like(0, acc, scores);
  const UOpRef weights = select(binary(Op::CmpEq, dtypes::bool_, total, zero), zero,
                                binary(Op::Div, acc, exponent, total));
  // (..., L, S, 1) * (..., 1, S, Ev) summed over S.
  const SymShape weighted_shape = with_tail(lead, {length, keys, value_features});
  // A key of weight 0 adds nothing, even where its value is inf or NaN (as in the kernel).
  const UOpRef spread_weights =
      expand_node(reshape_node(weights, with_tail(lead, {length, keys, Sym(1)})), weighted_shape);
  const UOpRef weighted = select(
      binary(Op::CmpEq, dtypes::bool_, spread_weights, const_like(0, acc, spread_weights)),
      const_like(0, acc, spread_weights),
      binary(Op::Mul, acc, spread_weights,
             expand_node(reshape_node(value, with_tail(lead, {Sym(1), keys, value_features})),
                         weighted_shape)));
  const UOpRef result = reshape_node(reduce_node(weighted, ReduceOp::Sum, {rank + 1}),
                                     with_tail(lead, {length, value_features}));
  return cast(result, dtype);
}

}  // namespace kiln

// Lowering an Attention: each work item owns query rows (its lanes: neighbouring rows where an
// UPCAST gives it several) and walks the keys once. For each key it computes the row's score,
// and keeps a running maximum m, the sum l of exp(score - m) and the sum of exp(score - m) times
// the key's value row; when m grows, both sums are rescaled by exp(old m - new m) (the online
// softmax). The scores live in registers only: the kernel reads q, k, v (and the mask) and writes
// the output, whatever the sequence lengths. A work item's rows share each key's and value's
// loads.

#include <kiln/error.h>

#include <limits>

#include "codegen/launch_index.h"
#include "codegen/lowerer.h"

namespace kiln {

void Lowerer::lower_attention() {
  const UOpRef& attention = item_.ast;
  const AttentionArg& arg = attention->attention_arg();
  const UOpRef& query = attention->src(0);
  const UOpRef& key = attention->src(1);
  const UOpRef& value = attention->src(2);
  const UOpRef mask = attention->srcs().size() > 3 ? attention->src(3) : nullptr;
  const DType dtype = attention->dtype();
  // Scores and sums in float32, or float64 for float64 (a half type's scores would overflow).
  const DType acc_dtype = dtype == dtypes::float64 ? dtypes::float64 : dtypes::float32;
  const SymShape shape = attention->sym_shape();
  const size_t ndim = shape.size();
  const size_t row_axis = ndim - 2, last = ndim - 1;
  const int64_t features = query->shape().back();        // E
  const int64_t value_features = value->shape().back();  // Ev
  const Sym keys_length = key->sym_shape()[row_axis];    // S

  SymShape lines = shape;
  lines[last] = Sym(1);
  const LaunchIndex launched = index_launch(plan_, tile_counts(lines), program_);
  store_guard_ = launched.store_guard;
  Lanes lanes, store_lanes;
  std::vector<Sym> lane_guards;
  tile_lanes(launched.tile, lines, lanes, store_lanes, lane_guards);
  const auto at = [](Index index, size_t axis, const Sym& position) {
    index[axis] = position;
    return index;
  };
  const auto as_acc = [&](int loaded) { return cast_to(loaded, acc_dtype); };
  const auto acc_constant = [&](double number) {
    return constant(acc_dtype, const_of(acc_dtype, number));
  };
  const double infinity = std::numeric_limits<double>::infinity();
  const int minus_infinity = acc_constant(-infinity);
  const int zero = acc_constant(0);
  const int scale = acc_constant(arg.scale);

  // A lane past a symbolic axis' size reads nothing (its loads are gated off).
  std::vector<std::vector<int>> queries(lanes.size());
  for (size_t lane = 0; lane < lanes.size(); ++lane) {
    gated(lane_guards[lane], [&] {
      for (int64_t feature = 0; feature < features; ++feature)
        queries[lane].push_back(as_acc(lower_one(query, at(lanes[lane], last, Sym(feature)))));
      return 0;
    });
  }
  struct RowState {
    int maximum = -1, total = -1;
    std::vector<int> weighted;
  };
  std::vector<RowState> states(lanes.size());
  for (RowState& state : states) {
    state.maximum = define_accumulators(ReduceOp::Max, acc_dtype, 1)[0];
    state.total = define_accumulators(ReduceOp::Sum, acc_dtype, 1)[0];
    state.weighted = define_accumulators(ReduceOp::Sum, acc_dtype, value_features);
  }
  const auto set = [&](int accumulator, int new_value) {
    LinInstr update{LinOp::AccUpdate, acc_dtype};
    update.srcs = {accumulator, new_value};
    update.primitive = true;  // the accumulator takes the value computed before it
    emit(std::move(update));
  };

  // Causal: no key past the work item's last row counts, so the walk stops there (a row's
  // keys are about half of them on average).
  Sym walked = keys_length;
  if (arg.causal) {
    Sym last_row = lanes[0][row_axis];
    for (const Index& lane : lanes) last_row = sym_max(last_row, lane[row_axis]);
    walked = sym_min(keys_length, last_row + Sym(1));
  }
  std::vector<int> loops;
  const Sym step = open_loop(loops, walked);
  for (size_t lane = 0; lane < lanes.size(); ++lane) {
    gated(lane_guards[lane], [&] {
      const Index key_row = at(lanes[lane], row_axis, step);
      int dot = -1;
      for (int64_t feature = 0; feature < features; ++feature) {
        const int term = alu(Op::Mul, acc_dtype,
                             {queries[lane][static_cast<size_t>(feature)],
                              as_acc(lower_one(key, at(key_row, last, Sym(feature))))});
        dot = dot < 0 ? term : alu(Op::Add, acc_dtype, {dot, term});
      }
      int score = alu(Op::Mul, acc_dtype, {features == 0 ? zero : dot, scale});
      if (mask) {
        const int mask_value = lower_one(mask, at(lanes[lane], last, step));
        score = mask->dtype().is_bool()
                    ? alu(Op::Where, acc_dtype, {mask_value, score, minus_infinity})
                    : alu(Op::Add, acc_dtype, {score, as_acc(mask_value)});
      }
      if (arg.causal) {
        const int visible = index_value(le(step, lanes[lane][row_axis]), dtypes::bool_);
        score = alu(Op::Where, acc_dtype, {visible, score, minus_infinity});
      }
      RowState& state = states[lane];
      // While every score so far is -inf, exponents are taken from 0: the weights stay 0 and
      // nothing computes -inf - -inf.
      const int maximum = alu(Op::Max, acc_dtype, {state.maximum, score});
      const int empty = alu(Op::CmpEq, dtypes::bool_, {maximum, minus_infinity});
      const int base = alu(Op::Where, acc_dtype, {empty, zero, maximum});
      const int rescale = alu(Op::Exp, acc_dtype, {alu(Op::Sub, acc_dtype, {state.maximum, base})});
      const int weight = alu(Op::Exp, acc_dtype, {alu(Op::Sub, acc_dtype, {score, base})});
      const int total =
          alu(Op::Add, acc_dtype, {alu(Op::Mul, acc_dtype, {state.total, rescale}), weight});
      const int unweighted = alu(Op::CmpEq, dtypes::bool_, {weight, zero});
      // Sums the new maximum makes weigh 0 are 0, even inf ones (their keys' final weights are 0,
      // which add nothing: the same values in any order of the keys).
      const int outweighed = alu(Op::CmpEq, dtypes::bool_, {rescale, zero});
      std::vector<int> weighted;
      for (int64_t feature = 0; feature < value_features; ++feature) {
        const int value_at = as_acc(lower_one(value, at(key_row, last, Sym(feature))));
        const int kept = state.weighted[static_cast<size_t>(feature)];
        // A key of weight 0 (dropped, or too small to count) adds nothing, even where its value
        // is inf or NaN (a cache's unused slots behind a mask).
        const int term = alu(Op::Where, acc_dtype,
                             {unweighted, zero, alu(Op::Mul, acc_dtype, {weight, value_at})});
        const int rescaled =
            alu(Op::Where, acc_dtype, {outweighed, zero, alu(Op::Mul, acc_dtype, {kept, rescale})});
        weighted.push_back(alu(Op::Add, acc_dtype, {rescaled, term}));
      }
      set(state.maximum, maximum);
      set(state.total, total);
      for (size_t feature = 0; feature < weighted.size(); ++feature)
        set(state.weighted[feature], weighted[feature]);
      return 0;
    });
  }
  close_loop(loops);

  // A row with no score above -inf attends to nothing: 0.
  const SymShape strides = View::contiguous_strides(shape);
  for (size_t lane = 0; lane < lanes.size(); ++lane) {
    const RowState& state = states[lane];
    const int nothing = alu(Op::CmpEq, dtypes::bool_, {state.total, zero});
    for (int64_t feature = 0; feature < value_features; ++feature) {
      const int mean =
          alu(Op::Div, acc_dtype, {state.weighted[static_cast<size_t>(feature)], state.total});
      const int result = alu(Op::Where, acc_dtype, {nothing, zero, mean});
      const Index stored_at = at(store_lanes[lane], last, Sym(feature));
      Sym flat(0);
      for (size_t dim = 0; dim < ndim; ++dim) flat = flat + stored_at[dim] * strides[dim];
      LinInstr store{LinOp::Store, dtype};
      store.srcs = {cast_to(result, dtype)};
      store.buffer = 0;
      store.index = flat;
      store.valid = logical_and(store_guard_, lane_guards[lane]);
      emit(std::move(store));
    }
  }
}

}  // namespace kiln

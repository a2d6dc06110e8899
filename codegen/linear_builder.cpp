#include "codegen/linear_builder.h"

#include <cmath>
#include <limits>

#include "core/const_fold.h"
#include "core/hash.h"

namespace kiln {

ConstArg const_of(DType dtype, double value) {
  ConstArg arg;
  arg.float_value = value;
  arg.int_value = std::isfinite(value) ? static_cast<int64_t>(value) : 0;
  if (dtype.is_unsigned() && value >= 9223372036854775808.0) {
    arg.int_value = static_cast<int64_t>(static_cast<uint64_t>(value));
  }
  return arg;
}

ConstArg reduce_identity(ReduceOp op, DType dtype) {
  switch (op) {
    case ReduceOp::Sum:
      return const_of(dtype, 0);
    case ReduceOp::Prod:
      return const_of(dtype, 1);
    case ReduceOp::Max: {
      if (dtype.is_float()) return const_of(dtype, -std::numeric_limits<double>::infinity());
      ConstArg arg = const_of(dtype, dtype.min_value());
      if (dtype == dtypes::int64) arg.int_value = std::numeric_limits<int64_t>::min();
      return arg;
    }
    case ReduceOp::Min: {
      if (dtype.is_float()) return const_of(dtype, std::numeric_limits<double>::infinity());
      ConstArg arg = const_of(dtype, dtype.max_value());
      if (dtype == dtypes::int64) arg.int_value = std::numeric_limits<int64_t>::max();
      if (dtype == dtypes::uint64) arg.int_value = -1;  // all bits set
      return arg;
    }
  }
  return {};
}

LinearBuilder::LinearBuilder() {
  scopes_.emplace_back();
}

size_t ValueKeyHash::operator()(const ValueKey& key) const {
  size_t seed = hash_combine(static_cast<size_t>(key.kind), std::hash<const void*>()(key.node));
  seed = hash_combine(seed, std::hash<int>()(key.buffer));
  for (const Sym& value : key.at) seed = hash_combine(seed, value.hash());
  return seed;
}

void LinearBuilder::remember(ValueKey key, int value) {
  scopes_.back()[std::move(key)] = value;
}

int LinearBuilder::emit(LinInstr instr) {
  program_.instrs.push_back(std::move(instr));
  return static_cast<int>(program_.instrs.size()) - 1;
}

int LinearBuilder::constant(DType dtype, ConstArg value) {
  LinInstr instr{LinOp::Const, dtype};
  instr.value = value;
  return emit(std::move(instr));
}

int LinearBuilder::index_value(const Sym& index, DType dtype) {
  LinInstr instr{LinOp::Index, dtypes::int64};
  instr.index = index;
  int value = emit(std::move(instr));
  return cast_to(value, dtype);
}

int LinearBuilder::cast_to(int value, DType dtype) {
  if (program_.instrs[value].dtype == dtype) return value;
  if (const std::optional<int> constant = folded(Op::Cast, dtype, {value})) return *constant;
  LinInstr instr{LinOp::Cast, dtype};
  instr.srcs = {value};
  return emit(std::move(instr));
}

int LinearBuilder::bitcast_to(int value, DType dtype) {
  const DType from = program_.instrs[value].dtype;
  if (from == dtype) return value;
  // Integers of one size share their bits through a cast, which wraps (int8 <-> uint8 too).
  if (!from.is_float() && !dtype.is_float()) return cast_to(value, dtype);
  const int size = dtype.itemsize();
  const DType word = size == 2 ? dtypes::uint16 : size == 4 ? dtypes::uint32 : dtypes::uint64;
  auto reinterpret = [&](int source, DType target) {
    LinInstr instr{LinOp::Bitcast, target};
    instr.srcs = {source};
    return emit(std::move(instr));
  };
  const int bits = from.is_float() ? reinterpret(value, word) : cast_to(value, word);
  return dtype.is_float() ? reinterpret(bits, dtype) : cast_to(bits, dtype);
}

std::optional<int> LinearBuilder::folded(Op op, DType dtype, const std::vector<int>& srcs) {
  std::vector<TypedConst> operands;
  for (int src : srcs) {
    const LinInstr& instr = program_.instrs[src];
    if (instr.op != LinOp::Const) return std::nullopt;
    operands.push_back({instr.dtype, instr.value});
  }
  const std::optional<ConstArg> value = fold_constant(op, dtype, operands);
  if (!value) return std::nullopt;
  return constant(dtype, *value);
}

int LinearBuilder::alu(Op op, DType dtype, std::vector<int> srcs) {
  if (const std::optional<int> constant = folded(op, dtype, srcs)) return *constant;
  if (op == Op::Pow && !dtype.is_float()) return integer_pow(srcs[0], srcs[1], dtype);
  // x^2 as x * x: the one rounding a correctly rounded pow makes (for the 16-bit floats too, whose
  // square is exact in float32), where a pow call costs a log and an exp (a norm's |g|^2).
  if (op == Op::Pow && program_.instrs[srcs[1]].op == LinOp::Const &&
      program_.instrs[srcs[1]].value.float_value == 2.0)
    return alu(Op::Mul, dtype, {srcs[0], srcs[0]});
  LinInstr instr{LinOp::Alu, dtype};
  instr.alu = op;
  instr.srcs = std::move(srcs);
  return emit(std::move(instr));
}

int LinearBuilder::integer_pow(int base, int exponent, DType dtype) {
  const LinInstr& given = program_.instrs[exponent];
  const bool known = given.op == LinOp::Const;
  const uint64_t known_bits = static_cast<uint64_t>(given.value.int_value);
  const bool is_signed = dtype.is_signed_int();
  const bool known_negative = known && is_signed && given.value.int_value < 0;
  const int width = static_cast<int>(dtype.itemsize()) * 8;
  int top = is_signed ? width - 1 : width;  // a negative exponent's bits are not a power's
  if (known) top = known_negative ? 0 : 64 - __builtin_clzll(known_bits | 1);
  const int zero = constant(dtype, make_const(0, dtype));
  const int one = constant(dtype, make_const(1, dtype));
  int result = one, power = base;
  bool multiplied = false;
  for (int bit = 0; bit < top; ++bit) {
    if (!known) {
      const int mask = constant(dtype, make_const(std::ldexp(1.0, bit), dtype));
      const int set = alu(Op::CmpNe, dtypes::bool_, {alu(Op::And, dtype, {exponent, mask}), zero});
      result = alu(Op::Where, dtype, {set, alu(Op::Mul, dtype, {result, power}), result});
    } else if ((known_bits >> bit) & 1) {
      result = multiplied ? alu(Op::Mul, dtype, {result, power}) : power;
      multiplied = true;
    }
    if (bit + 1 < top) power = alu(Op::Mul, dtype, {power, power});
  }
  if (!is_signed || (known && !known_negative)) return result;
  const int minus_one = constant(dtype, make_const(-1, dtype));
  const int unit = alu(Op::Or, dtypes::bool_,
                       {alu(Op::CmpEq, dtypes::bool_, {base, one}),
                        alu(Op::CmpEq, dtypes::bool_, {base, minus_one})});
  const int odd = alu(Op::CmpNe, dtypes::bool_, {alu(Op::And, dtype, {exponent, one}), zero});
  const int unit_power = alu(Op::Where, dtype, {odd, base, alu(Op::Mul, dtype, {base, base})});
  const int reciprocal = alu(Op::Where, dtype, {unit, unit_power, zero});
  if (known) return reciprocal;
  const int negative = alu(Op::CmpLt, dtypes::bool_, {exponent, zero});
  return alu(Op::Where, dtype, {negative, reciprocal, result});
}

int LinearBuilder::masked(int value, const Sym& valid, DType dtype) {
  if (valid.is_const()) return valid.const_value() ? value : constant(dtype, ConstArg{});
  const int condition = index_value(valid, dtypes::bool_);
  return alu(Op::Where, dtype, {condition, value, constant(dtype, ConstArg{})});
}

const int* LinearBuilder::find_value(const ValueKey& key) const {
  for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope) {
    auto found = scope->find(key);
    if (found != scope->end()) return &found->second;
  }
  return nullptr;
}

int LinearBuilder::masked_identity(int value, const Sym& valid, ReduceOp op, DType dtype) {
  const int condition = index_value(valid, dtypes::bool_);
  return alu(Op::Where, dtype, {condition, value, constant(dtype, reduce_identity(op, dtype))});
}

int LinearBuilder::combine(std::vector<int> terms, ReduceOp op, DType dtype) {
  static constexpr Op kCombine[] = {Op::Add, Op::Mul, Op::Max, Op::Min};
  while (terms.size() > 1) {
    std::vector<int> pairs;
    for (size_t at = 0; at + 1 < terms.size(); at += 2)
      pairs.push_back(alu(kCombine[static_cast<int>(op)], dtype, {terms[at], terms[at + 1]}));
    if (terms.size() % 2) pairs.push_back(terms.back());
    terms = std::move(pairs);
  }
  return terms[0];
}

std::vector<int> LinearBuilder::combine_across_group(std::vector<int> values, ReduceOp op,
                                                     DType dtype, int64_t group,
                                                     const Sym& group_lane) {
  const int64_t lanes = static_cast<int64_t>(values.size());
  LinInstr define{LinOp::DefineLocal, dtype};
  define.local_size = group * lanes;
  const int local = emit(std::move(define));
  auto slot = [&](int64_t value, const Sym& member) { return Sym(value * group) + member; };
  auto load = [&](const Sym& index, const Sym& valid) {
    LinInstr instr{LinOp::Load, dtype};
    instr.buffer = local;
    instr.local = true;
    instr.index = index;
    instr.valid = valid;
    return emit(std::move(instr));
  };
  auto store = [&](const Sym& index, int value, const Sym& valid) {
    LinInstr instr{LinOp::Store, dtype};
    instr.srcs = {value};
    instr.buffer = local;
    instr.local = true;
    instr.index = index;
    instr.valid = valid;
    emit(std::move(instr));
  };
  for (int64_t value = 0; value < lanes; ++value)
    store(slot(value, group_lane), values[value], Sym(1));
  emit(LinInstr{LinOp::Barrier, dtypes::int64});
  // A tree: each step, the first `active` items fold in the partial `half` places above their
  // own (the part above the largest power of two first, then halves), so log2(group) steps
  // rather than every item reading all `group` partials.
  for (int64_t width = group; width > 1;) {
    int64_t half = 1;
    while (half * 2 < width) half *= 2;
    const Sym active = lt(group_lane, Sym(width - half));
    for (int64_t value = 0; value < lanes; ++value) {
      const int own = load(slot(value, group_lane), active);
      const int other = load(slot(value, group_lane + Sym(half)), active);
      store(slot(value, group_lane), combine({own, other}, op, dtype), active);
    }
    emit(LinInstr{LinOp::Barrier, dtypes::int64});
    width = half;
  }
  std::vector<int> totals;
  for (int64_t value = 0; value < lanes; ++value)
    totals.push_back(load(slot(value, Sym(0)), Sym(1)));
  return totals;
}

std::vector<int> LinearBuilder::define_accumulators(ReduceOp op, DType dtype, size_t count) {
  std::vector<int> accumulators;
  for (size_t lane = 0; lane < count; ++lane) {
    LinInstr define{LinOp::AccDefine, dtype};
    define.value = reduce_identity(op, dtype);
    accumulators.push_back(emit(std::move(define)));
  }
  return accumulators;
}

void LinearBuilder::accumulate(int accumulator, int value, ReduceOp op) {
  LinInstr update{LinOp::AccUpdate, program_.instrs[accumulator].dtype};
  update.srcs = {accumulator, value};
  update.reduce = op;
  emit(std::move(update));
}

Sym LinearBuilder::open_loop(std::vector<int>& loops, const Sym& size) {
  const std::string name = "r" + std::to_string(loop_counter_++);
  LinInstr begin{LinOp::LoopBegin, dtypes::int64};
  begin.loop_var = name;
  begin.loop_end = size;
  loops.push_back(emit(std::move(begin)));
  scopes_.emplace_back();
  return Sym::var(name, 0, std::max<int64_t>(size.vmax(), 1) - 1);
}

void LinearBuilder::close_loop(std::vector<int>& loops) {
  emit(LinInstr{LinOp::LoopEnd, dtypes::int64});
  scopes_.pop_back();
  loops.pop_back();
}

bool LinearBuilder::innermost_body(size_t start) const {
  for (size_t index = start; index < program_.instrs.size(); ++index) {
    if (program_.instrs[index].op == LinOp::LoopBegin) return false;
  }
  return true;
}

}  // namespace kiln

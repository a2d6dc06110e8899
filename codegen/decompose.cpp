#include "codegen/decompose.h"

#include <kiln/error.h>

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "codegen/tensor_cores.h"

namespace kiln {
namespace {

bool is_integer(DType dtype) {
  return !dtype.is_float() && !dtype.is_bool();
}

// Signed + - * << where the dialect's signed overflow is undefined: done in unsigned types.
bool wraps_through_unsigned(Op op, DType operand, const Dialect& dialect) {
  return !dialect.signed_overflow_wraps && operand.is_signed_int() &&
         (op == Op::Add || op == Op::Sub || op == Op::Mul || op == Op::Shl);
}

bool semantic_alu(Op op, DType operand, const Dialect& dialect) {
  switch (op) {
    case Op::Div:
    case Op::Mod:
    case Op::Neg:
    case Op::Abs:
      return !operand.is_float();
    case Op::Max:
    case Op::Min:
      return true;
    case Op::Add:
    case Op::Mul:
      return operand.is_bool() || wraps_through_unsigned(op, operand, dialect);
    case Op::Sub:
    case Op::Shl:
      return wraps_through_unsigned(op, operand, dialect);
    default:
      return false;
  }
}

// The update an AccUpdate does is the Alu of reduce_alu_op (a float sum or product is the target's
// own operator: it stays one statement).
bool semantic_update(ReduceOp reduce, DType dtype, const Dialect& dialect) {
  return semantic_alu(reduce_alu_op(reduce), dtype, dialect);
}

bool semantic_cast(DType from, DType to) {
  return from.is_float() && is_integer(to);
}

// A half-typed value is computed in float; where it is compared or converted it is first
// rounded to its dtype, as it would be had it been stored, so that fusing a producer into its
// consumer does not change a comparison (argmax compares a computed value with its stored
// maximum). Buffer loads and constants hold exact half values already, and a Bitcast's value is
// rounded; local memory holds computed values (TILE stages a computed input there) unrounded.
bool inexact_half(const LinInstr& instr) {
  if (!instr.dtype.is_half()) return false;
  return !((instr.op == LinOp::Load && !instr.local) || instr.op == LinOp::Const ||
           instr.op == LinOp::Bitcast);
}

// Compilers may fold (float)(int)x into trunc(x) (gcc does without -ftrapping-math), which gives
// -0.0 for x in (-1, 0); an integer has no -0.
bool converts_truncated_float(const std::vector<LinInstr>& instrs, const LinInstr& cast) {
  const LinInstr& source = instrs[cast.srcs[0]];
  return cast.op == LinOp::Cast && cast.dtype.is_float() && !source.dtype.is_float() &&
         source.op == LinOp::Cast && instrs[source.srcs[0]].dtype.is_float();
}

// A vector of 16-bit elements (vectorize joins them where the dialect has Dialect::word_buffer):
// read and written as 32-bit words, two elements a word, the first in its low half.
bool packed_vector(const LinInstr& instr) {
  return (instr.op == LinOp::Load || instr.op == LinOp::Store) && !instr.words &&
         instr.dtype.itemsize() == 2 && (instr.vector_width > 1 || instr.vector_head >= 0);
}

// TC's fragment ops on a dialect without matrix units: each work item computes its own 8
// elements of every 16x16 result (see emulate_fragment).
bool emulated_fragment(const LinInstr& instr, const Dialect& dialect) {
  return !dialect.mma && (instr.op == LinOp::FragmentDefine || instr.op == LinOp::FragmentLoad ||
                          instr.op == LinOp::Mma || instr.op == LinOp::FragmentStore);
}

// A store into a packed local array (LinInstr::packed) that fragments read: where they are
// emulated the array holds floats, each the 16-bit value it stands for (as matrix units read it),
// so a value not already of the array's half type is rounded to it first.
bool unrounded_packed_store(const std::vector<LinInstr>& instrs, const LinInstr& instr,
                            const Dialect& dialect) {
  if (instr.op != LinOp::Store || !instr.local || dialect.mma || !instrs[instr.buffer].packed)
    return false;
  const LinInstr& value = instrs[instr.srcs[0]];
  return value.dtype != instr.dtype || inexact_half(value);
}

bool needs_decomposition(const std::vector<LinInstr>& instrs, const LinInstr& instr,
                         const Dialect& dialect) {
  if (instr.primitive) return false;
  if (packed_vector(instr) || emulated_fragment(instr, dialect)) return true;
  switch (instr.op) {
    case LinOp::Alu:
      if (is_comparison(instr.alu))
        return inexact_half(instrs[instr.srcs[0]]) || inexact_half(instrs[instr.srcs[1]]);
      return semantic_alu(instr.alu, instrs[instr.srcs[0]].dtype, dialect);
    case LinOp::Cast: {
      const LinInstr& source = instrs[instr.srcs[0]];
      return semantic_cast(source.dtype, instr.dtype) || converts_truncated_float(instrs, instr) ||
             inexact_half(source) || (instr.dtype.is_half() && source.dtype != instr.dtype);
    }
    case LinOp::AccUpdate:
      return semantic_update(instr.reduce, instrs[instr.srcs[1]].dtype, dialect);
    case LinOp::Store:
      return unrounded_packed_store(instrs, instr, dialect);
    default:
      return false;
  }
}

class Decomposer {
 public:
  Decomposer(LinearProgram program, const Dialect& dialect)
      : program_(std::move(program)), dialect_(dialect) {}

  LinearProgram run() {
    const std::vector<LinInstr> source = std::move(program_.instrs);
    program_.instrs.clear();
    program_.instrs.reserve(source.size());
    renumbered_.assign(source.size(), -1);
    for (size_t at = 0; at < source.size(); ++at) {
      const bool needs = needs_decomposition(source, source[at], dialect_);
      // These read the instructions they name as they were (a fragment, a vector's head).
      if (needs && packed_vector(source[at])) {
        renumbered_[at] =
            source[at].op == LinOp::Load ? unpack_load(source, at) : pack_store(source[at]);
        continue;
      }
      if (needs && emulated_fragment(source[at], dialect_)) {
        renumbered_[at] = emulate_fragment(source, at);
        continue;
      }
      const bool truncated_float = needs && converts_truncated_float(source, source[at]);
      LinInstr instr = source[at];
      renumber(instr);
      renumbered_[at] = needs ? decompose(std::move(instr), truncated_float) : emit(instr);
    }
    return std::move(program_);
  }

 private:
  void renumber(LinInstr& instr) const {
    for (int& src : instr.srcs) src = renumbered_[src];
    if (instr.reduction_acc >= 0) instr.reduction_acc = renumbered_[instr.reduction_acc];
    if (instr.vector_head >= 0) instr.vector_head = renumbered_[instr.vector_head];
    // A local array is named by its position; a parameter by its number.
    const bool local_array =
        instr.local || instr.op == LinOp::FragmentLoad || instr.op == LinOp::FragmentStore;
    if (local_array && instr.buffer >= 0) instr.buffer = renumbered_[instr.buffer];
  }

  int decompose(LinInstr instr, bool truncated_float) {
    switch (instr.op) {
      case LinOp::Alu:
        return alu(instr.alu, instr.dtype, instr.srcs);
      case LinOp::Cast: {
        const int value = rounded(instr.srcs[0]);
        const DType from = dtype_of(value), to = instr.dtype;
        if (truncated_float) return positive_zero_cast(to, value);
        if (semantic_cast(from, to)) return saturating_cast(to, value);
        const int converted = convert(to, value);
        // A conversion into a half type rounds to it.
        return to.is_half() && from != to ? rounded(converted) : converted;
      }
      case LinOp::AccUpdate: {
        // The accumulator's new value, then the update stores it.
        const int acc = instr.srcs[0], value = instr.srcs[1];
        const DType dtype = dtype_of(value);
        const bool value_first = instr.reduce == ReduceOp::Max || instr.reduce == ReduceOp::Min;
        instr.srcs[1] =
            alu(reduce_alu_op(instr.reduce), dtype,
                value_first ? std::vector<int>{value, acc} : std::vector<int>{acc, value});
        instr.primitive = true;
        return emit(std::move(instr));
      }
      case LinOp::Store: {
        // Into a packed local array where fragments are emulated: rounded to its half type.
        int value = instr.srcs[0];
        if (dtype_of(value) != instr.dtype) value = convert(instr.dtype, value);
        instr.srcs[0] = rounded(value);
        return emit(std::move(instr));
      }
      default:
        throw InternalError("[decompose_semantics] nothing to decompose in " + program_.name);
    }
  }

  // A 16-bit vector load (its head, at `at`) as the 32-bit words that hold it, and each of its
  // elements (the head's, and a later lane's, also at `at`) unpacked from its word.
  int unpack_load(const std::vector<LinInstr>& source, size_t at) {
    const LinInstr& load = source[at];
    if (load.vector_head >= 0) {
      const std::vector<int>& words = words_.at(load.vector_head);
      return unpack(load.dtype, words[load.vector_lane / 2], load.vector_lane % 2);
    }
    LinInstr head(LinOp::Load, dtypes::uint32);
    head.buffer = load.buffer;
    head.words = true;
    head.index = floordiv(load.index, Sym(2));
    head.vector_width = load.vector_width / 2;
    std::vector<int> words{emit(head)};
    for (int word = 1; word < load.vector_width / 2; ++word) {
      LinInstr lane(LinOp::Load, dtypes::uint32);
      lane.buffer = load.buffer;
      lane.words = true;
      lane.index = head.index + Sym(word);
      lane.vector_head = words[0];
      lane.vector_lane = word;
      words.push_back(emit(std::move(lane)));
    }
    words_[static_cast<int>(at)] = words;
    return unpack(load.dtype, words[0], 0);
  }

  // The element of `dtype` in the low (`high` 0) or high half of the uint32 `word`.
  int unpack(DType dtype, int word, int high) {
    const int half_word =
        high ? op(Op::Shr, dtypes::uint32, {word, constant(dtypes::uint32, 16)})
             : op(Op::And, dtypes::uint32, {word, constant(dtypes::uint32, 0xffff)});
    const int bits = convert(dtypes::uint16, half_word);
    if (dtype.is_half()) return bitcast(dtype, bits);
    return dtype == dtypes::uint16 ? bits : convert(dtype, bits);
  }

  // A 16-bit vector store (its head; the lanes' stores write nothing, and go) as 32-bit words,
  // each two elements' bits, the first in its low half.
  int pack_store(const LinInstr& store) {
    if (store.vector_head >= 0) return -1;
    std::vector<int> words;
    for (size_t lane = 0; lane + 1 < store.srcs.size(); lane += 2) {
      const int low = bits(store.dtype, renumbered_[store.srcs[lane]]);
      const int high = bits(store.dtype, renumbered_[store.srcs[lane + 1]]);
      const int shifted = op(Op::Shl, dtypes::uint32, {high, constant(dtypes::uint32, 16)});
      words.push_back(op(Op::Or, dtypes::uint32, {low, shifted}));
    }
    LinInstr packed(LinOp::Store, dtypes::uint32);
    packed.buffer = store.buffer;
    packed.words = true;
    packed.index = floordiv(store.index, Sym(2));
    packed.valid = store.valid;
    packed.vector_width = static_cast<int>(words.size());
    packed.srcs = std::move(words);
    return emit(std::move(packed));
  }

  // A value's 16 bits as `dtype` (a half type's rounded to even, as a scalar store does), in a
  // uint32.
  int bits(DType dtype, int value) {
    if (dtype_of(value) != dtype) {
      if (semantic_cast(dtype_of(value), dtype))
        throw InternalError("[decompose_semantics] a float stored into " +
                            std::string(dtype.name()) + " elements in " + program_.name);
      value = convert(dtype, value);
    }
    const int bits16 =
        dtype.is_half() ? bitcast(dtypes::uint16, value) : convert(dtypes::uint16, value);
    return convert(dtypes::uint32, bits16);
  }

  // Emulated fragment op `at`: a fragment is 8 float accumulators, a work item's elements of
  // the 16x16 result, in row lane / 2 from column (lane % 2) * 8 on; Mma is a loop over the 16
  // reduce steps that reads A and B from their local arrays (FragmentLoad reads nothing);
  // FragmentStore stores the 8 into the result's local array.
  int emulate_fragment(const std::vector<LinInstr>& source, size_t at) {
    constexpr int kElementsPerLane = 8;
    constexpr int64_t kLanesPerRow = kFragment / kElementsPerLane;
    const LinInstr& instr = source[at];
    const auto column = [&](int element) {
      return mod(instr.lane, Sym(kLanesPerRow)) * Sym(kElementsPerLane) + Sym(element);
    };
    const Sym row = floordiv(instr.lane, Sym(kLanesPerRow));
    switch (instr.op) {
      case LinOp::FragmentDefine: {
        std::vector<int> elements;
        for (int element = 0; element < kElementsPerLane; ++element)
          elements.push_back(emit(LinInstr(LinOp::AccDefine, dtypes::float32)));
        fragments_[static_cast<int>(at)] = elements;
        return elements[0];
      }
      case LinOp::FragmentLoad:
        return -1;
      case LinOp::Mma: {
        const std::vector<int>& accumulator = fragments_.at(instr.srcs[0]);
        const LinInstr& a = source[instr.srcs[1]];
        const LinInstr& b = source[instr.srcs[2]];
        const std::string step = "mma" + std::to_string(at);
        LinInstr begin(LinOp::LoopBegin, dtypes::int64);
        begin.loop_var = step;
        begin.loop_end = Sym(kFragment);
        emit(std::move(begin));
        const Sym k = Sym::var(step, 0, kFragment - 1);
        // A is column-major: (row, k) at a.index + k * a.stride + row.
        const int a_value = local_load(renumbered_[a.buffer], a.index + k * Sym(a.stride) + row);
        for (int element = 0; element < kElementsPerLane; ++element) {
          const int b_value =
              local_load(renumbered_[b.buffer], b.index + k * Sym(b.stride) + column(element));
          LinInstr update(LinOp::AccUpdate, dtypes::float32);
          update.reduce = ReduceOp::Sum;
          update.srcs = {accumulator[element], op(Op::Mul, dtypes::float32, {a_value, b_value})};
          emit(std::move(update));
        }
        emit(LinInstr(LinOp::LoopEnd, dtypes::int64));
        return -1;
      }
      case LinOp::FragmentStore: {
        const std::vector<int>& accumulator = fragments_.at(instr.srcs[0]);
        const int array = renumbered_[instr.buffer];
        for (int element = 0; element < kElementsPerLane; ++element) {
          LinInstr store(LinOp::Store, dtype_of(array));
          store.local = true;
          store.buffer = array;
          store.index = instr.index + row * Sym(instr.stride) + column(element);
          store.srcs = {accumulator[element]};
          emit(std::move(store));
        }
        return -1;
      }
      default:
        throw InternalError("[decompose_semantics] not a fragment op in " + program_.name);
    }
  }

  // An element of the local array `array`, which holds computed floats.
  int local_load(int array, const Sym& index) {
    LinInstr load(LinOp::Load, dtypes::float32);
    load.local = true;
    load.buffer = array;
    load.index = index;
    return emit(std::move(load));
  }

  DType dtype_of(int value) const { return program_.instrs[value].dtype; }

  int emit(LinInstr instr) {
    program_.instrs.push_back(std::move(instr));
    return static_cast<int>(program_.instrs.size()) - 1;
  }

  // The target's own `op` (flagged primitive where kiln's op of that name means more).
  int op(Op alu_op, DType dtype, std::vector<int> srcs, bool primitive = false) {
    LinInstr instr(LinOp::Alu, dtype);
    instr.alu = alu_op;
    instr.srcs = std::move(srcs);
    instr.primitive = primitive;
    return emit(std::move(instr));
  }

  // `primitive`: half values compared as computed, not rounded (see inexact_half).
  int compare(Op alu_op, int a, int b, bool primitive = false) {
    return op(alu_op, dtypes::bool_, {a, b}, primitive);
  }

  int bitcast(DType dtype, int value) {
    LinInstr instr(LinOp::Bitcast, dtype);
    instr.srcs = {value};
    return emit(std::move(instr));
  }

  // `value` rounded to its half type, through its 16 bits (see inexact_half).
  int rounded(int value) {
    if (!inexact_half(program_.instrs[value])) return value;
    const DType half = dtype_of(value);
    return bitcast(half, bitcast(dtypes::uint16, value));
  }

  int select(int condition, int if_true, int if_false) {
    return op(Op::Where, dtype_of(if_true), {condition, if_true, if_false});
  }

  int constant(DType dtype, int64_t int_value, double float_value) {
    LinInstr instr(LinOp::Const, dtype);
    instr.value = ConstArg{float_value, int_value};
    return emit(std::move(instr));
  }

  int constant(DType dtype, int64_t value) {
    return constant(dtype, value, static_cast<double>(value));
  }

  // The target's conversion (into a half type: to a float, not rounded).
  int convert(DType dtype, int value) {
    const LinInstr& source = program_.instrs[value];
    // An integer constant that the target type holds is that type's constant.
    if (source.op == LinOp::Const && is_integer(source.dtype) && is_integer(dtype) &&
        source.value.int_value >= 0 && dtype.is_unsigned())
      return constant(dtype, source.value.int_value);
    LinInstr instr(LinOp::Cast, dtype);
    instr.srcs = {value};
    instr.primitive = true;
    return emit(std::move(instr));
  }

  // kiln's `alu_op` on srcs as instructions the target computes the same way.
  int alu(Op alu_op, DType dtype, const std::vector<int>& srcs) {
    if (is_comparison(alu_op)) return compare(alu_op, rounded(srcs[0]), rounded(srcs[1]));
    const DType operand = dtype_of(srcs[0]);
    if (!semantic_alu(alu_op, operand, dialect_)) return op(alu_op, dtype, srcs);
    const int a = srcs[0];
    const int b = srcs.size() > 1 ? srcs[1] : -1;
    switch (alu_op) {
      case Op::Div:
      case Op::Mod:
        // For bools, a / b (b true) is a, and a % b is false.
        if (operand.is_bool())
          return alu_op == Op::Div ? op(Op::And, dtype, {a, b}) : constant(dtype, 0);
        return divide(alu_op, dtype, a, b);
      case Op::Max:
      case Op::Min:
        return max_min(alu_op, dtype, a, b);
      case Op::Neg:
        if (operand.is_bool()) return op(Op::Not, dtype, {a});
        return alu(Op::Sub, dtype, {constant(dtype, 0), a});
      case Op::Abs: {
        if (!operand.is_signed_int()) return a;
        const int negative = compare(Op::CmpLt, a, constant(operand, 0));
        return select(negative, alu(Op::Neg, dtype, {a}), a);
      }
      case Op::Add:
      case Op::Mul:
        if (operand.is_bool()) return op(alu_op == Op::Add ? Op::Or : Op::And, dtype, {a, b});
        return wrapping(alu_op, dtype, a, b);
      case Op::Sub:
      case Op::Shl:
        return wrapping(alu_op, dtype, a, b);
      default:
        break;
    }
    throw InternalError(std::string("[decompose_semantics] no decomposition of ") +
                        op_name(alu_op));
  }

  // Integer a / b and a % b: by zero gives 0; MIN / -1 wraps (to -MIN, which is MIN) and
  // MIN % -1 is 0. The target divides only by a divisor that is neither 0 nor -1 (x86 traps on
  // both), then selects.
  int divide(Op alu_op, DType dtype, int a, int b) {
    const DType operand = dtype_of(a);
    const int by_zero = compare(Op::CmpEq, b, constant(operand, 0));
    int refused = by_zero, by_minus_one = -1;
    if (operand.is_signed_int()) {
      by_minus_one = compare(Op::CmpEq, b, constant(operand, -1));
      refused = op(Op::Or, dtypes::bool_, {by_zero, by_minus_one});
    }
    const int divisor = select(refused, constant(operand, 1), b);
    const int result = op(alu_op, dtype, {a, divisor}, /*primitive=*/true);
    if (by_minus_one < 0 || alu_op == Op::Mod) return select(refused, constant(dtype, 0), result);
    const int by_one = select(by_minus_one, alu(Op::Neg, dtype, {a}), result);
    return select(by_zero, constant(dtype, 0), by_one);
  }

  // kiln's max and min: a float NaN operand wins (a's first). Half values are compared as
  // computed: one of them is the result either way.
  int max_min(Op alu_op, DType dtype, int a, int b) {
    if (dtype_of(a).is_bool()) return op(alu_op == Op::Max ? Op::Or : Op::And, dtype, {a, b});
    const bool as_computed = dtype_of(a).is_half();
    int take_a = compare(alu_op == Op::Max ? Op::CmpGt : Op::CmpLt, a, b, as_computed);
    if (dtype_of(a).is_float())
      take_a = op(Op::Or, dtypes::bool_, {compare(Op::CmpNe, a, a, as_computed), take_a});
    return select(take_a, a, b);
  }

  // Signed a op b, wrapping, where the dialect's signed overflow is undefined: in the unsigned
  // type of the operands' width (at least 32 bits, as narrower ones promote to int), converted
  // back.
  int wrapping(Op alu_op, DType dtype, int a, int b) {
    if (!wraps_through_unsigned(alu_op, dtype_of(a), dialect_)) return op(alu_op, dtype, {a, b});
    const DType as_unsigned = dtype.itemsize() == 8 ? dtypes::uint64 : dtypes::uint32;
    const int result = op(alu_op, as_unsigned, {convert(as_unsigned, a), convert(as_unsigned, b)});
    return convert(dtype, result);
  }

  // Float to integer: truncate, saturate at the target's range, NaN gives 0. The bounds are
  // powers of two (exact in float), so the value is compared in its own type. The target's
  // conversion of a value outside the range gives some value (x86 and LLVM's an unspecified one,
  // none traps), which the selects discard: clamping the value before it cost the CPU's loops a
  // third of their speed.
  int saturating_cast(DType to, int value) {
    const DType from = dtype_of(value);
    // A half type's value is a float.
    const DType bound_type = from.is_half() ? dtypes::float32 : from;
    const int nan = compare(Op::CmpNe, value, value);
    const int below = compare(Op::CmpLt, value, constant(bound_type, 0, to.min_value()));
    const int above = compare(Op::CmpGe, value, constant(bound_type, 0, to.max_value() + 1.0));
    LinInstr converted(LinOp::Cast, to);
    converted.srcs = {value};
    converted.primitive = true;
    const int truncated = emit(std::move(converted));
    const int64_t lowest = to.is_unsigned()      ? 0
                           : to == dtypes::int64 ? std::numeric_limits<int64_t>::min()
                                                 : static_cast<int64_t>(to.min_value());
    const int64_t highest = to == dtypes::uint64  ? -1  // the bit pattern of 2^64 - 1
                            : to == dtypes::int64 ? std::numeric_limits<int64_t>::max()
                                                  : static_cast<int64_t>(to.max_value());
    const int saturated_high = select(above, constant(to, highest), truncated);
    const int saturated = select(below, constant(to, lowest), saturated_high);
    return select(nan, constant(to, 0), saturated);
  }

  // An integer that was a float, converted to float: a zero stays positive (a select: gcc drops
  // a `+ 0.0`, reasoning that an integer converted is never -0).
  int positive_zero_cast(DType to, int value) {
    const DType from = dtype_of(value);
    LinInstr converted(LinOp::Cast, to);
    converted.srcs = {value};
    converted.primitive = true;
    const int result = emit(std::move(converted));
    const int zero = compare(Op::CmpEq, value, constant(from, 0));
    return select(zero, constant(to, 0), result);
  }

  LinearProgram program_;
  const Dialect& dialect_;
  std::vector<int> renumbered_;
  // By their position in the source program: a 16-bit vector load's words, an emulated
  // fragment's accumulators.
  std::map<int, std::vector<int>> words_;
  std::map<int, std::vector<int>> fragments_;
};

}  // namespace

bool needs_decomposition(const LinearProgram& program, int index, const Dialect& dialect) {
  return needs_decomposition(program.instrs, program.instrs[index], dialect);
}

LinearProgram decompose_semantics(LinearProgram program, const Dialect& dialect) {
  return Decomposer(std::move(program), dialect).run();
}

}  // namespace kiln

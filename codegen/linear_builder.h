#pragma once
// Building a linear program instruction by instruction: constants folded as they are made, loops
// that open a scope of reusable values and close it, and the reduction steps lowering shares
// (accumulators, masked steps, pairwise combining, combining across a workgroup).

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/linear.h"

namespace kiln {

// `value` as a constant of `dtype` (the integer field saturates at the int64 range, except
// uint64's upper half).
ConstArg const_of(DType dtype, double value);
// The value a reduction starts from: 0, 1, the lowest or the highest value of `dtype`.
ConstArg reduce_identity(ReduceOp op, DType dtype);

// What a value computed during lowering is, so that it is computed once per scope: a node at a
// lane's index (and gate), or a load from a buffer or from local memory at an index. Compared by
// structure: UOps and Syms are hash-consed, so their pointers compare.
struct ValueKey {
  enum class Kind : uint8_t { Node, Load, LocalLoad };
  Kind kind = Kind::Node;
  const UOp* node = nullptr;  // Node: the UOp lowered
  int buffer = -1;            // Load, LocalLoad: the parameter or the local buffer
  std::vector<Sym> at;        // the index (and validity or gate) it is computed at

  bool operator==(const ValueKey& other) const {
    return kind == other.kind && node == other.node && buffer == other.buffer && at == other.at;
  }
};

struct ValueKeyHash {
  size_t operator()(const ValueKey& key) const;
};

class LinearBuilder {
 public:
  LinearBuilder();

  // Appends an instruction; returns its position (the value's name).
  int emit(LinInstr instr);
  int constant(DType dtype, ConstArg value);
  // The integer value of an index expression, converted to `dtype`.
  int index_value(const Sym& index, DType dtype);
  int cast_to(int value, DType dtype);
  // `value`'s bits as `dtype` (of the same size): through the unsigned integer of that size.
  int bitcast_to(int value, DType dtype);
  int alu(Op op, DType dtype, std::vector<int> srcs);
  // value where `valid` holds, else zero of the value's dtype.
  int masked(int value, const Sym& valid, DType dtype);
  // `value` where `valid` holds, else the reduction's identity (a masked step adds nothing).
  int masked_identity(int value, const Sym& valid, ReduceOp op, DType dtype);
  // Partial results combined pairwise, in a fixed order.
  int combine(std::vector<int> terms, ReduceOp op, DType dtype);
  // A workgroup of `group` work items (`group_lane` is each one's place) combines its partial
  // results: each puts its own in local memory, and they are combined as a tree, pairs in a fixed
  // order, a barrier after each of the log2(group) steps; every item then reads the totals.
  // Returns them, one per value.
  std::vector<int> combine_across_group(std::vector<int> values, ReduceOp op, DType dtype,
                                        int64_t group, const Sym& group_lane);
  std::vector<int> define_accumulators(ReduceOp op, DType dtype, size_t count);
  void accumulate(int accumulator, int value, ReduceOp op);
  // Opens `for var in [0, size)` with its own scope of values (pushed on `loops`); returns var.
  Sym open_loop(std::vector<int>& loops, const Sym& size);
  void close_loop(std::vector<int>& loops);
  // True when no loop opens between `start` and the end of the program.
  bool innermost_body(size_t start) const;

  // Values already computed, by key, in the open scopes (innermost first).
  const int* find_value(const ValueKey& key) const;
  void remember(ValueKey key, int value);

 protected:
  LinearProgram program_;

 private:
  // An integer power (no dialect has one) as multiplies: squares and selects per bit of the
  // exponent (only its set bits where it is a constant), wrapping as the multiplies do; a
  // negative exponent gives 1 / base^-n truncated toward zero (1 for a base of 1, +-1 for -1,
  // else 0), as the folder computes it (core/const_fold.h).
  int integer_pow(int base, int exponent, DType dtype);
  // A constant for an op whose operands are all constants (none of its work left to the device
  // compiler); nullopt otherwise.
  std::optional<int> folded(Op op, DType dtype, const std::vector<int>& srcs);

  std::vector<std::unordered_map<ValueKey, int, ValueKeyHash>> scopes_;
  int loop_counter_ = 0;
};

}  // namespace kiln

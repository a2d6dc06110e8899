#pragma once
// The UOp: kiln's one IR node. Immutable and hash-consed: building the same node twice (same op,
// dtype, sources, argument and shape) returns the same object, so equal subexpressions are shared
// and pointer equality is structural equality.
//
// The tensor-level graph uses the ops up to Copy. Every node has a concrete shape. Elementwise
// ops take sources of their own shape; movement is a View node over its source; a Reduce keeps
// the rank (reduced axes become size 1).

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <kiln/dtype.h>

#include "core/hash.h"
#include "core/spin_lock.h"
#include "core/view.h"

namespace kiln {

using Shape = std::vector<int64_t>;

enum class Op : uint8_t {
  // Leaves.
  Buffer,  // realized data; arg: std::shared_ptr<Storage>
  Const,   // arg: ConstArg; every element has the value
  Iota,    // 1-D; element i has the value i
  // Movement: arg is the ShapeTracker mapping this node's shape onto its source's elements.
  View,
  // Unary.
  Neg,
  Not,
  Abs,
  Recip,
  Sqrt,
  Exp,
  Exp2,
  Log,
  Log2,
  Sin,
  Cos,
  Tan,
  Tanh,
  Erf,
  // The C library's functions of those names.
  Asin,
  Acos,
  Atan,
  Sinh,
  Cosh,
  Asinh,
  Acosh,
  Atanh,
  Log10,
  Log1p,
  Expm1,
  Floor,
  Ceil,
  Round,
  Trunc,
  // Binary.
  Add,
  Sub,
  Mul,
  Div,
  Mod,
  Max,
  Min,
  Pow,
  // The C library's atan2(y, x), hypot and copysign (floats only).
  Atan2,
  Hypot,
  Copysign,
  CmpLt,
  CmpLe,
  CmpGt,
  CmpGe,
  CmpEq,
  CmpNe,
  And,
  Or,
  Xor,
  Shl,
  Shr,
  // Ternary.
  Where,
  // Changes the dtype (values convert; float to int truncates toward zero).
  Cast,
  // The source's bits read as the node's dtype, of the same size (a half type's value through its
  // 16 bits).
  Bitcast,
  // arg: ReduceArg.
  Reduce,
  // Forces its source to be realized into a buffer of its own.
  Contiguous,
  // Moves its source to another device; arg: the device name.
  Copy,
  // A load from computed addresses: out[p] = srcs[0][p with position p[axis] replaced by
  // srcs[1][p]], where srcs[1] (the index, an integer dtype) has the node's shape and srcs[0]
  // (the source) has it along every axis but `axis`. A negative signed index counts from the end;
  // any other index outside the axis reads nothing and is reported (an IndexError). arg:
  // GatherArg.
  Gather,
  // Stores to computed addresses: srcs[0] (the destination's values, the node's shape) with
  // srcs[2] written where srcs[1] (the index, an integer dtype) points: for each position p of
  // the index's shape, element p with p[axis] replaced by srcs[1][p] takes srcs[2][p] (srcs[2] has
  // the index's shape; the index is no larger than the node along every other axis). Positions
  // along `axis` are visited in ascending order, so a later index wins a replace and a float
  // reduction combines the destination's value, then the values in that order; every run and
  // device gets the same result. Index semantics as a Gather's. Always realized into a buffer of
  // its own (one a Scatter it is the only user of may update in place). arg: ScatterArg.
  Scatter,
  // Scaled dot-product attention over the last two axes, in one kernel that never stores the
  // scores: for each query row i, out[..., i, :] = sum_j w_ij v[..., j, :] where w_i is the softmax
  // over j of s_ij = scale * (q[..., i, :] . k[..., j, :]), plus srcs[3][..., i, j] where a float
  // mask is given, and -inf where a bool mask is false or (causal) j > i. A row whose scores are
  // all -inf is 0. srcs: q (..., L, E), k (..., S, E), v (..., S, Ev) and an optional mask
  // (..., L, S), all of the node's leading sizes; the node is (..., L, Ev) in q's dtype. Scores,
  // the running maximum and sum and the weighted sum are kept in float32 (float64 for float64):
  // one pass over the keys rescales what it has summed when the maximum grows (online softmax).
  // Always realized into a buffer of its own. arg: AttentionArg.
  Attention,
  // Writes srcs[1] (the node's shape and dtype) into srcs[0], a realized Buffer, in place; the
  // node's value is then that buffer. Only Tensor::assign makes one, and realizes it at once.
  Assign,
};

enum class ReduceOp : uint8_t { Sum, Prod, Max, Min };

struct ConstArg {
  double float_value = 0;
  int64_t int_value = 0;  // exact value for integer dtypes (uint64 stored as its bit pattern)
  bool operator==(const ConstArg& other) const;
};

struct ReduceArg {
  ReduceOp op;
  std::vector<int> axes;  // sorted
  bool operator==(const ReduceArg& other) const { return op == other.op && axes == other.axes; }
};

struct GatherArg {
  int axis = 0;
  std::string op;  // the Tensor operation it serves, for the IndexError ("embedding")
  bool operator==(const GatherArg& other) const { return axis == other.axis && op == other.op; }
};

struct ScatterArg {
  int axis = 0;
  // How a written value combines with the element: none (replaced), or reduced into it.
  std::optional<ReduceOp> reduce;
  std::string op;  // the Tensor operation it serves, for the IndexError ("scatter_reduce")
  bool operator==(const ScatterArg& other) const {
    return axis == other.axis && reduce == other.reduce && op == other.op;
  }
};

struct AttentionArg {
  double scale = 1;
  bool causal = false;  // drop key j for query i where j > i
  bool operator==(const AttentionArg& other) const {
    return scale == other.scale && causal == other.causal;
  }
};

// Realized device memory. The runtime derives its buffers from this; core only holds them.
class Storage {
 public:
  virtual ~Storage() = default;
  virtual const std::string& device() const = 0;
  virtual size_t nbytes() const = 0;

  // Counts writes in place (Tensor::assign): a value realized into this storage before a write
  // is no longer the value of the graph it was realized for (UOp::realized_value).
  uint64_t version() const { return version_.load(std::memory_order_acquire); }
  void note_written() { version_.fetch_add(1, std::memory_order_acq_rel); }

 private:
  std::atomic<uint64_t> version_{0};
};

using Arg =
    std::variant<std::monostate, ConstArg, ShapeTracker, ReduceArg, std::shared_ptr<Storage>,
                 std::string, GatherArg, ScatterArg, AttentionArg>;

class UOp;
using UOpRef = std::shared_ptr<const UOp>;

class UOp {
 public:
  // The one way to make a node; returns the existing node when an equal one is alive.
  //
  // Shapes may be symbolic: a size may be an expression over variables (core/symbolic.h), bound
  // to values in the tensor graph and unbound in a kernel's generic ast. A leaf (Buffer, Const,
  // Iota) is given its symbolic shape by make_symbolic; every other node derives it (a View from
  // its tracker, a Reduce from its source, elementwise ops from their sources), so the `shape`
  // argument only matters where nothing is symbolic.
  static UOpRef make(Op op, DType dtype, std::vector<UOpRef> srcs, Arg arg, Shape shape);
  static UOpRef make_symbolic(Op op, DType dtype, std::vector<UOpRef> srcs, Arg arg,
                              const SymShape& shape);

  Op op() const { return op_; }
  DType dtype() const { return dtype_; }
  const std::vector<UOpRef>& srcs() const { return srcs_; }
  const UOpRef& src(size_t index = 0) const { return srcs_[index]; }
  const Arg& arg() const { return arg_; }
  // The sizes, with bound variables at their values (an unbound one at its largest value).
  const Shape& shape() const { return shape_; }
  // Whether some size is an expression over variables; sym_shape() then gives the expressions.
  bool is_symbolic() const { return sym_shape_ != nullptr; }
  SymShape sym_shape() const;
  int64_t numel() const;
  size_t hash() const { return hash_; }

  const ConstArg& const_arg() const { return std::get<ConstArg>(arg_); }
  const ShapeTracker& tracker() const { return std::get<ShapeTracker>(arg_); }
  const ReduceArg& reduce_arg() const { return std::get<ReduceArg>(arg_); }
  const std::shared_ptr<Storage>& storage() const {
    return std::get<std::shared_ptr<Storage>>(arg_);
  }
  const std::string& device_arg() const { return std::get<std::string>(arg_); }
  const GatherArg& gather_arg() const { return std::get<GatherArg>(arg_); }
  const ScatterArg& scatter_arg() const { return std::get<ScatterArg>(arg_); }
  const AttentionArg& attention_arg() const { return std::get<AttentionArg>(arg_); }

  // One line: op, dtype, shape and argument.
  std::string to_string() const;

  // The value this node was realized to (a Buffer node, or a View of one) while that value is
  // alive and its storage has not been written in place since, else null: a graph that uses this
  // node reads the value instead of computing it again. The node does not keep the value alive
  // (the tensor that realized it does). Realizes in several threads may read and set it at once:
  // each is one step under a lock, and two threads that realize the same node set equal values
  // (the later one is kept).
  UOpRef realized_value() const;
  void set_realized_value(const UOpRef& value) const;

  // A Buffer node whose storage was written in place (Tensor::assign) while graphs built before
  // the write held this node: a Buffer node with the contents as they were, which those graphs
  // read instead. Unlike realized_value it is what the node means, not a saving: the node holds
  // it, and every schedule reads it (a capture's too). Null for every other node. Where that
  // snapshot was written in place in turn, its own snapshot.
  UOpRef snapshot() const;
  void set_snapshot(const UOpRef& contents) const;

  UOp(Op op, DType dtype, std::vector<UOpRef> srcs, Arg arg, Shape shape,
      std::shared_ptr<const SymShape> sym_shape, size_t hash)
      : op_(op),
        dtype_(dtype),
        srcs_(std::move(srcs)),
        arg_(std::move(arg)),
        shape_(std::move(shape)),
        sym_shape_(std::move(sym_shape)),
        hash_(hash) {}

 private:
  static UOpRef make_interned(Op op, DType dtype, std::vector<UOpRef>&& srcs, Arg&& arg,
                              Shape&& shape, std::shared_ptr<const SymShape>&& sym_shape);
  Op op_;
  DType dtype_;
  std::vector<UOpRef> srcs_;
  Arg arg_;
  Shape shape_;
  std::shared_ptr<const SymShape> sym_shape_;  // null where every size is a number
  size_t hash_;
  mutable std::weak_ptr<const UOp> weak_self_;  // lets the intern table hand out owners
  mutable std::weak_ptr<const UOp> realized_;   // see realized_value()
  mutable uint64_t realized_version_ = 0;       // its storage's version when realized
  mutable UOpRef snapshot_;                     // see snapshot()
  mutable SpinLock realized_lock_;              // guards realized_, its version and snapshot_
  mutable std::atomic<bool> ever_realized_{false};
  mutable std::atomic<bool> has_snapshot_{false};
};

const char* op_name(Op op);
const char* reduce_op_name(ReduceOp op);
// The binary op a reduction combines two values with (Sum: Add).
Op reduce_alu_op(ReduceOp op);
bool is_unary(Op op);
bool is_binary(Op op);
bool is_comparison(Op op);
bool is_elementwise(Op op);  // unary, binary, Where and Cast

// Every node reachable from the roots, sources before users.
std::vector<UOpRef> toposort(const std::vector<UOpRef>& roots);
// The graph as text, one node per line (what KILN_DEBUG=5 prints).
std::string graph_to_string(const std::vector<UOpRef>& roots);
// The graph as Graphviz dot.
std::string graph_to_dot(const std::vector<UOpRef>& roots);

}  // namespace kiln

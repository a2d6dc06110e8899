#include "core/uop.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace kiln {

namespace {

size_t hash_arg(const Arg& arg) {
  struct Visitor {
    size_t operator()(const std::monostate&) const { return 0; }
    size_t operator()(const ConstArg& value) const {
      uint64_t bits;
      std::memcpy(&bits, &value.float_value, 8);
      return hash_combine(std::hash<uint64_t>()(bits), std::hash<int64_t>()(value.int_value));
    }
    size_t operator()(const ShapeTracker& tracker) const { return tracker.hash(); }
    size_t operator()(const ReduceArg& reduce) const {
      size_t seed = static_cast<size_t>(reduce.op);
      for (int axis : reduce.axes) seed = hash_combine(seed, static_cast<size_t>(axis));
      return seed;
    }
    size_t operator()(const std::shared_ptr<Storage>& storage) const {
      return std::hash<const void*>()(storage.get());
    }
    size_t operator()(const std::string& text) const { return std::hash<std::string>()(text); }
    size_t operator()(const GatherArg& gather) const {
      return hash_combine(static_cast<size_t>(gather.axis), std::hash<std::string>()(gather.op));
    }
    size_t operator()(const ScatterArg& scatter) const {
      size_t seed = hash_combine(static_cast<size_t>(scatter.axis),
                                 scatter.reduce ? static_cast<size_t>(*scatter.reduce) + 1 : 0);
      return hash_combine(seed, std::hash<std::string>()(scatter.op));
    }
    size_t operator()(const AttentionArg& attention) const {
      return hash_combine(std::hash<double>()(attention.scale),
                          static_cast<size_t>(attention.causal));
    }
  };
  return std::visit(Visitor{}, arg) + arg.index();
}

// The intern table: hash -> live nodes with that hash. A node's deleter removes its entry. In
// shards by hash, each with its own lock, so that threads building graphs at once rarely wait
// for each other (a node is made in about 100 ns; one lock made two threads slower than one).
struct InternShard {
  SpinLock lock;
  std::unordered_multimap<size_t, const UOp*> nodes;
};

constexpr size_t kInternShards = 64;

InternShard& intern_shard(size_t hash) {
  // Never destroyed: nodes may outlive statics.
  static InternShard* shards = new InternShard[kInternShards];
  return shards[(hash ^ (hash >> 32)) % kInternShards];
}

bool same_sym_shape(const UOp& node, const SymShape* sym_shape) {
  if (node.is_symbolic() != (sym_shape != nullptr)) return false;
  return !sym_shape || node.sym_shape() == *sym_shape;
}

bool same_node(const UOp& node, Op op, DType dtype, const std::vector<UOpRef>& srcs, const Arg& arg,
               const Shape& shape, const SymShape* sym_shape) {
  if (node.op() != op || node.dtype() != dtype || node.shape() != shape) return false;
  if (!same_sym_shape(node, sym_shape)) return false;
  if (node.srcs().size() != srcs.size()) return false;
  for (size_t index = 0; index < srcs.size(); ++index) {
    if (node.srcs()[index].get() != srcs[index].get()) return false;
  }
  return node.arg() == arg;
}

}  // namespace

bool ConstArg::operator==(const ConstArg& other) const {
  // Bitwise, so that NaN equals NaN and -0.0 differs from 0.0.
  return std::memcmp(&float_value, &other.float_value, 8) == 0 && int_value == other.int_value;
}

namespace {

bool all_const(const SymShape& shape) {
  return std::all_of(shape.begin(), shape.end(), [](const Sym& size) { return size.is_const(); });
}

// The symbolic shape a non-leaf node derives from its argument or sources; null where it is
// made of numbers only.
std::shared_ptr<const SymShape> derived_sym_shape(Op op, const std::vector<UOpRef>& srcs,
                                                  const Arg& arg) {
  if (op == Op::View) {
    const SymShape& shape = std::get<ShapeTracker>(arg).shape();
    return all_const(shape) ? nullptr : std::make_shared<const SymShape>(shape);
  }
  // A Gather has its index's shape.
  if (op == Op::Gather)
    return srcs[1]->is_symbolic() ? std::make_shared<const SymShape>(srcs[1]->sym_shape())
                                  : nullptr;
  // A Scatter has its destination's shape, an Assign its target's.
  if (op == Op::Scatter || op == Op::Assign)
    return srcs[0]->is_symbolic() ? std::make_shared<const SymShape>(srcs[0]->sym_shape())
                                  : nullptr;
  // Attention has q's leading sizes and v's last.
  if (op == Op::Attention) {
    if (!srcs[0]->is_symbolic() && !srcs[2]->is_symbolic()) return nullptr;
    SymShape shape = srcs[0]->sym_shape();
    shape.back() = srcs[2]->sym_shape().back();
    return all_const(shape) ? nullptr : std::make_shared<const SymShape>(std::move(shape));
  }
  const bool symbolic =
      std::any_of(srcs.begin(), srcs.end(), [](const UOpRef& src) { return src->is_symbolic(); });
  if (!symbolic) return nullptr;
  if (op == Op::Reduce) {
    SymShape shape = srcs[0]->sym_shape();
    for (int axis : std::get<ReduceArg>(arg).axes) shape[axis] = Sym(1);
    return all_const(shape) ? nullptr : std::make_shared<const SymShape>(std::move(shape));
  }
  // Elementwise, Cast, Contiguous and Copy: the sources have the node's shape; each size is the
  // first source's that is symbolic there.
  SymShape shape;
  for (const UOpRef& src : srcs) {
    if (!src->is_symbolic()) continue;
    const SymShape src_shape = src->sym_shape();
    if (shape.empty()) shape = src_shape;
    for (size_t axis = 0; axis < shape.size() && axis < src_shape.size(); ++axis) {
      if (shape[axis].is_const() && !src_shape[axis].is_const()) shape[axis] = src_shape[axis];
    }
  }
  return std::make_shared<const SymShape>(std::move(shape));
}

}  // namespace

UOpRef UOp::make_symbolic(Op op, DType dtype, std::vector<UOpRef> srcs, Arg arg,
                          const SymShape& shape) {
  const bool leaf = op == Op::Buffer || op == Op::Const || op == Op::Iota;
  if (!leaf || all_const(shape))
    return make(op, dtype, std::move(srcs), std::move(arg), shape_values(shape));
  return make_interned(op, dtype, std::move(srcs), std::move(arg), shape_values(shape),
                       std::make_shared<const SymShape>(shape));
}

UOpRef UOp::make(Op op, DType dtype, std::vector<UOpRef> srcs, Arg arg, Shape shape) {
  std::shared_ptr<const SymShape> sym_shape;
  if (op != Op::Buffer && op != Op::Const && op != Op::Iota) {
    sym_shape = derived_sym_shape(op, srcs, arg);
    if (sym_shape) shape = shape_values(*sym_shape);
  }
  return make_interned(op, dtype, std::move(srcs), std::move(arg), std::move(shape),
                       std::move(sym_shape));
}

UOpRef UOp::make_interned(Op op, DType dtype, std::vector<UOpRef>&& srcs, Arg&& arg, Shape&& shape,
                          std::shared_ptr<const SymShape>&& sym_shape) {
  size_t hash = hash_combine(static_cast<size_t>(op), static_cast<size_t>(dtype.type()));
  for (const UOpRef& src : srcs) hash = hash_combine(hash, src->hash());
  hash = hash_combine(hash, hash_arg(arg));
  for (int64_t size : shape) hash = hash_combine(hash, std::hash<int64_t>()(size));
  if (sym_shape) {
    for (const Sym& size : *sym_shape) hash = hash_combine(hash, size.hash());
  }

  InternShard& table = intern_shard(hash);
  std::lock_guard<SpinLock> held(table.lock);
  auto [begin, end] = table.nodes.equal_range(hash);
  for (auto entry = begin; entry != end; ++entry) {
    const UOp* existing = entry->second;
    if (!same_node(*existing, op, dtype, srcs, arg, shape, sym_shape.get())) continue;
    // The node may be mid-destruction (its count reached zero); then build a fresh one.
    if (UOpRef alive = existing->weak_self_.lock()) return alive;
  }
  auto deleter = [](const UOp* node) {
    {
      InternShard& owner = intern_shard(node->hash());
      std::lock_guard<SpinLock> held(owner.lock);
      auto [first, last] = owner.nodes.equal_range(node->hash());
      for (auto entry = first; entry != last; ++entry) {
        if (entry->second == node) {
          owner.nodes.erase(entry);
          break;
        }
      }
    }
    // Dropping the sources may free them in turn: done by a loop rather than by recursion, so
    // that a chain 100,000 nodes deep does not exhaust the stack. The outermost deleter on this
    // thread owns the list; the ones it sets off append to it. (A pointer, not a thread_local
    // vector: that would be destroyed at exit before static caches drop their nodes.)
    thread_local std::vector<UOpRef>* orphans = nullptr;
    UOp* owned = const_cast<UOp*>(node);  // the last owner: nothing else can see it now
    if (orphans) {
      for (UOpRef& src : owned->srcs_) orphans->push_back(std::move(src));
      delete owned;  // outside the lock
      return;
    }
    std::vector<UOpRef> pending = std::move(owned->srcs_);
    delete owned;
    orphans = &pending;
    while (!pending.empty()) {
      UOpRef last = std::move(pending.back());
      pending.pop_back();
      last.reset();  // may run this deleter, which only appends to `pending`
    }
    orphans = nullptr;
  };
  UOpRef node(new UOp(op, dtype, std::move(srcs), std::move(arg), std::move(shape),
                      std::move(sym_shape), hash),
              deleter);
  node->weak_self_ = node;
  table.nodes.emplace(hash, node.get());
  return node;
}

namespace {

// The storage a realized value (a Buffer node, or a View of one) is in.
const Storage& storage_of_value(const UOp& value) {
  return *(value.op() == Op::Buffer ? value : *value.src()).storage();
}

}  // namespace

UOpRef UOp::realized_value() const {
  // Most nodes are never realized (constants, views), and graphs of many threads share them:
  // those are read without writing the lock's cache line.
  if (!ever_realized_.load(std::memory_order_acquire)) return nullptr;
  uint64_t version;
  UOpRef value;
  {
    std::lock_guard<SpinLock> lock(realized_lock_);
    value = realized_.lock();
    version = realized_version_;
  }
  if (!value || storage_of_value(*value).version() != version) return nullptr;
  return value;
}

void UOp::set_realized_value(const UOpRef& value) const {
  const uint64_t version = value ? storage_of_value(*value).version() : 0;
  std::lock_guard<SpinLock> lock(realized_lock_);
  realized_ = value;
  realized_version_ = version;
  ever_realized_.store(true, std::memory_order_release);
}

UOpRef UOp::snapshot() const {
  if (!has_snapshot_.load(std::memory_order_acquire)) return nullptr;
  UOpRef contents;
  {
    std::lock_guard<SpinLock> lock(realized_lock_);
    contents = snapshot_;
  }
  // A snapshot read through a tensor and then written in place has a snapshot of its own.
  while (UOpRef older = contents->snapshot()) contents = std::move(older);
  return contents;
}

void UOp::set_snapshot(const UOpRef& contents) const {
  std::lock_guard<SpinLock> lock(realized_lock_);
  snapshot_ = contents;
  has_snapshot_.store(true, std::memory_order_release);
}

SymShape UOp::sym_shape() const {
  return sym_shape_ ? *sym_shape_ : to_sym_shape(shape_);
}

int64_t UOp::numel() const {
  int64_t total = 1;
  for (int64_t size : shape_) total *= size;
  return total;
}

const char* op_name(Op op) {
  static const char* const kNames[] = {
      "BUFFER", "CONST",   "IOTA",   "VIEW",       "NEG",   "NOT",    "ABS",     "RECIP",
      "SQRT",   "EXP",     "EXP2",   "LOG",        "LOG2",  "SIN",    "COS",     "TAN",
      "TANH",   "ERF",     "ASIN",   "ACOS",       "ATAN",  "SINH",   "COSH",    "ASINH",
      "ACOSH",  "ATANH",   "LOG10",  "LOG1P",      "EXPM1", "FLOOR",  "CEIL",    "ROUND",
      "TRUNC",  "ADD",     "SUB",    "MUL",        "DIV",   "MOD",    "MAX",     "MIN",
      "POW",    "ATAN2",   "HYPOT",  "COPYSIGN",   "CMPLT", "CMPLE",  "CMPGT",   "CMPGE",
      "CMPEQ",  "CMPNE",   "AND",    "OR",         "XOR",   "SHL",    "SHR",     "WHERE",
      "CAST",   "BITCAST", "REDUCE", "CONTIGUOUS", "COPY",  "GATHER", "SCATTER", "ATTENTION",
      "ASSIGN"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<size_t>(Op::Assign) + 1,
                "a name for every Op");
  return kNames[static_cast<int>(op)];
}

const char* reduce_op_name(ReduceOp op) {
  static const char* const kNames[] = {"SUM", "PROD", "MAX", "MIN"};
  return kNames[static_cast<int>(op)];
}

Op reduce_alu_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return Op::Add;
    case ReduceOp::Prod:
      return Op::Mul;
    case ReduceOp::Max:
      return Op::Max;
    case ReduceOp::Min:
      return Op::Min;
  }
  return Op::Add;
}

bool is_unary(Op op) {
  return op >= Op::Neg && op <= Op::Trunc;
}
bool is_binary(Op op) {
  return op >= Op::Add && op <= Op::Shr;
}
bool is_comparison(Op op) {
  return op >= Op::CmpLt && op <= Op::CmpNe;
}
bool is_elementwise(Op op) {
  return is_unary(op) || is_binary(op) || op == Op::Where || op == Op::Cast || op == Op::Bitcast;
}

std::string UOp::to_string() const {
  std::ostringstream text;
  text << op_name(op_) << " " << dtype_.name() << " (";
  for (size_t dim = 0; dim < shape_.size(); ++dim) {
    text << (dim ? ", " : "");
    if (sym_shape_) {
      text << (*sym_shape_)[dim].key();
    } else {
      text << shape_[dim];
    }
  }
  text << ")";
  struct Visitor {
    std::ostringstream& out;
    DType dtype;
    void operator()(const std::monostate&) const {}
    void operator()(const ConstArg& value) const {
      if (dtype.is_float()) {
        out << " " << value.float_value;
      } else {
        out << " " << value.int_value;
      }
    }
    void operator()(const ShapeTracker& tracker) const { out << " " << tracker.to_string(); }
    void operator()(const ReduceArg& reduce) const {
      out << " " << reduce_op_name(reduce.op) << " axes=(";
      for (size_t index = 0; index < reduce.axes.size(); ++index) {
        out << (index ? ", " : "") << reduce.axes[index];
      }
      out << ")";
    }
    void operator()(const std::shared_ptr<Storage>& storage) const {
      out << " " << storage->device() << " " << storage->nbytes() << "B";
    }
    void operator()(const std::string& value) const { out << " " << value; }
    void operator()(const GatherArg& gather) const {
      out << " axis=" << gather.axis << " " << gather.op;
    }
    void operator()(const ScatterArg& scatter) const {
      out << " axis=" << scatter.axis << " "
          << (scatter.reduce ? reduce_op_name(*scatter.reduce) : "REPLACE") << " " << scatter.op;
    }
    void operator()(const AttentionArg& attention) const {
      out << " scale=" << attention.scale << (attention.causal ? " causal" : "");
    }
  };
  std::visit(Visitor{text, dtype_}, arg_);
  return text.str();
}

std::vector<UOpRef> toposort(const std::vector<UOpRef>& roots) {
  std::vector<UOpRef> order;
  std::unordered_set<const UOp*> visited;
  // Iterative post-order, so deep graphs do not exhaust the stack.
  std::vector<std::pair<const UOpRef*, size_t>> stack;
  for (const UOpRef& root : roots) {
    if (!visited.insert(root.get()).second) continue;
    stack.emplace_back(&root, 0);
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next < (*node)->srcs().size()) {
        const UOpRef& src = (*node)->srcs()[next++];
        if (visited.insert(src.get()).second) stack.emplace_back(&src, 0);
      } else {
        order.push_back(*node);
        stack.pop_back();
      }
    }
  }
  return order;
}

std::string graph_to_string(const std::vector<UOpRef>& roots) {
  std::unordered_map<const UOp*, size_t> ids;
  std::ostringstream text;
  for (const UOpRef& node : toposort(roots)) {
    const size_t id = ids.size();
    ids[node.get()] = id;
    text << "%" << id << " = " << node->to_string();
    for (const UOpRef& src : node->srcs()) text << " %" << ids[src.get()];
    text << "\n";
  }
  return text.str();
}

std::string graph_to_dot(const std::vector<UOpRef>& roots) {
  std::unordered_map<const UOp*, size_t> ids;
  std::ostringstream dot;
  dot << "digraph kiln {\n  node [shape=box, fontname=monospace];\n";
  for (const UOpRef& node : toposort(roots)) {
    const size_t id = ids.size();
    ids[node.get()] = id;
    std::string label = node->to_string();
    for (char& c : label) {
      if (c == '"') c = '\'';
    }
    dot << "  n" << id << " [label=\"" << label << "\"];\n";
    for (const UOpRef& src : node->srcs()) dot << "  n" << ids[src.get()] << " -> n" << id << ";\n";
  }
  dot << "}\n";
  return dot.str();
}

}  // namespace kiln

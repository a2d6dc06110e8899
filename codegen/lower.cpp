#include "codegen/lower.h"

#include <kiln/error.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "core/const_fold.h"

namespace kiln {
namespace {

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

std::string index_key(const std::vector<Sym>& index) {
  std::string key;
  for (const Sym& value : index) key += value.key() + ",";
  return key;
}

// Innermost reduction loops that cannot be vectorized are unrolled by this factor.
constexpr int kUnrollFactor = 4;
// Rows shorter than this leave the inner loop of a row-split kernel too short to vectorize well.
constexpr int64_t kMinRowLength = 16;

using Index = std::vector<Sym>;
using Lanes = std::vector<Index>;

// How many outputs one work item computes along the last two output dimensions.
struct Upcast {
  int64_t rows = 1;     // second-to-last dimension
  int64_t columns = 1;  // last dimension
  int64_t lanes() const { return rows * columns; }
};

bool holds_reduce(const UOpRef& ast) {
  for (const UOpRef& node : toposort({ast})) {
    if (node->op() == Op::Reduce) return true;
  }
  return false;
}

// Reduction kernels compute a small tile of outputs per work item, so that loads shared by the
// tile are made once and the tile's lanes vectorize. Candidates from largest to smallest.
std::vector<Upcast> upcast_candidates(const UOpRef& ast) {
  const Shape& shape = ast->shape();
  if (shape.empty() || !holds_reduce(ast)) return {};
  const int64_t last = shape.back();
  const int64_t before_last = shape.size() >= 2 ? shape[shape.size() - 2] : 1;
  std::vector<Upcast> candidates;
  for (const Upcast& candidate :
       {Upcast{4, 16}, Upcast{1, 16}, Upcast{4, 8}, Upcast{1, 8}, Upcast{1, 4}}) {
    if (last % candidate.columns != 0 || before_last % candidate.rows != 0) continue;
    if (ast->numel() / candidate.lanes() < 4) continue;  // keep work for several threads
    candidates.push_back(candidate);
  }
  return candidates;
}

// One loop of a reduction: a reduced axis and its size (above 1).
struct ReduceLoop {
  int axis;
  int64_t size;
};

// A float sum of n terms into one accumulator has an error bound that grows like n. Blocked, the
// loops from `level` inwards add into a fresh block accumulator that is then added to the total,
// so each accumulator takes about sqrt(n) terms and the bound grows like 2 sqrt(n) ulp. Where the
// loops at and inside `level` are far more than sqrt(n) terms, loop `level` itself is split into
// blocks of `length` steps (0: not split); a length that does not divide it masks the tail.
struct BlockedSum {
  bool enabled = false;
  size_t level = 0;
  int64_t length = 0;
};

// Sums of up to this many terms stay in one accumulator: their bound is small already, and most
// kernels (softmax rows, matmul up to K = 4096) keep their loops as they are.
constexpr int64_t kBlockedSumMinTerms = 4096;

BlockedSum plan_blocked_sum(const std::vector<ReduceLoop>& loops) {
  int64_t terms = 1;
  for (const ReduceLoop& loop : loops) terms *= loop.size;
  if (terms <= kBlockedSumMinTerms) return {};
  const int64_t target = static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(terms))));
  BlockedSum plan;
  plan.enabled = true;
  plan.level = loops.size();
  int64_t inner = 1;
  while (plan.level > 0 && inner < target) inner *= loops[--plan.level].size;
  const int64_t size = loops[plan.level].size;
  const int64_t inside = inner / size;  // terms per step of loop `level`
  if (inner <= 2 * target && plan.level > 0) return plan;
  const int64_t wanted = std::max<int64_t>(2, (target + inside - 1) / inside);
  if (wanted >= size) return plan.level > 0 ? plan : BlockedSum{};
  // A divisor of the loop near the wanted length needs no mask.
  plan.length = wanted;
  for (int64_t offset = 0; offset <= wanted / 2; ++offset) {
    if (size % (wanted + offset) == 0) {
      plan.length = wanted + offset;
      break;
    }
    if (wanted - offset >= 2 && size % (wanted - offset) == 0) {
      plan.length = wanted - offset;
      break;
    }
  }
  return plan;
}

class Lowerer {
 public:
  Lowerer(const ScheduleItem& item, Upcast upcast, int64_t row_length = 0)
      : item_(item), upcast_(upcast) {
    program_.row_length = row_length;
  }

  LinearProgram run() {
    program_.params.push_back({item_.output->dtype(), item_.output->numel(), true});
    for (const UOpRef& input : item_.inputs) {
      param_of_[input.get()] = static_cast<int>(program_.params.size());
      program_.params.push_back({input->dtype(), input->numel(), false});
    }
    scopes_.emplace_back();
    const int64_t total = item_.output->numel();
    program_.global_size = total / upcast_.lanes();
    if (total == 0) return std::move(program_);

    // Work item gid covers a tile of rows x columns outputs.
    const Shape& shape = item_.ast->shape();
    const size_t ndim = shape.size();
    SymShape tiles = to_sym_shape(shape);
    if (ndim >= 1) tiles[ndim - 1] = Sym(shape[ndim - 1] / upcast_.columns);
    if (ndim >= 2) tiles[ndim - 2] = Sym(shape[ndim - 2] / upcast_.rows);
    Index tile;
    if (program_.row_length > 0) {
      const int64_t row_length = program_.row_length;
      const SymShape rows(tiles.begin(), tiles.end() - 1);
      tile =
          unravel_index(Sym::var(program_.row_var, 0, program_.global_size / row_length - 1), rows);
      tile.push_back(Sym::var(program_.column_var, 0, row_length - 1));
    } else {
      tile = unravel_index(Sym::var(program_.global_var, 0, program_.global_size - 1), tiles);
    }
    Lanes lanes;
    for (int64_t row = 0; row < upcast_.rows; ++row) {
      for (int64_t column = 0; column < upcast_.columns; ++column) {
        Index index = tile;
        if (ndim >= 1 && upcast_.columns > 1)
          index[ndim - 1] = tile[ndim - 1] * Sym(upcast_.columns) + Sym(column);
        if (ndim >= 2 && upcast_.rows > 1)
          index[ndim - 2] = tile[ndim - 2] * Sym(upcast_.rows) + Sym(row);
        lanes.push_back(std::move(index));
      }
    }
    const std::vector<int> values = lower(item_.ast, lanes);
    const SymShape strides = View::contiguous_strides(to_sym_shape(shape));
    for (size_t lane = 0; lane < lanes.size(); ++lane) {
      Sym flat(0);
      for (size_t dim = 0; dim < ndim; ++dim) flat = flat + lanes[lane][dim] * strides[dim];
      LinInstr store{LinOp::Store, item_.output->dtype()};
      store.srcs = {cast_to(values[lane], item_.output->dtype())};
      store.buffer = 0;
      store.index = flat;
      emit(std::move(store));
    }
    return std::move(program_);
  }

  // Whether some load reads neighbouring elements in neighbouring lanes (what makes a tile pay).
  bool lanes_load_contiguously() const { return contiguous_lane_load_; }

 private:
  int emit(LinInstr instr) {
    program_.instrs.push_back(std::move(instr));
    return static_cast<int>(program_.instrs.size()) - 1;
  }

  int constant(DType dtype, ConstArg value) {
    LinInstr instr{LinOp::Const, dtype};
    instr.value = value;
    return emit(std::move(instr));
  }

  int index_value(const Sym& index, DType dtype) {
    LinInstr instr{LinOp::Index, dtypes::int64};
    instr.index = index;
    int value = emit(std::move(instr));
    return cast_to(value, dtype);
  }

  int cast_to(int value, DType dtype) {
    if (program_.instrs[value].dtype == dtype) return value;
    if (const std::optional<int> constant = folded(Op::Cast, dtype, {value})) return *constant;
    LinInstr instr{LinOp::Cast, dtype};
    instr.srcs = {value};
    return emit(std::move(instr));
  }

  // A constant for an op whose operands are all constants (none of its work left to the device
  // compiler); nullopt otherwise.
  std::optional<int> folded(Op op, DType dtype, const std::vector<int>& srcs) {
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

  int alu(Op op, DType dtype, std::vector<int> srcs) {
    if (const std::optional<int> constant = folded(op, dtype, srcs)) return *constant;
    LinInstr instr{LinOp::Alu, dtype};
    instr.alu = op;
    instr.srcs = std::move(srcs);
    return emit(std::move(instr));
  }

  // value where `valid` holds, else zero of the value's dtype.
  int masked(int value, const Sym& valid, DType dtype) {
    if (valid.is_const()) return valid.const_value() ? value : constant(dtype, ConstArg{});
    const int condition = index_value(valid, dtypes::bool_);
    return alu(Op::Where, dtype, {condition, value, constant(dtype, ConstArg{})});
  }

  // Runs `lower` with `condition` added to the gate that loads check.
  template <typename LowerFn>
  auto gated(const Sym& condition, LowerFn&& lower_fn) {
    const Sym outer = gate_;
    gate_ = logical_and(gate_, condition);
    auto result = lower_fn();
    gate_ = outer;
    return result;
  }

  // A value depends on the node, the index and the gate it is lowered under.
  std::string memo_key(const UOpRef& node, const Index& index) const {
    std::string key =
        std::to_string(reinterpret_cast<uintptr_t>(node.get())) + "@" + index_key(index);
    if (!gate_.is_const()) key += "?" + gate_.key();
    return key;
  }

  const int* find_memo(const std::string& key) const {
    for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope) {
      auto found = scope->find(key);
      if (found != scope->end()) return &found->second;
    }
    return nullptr;
  }

  // The node's value at each lane's index. Lanes already lowered in an enclosing scope, and
  // lanes with equal indices, are lowered once.
  std::vector<int> lower(const UOpRef& node, const Lanes& lanes) {
    if (is_elementwise(node->op())) lower_operands_first(node, lanes);
    Lanes missing;
    std::vector<std::string> missing_keys;
    for (const Index& index : lanes) {
      std::string key = memo_key(node, index);
      if (find_memo(key) ||
          std::find(missing_keys.begin(), missing_keys.end(), key) != missing_keys.end())
        continue;
      missing.push_back(index);
      missing_keys.push_back(std::move(key));
    }
    if (!missing.empty()) {
      const std::vector<int> computed = lower_uncached(node, missing);
      for (size_t lane = 0; lane < missing.size(); ++lane)
        scopes_.back()[missing_keys[lane]] = computed[lane];
    }
    std::vector<int> values;
    for (const Index& index : lanes) values.push_back(*find_memo(memo_key(node, index)));
    return values;
  }

  int lower_one(const UOpRef& node, const Index& index) { return lower(node, {index})[0]; }

  bool is_lowered(const UOpRef& node, const Lanes& lanes) const {
    return std::all_of(lanes.begin(), lanes.end(),
                       [&](const Index& index) { return find_memo(memo_key(node, index)); });
  }

  // A chain of elementwise ops (a graph built by an unrolled loop: 100,000 deep) would recurse
  // once per node. Its elementwise operands share the lanes, so they are lowered first, in an
  // explicit post-order; each `lower` below then finds its operands done.
  void lower_operands_first(const UOpRef& root, const Lanes& lanes) {
    std::vector<std::pair<UOpRef, size_t>> stack{{root, 0}};
    std::unordered_set<const UOp*> seen{root.get()};
    while (!stack.empty()) {
      const UOpRef node = stack.back().first;
      const size_t next = stack.back().second++;
      if (next < node->srcs().size()) {
        const UOpRef& src = node->srcs()[next];
        if (is_elementwise(src->op()) && seen.insert(src.get()).second && !is_lowered(src, lanes))
          stack.emplace_back(src, 0);
        continue;
      }
      stack.pop_back();
      if (node != root) lower(node, lanes);
    }
  }

  std::vector<int> lower_uncached(const UOpRef& node, const Lanes& lanes) {
    const DType dtype = node->dtype();
    std::vector<int> values;
    switch (node->op()) {
      case Op::Buffer: {
        const SymShape strides = View::contiguous_strides(to_sym_shape(node->shape()));
        std::vector<Sym> flats;
        for (const Index& index : lanes) {
          Sym flat(0);
          for (size_t dim = 0; dim < index.size(); ++dim) flat = flat + index[dim] * strides[dim];
          flats.push_back(flat);
        }
        note_lane_contiguity(flats);
        for (const Sym& flat : flats) values.push_back(load(node, flat, Sym(1)));
        return values;
      }
      case Op::Const:
        for (size_t lane = 0; lane < lanes.size(); ++lane)
          values.push_back(constant(dtype, node->const_arg()));
        return values;
      case Op::Iota:
        for (const Index& index : lanes) values.push_back(index_value(index[0], dtype));
        return values;
      case Op::View:
        return lower_view(node, lanes);
      case Op::Reduce:
        return lower_reduce(node, lanes);
      case Op::Cast: {
        for (int src : lower(node->src(), lanes)) {
          if (const std::optional<int> constant = folded(Op::Cast, dtype, {src})) {
            values.push_back(*constant);
            continue;
          }
          LinInstr instr{LinOp::Cast, dtype};
          instr.srcs = {src};
          values.push_back(emit(std::move(instr)));
        }
        return values;
      }
      default:
        break;
    }
    if (!is_elementwise(node->op())) {
      throw Error(std::string("[lower_kernel] internal error: unexpected ") + op_name(node->op()) +
                  " in a kernel");
    }
    std::vector<std::vector<int>> srcs;
    for (const UOpRef& src : node->srcs()) srcs.push_back(lower(src, lanes));
    for (size_t lane = 0; lane < lanes.size(); ++lane) {
      std::vector<int> operands;
      for (const auto& src_values : srcs) operands.push_back(src_values[lane]);
      values.push_back(alu(node->op(), dtype, std::move(operands)));
    }
    return values;
  }

  void note_lane_contiguity(const std::vector<Sym>& flats) {
    for (size_t lane = 1; lane < flats.size(); ++lane) {
      if (flats[lane] - flats[lane - 1] == Sym(1)) contiguous_lane_load_ = true;
    }
  }

  // Loads of one element (from different lanes or nodes) are made once per scope.
  int load(const UOpRef& buffer, const Sym& flat, const Sym& valid_in) {
    const Sym valid = logical_and(valid_in, gate_);
    if (valid.is_const() && valid.const_value() == 0) return constant(buffer->dtype(), ConstArg{});
    const int param = param_of_.at(buffer.get());
    const std::string key = "load" + std::to_string(param) + "@" + flat.key() + "?" + valid.key();
    if (const int* known = find_memo(key)) return *known;
    LinInstr instr{LinOp::Load, buffer->dtype()};
    instr.buffer = param;
    instr.index = flat;
    instr.valid = valid;
    const int value = emit(std::move(instr));
    scopes_.back()[key] = value;
    return value;
  }

  std::vector<int> lower_view(const UOpRef& node, const Lanes& lanes) {
    const UOpRef& src = node->src();
    std::vector<Sym> flats, valids;
    for (const Index& index : lanes) {
      auto [flat, valid] = node->tracker().to_index(index);
      flats.push_back(flat);
      valids.push_back(valid);
    }
    std::vector<int> values;
    if (src->op() == Op::Buffer) {
      note_lane_contiguity(flats);
      for (size_t lane = 0; lane < lanes.size(); ++lane)
        values.push_back(load(src, flats[lane], valids[lane]));
      return values;
    }
    if (src->op() == Op::Const || src->op() == Op::Iota) {
      for (size_t lane = 0; lane < lanes.size(); ++lane) {
        const int value = src->op() == Op::Const ? constant(src->dtype(), src->const_arg())
                                                 : index_value(flats[lane], src->dtype());
        values.push_back(masked(value, valids[lane], node->dtype()));
      }
      return values;
    }
    // A computed source is evaluated only where the View is valid: elsewhere its index may lie
    // outside every buffer it reads (a pad of 2^24 before 1024 elements), so each masked lane is
    // lowered under a gate that every load inside it checks.
    Lanes src_lanes;
    for (const Sym& flat : flats)
      src_lanes.push_back(unravel_index(flat, to_sym_shape(src->shape())));
    const bool all_valid =
        std::all_of(valids.begin(), valids.end(), [](const Sym& valid) { return valid == Sym(1); });
    if (all_valid) return lower(src, src_lanes);
    for (size_t lane = 0; lane < lanes.size(); ++lane) {
      if (valids[lane].is_const() && valids[lane].const_value() == 0) {
        values.push_back(constant(node->dtype(), ConstArg{}));
        continue;
      }
      const int value = gated(valids[lane], [&] { return lower_one(src, src_lanes[lane]); });
      values.push_back(masked(value, valids[lane], node->dtype()));
    }
    return values;
  }

  // One loop nest for every lane: each lane has its accumulator. Long float sums add into block
  // accumulators first (see plan_blocked_sum), so their rounding error grows like sqrt(n).
  std::vector<int> lower_reduce(const UOpRef& node, const Lanes& lanes) {
    const ReduceArg& reduce = node->reduce_arg();
    const UOpRef& src = node->src();
    const DType dtype = node->dtype();
    std::vector<int> accumulators = define_accumulators(reduce.op, dtype, lanes.size());
    for (int axis : reduce.axes) {
      if (src->shape()[axis] == 0) return accumulators;  // nothing to reduce: the identity
    }
    Lanes src_lanes = lanes;
    std::vector<ReduceLoop> plan;
    for (int axis : reduce.axes) {
      const int64_t size = src->shape()[axis];
      if (size > 1) plan.push_back({axis, size});
      for (Index& index : src_lanes) index[axis] = Sym(0);
    }
    const BlockedSum blocked =
        reduce.op == ReduceOp::Sum && dtype.is_float() ? plan_blocked_sum(plan) : BlockedSum{};

    std::vector<int> loops;
    auto open_loop = [&](int64_t size) {
      const std::string name = "r" + std::to_string(loop_counter_++);
      LinInstr begin{LinOp::LoopBegin, dtypes::int64};
      begin.loop_var = name;
      begin.loop_end = size;
      loops.push_back(emit(std::move(begin)));
      scopes_.emplace_back();
      return Sym::var(name, 0, size - 1);
    };
    std::vector<int> targets = accumulators;
    size_t inner_begin = 0;  // loops from here on run inside the block accumulators
    Sym in_range(1);         // false for the steps past the end of a split loop
    for (size_t level = 0; level < plan.size(); ++level) {
      const ReduceLoop& loop = plan[level];
      if (blocked.enabled && level == blocked.level && blocked.length > 0) {
        const Sym block = open_loop((loop.size + blocked.length - 1) / blocked.length);
        targets = define_accumulators(ReduceOp::Sum, dtype, lanes.size());
        inner_begin = loops.size();
        const Sym position = block * Sym(blocked.length) + open_loop(blocked.length);
        if (loop.size % blocked.length != 0) in_range = lt(position, Sym(loop.size));
        for (Index& index : src_lanes) index[loop.axis] = position;
        continue;
      }
      if (blocked.enabled && level == blocked.level) {
        targets = define_accumulators(ReduceOp::Sum, dtype, lanes.size());
        inner_begin = loops.size();
      }
      const Sym position = open_loop(loop.size);
      for (Index& index : src_lanes) index[loop.axis] = position;
    }
    const size_t body_start = program_.instrs.size();
    const std::vector<int> values = in_range == Sym(1)
                                        ? lower(src, src_lanes)
                                        : gated(in_range, [&] { return lower(src, src_lanes); });
    for (size_t lane = 0; lane < lanes.size(); ++lane) {
      int value = cast_to(values[lane], dtype);
      if (in_range != Sym(1)) value = masked(value, in_range, dtype);
      accumulate(targets[lane], value, reduce.op);
    }
    if (!loops.empty() && innermost_body(body_start)) {
      LinInstr& innermost = program_.instrs[loops.back()];
      // Float sums, maxes and mins may be reassociated (the renderer decides how: a pragma, or
      // partial sums); the rest the compiler may not reorder: unroll them.
      const bool reassociable =
          lanes.size() == 1 && dtype.is_float() && reduce.op != ReduceOp::Prod;
      if (reassociable) {
        innermost.reduction_acc = targets[0];
        innermost.reduce = reduce.op;
      }
      if (!(reassociable && reduce.op == ReduceOp::Sum) &&
          innermost.loop_end % kUnrollFactor == 0) {
        innermost.unroll = kUnrollFactor;
      }
    }
    while (loops.size() > inner_begin) close_loop(loops);
    if (blocked.enabled) {
      for (size_t lane = 0; lane < lanes.size(); ++lane)
        accumulate(accumulators[lane], targets[lane], ReduceOp::Sum);
    }
    while (!loops.empty()) close_loop(loops);
    return accumulators;
  }

  std::vector<int> define_accumulators(ReduceOp op, DType dtype, size_t count) {
    std::vector<int> accumulators;
    for (size_t lane = 0; lane < count; ++lane) {
      LinInstr define{LinOp::AccDefine, dtype};
      define.value = reduce_identity(op, dtype);
      accumulators.push_back(emit(std::move(define)));
    }
    return accumulators;
  }

  void accumulate(int accumulator, int value, ReduceOp op) {
    LinInstr update{LinOp::AccUpdate, program_.instrs[accumulator].dtype};
    update.srcs = {accumulator, value};
    update.reduce = op;
    emit(std::move(update));
  }

  void close_loop(std::vector<int>& loops) {
    emit(LinInstr{LinOp::LoopEnd, dtypes::int64});
    scopes_.pop_back();
    loops.pop_back();
  }

  // True when no loop opens between `start` and the end of the program.
  bool innermost_body(size_t start) const {
    for (size_t index = start; index < program_.instrs.size(); ++index) {
      if (program_.instrs[index].op == LinOp::LoopBegin) return false;
    }
    return true;
  }

  const ScheduleItem& item_;
  const Upcast upcast_;
  LinearProgram program_;
  std::unordered_map<const UOp*, int> param_of_;
  std::vector<std::unordered_map<std::string, int>> scopes_;
  int loop_counter_ = 0;
  bool contiguous_lane_load_ = false;
  // Where the values being lowered are needed; loads outside it read nothing (see lower_view).
  Sym gate_ = Sym(1);
};

// How many divisions and modulos the program's load and store indices hold: a rough cost of the
// index arithmetic done per element.
int index_divisions(const LinearProgram& program) {
  int count = 0;
  auto count_in = [&count](const std::string& text) {
    for (size_t at = text.find("//"); at != std::string::npos; at = text.find("//", at + 2))
      ++count;
    count += static_cast<int>(std::count(text.begin(), text.end(), '%'));
  };
  for (const LinInstr& instr : program.instrs) {
    if (instr.op != LinOp::Load && instr.op != LinOp::Store && instr.op != LinOp::Index) continue;
    count_in(instr.index.key());
    count_in(instr.valid.key());
  }
  return count;
}

// A short stable name: what the kernel does and a hash of its program.
std::string kernel_name(const LinearProgram& program) {
  bool has_loop = false;
  for (const LinInstr& instr : program.instrs) has_loop |= instr.op == LinOp::LoopBegin;
  uint64_t hash = 1469598103934665603ull;
  for (char c : program.to_string()) hash = (hash ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  std::ostringstream name;
  name << (has_loop ? "r_" : "e_") << program.global_size << "_" << std::hex
       << (hash & 0xffffffffull);
  return name.str();
}

}  // namespace

LinearProgram lower_kernel(const ScheduleItem& item, const Dialect& dialect) {
  std::optional<LinearProgram> chosen;
  for (const Upcast& upcast : upcast_candidates(item.ast)) {
    Lowerer lowerer(item, upcast);
    LinearProgram candidate = lowerer.run();
    if (lowerer.lanes_load_contiguously()) {
      chosen = std::move(candidate);
      break;
    }
  }
  LinearProgram program = chosen ? std::move(*chosen) : Lowerer(item, Upcast{}).run();
  // An elementwise kernel whose flat indices divide (a broadcast along the last axis, a permute):
  // where work items are a loop, try rows and columns, which moves such divisions out of the inner
  // loop. (With one work item per index the split only rewrites the index, and PoCL then no longer
  // sees contiguous loads: 16 -> 24 ms on softmax's last kernel.)
  const Shape& shape = item.ast->shape();
  if (dialect.launch_style == Dialect::LaunchStyle::kCpuLoop && !chosen && shape.size() >= 2 &&
      shape.back() >= kMinRowLength && item.ast->numel() / shape.back() >= 2 &&
      !holds_reduce(item.ast) && index_divisions(program) > 0) {
    LinearProgram split = Lowerer(item, Upcast{}, shape.back()).run();
    if (index_divisions(split) < index_divisions(program)) program = std::move(split);
  }
  program.name = kernel_name(program);
  return program;
}

std::string LinearProgram::to_string() const {
  static const char* const kOpNames[] = {"CONST", "INDEX",  "LOAD",       "STORE",      "ALU",
                                         "CAST",  "DEFACC", "ACC_UPDATE", "LOOP_BEGIN", "LOOP_END"};
  std::ostringstream text;
  text << "kernel " << name << " global=" << global_size << "\n";
  for (size_t param = 0; param < params.size(); ++param) {
    text << "  param " << param << ": " << params[param].dtype.name() << "[" << params[param].numel
         << "]" << (params[param].is_output ? " out" : "") << "\n";
  }
  for (size_t index = 0; index < instrs.size(); ++index) {
    const LinInstr& instr = instrs[index];
    text << "  %" << index << " = " << kOpNames[static_cast<int>(instr.op)] << " "
         << instr.dtype.name();
    if (instr.op == LinOp::Alu) text << " " << op_name(instr.alu);
    if (instr.op == LinOp::AccUpdate) text << " " << reduce_op_name(instr.reduce);
    for (int src : instr.srcs) text << " %" << src;
    if (instr.op == LinOp::Const || instr.op == LinOp::AccDefine) {
      text << " "
           << (instr.dtype.is_float() ? std::to_string(instr.value.float_value)
                                      : std::to_string(instr.value.int_value));
    }
    if (instr.buffer >= 0) text << " buf" << instr.buffer;
    if (instr.op == LinOp::Load || instr.op == LinOp::Store || instr.op == LinOp::Index) {
      text << " [" << instr.index.key() << "]";
    }
    if (instr.op == LinOp::Load && !(instr.valid == Sym(1))) text << " if " << instr.valid.key();
    if (instr.op == LinOp::LoopBegin) text << " " << instr.loop_var << " < " << instr.loop_end;
    text << "\n";
  }
  return text.str();
}

}  // namespace kiln

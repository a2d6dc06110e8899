#include "codegen/lower.h"

#include <kiln/error.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "codegen/kernel_variables.h"
#include "codegen/launch_index.h"
#include "codegen/launch_spread.h"
#include "codegen/linear_builder.h"
#include "codegen/lowerer.h"
#include "codegen/row_fusion.h"
#include "core/const_fold.h"

namespace kiln {

Lowerer::Lowerer(const ScheduleItem& item, const KernelPlan& plan, bool vector_loads)
    : item_(item), plan_(plan), axes_(plan.axes), vector_loads_(vector_loads) {
  kernel_reduce_ = kernel_reduce(item.ast);
  program_.row_length = plan.row_length;
  // A workgroup per row (a LOCAL covering the last axis' work items) computes the row's fused
  // reductions together.
  if (!axes_.output.empty() && !axes_.is_symbolic(static_cast<int>(axes_.output.size()) - 1)) {
    const int last = static_cast<int>(axes_.output.size()) - 1;
    auto local = plan.local.find(last);
    if (local != plan.local.end() && local->second * plan.upcast[last] == axes_.output.back() &&
        reads_row_reductions(item.ast))
      row_lanes_ = local->second;
  }
  program_.opts = plan.opts;
}

LinearProgram Lowerer::run() {
  program_.params.push_back({item_.output->dtype(), item_.output->numel(), true});
  // A kernel that writes in place (an Assign's, a Scatter's) reads its output too: each element
  // only where the work item writes it (codegen/schedule.cpp), before it stores it.
  param_of_[item_.output.get()] = 0;
  for (const UOpRef& input : item_.inputs) {
    param_of_[input.get()] = static_cast<int>(program_.params.size());
    program_.params.push_back({input->dtype(), input->numel(), false});
  }
  if (plan_.grid_groups > 1) {
    const DType partial = kernel_reduce_->dtype();
    grid_partials_ = static_cast<int>(program_.params.size());
    program_.params.push_back({partial, plan_.grid_groups, false, true});
    grid_counter_ = static_cast<int>(program_.params.size());
    program_.params.push_back({dtypes::uint32, 1, false, true});
  }
  const SymShape shape = item_.ast->sym_shape();
  const size_t ndim = shape.size();
  // No output at any value (a symbolic size that may be 0 is lowered for its other values).
  if (item_.ast->numel() == 0) return std::move(program_);
  if (item_.ast->op() == Op::Scatter) {
    lower_scatter();
    return std::move(program_);
  }
  if (item_.ast->op() == Op::Attention) {
    lower_attention();
    return std::move(program_);
  }

  // Each work item covers a tile of outputs (tile_lanes).
  LaunchIndex launched = index_launch(plan_, tile_counts(shape), program_);
  group_lane_ = launched.group_lane;
  grid_item_ = launched.grid_item;
  grid_group_ = launched.grid_group;
  store_guard_ = launched.store_guard;
  const Index tile = launched.tile;
  tile_index_ = tile;
  Lanes lanes, store_lanes;
  std::vector<Sym> lane_guards;
  tile_lanes(tile, shape, lanes, store_lanes, lane_guards);
  if (row_lanes_ > 1) {
    row_lane_ = tile[ndim - 1];
    // The row's reductions first, at the top level, each at the row's index (sources first:
    // softmax's max before its sum, whose loop then finds the max computed).
    for (const UOpRef& node : toposort({item_.ast})) {
      if (broadcasts_row_value(*node)) lower_one(node, lanes[0]);
    }
  }
  // An Assign into a region stores its value through the region's view of the output.
  const bool into_region = item_.ast->op() == Op::Assign;
  const std::vector<int> values = lower(into_region ? item_.ast->src(1) : item_.ast, lanes);
  const SymShape strides = View::contiguous_strides(shape);
  for (size_t lane = 0; lane < lanes.size(); ++lane) {
    Sym flat(0), valid(1);
    if (into_region) {
      std::tie(flat, valid) = item_.ast->src(0)->tracker().to_index(store_lanes[lane]);
    } else {
      for (size_t dim = 0; dim < ndim; ++dim) flat = flat + store_lanes[lane][dim] * strides[dim];
    }
    LinInstr store{LinOp::Store, item_.output->dtype()};
    store.srcs = {cast_to(values[lane], item_.output->dtype())};
    store.buffer = 0;
    store.index = flat;
    store.valid = logical_and(logical_and(store_guard_, lane_guards[lane]), valid);
    emit(std::move(store));
  }
  return std::move(program_);
}

SymShape Lowerer::tile_counts(const SymShape& shape) const {
  SymShape tiles = shape;
  for (size_t axis = 0; axis < shape.size(); ++axis) {
    const Sym upcast(plan_.upcast[axis]);
    tiles[axis] =
        floordiv(shape[axis].is_const() ? shape[axis] : shape[axis] + upcast - Sym(1), upcast);
  }
  return tiles;
}

// Each work item's lanes: upcast[axis] neighbours along each axis of its tile. A symbolic
// axis' last tile lies in part past its size: those lanes compute the axis' last element (every
// load stays inside its buffer, and lanes share loads as in a full tile), store at their own
// index, and are guarded off.
void Lowerer::tile_lanes(const Index& tile, const SymShape& shape, Lanes& lanes, Lanes& store_lanes,
                         std::vector<Sym>& lane_guards) const {
  const size_t ndim = shape.size();
  lanes = {tile};
  store_lanes = {tile};
  lane_guards = {Sym(1)};
  for (size_t axis = 0; axis < ndim; ++axis) {
    if (plan_.upcast[axis] == 1) continue;
    Lanes widened, widened_stores;
    std::vector<Sym> widened_guards;
    for (size_t at = 0; at < lanes.size(); ++at) {
      for (int64_t offset = 0; offset < plan_.upcast[axis]; ++offset) {
        Index lane = lanes[at], store_lane = store_lanes[at];
        const Sym position = tile[axis] * Sym(plan_.upcast[axis]) + Sym(offset);
        Sym guard = lane_guards[at];
        lane[axis] = store_lane[axis] = position;
        if (!shape[axis].is_const()) {
          lane[axis] = sym_min(position, shape[axis] - Sym(1));
          guard = logical_and(guard, lt(position, shape[axis]));
        }
        widened.push_back(std::move(lane));
        widened_stores.push_back(std::move(store_lane));
        widened_guards.push_back(std::move(guard));
      }
    }
    lanes = std::move(widened);
    store_lanes = std::move(widened_stores);
    lane_guards = std::move(widened_guards);
  }
}

// A value depends on the node, the index and the gate it is lowered under.
ValueKey Lowerer::memo_key(const UOpRef& node, const Index& index) const {
  ValueKey key{ValueKey::Kind::Node, node.get(), -1, index};
  if (!gate_.is_const()) key.at.push_back(gate_);
  return key;
}

// The node's value at each lane's index. Lanes already lowered in an enclosing scope, and
// lanes with equal indices, are lowered once.
std::vector<int> Lowerer::lower(const UOpRef& node, const Lanes& lanes) {
  if (is_elementwise(node->op())) lower_operands_first(node, lanes);
  Lanes missing;
  std::vector<ValueKey> missing_keys;
  for (const Index& index : lanes) {
    ValueKey key = memo_key(node, index);
    if (find_value(key) ||
        std::find(missing_keys.begin(), missing_keys.end(), key) != missing_keys.end())
      continue;
    missing.push_back(index);
    missing_keys.push_back(std::move(key));
  }
  if (!missing.empty()) {
    const std::vector<int> computed = lower_uncached(node, missing);
    for (size_t lane = 0; lane < missing.size(); ++lane)
      remember(missing_keys[lane], computed[lane]);
  }
  std::vector<int> values;
  for (const Index& index : lanes) values.push_back(*find_value(memo_key(node, index)));
  return values;
}

bool Lowerer::is_lowered(const UOpRef& node, const Lanes& lanes) const {
  return std::all_of(lanes.begin(), lanes.end(),
                     [&](const Index& index) { return find_value(memo_key(node, index)); });
}

// A chain of elementwise ops (a graph built by an unrolled loop: 100,000 deep) would recurse
// once per node. Its elementwise operands share the lanes, so they are lowered first, in an
// explicit post-order; each `lower` below then finds its operands done.
void Lowerer::lower_operands_first(const UOpRef& root, const Lanes& lanes) {
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

std::vector<int> Lowerer::lower_uncached(const UOpRef& node, const Lanes& lanes) {
  if (reading_chunks_) {
    if (auto staged = staged_.find(node.get()); staged != staged_.end())
      return chunk_loads(staged->second, lanes);
  }
  const DType dtype = node->dtype();
  std::vector<int> values;
  switch (node->op()) {
    case Op::Buffer: {
      const SymShape strides = View::contiguous_strides(node->sym_shape());
      std::vector<Sym> flats;
      for (const Index& index : lanes) {
        Sym flat(0);
        for (size_t dim = 0; dim < index.size(); ++dim) flat = flat + index[dim] * strides[dim];
        flats.push_back(flat);
      }
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
    case Op::Gather:
      return lower_gather(node, lanes);
    case Op::Reduce:
      return lower_reduce(node, lanes);
    case Op::Cast:
      for (int src : lower(node->src(), lanes)) values.push_back(cast_to(src, dtype));
      return values;
    case Op::Bitcast:
      for (int src : lower(node->src(), lanes)) values.push_back(bitcast_to(src, dtype));
      return values;
    default:
      break;
  }
  if (!is_elementwise(node->op())) {
    throw InternalError(std::string("[lower_kernel] unexpected ") + op_name(node->op()) +
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

// Loads of one element (from different lanes or nodes) are made once per scope.
int Lowerer::load(const UOpRef& buffer, const Sym& flat, const Sym& valid_in) {
  const Sym valid = logical_and(valid_in, gate_);
  if (valid.is_const() && valid.const_value() == 0) return constant(buffer->dtype(), ConstArg{});
  const int param = param_of_.at(buffer.get());
  ValueKey key{ValueKey::Kind::Load, nullptr, param, {flat, valid}};
  if (const int* known = find_value(key)) return *known;
  LinInstr instr{LinOp::Load, buffer->dtype()};
  instr.buffer = param;
  instr.index = flat;
  instr.valid = valid;
  const int value = emit(std::move(instr));
  remember(std::move(key), value);
  return value;
}

std::vector<int> Lowerer::lower_view(const UOpRef& node, const Lanes& lanes) {
  const UOpRef& src = node->src();
  std::vector<Sym> flats, valids;
  for (const Index& index : lanes) {
    auto [flat, valid] = node->tracker().to_index(index);
    flats.push_back(flat);
    valids.push_back(valid);
  }
  std::vector<int> values;
  if (src->op() == Op::Buffer) {
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
  const SymShape src_shape = src->sym_shape();
  // A View that only reshapes its source indexes it without flattening (codegen of a reshape
  // over a symbolic size would otherwise divide by that size).
  const bool reshapes_only = node->tracker().is_contiguous();
  for (size_t lane = 0; lane < lanes.size(); ++lane) {
    src_lanes.push_back(reshapes_only ? reshape_index(lanes[lane], node->sym_shape(), src_shape)
                                      : unravel_index(flats[lane], src_shape));
  }
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

LinearProgram lower_kernel(const ScheduleItem& item, const KernelPlan& plan,
                           const OptTarget& target) {
  LinearProgram program = Lowerer(item, plan, target.vector_loads).run();
  program.variables = kernel_variables(item.ast);
  spread_over_hardware(program, target.max_workgroups);
  program.name = kernel_name(program);
  return program;
}

}  // namespace kiln

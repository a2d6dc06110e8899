#include "codegen/lower.h"

#include <kiln/error.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "codegen/blocked_sum.h"
#include "codegen/kernel_variables.h"
#include "codegen/launch_index.h"
#include "codegen/launch_spread.h"
#include "codegen/linear_builder.h"
#include "codegen/row_fusion.h"
#include "core/const_fold.h"

namespace kiln {
namespace {

std::string index_key(const std::vector<Sym>& index) {
  std::string key;
  for (const Sym& value : index) key += value.key() + ",";
  return key;
}

using Index = std::vector<Sym>;
using Lanes = std::vector<Index>;

// TILE: an input's chunk in local memory, and where it lies along the output axes its index
// depends on (input->output_axes): the workgroup's first output and the extent.
struct StagedInput {
  const KernelAxes::ReduceInput* input = nullptr;
  int local = -1;  // the DefineLocal
  std::vector<Sym> bases, extents;
  int64_t per_step = 1;  // elements per reduce step: the product of the extents
  // Work items copy it step-major where its memory holds neighbouring steps together.
  bool step_major = false;
  int64_t row() const { return tile_row(per_step, step_major); }  // elements per step
};

// The reduction opts of one reduce axis (amounts of 1: none).
struct ReduceAxisOpts {
  int64_t upcast = 1, unroll = 1, group = 1;
};

class Lowerer : public LinearBuilder {
 public:
  Lowerer(const ScheduleItem& item, const KernelAxes& axes, const std::vector<Opt>& opts)
      : item_(item), axes_(axes), opts_(opts) {
    kernel_reduce_ = kernel_reduce(item.ast);
    reduce_opts_.resize(axes.reduce.size());
    upcast_.assign(axes.output.size(), 1);
    for (const Opt& opt : opts) {
      if (opt.axis == Opt::kFlatAxis) {
        local_of_[opt.axis] = opt.amount;
        continue;
      }
      const bool on_reduce = axes.is_reduce_axis(opt.axis);
      const size_t reduce_index = opt.axis - axes.output.size();
      switch (opt.kind) {
        case OptKind::Upcast:
          (on_reduce ? reduce_opts_[reduce_index].upcast : upcast_[opt.axis]) *= opt.amount;
          break;
        case OptKind::Unroll:
          reduce_opts_[reduce_index].unroll *= opt.amount;
          break;
        case OptKind::Group:
          reduce_opts_[reduce_index].group = opt.amount;
          break;
        case OptKind::Tile:
          tile_chunk_ = opt.amount;
          break;
        case OptKind::Local:
          local_of_[opt.axis] = opt.amount;
          break;
        case OptKind::Rows:
          break;
        case OptKind::Grid:
          grid_groups_ = opt.amount;
          break;
      }
    }
    for (const Opt& opt : opts) {
      if (opt.kind == OptKind::Rows) program_.row_length = axes.output.back() / upcast_.back();
    }
    // A workgroup per row (a LOCAL covering the last axis' work items) computes the row's fused
    // reductions together.
    if (!axes.output.empty() && !axes.is_symbolic(static_cast<int>(axes.output.size()) - 1)) {
      const int last = static_cast<int>(axes.output.size()) - 1;
      auto local = local_of_.find(last);
      if (local != local_of_.end() && local->second * upcast_[last] == axes.output.back() &&
          reads_row_reductions(item.ast))
        row_lanes_ = local->second;
    }
    program_.opts = opts_to_string(opts);
  }

  LinearProgram run() {
    program_.params.push_back({item_.output->dtype(), item_.output->numel(), true});
    for (const UOpRef& input : item_.inputs) {
      param_of_[input.get()] = static_cast<int>(program_.params.size());
      program_.params.push_back({input->dtype(), input->numel(), false});
    }
    if (grid_groups_ > 1) {
      const DType partial = kernel_reduce_->dtype();
      grid_partials_ = static_cast<int>(program_.params.size());
      program_.params.push_back({partial, grid_groups_, false, true});
      grid_counter_ = static_cast<int>(program_.params.size());
      program_.params.push_back({dtypes::uint32, 1, false, true});
    }
    const SymShape shape = item_.ast->sym_shape();
    const size_t ndim = shape.size();
    // No output at any value (a symbolic size that may be 0 is lowered for its other values).
    if (item_.ast->numel() == 0) return std::move(program_);

    // Each work item covers a tile of outputs: upcast[axis] neighbours along each axis (a
    // symbolic axis has no UPCAST).
    SymShape tiles = shape;
    for (size_t axis = 0; axis < ndim; ++axis)
      tiles[axis] = floordiv(tiles[axis], Sym(upcast_[axis]));
    LaunchIndex launched = index_launch(axes_, opts_, tiles, program_);
    group_lane_ = launched.group_lane;
    grid_item_ = launched.grid_item;
    grid_group_ = launched.grid_group;
    store_guard_ = launched.store_guard;
    const Index tile = launched.tile;
    tile_index_ = tile;
    Lanes lanes{tile};
    for (size_t axis = 0; axis < ndim; ++axis) {
      if (upcast_[axis] == 1) continue;
      Lanes widened;
      for (const Index& index : lanes) {
        for (int64_t offset = 0; offset < upcast_[axis]; ++offset) {
          Index lane = index;
          lane[axis] = tile[axis] * Sym(upcast_[axis]) + Sym(offset);
          widened.push_back(std::move(lane));
        }
      }
      lanes = std::move(widened);
    }
    if (row_lanes_ > 1) {
      row_lane_ = tile[ndim - 1];
      // The row's reductions first, at the top level, each at the row's index (sources first:
      // softmax's max before its sum, whose loop then finds the max computed).
      for (const UOpRef& node : toposort({item_.ast})) {
        if (broadcasts_row_value(*node)) lower_one(node, lanes[0]);
      }
    }
    const std::vector<int> values = lower(item_.ast, lanes);
    const SymShape strides = View::contiguous_strides(shape);
    for (size_t lane = 0; lane < lanes.size(); ++lane) {
      Sym flat(0);
      for (size_t dim = 0; dim < ndim; ++dim) flat = flat + lanes[lane][dim] * strides[dim];
      LinInstr store{LinOp::Store, item_.output->dtype()};
      store.srcs = {cast_to(values[lane], item_.output->dtype())};
      store.buffer = 0;
      store.index = flat;
      store.valid = store_guard_;
      emit(std::move(store));
    }
    return std::move(program_);
  }

 private:
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

  // The node's value at each lane's index. Lanes already lowered in an enclosing scope, and
  // lanes with equal indices, are lowered once.
  std::vector<int> lower(const UOpRef& node, const Lanes& lanes) {
    if (is_elementwise(node->op())) lower_operands_first(node, lanes);
    Lanes missing;
    std::vector<std::string> missing_keys;
    for (const Index& index : lanes) {
      std::string key = memo_key(node, index);
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

  int lower_one(const UOpRef& node, const Index& index) { return lower(node, {index})[0]; }

  bool is_lowered(const UOpRef& node, const Lanes& lanes) const {
    return std::all_of(lanes.begin(), lanes.end(),
                       [&](const Index& index) { return find_value(memo_key(node, index)); });
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
      case Op::Reduce:
        return lower_reduce(node, lanes);
      case Op::Cast:
        for (int src : lower(node->src(), lanes)) values.push_back(cast_to(src, dtype));
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
  int load(const UOpRef& buffer, const Sym& flat, const Sym& valid_in) {
    const Sym valid = logical_and(valid_in, gate_);
    if (valid.is_const() && valid.const_value() == 0) return constant(buffer->dtype(), ConstArg{});
    const int param = param_of_.at(buffer.get());
    const std::string key = "load" + std::to_string(param) + "@" + flat.key() + "?" + valid.key();
    if (const int* known = find_value(key)) return *known;
    LinInstr instr{LinOp::Load, buffer->dtype()};
    instr.buffer = param;
    instr.index = flat;
    instr.valid = valid;
    const int value = emit(std::move(instr));
    remember(key, value);
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
    for (const Sym& flat : flats) src_lanes.push_back(unravel_index(flat, src_shape));
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
  // accumulators first (see plan_blocked_sum), so their rounding error grows like sqrt(n). The
  // kernel's own reduction takes its opts: along each reduce axis, position =
  // ((trip * unroll + copy) * upcast + part) * group + group lane.
  std::vector<int> lower_reduce(const UOpRef& node, const Lanes& lanes) {
    const ReduceArg& reduce = node->reduce_arg();
    const UOpRef& src = node->src();
    const DType dtype = node->dtype();
    const size_t lane_count = lanes.size();
    if (node == kernel_reduce_ && tile_chunk_ > 0) return lower_tiled_reduce(node, lanes);
    std::vector<ReduceAxisOpts> axis_opts(reduce.axes.size());
    if (node == kernel_reduce_) axis_opts = reduce_opts_;
    // GRID: the GROUP's lanes in every workgroup share the axis, numbered across the grid.
    const bool grid = node == kernel_reduce_ && grid_groups_ > 1;
    if (grid) {
      for (ReduceAxisOpts& opts : axis_opts) {
        if (opts.group > 1) opts.group *= grid_groups_;
      }
    }
    // A fused row reduction at the row's index: the row's work items share it.
    const bool row_shared = node != kernel_reduce_ && row_lanes_ > 1 && lanes.size() == 1 &&
                            !mentions(lanes[0], row_lane_) &&
                            !(dtype.is_float() && reduce.op == ReduceOp::Prod);
    if (row_shared) axis_opts.back().group = row_lanes_;
    const Sym& reduce_lane = grid ? grid_item_ : row_shared ? row_lane_ : group_lane_;
    const SymShape src_shape = src->sym_shape();
    for (int axis : reduce.axes) {
      if (src_shape[axis] == Sym(0))
        return finish_group(define_accumulators(reduce.op, dtype, lane_count), reduce.op, dtype,
                            node == kernel_reduce_);
    }
    // Copies of the body (unrolled, in order) and partial accumulators (upcast) per output lane.
    int64_t copies = 1, parts = 1;
    for (const ReduceAxisOpts& opts : axis_opts) copies *= opts.unroll, parts *= opts.upcast;
    std::vector<int> accumulators = define_accumulators(reduce.op, dtype, lane_count * parts);

    std::vector<ReduceLoop> plan;
    std::vector<Sym> trips(reduce.axes.size());
    for (size_t at = 0; at < reduce.axes.size(); ++at) {
      const ReduceAxisOpts& opts = axis_opts[at];
      const int64_t chunk = opts.unroll * opts.upcast * opts.group;
      trips[at] = floordiv(src_shape[reduce.axes[at]] + Sym(chunk - 1), Sym(chunk));
      if (trips[at].vmax() > 1 || !trips[at].is_const())
        plan.push_back({static_cast<int>(at), trips[at].vmax(), trips[at]});
    }
    const BlockedSum blocked = reduce.op == ReduceOp::Sum && dtype.is_float()
                                   ? plan_blocked_sum(plan, copies)
                                   : BlockedSum{};

    std::vector<int> loops;
    auto open_reduce_loop = [&](const Sym& size) { return open_loop(loops, size); };
    std::vector<Sym> trip(reduce.axes.size(), Sym(0));
    std::vector<int> targets = accumulators;
    size_t inner_begin = 0;  // loops from here on run inside the block accumulators
    Sym in_range(1);         // false for the steps past the end of a split loop
    for (size_t level = 0; level < plan.size(); ++level) {
      const ReduceLoop& loop = plan[level];
      if (blocked.enabled && level == blocked.level && blocked.length > 0) {
        const Sym block =
            open_reduce_loop(floordiv(loop.extent + Sym(blocked.length - 1), Sym(blocked.length)));
        targets = define_accumulators(ReduceOp::Sum, dtype, accumulators.size());
        inner_begin = loops.size();
        trip[loop.axis] = block * Sym(blocked.length) + open_reduce_loop(Sym(blocked.length));
        if (!loop.extent.is_const() || loop.size % blocked.length != 0)
          in_range = lt(trip[loop.axis], loop.extent);
        continue;
      }
      if (blocked.enabled && level == blocked.level) {
        targets = define_accumulators(ReduceOp::Sum, dtype, accumulators.size());
        inner_begin = loops.size();
      }
      trip[loop.axis] = open_reduce_loop(loop.extent);
    }
    const size_t body_start = program_.instrs.size();
    // Each combination of copy and part reads its own position along every reduce axis.
    for (int64_t copy = 0; copy < copies; ++copy) {
      for (int64_t part = 0; part < parts; ++part) {
        Lanes src_lanes = lanes;
        Sym valid = in_range;
        int64_t copy_rest = copy, part_rest = part;
        for (size_t at = reduce.axes.size(); at-- > 0;) {
          const ReduceAxisOpts& opts = axis_opts[at];
          const int64_t copy_at = copy_rest % opts.unroll, part_at = part_rest % opts.upcast;
          copy_rest /= opts.unroll, part_rest /= opts.upcast;
          const Sym lane = opts.group > 1 ? reduce_lane : Sym(0);
          const Sym position =
              ((trip[at] * Sym(opts.unroll) + Sym(copy_at)) * Sym(opts.upcast) + Sym(part_at)) *
                  Sym(opts.group) +
              lane;
          const Sym& size = src_shape[reduce.axes[at]];
          if (!(trips[at] * Sym(opts.unroll * opts.upcast * opts.group) == size))
            valid = logical_and(valid, lt(position, size));
          for (Index& index : src_lanes) index[reduce.axes[at]] = position;
        }
        const std::vector<int> values = valid == Sym(1)
                                            ? lower(src, src_lanes)
                                            : gated(valid, [&] { return lower(src, src_lanes); });
        for (size_t lane = 0; lane < lane_count; ++lane) {
          int value = cast_to(values[lane], dtype);
          if (!(valid == Sym(1))) value = masked_identity(value, valid, reduce.op, dtype);
          accumulate(targets[lane * parts + part], value, reduce.op);
        }
      }
    }
    if (!loops.empty() && innermost_body(body_start) && targets.size() == 1 && dtype.is_float() &&
        reduce.op != ReduceOp::Prod) {
      // One float sum, max or min: the dialect may reassociate it (a pragma).
      LinInstr& innermost = program_.instrs[loops.back()];
      innermost.reduction_acc = targets[0];
      innermost.reduce = reduce.op;
    }
    while (loops.size() > inner_begin) close_loop(loops);
    if (blocked.enabled) {
      for (size_t at = 0; at < accumulators.size(); ++at)
        accumulate(accumulators[at], targets[at], ReduceOp::Sum);
    }
    while (!loops.empty()) close_loop(loops);
    std::vector<int> results;
    for (size_t lane = 0; lane < lane_count; ++lane) {
      results.push_back(combine(std::vector<int>(accumulators.begin() + lane * parts,
                                                 accumulators.begin() + (lane + 1) * parts),
                                reduce.op, dtype));
    }
    if (row_shared)
      return combine_across_group(std::move(results), reduce.op, dtype, row_lanes_, row_lane_);
    return finish_group(std::move(results), reduce.op, dtype, node == kernel_reduce_);
  }

  // Whether an index mentions the variable `var` (a Sym variable).
  static bool mentions(const Index& index, const Sym& var) {
    if (var.is_const()) return false;
    for (const Sym& value : index) {
      const std::vector<std::string> names = value.variables();
      if (std::find(names.begin(), names.end(), var.var_name()) != names.end()) return true;
    }
    return false;
  }

  // TILE: the reduction in chunks. For each chunk the workgroup copies what its work items will
  // read of each input into local memory (work item i copies elements i, i + workgroup, ...),
  // waits at a barrier, reduces its lanes from local memory, and waits again before the next
  // chunk overwrites it. An input's chunk is laid out [step][coordinates along its output axes],
  // the coordinates relative to the workgroup's first output. Work items number the elements in
  // the order of the input's memory: step-major where neighbouring steps are neighbours in
  // memory (A of A B), coordinate-major otherwise, so that a warp's loads coalesce.
  std::vector<int> lower_tiled_reduce(const UOpRef& node, const Lanes& lanes) {
    const UOpRef& src = node->src();
    const int reduce_axis = node->reduce_arg().axes[0];
    const ReduceOp op = node->reduce_arg().op;
    std::vector<int> accumulators = define_accumulators(op, node->dtype(), lanes.size());
    // The workgroup's own numbering of its work items: the last axis (the launch's first
    // dimension, whose neighbouring ids a GPU puts in one warp) fastest.
    Sym local_id(0);
    int64_t workgroup = 1;
    for (auto local = local_of_.rbegin(); local != local_of_.rend(); ++local) {
      local_id = local_id + mod(tile_index_[local->first], Sym(local->second)) * Sym(workgroup);
      workgroup *= local->second;
    }
    for (const KernelAxes::ReduceInput& input : axes_.reduce_inputs) {
      StagedInput staged;
      staged.input = &input;
      for (int axis : input.output_axes) {
        const auto local = local_of_.find(axis);
        const int64_t amount = local == local_of_.end() ? 1 : local->second;
        staged.extents.push_back(Sym(amount * upcast_[axis]));
        staged.bases.push_back((tile_index_[axis] - mod(tile_index_[axis], Sym(amount))) *
                               Sym(upcast_[axis]));
        staged.per_step *= amount * upcast_[axis];
      }
      staged.step_major = reduce_steps_are_neighbours(input.node, reduce_axis);
      LinInstr define{LinOp::DefineLocal, input.node->dtype()};
      define.local_size = staged.row() * tile_chunk_;
      staged.local = emit(std::move(define));
      staged_[input.node.get()] = std::move(staged);
    }
    std::vector<int> loops;
    const int64_t chunks = src->shape()[reduce_axis] / tile_chunk_;
    chunk_start_ = open_loop(loops, Sym(chunks)) * Sym(tile_chunk_);
    for (const KernelAxes::ReduceInput& input : axes_.reduce_inputs) {
      const StagedInput& staged = staged_.at(input.node.get());
      const int64_t elements = staged.per_step * tile_chunk_;
      const bool step_major = staged.step_major;
      for (int64_t first = 0; first < elements; first += workgroup) {
        const Sym element = local_id + Sym(first);
        const Sym inside = first + workgroup <= elements ? Sym(1) : lt(element, Sym(elements));
        // The element's step and place among the chunk's coordinates.
        const Sym step =
            step_major ? mod(element, Sym(tile_chunk_)) : floordiv(element, Sym(staged.per_step));
        const Sym place =
            step_major ? floordiv(element, Sym(tile_chunk_)) : mod(element, Sym(staged.per_step));
        const Index coordinates = unravel_index(place, staged.extents);
        Index index(src->shape().size(), Sym(0));
        for (size_t output = 0; output < axes_.source_axis.size(); ++output)
          index[axes_.source_axis[output]] = tile_index_[output] * Sym(upcast_[output]);
        for (size_t at = 0; at < input.output_axes.size(); ++at)
          index[axes_.source_axis[input.output_axes[at]]] = staged.bases[at] + coordinates[at];
        index[reduce_axis] = chunk_start_ + step;
        const int value = gated(inside, [&] { return lower_one(input.node, index); });
        LinInstr store{LinOp::Store, input.node->dtype()};
        store.srcs = {value};
        store.buffer = staged.local;
        store.local = true;
        store.index = step * Sym(staged.row()) + place;
        store.valid = inside;
        emit(std::move(store));
      }
    }
    emit(LinInstr{LinOp::Barrier, dtypes::int64});
    const Sym step = open_loop(loops, Sym(tile_chunk_));
    Lanes source_lanes = lanes;
    for (Index& lane : source_lanes) lane[reduce_axis] = chunk_start_ + step;
    reading_chunks_ = true;
    const std::vector<int> values = lower(src, source_lanes);
    reading_chunks_ = false;
    for (size_t lane = 0; lane < lanes.size(); ++lane)
      accumulate(accumulators[lane], values[lane], op);
    close_loop(loops);
    emit(LinInstr{LinOp::Barrier, dtypes::int64});
    close_loop(loops);
    staged_.clear();
    return accumulators;
  }

  // TILE: an input's values at `lanes`, from its chunk in local memory.
  std::vector<int> chunk_loads(const StagedInput& staged, const Lanes& lanes) {
    const int reduce_axis = kernel_reduce_->reduce_arg().axes[0];
    std::vector<int> values;
    for (const Index& lane : lanes) {
      Sym position = (lane[reduce_axis] - chunk_start_) * Sym(staged.row());
      Sym stride(1);
      for (size_t at = staged.bases.size(); at-- > 0;) {
        const int output = staged.input->output_axes[at];
        position = position + (lane[axes_.source_axis[output]] - staged.bases[at]) * stride;
        stride = stride * staged.extents[at];
      }
      const std::string key = "chunk" + std::to_string(staged.local) + "@" + position.key();
      if (const int* known = find_value(key)) {
        values.push_back(*known);
        continue;
      }
      LinInstr load{LinOp::Load, staged.input->node->dtype()};
      load.buffer = staged.local;
      load.local = true;
      load.index = position;
      values.push_back(emit(std::move(load)));
      remember(key, values.back());
    }
    return values;
  }

  // GROUP: the kernel's reduction combines its partial results across the workgroup (one work
  // item then stores them).
  std::vector<int> finish_group(std::vector<int> values, ReduceOp op, DType dtype, bool grouped) {
    int64_t group = 1;
    for (const ReduceAxisOpts& opts : reduce_opts_) group = std::max(group, opts.group);
    if (!grouped || group == 1) return values;
    values = combine_across_group(std::move(values), op, dtype, group, group_lane_);
    return grid_groups_ > 1 ? finish_grid(std::move(values), op, dtype, group) : values;
  }

  // GRID: each workgroup stores its partial result; the last to count itself done combines them
  // (in order, as a GROUP does) and alone stores the output, leaving the counter at zero. The
  // other workgroups run the same instructions with their loads and stores switched off, so that
  // every work item reaches the barriers.
  std::vector<int> finish_grid(std::vector<int> values, ReduceOp op, DType dtype, int64_t group) {
    const Sym first_lane = lt(group_lane_, Sym(1));
    LinInstr partial{LinOp::Store, dtype};
    partial.srcs = {values.at(0)};
    partial.buffer = grid_partials_;
    partial.index = grid_group_;
    partial.valid = first_lane;
    emit(std::move(partial));
    LinInstr flag{LinOp::DefineLocal, dtypes::uint32};
    flag.local_size = 1;
    const int flag_index = emit(std::move(flag));
    LinInstr ticket{LinOp::GridTicket, dtypes::uint32};
    ticket.srcs = {flag_index};
    ticket.buffer = grid_counter_;
    ticket.valid = first_lane;
    ticket.local_size = grid_groups_;
    ticket.loop_var = "grid_last";
    emit(std::move(ticket));
    // As a condition (GLSL's are bools, not integers).
    const Sym last = lt(Sym(0), Sym::var("grid_last", 0, 1));

    std::vector<int> accumulator = define_accumulators(op, dtype, 1);
    std::vector<int> loops;
    const Sym step = open_loop(loops, Sym((grid_groups_ + group - 1) / group));
    const Sym position = step * Sym(group) + group_lane_;
    const Sym valid =
        grid_groups_ % group == 0 ? last : logical_and(last, lt(position, Sym(grid_groups_)));
    LinInstr load{LinOp::Load, dtype};
    load.buffer = grid_partials_;
    load.index = position;
    load.valid = valid;
    load.value = reduce_identity(op, dtype);
    accumulate(accumulator[0], masked_identity(emit(std::move(load)), valid, op, dtype), op);
    close_loop(loops);
    std::vector<int> total =
        combine_across_group(std::move(accumulator), op, dtype, group, group_lane_);
    LinInstr reset{LinOp::Store, dtypes::uint32};
    reset.srcs = {constant(dtypes::uint32, ConstArg{})};
    reset.buffer = grid_counter_;
    reset.index = Sym(0);
    reset.valid = logical_and(first_lane, last);
    emit(std::move(reset));
    store_guard_ = logical_and(store_guard_, last);
    return total;
  }

  const ScheduleItem& item_;
  const KernelAxes& axes_;
  const std::vector<Opt>& opts_;
  UOpRef kernel_reduce_;  // the Reduce the reduction opts apply to
  std::vector<ReduceAxisOpts> reduce_opts_;
  std::vector<int64_t> upcast_;                 // per output axis
  Sym group_lane_ = Sym(0);                     // GROUP: the work item's place in its group
  int64_t row_lanes_ = 0;                       // a workgroup per row: its work items (0: none)
  Sym row_lane_ = Sym(0);                       // the work item's place in its row's workgroup
  int64_t grid_groups_ = 1;                     // GRID: the workgroups sharing the reduction
  Sym grid_item_ = Sym(0);                      // GRID: the work item's place in the grid
  Sym grid_group_ = Sym(0);                     // GRID: its workgroup
  int grid_partials_ = -1, grid_counter_ = -1;  // GRID: the scratch parameters
  std::map<int, int64_t> local_of_;  // LOCAL amounts by output axis (kFlatAxis: the flat index)
  Index tile_index_;                 // the work item's tile index along each output axis
  int64_t tile_chunk_ = 0;           // TILE: the reduction's chunk (0: no TILE)
  std::unordered_map<const UOp*, StagedInput> staged_;  // TILE: the inputs' chunks, by node
  Sym chunk_start_ = Sym(0);     // TILE: the reduce index where the current chunk starts
  bool reading_chunks_ = false;  // TILE: inputs are read from their chunks
  Sym store_guard_ = Sym(1);     // which work items store the outputs
  std::unordered_map<const UOp*, int> param_of_;
  // Where the values being lowered are needed; loads outside it read nothing (see lower_view).
  Sym gate_ = Sym(1);
};

}  // namespace

LinearProgram lower_kernel(const ScheduleItem& item, const std::vector<Opt>& opts,
                           const OptTarget& target) {
  const KernelAxes axes = kernel_axes(item.ast);
  check_opts(axes, opts, target,
             std::string("storing ") + item.output->dtype().name() + "[" +
                 std::to_string(item.output->numel()) + "]");
  const bool grid = std::any_of(opts.begin(), opts.end(),
                                [](const Opt& opt) { return opt.kind == OptKind::Grid; });
  const int64_t buffers = static_cast<int64_t>(item.inputs.size()) + 1 + kGridScratchBuffers;
  if (grid && target.max_kernel_buffers > 0 && buffers > target.max_kernel_buffers)
    throw OptError("[opts] GRID does not fit kernel storing " +
                   std::string(item.output->dtype().name()) + ": with its two scratch buffers it " +
                   "binds " + std::to_string(buffers) + "; " + target.device + " binds at most " +
                   std::to_string(target.max_kernel_buffers));
  LinearProgram program = Lowerer(item, axes, opts).run();
  program.variables = kernel_variables(item.ast);
  spread_over_hardware(program, target.max_workgroups);
  program.name = kernel_name(program);
  return program;
}

}  // namespace kiln

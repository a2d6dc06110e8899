#include <kiln/error.h>

#include <algorithm>
#include <string>
#include <vector>

#include "codegen/blocked_sum.h"
#include "codegen/lowerer.h"

namespace kiln {

namespace {
// Neighbouring elements each of a row's work items reads per step of a shared row reduction.
constexpr int64_t kRowInner = 4;
}  // namespace

// One loop nest for every lane: each lane has its accumulator. Long float sums add into block
// accumulators first (see plan_blocked_sum), so their rounding error grows like sqrt(n). The
// kernel's own reduction takes its opts: along each reduce axis, position =
// (((trip * unroll + copy) * outer + outer part) * group + group lane) * inner + inner part, where
// the UPCAST listed before the GROUP is inner (ReduceAxisPlan).
std::vector<int> Lowerer::lower_reduce(const UOpRef& node, const Lanes& lanes) {
  const ReduceArg& reduce = node->reduce_arg();
  const UOpRef& src = node->src();
  const DType dtype = node->dtype();
  const size_t lane_count = lanes.size();
  if (node == kernel_reduce_ && plan_.tile_chunk > 0) return lower_tiled_reduce(node, lanes);
  std::vector<ReduceAxisPlan> axis_opts(reduce.axes.size());
  if (node == kernel_reduce_) axis_opts = plan_.reduce;
  // GRID: the GROUP's lanes in every workgroup share the axis, numbered across the grid.
  const bool grid = node == kernel_reduce_ && plan_.grid_groups > 1;
  if (grid) {
    for (ReduceAxisPlan& opts : axis_opts) {
      if (opts.group > 1) opts.group *= plan_.grid_groups;
    }
  }
  // A fused row reduction at the row's index: the row's work items share it.
  // Not under a gate (a masked view): work items whose gate is off would add nothing of their
  // share, and all would take the total.
  const bool row_shared = node != kernel_reduce_ && row_lanes_ > 1 && lanes.size() == 1 &&
                          gate_ == Sym(1) && !mentions(lanes[0], row_lane_) &&
                          !(dtype.is_float() && reduce.op == ReduceOp::Prod);
  if (row_shared) {
    // Each work item takes 4 neighbouring elements at a time where the target joins them into a
    // vector load and the row allows.
    ReduceAxisPlan& row = axis_opts.back();
    row.group = row_lanes_;
    const Sym length = src->sym_shape()[reduce.axes.back()];
    if (vector_loads_ && length.is_const() && length.const_value() % (kRowInner * row_lanes_) == 0)
      row.upcast = row.inner = kRowInner;
  }
  const Sym& reduce_lane = grid ? grid_item_ : row_shared ? row_lane_ : group_lane_;
  const SymShape src_shape = src->sym_shape();
  for (int axis : reduce.axes) {
    if (src_shape[axis] == Sym(0))
      return finish_group(define_accumulators(reduce.op, dtype, lane_count), reduce.op, dtype,
                          node == kernel_reduce_);
  }
  // Copies of the body (unrolled, in order) and partial accumulators (upcast) per output lane.
  int64_t copies = 1, parts = 1;
  for (const ReduceAxisPlan& opts : axis_opts) copies *= opts.unroll, parts *= opts.upcast;
  std::vector<int> accumulators = define_accumulators(reduce.op, dtype, lane_count * parts);

  std::vector<ReduceLoop> plan;
  std::vector<Sym> trips(reduce.axes.size());
  for (size_t at = 0; at < reduce.axes.size(); ++at) {
    const ReduceAxisPlan& opts = axis_opts[at];
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
        const ReduceAxisPlan& opts = axis_opts[at];
        const int64_t copy_at = copy_rest % opts.unroll, part_at = part_rest % opts.upcast;
        copy_rest /= opts.unroll, part_rest /= opts.upcast;
        const int64_t outer = opts.upcast / opts.inner;
        const Sym lane = opts.group > 1 ? reduce_lane : Sym(0);
        // From the outside in: trip, unrolled copy, outer part, group lane, inner part.
        const Sym position = (((trip[at] * Sym(opts.unroll) + Sym(copy_at)) * Sym(outer) +
                               Sym(part_at / opts.inner)) *
                                  Sym(opts.group) +
                              lane) *
                                 Sym(opts.inner) +
                             Sym(part_at % opts.inner);
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
bool Lowerer::mentions(const Index& index, const Sym& var) {
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
std::vector<int> Lowerer::lower_tiled_reduce(const UOpRef& node, const Lanes& lanes) {
  if (plan_.tensor_cores) return lower_tensor_core_reduce(node, lanes);
  const UOpRef& src = node->src();
  const int reduce_axis = node->reduce_arg().axes[0];
  const ReduceOp op = node->reduce_arg().op;
  std::vector<int> accumulators = define_accumulators(op, node->dtype(), lanes.size());
  define_chunks(reduce_axis);
  std::vector<int> loops;
  const int64_t chunks = src->shape()[reduce_axis] / plan_.tile_chunk;
  chunk_start_ = open_loop(loops, Sym(chunks)) * Sym(plan_.tile_chunk);
  copy_chunks(reduce_axis);
  emit(LinInstr{LinOp::Barrier, dtypes::int64});
  const Sym step = open_loop(loops, Sym(plan_.tile_chunk));
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

Sym Lowerer::workgroup_item() const {
  // The last axis (the launch's first dimension, whose neighbouring ids a GPU puts in one warp)
  // fastest.
  Sym local_id(0);
  int64_t below = 1;
  for (auto local = plan_.local.rbegin(); local != plan_.local.rend(); ++local) {
    local_id = local_id + mod(tile_index_[local->first], Sym(local->second)) * Sym(below);
    below *= local->second;
  }
  return local_id;
}

int64_t Lowerer::workgroup_size() const {
  int64_t size = 1;
  for (const auto& [axis, amount] : plan_.local) size *= amount;
  return size;
}

Sym Lowerer::workgroup_base(int axis) const {
  const auto local = plan_.local.find(axis);
  const int64_t amount = local == plan_.local.end() ? 1 : local->second;
  return (tile_index_[axis] - mod(tile_index_[axis], Sym(amount))) * Sym(plan_.upcast[axis]);
}

void Lowerer::define_chunks(int reduce_axis) {
  for (size_t at = 0; at < axes_.reduce_inputs.size(); ++at) {
    const KernelAxes::ReduceInput& input = axes_.reduce_inputs[at];
    StagedInput staged;
    staged.input = &input;
    for (int axis : input.output_axes) {
      const auto local = plan_.local.find(axis);
      const int64_t amount = local == plan_.local.end() ? 1 : local->second;
      staged.extents.push_back(Sym(amount * plan_.upcast[axis]));
      staged.bases.push_back(workgroup_base(axis));
      staged.per_step *= amount * plan_.upcast[axis];
    }
    staged.step_major = reduce_steps_are_neighbours(input.node, reduce_axis);
    staged.row = tile_row(staged.per_step, staged.step_major);
    LinInstr define{LinOp::DefineLocal, input.node->dtype()};
    if (plan_.tensor_cores) {
      // 16-bit values that fragments read, in rows the plan pads.
      const bool is_a = static_cast<int>(at) == plan_.tensor_cores->a_input;
      staged.row = is_a ? plan_.tensor_cores->a_row : plan_.tensor_cores->b_row;
      define.fragments = define.packed = true;
    }
    define.local_size = staged.row * plan_.tile_chunk;
    staged.local = emit(std::move(define));
    staged_[input.node.get()] = std::move(staged);
  }
}

void Lowerer::copy_chunks(int reduce_axis) {
  const int64_t workgroup = workgroup_size();
  const Sym local_id = workgroup_item();
  const UOpRef& src = kernel_reduce_->src();
  for (const KernelAxes::ReduceInput& input : axes_.reduce_inputs) {
    const StagedInput& staged = staged_.at(input.node.get());
    const int64_t elements = staged.per_step * plan_.tile_chunk;
    const bool step_major = staged.step_major;
    for (int64_t first = 0; first < elements; first += workgroup) {
      const Sym element = local_id + Sym(first);
      const Sym inside = first + workgroup <= elements ? Sym(1) : lt(element, Sym(elements));
      // The element's step and place among the chunk's coordinates.
      const Sym step = step_major ? mod(element, Sym(plan_.tile_chunk))
                                  : floordiv(element, Sym(staged.per_step));
      const Sym place = step_major ? floordiv(element, Sym(plan_.tile_chunk))
                                   : mod(element, Sym(staged.per_step));
      const Index coordinates = unravel_index(place, staged.extents);
      Index index(src->shape().size(), Sym(0));
      for (size_t output = 0; output < axes_.source_axis.size(); ++output)
        index[axes_.source_axis[output]] = tile_index_[output] * Sym(plan_.upcast[output]);
      for (size_t at = 0; at < input.output_axes.size(); ++at)
        index[axes_.source_axis[input.output_axes[at]]] = staged.bases[at] + coordinates[at];
      index[reduce_axis] = chunk_start_ + step;
      const int value = gated(inside, [&] { return lower_one(input.node, index); });
      LinInstr store{LinOp::Store, input.node->dtype()};
      store.srcs = {value};
      store.buffer = staged.local;
      store.local = true;
      store.index = step * Sym(staged.row) + place;
      store.valid = inside;
      emit(std::move(store));
    }
  }
}

// TILE: an input's values at `lanes`, from its chunk in local memory.
std::vector<int> Lowerer::chunk_loads(const StagedInput& staged, const Lanes& lanes) {
  const int reduce_axis = kernel_reduce_->reduce_arg().axes[0];
  std::vector<int> values;
  for (const Index& lane : lanes) {
    Sym position = (lane[reduce_axis] - chunk_start_) * Sym(staged.row);
    Sym stride(1);
    for (size_t at = staged.bases.size(); at-- > 0;) {
      const int output = staged.input->output_axes[at];
      position = position + (lane[axes_.source_axis[output]] - staged.bases[at]) * stride;
      stride = stride * staged.extents[at];
    }
    const ValueKey key{ValueKey::Kind::LocalLoad, nullptr, staged.local, {position}};
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
std::vector<int> Lowerer::finish_group(std::vector<int> values, ReduceOp op, DType dtype,
                                       bool grouped) {
  int64_t group = 1;
  for (const ReduceAxisPlan& opts : plan_.reduce) group = std::max(group, opts.group);
  if (!grouped || group == 1) return values;
  values = combine_across_group(std::move(values), op, dtype, group, group_lane_);
  return plan_.grid_groups > 1 ? finish_grid(std::move(values), op, dtype, group) : values;
}

// GRID: each workgroup stores its partial result; the last to count itself done combines them
// (in order, as a GROUP does) and alone stores the output, leaving the counter at zero. The
// other workgroups run the same instructions with their loads and stores switched off, so that
// every work item reaches the barriers.
std::vector<int> Lowerer::finish_grid(std::vector<int> values, ReduceOp op, DType dtype,
                                      int64_t group) {
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
  ticket.local_size = plan_.grid_groups;
  ticket.loop_var = "grid_last";
  emit(std::move(ticket));
  // As a condition (GLSL's are bools, not integers).
  const Sym last = lt(Sym(0), Sym::var("grid_last", 0, 1));

  std::vector<int> accumulator = define_accumulators(op, dtype, 1);
  std::vector<int> loops;
  const Sym step = open_loop(loops, Sym((plan_.grid_groups + group - 1) / group));
  const Sym position = step * Sym(group) + group_lane_;
  const Sym valid = plan_.grid_groups % group == 0
                        ? last
                        : logical_and(last, lt(position, Sym(plan_.grid_groups)));
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
}  // namespace kiln

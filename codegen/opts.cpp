#include "codegen/opts.h"

#include <kiln/error.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "codegen/launch_spread.h"

namespace kiln {

int64_t KernelPlan::local_of(int axis) const {
  auto found = local.find(axis);
  return found == local.end() ? 1 : found->second;
}

int64_t KernelPlan::output_lanes() const {
  int64_t lanes = 1;
  for (int64_t amount : upcast) lanes *= amount;
  return lanes;
}

namespace {

// Checks a list of opts in order, folding each into the plan as it goes (a check may depend on
// the opts before it: a LOCAL splits the work items an UPCAST left), then the opts that depend
// on others (TILE, TC, GRID) and the launch as a whole.
class OptChecker {
 public:
  OptChecker(const KernelAxes& axes, const std::vector<Opt>& opts, const OptTarget& target,
             const std::string& kernel)
      : axes_(axes), opts_(opts), target_(target), kernel_(kernel) {
    plan_.axes = axes;
    plan_.opts = opts;
    plan_.upcast.assign(axes.output.size(), 1);
    plan_.reduce.resize(axes.reduce.size());
  }

  KernelPlan plan() {
    std::set<std::tuple<OptKind, int, bool>> seen;
    int group_axis = -1;
    const Opt* tile = nullptr;
    const Opt* grid = nullptr;
    const Opt* tensor_core = nullptr;

    for (const Opt& opt : opts_) {
      opt_ = &opt;
      if (opt.amount < 2) refuse("the amount must be at least 2 (1 changes nothing)");
      if (axes_.owns_lines && opt.kind != OptKind::Local && opt.kind != OptKind::Upcast)
        refuse(
            "a scatter's work items each own lines of the output: only LOCAL and UPCAST "
            "apply");
      // A GROUP's axis may take an UPCAST before the GROUP (each work item's neighbouring
      // elements) and one after it (parts a workgroup apart).
      const bool after_group = opt.kind == OptKind::Upcast && opt.axis == group_axis;
      if (!seen.insert({opt.kind, opt.axis, after_group}).second)
        refuse("the kernel already has a " + std::string(opt_kind_name(opt.kind)) +
               " on that axis" + (after_group ? " after its GROUP" : ""));
      if (opt.axis == Opt::kFlatAxis) {
        if (opt.kind != OptKind::Local) refuse("only LOCAL applies to the flat axis");
      } else if (opt.axis < 0 || opt.axis >= axes_.rank()) {
        refuse("the kernel has axes 0.." + std::to_string(axes_.rank() - 1));
      }
      const bool reduce_axis = opt.axis != Opt::kFlatAxis && axes_.is_reduce_axis(opt.axis);
      const int64_t size = opt.axis == Opt::kFlatAxis ? 0 : axes_.size(opt.axis);
      const bool symbolic = opt.axis != Opt::kFlatAxis && axes_.is_symbolic(opt.axis);
      // An UPCAST of a symbolic output axis covers its last tile in part: lanes past the size
      // read the axis' last element and store nothing (a guarded tail).
      const bool guarded_tail = symbolic && opt.kind == OptKind::Upcast && !reduce_axis;
      if (symbolic && opt.kind != OptKind::Local && opt.kind != OptKind::Group && !guarded_tail)
        refuse("the axis' size " + axes_.sym_sizes[opt.axis].key() +
               " is symbolic: only LOCAL, GROUP and an output axis' UPCAST apply at every value");
      ReduceAxisPlan* on_reduce =
          reduce_axis ? &plan_.reduce[opt.axis - axes_.output.size()] : nullptr;
      switch (opt.kind) {
        case OptKind::Local: {
          if (reduce_axis) refuse("LOCAL splits an output axis (GROUP splits a reduce axis)");
          needs_workgroups();
          if (opt.axis != Opt::kFlatAxis) {
            const int64_t items = size / plan_.upcast[opt.axis];
            if (opt.amount > items)
              refuse("the axis has " + std::to_string(items) + " work item(s) to split");
          }
          plan_.local[opt.axis] = opt.amount;
          plan_.workgroup *= opt.amount;
          break;
        }
        case OptKind::Upcast:
          if (guarded_tail && opt.amount > size)
            refuse("the axis has at most " + std::to_string(size) + " elements");
          if (!guarded_tail && size % (opt.amount * (on_reduce ? on_reduce->upcast : 1)) != 0)
            refuse("the amount" +
                   std::string(after_group ? " times the UPCAST before the GROUP" : "") +
                   " must divide the axis' size " + std::to_string(size));
          if (plan_.local.count(opt.axis)) refuse("UPCAST must come before LOCAL on the same axis");
          if (reduce_axis && !axes_.reassociable)
            refuse("partial results would reassociate a float product (its rounding changes)");
          if (on_reduce) {
            on_reduce->upcast *= opt.amount;
            if (on_reduce->group == 1) on_reduce->inner *= opt.amount;
          } else {
            plan_.upcast[opt.axis] = opt.amount;
          }
          break;
        case OptKind::Unroll:
          if (!reduce_axis) refuse("UNROLL applies to a reduce axis");
          if (size % opt.amount != 0)
            refuse("the amount must divide the axis' size " + std::to_string(size));
          if (opt.amount > 64) refuse("unrolling more than 64 copies only grows the kernel");
          on_reduce->unroll = opt.amount;
          break;
        case OptKind::Group:
          if (!reduce_axis) refuse("GROUP applies to a reduce axis (LOCAL splits an output axis)");
          if (group_axis >= 0) refuse("a kernel has at most one GROUP");
          if (!axes_.reassociable)
            refuse("partial results would reassociate a float product (its rounding changes)");
          needs_workgroups();
          on_reduce->group = opt.amount;
          group_axis = opt.axis;
          plan_.workgroup *= opt.amount;
          break;
        case OptKind::Rows:
          if (!target_.loop_launch)
            refuse("ROWS is for devices that run work items as a loop; " + target_.device +
                   " launches one work item per index");
          if (opt.axis != static_cast<int>(axes_.output.size()) - 1 || axes_.output.size() < 2)
            refuse("ROWS applies to the last output axis of a kernel with at least two");
          if (opt.amount != size)
            refuse("the amount is the row length, the axis' size " + std::to_string(size));
          break;
        case OptKind::Tile:
          if (!reduce_axis) refuse("TILE applies to a reduce axis");
          if (axes_.source_axis.empty())
            refuse(
                "TILE needs a matmul-shaped kernel: one reduce axis, and a reduction whose "
                "source is indexed by the output axes and that axis (no nested reduction)");
          needs_workgroups();
          if (target_.local_memory_bytes <= 0) refuse(target_.device + " has no local memory");
          if (size % opt.amount != 0)
            refuse("the amount must divide the axis' size " + std::to_string(size));
          if (axes_.reduce_dtype.is_float() && axes_.reduce_op == ReduceOp::Sum &&
              size > in_order_sum_limit(axes_.reduce_dtype))
            refuse("a " + std::string(axes_.reduce_dtype.name()) + " sum of more than " +
                   std::to_string(in_order_sum_limit(axes_.reduce_dtype)) +
                   " terms is added in blocks (its error grows like sqrt(n)); TILE adds in order");
          plan_.tile_chunk = opt.amount;
          tile = &opt;
          break;
        case OptKind::Grid:
          if (!reduce_axis) refuse("GRID applies to the reduce axis of a GROUP");
          needs_workgroups();
          if (!target_.grid)
            refuse(target_.device + "'s dialect has no global atomics and fences for GRID");
          plan_.grid_groups = opt.amount;
          grid = &opt;
          break;
        case OptKind::TensorCore:
          if (!reduce_axis) refuse("TC applies to the reduce axis of a TILE");
          needs_workgroups();
          if (!target_.tensor_cores)
            refuse(target_.device + "'s dialect has no matrix fragments for TC");
          if (opt.amount != kFragment)
            refuse("the amount is the fragments' reduce steps, " + std::to_string(kFragment));
          tensor_core = &opt;
          break;
      }
    }
    opt_ = nullptr;
    // ROWS: a row's work items, once the last axis' UPCAST is known.
    if (has_opt(opts_, OptKind::Rows)) plan_.row_length = axes_.output.back() / plan_.upcast.back();
    if (tile) check_tile(*tile, tensor_core != nullptr);
    if (tensor_core) plan_tensor_core(*tensor_core);
    if (grid) check_grid(*grid);
    plan_.launch = launch_layout();
    for (const Opt& opt : opts_) {
      opt_ = &opt;
      if (opt.kind != OptKind::Local && opt.kind != OptKind::Group) continue;
      if (plan_.launch.size() > 3)
        refuse("a launch has at most 3 dimensions; these opts need " +
               std::to_string(plan_.launch.size()));
      if (plan_.workgroup > target_.max_workgroup_size)
        refuse("the workgroup would have " + std::to_string(plan_.workgroup) + " work items; " +
               target_.device + " allows at most " + std::to_string(target_.max_workgroup_size));
      for (size_t dim = 0; dim < plan_.launch.size(); ++dim) {
        if (plan_.launch[dim].local > target_.max_workgroup_dims[dim])
          refuse("workgroup dimension " + std::to_string(dim) + " would have " +
                 std::to_string(plan_.launch[dim].local) + " work items; " + target_.device +
                 " allows at most " + std::to_string(target_.max_workgroup_dims[dim]));
      }
      if (opt.kind == OptKind::Group) {
        const int64_t bytes =
            opt.amount * plan_.output_lanes() * compute_itemsize(axes_.reduce_dtype);
        if (bytes > target_.local_memory_bytes)
          refuse("its partial results need " + std::to_string(bytes) + " bytes of local memory; " +
                 target_.device + " has " + std::to_string(target_.local_memory_bytes));
        if (!plan_.local.empty())
          refuse("a GROUP's workgroup is its reduction's work items only: no LOCAL beside it");
      }
    }
    check_launch_groups();
    return std::move(plan_);
  }

 private:
  // The launch dimensions, in order: the GROUP's work items, each LOCAL output axis from the
  // last to the first, then the flat index over the other output axes (omitted where every
  // output axis has a LOCAL).
  std::vector<LaunchAxis> launch_layout() const {
    std::vector<LaunchAxis> launch;
    for (const Opt& opt : opts_) {
      if (opt.kind == OptKind::Group)
        launch.push_back({LaunchAxis::Role::GroupLanes, opt.axis, opt.amount, plan_.grid_groups});
    }
    for (auto local = plan_.local.rbegin(); local != plan_.local.rend(); ++local) {
      if (local->first != Opt::kFlatAxis)
        launch.push_back({LaunchAxis::Role::Axis, local->first, local->second});
    }
    const int64_t flat_local = plan_.local_of(Opt::kFlatAxis);
    const size_t axis_locals = plan_.local.size() - (flat_local > 1 ? 1 : 0);
    if (axis_locals < axes_.output.size() || flat_local > 1 || launch.empty())
      launch.push_back({LaunchAxis::Role::Flat, Opt::kFlatAxis, flat_local});
    return launch;
  }

  // Workgroups per launch dimension against the device's limits (CUDA's grid allows 65535 along
  // y and z, Vulkan's lavapipe 65535 along each): where a dimension's do not fit even spread over
  // the hardware dimensions left free, the kernel could not be launched at all.
  void check_launch_groups() const {
    const std::vector<LaunchAxis>& launch = plan_.launch;
    if (launch.size() > 3) return;  // refused above
    auto tiles = [&](int axis) {
      const int64_t upcast = plan_.upcast[axis];
      return (axes_.size(axis) + upcast - 1) / upcast;
    };
    std::vector<int64_t> groups;
    for (const LaunchAxis& dim : launch) {
      int64_t items = 1;
      if (dim.role == LaunchAxis::Role::GroupLanes) {
        items = dim.local * dim.groups;  // one workgroup, or a GRID's
      } else if (dim.role == LaunchAxis::Role::Axis) {
        items = tiles(dim.axis);
      } else {
        for (size_t axis = 0; axis < axes_.output.size(); ++axis) {
          if (!plan_.local.count(static_cast<int>(axis))) items *= tiles(static_cast<int>(axis));
        }
      }
      groups.push_back((items + dim.local - 1) / dim.local);
    }
    if (spread_launch(groups, target_.max_workgroups)) return;
    std::string counts;
    for (size_t dim = 0; dim < groups.size(); ++dim)
      counts += (dim ? ", " : "") + std::to_string(groups[dim]);
    refuse("the launch would have " + counts + " workgroups along its dimensions; " +
           target_.device + " allows at most " + std::to_string(target_.max_workgroups[0]) + ", " +
           std::to_string(target_.max_workgroups[1]) + ", " +
           std::to_string(target_.max_workgroups[2]) + " (spread over the dimensions left free)");
  }

  void check_grid(const Opt& grid) {
    opt_ = &grid;
    const bool grouped = std::any_of(opts_.begin(), opts_.end(), [&](const Opt& other) {
      return other.kind == OptKind::Group && other.axis == grid.axis;
    });
    if (!grouped)
      refuse("GRID shares a GROUP's reduction between workgroups: no GROUP on the axis");
    int64_t outputs = 1;
    for (int64_t size : axes_.output) outputs *= size;
    if (outputs != 1 || plan_.output_lanes() != 1)
      refuse("the workgroups' partials combine into one output; the kernel has " +
             std::to_string(outputs));
    if (axes_.reduce_dtype.itemsize() < 4)
      refuse(std::string("workgroups store neighbouring partial results, and ") +
             axes_.reduce_dtype.name() + " stores are narrower than the 32 bits every device " +
             "writes without touching its neighbours");
    if (grid.amount > target_.max_workgroups[0])
      refuse(target_.device + " launches at most " + std::to_string(target_.max_workgroups[0]) +
             " workgroups along a dimension");
    const int64_t buffers = axes_.buffers + kGridScratchBuffers;
    if (target_.max_kernel_buffers > 0 && buffers > target_.max_kernel_buffers)
      refuse("with its two scratch buffers the kernel binds " + std::to_string(buffers) + "; " +
             target_.device + " binds at most " + std::to_string(target_.max_kernel_buffers));
    opt_ = nullptr;
  }

  // `tensor_cores`: the chunks are TC's, 16-bit, which plan_tensor_core counts with its results.
  void check_tile(const Opt& tile, bool tensor_cores) {
    opt_ = &tile;
    for (const Opt& other : opts_) {
      if (&other != &tile && other.axis == tile.axis && other.kind != OptKind::TensorCore)
        refuse("the reduce axis takes no other opt beside TILE (" + other.to_string() + ")");
      if (other.kind == OptKind::Group) refuse("TILE and GROUP do not combine");
    }
    if (plan_.local.count(Opt::kFlatAxis))
      refuse("the workgroup must split output axes (a LOCAL on an axis), not the flat index");
    if (plan_.local.empty()) refuse("the workgroup is one work item: TILE needs a LOCAL");
    for (const auto& [axis, amount] : plan_.local) {
      const int64_t items = axes_.size(axis) / plan_.upcast[axis];
      if (items % amount != 0)
        refuse("LOCAL(axis " + std::to_string(axis) + ", " + std::to_string(amount) +
               ") must divide the axis' " + std::to_string(items) +
               " work items: every work item reaches the barriers");
    }
    int64_t bytes = 0;
    for (const KernelAxes::ReduceInput& input : axes_.reduce_inputs) {
      int64_t per_step = 1;
      for (int axis : input.output_axes) per_step *= plan_.local_of(axis) * plan_.upcast[axis];
      const int64_t row =
          tile_row(per_step, reduce_steps_are_neighbours(input.node, axes_.reduce[0]));
      bytes += row * tile.amount * compute_itemsize(input.node->dtype());
    }
    if (bytes > target_.local_memory_bytes && !tensor_cores)
      refuse("its inputs' chunks need " + std::to_string(bytes) + " bytes of local memory; " +
             target_.device + " has " + std::to_string(target_.local_memory_bytes));
    opt_ = nullptr;
  }

  void plan_tensor_core(const Opt& tensor_core) {
    opt_ = &tensor_core;
    std::vector<int64_t> extent(axes_.output.size());
    for (size_t axis = 0; axis < extent.size(); ++axis)
      extent[axis] = plan_.upcast[axis] * plan_.local_of(static_cast<int>(axis));
    std::string why;
    plan_.tensor_cores = plan_tensor_cores(axes_, extent, plan_.workgroup, plan_.tile_chunk, why);
    if (!plan_.tensor_cores) refuse(why);
    if (plan_.tensor_cores->local_bytes() > target_.local_memory_bytes)
      refuse("its chunks and results need " + std::to_string(plan_.tensor_cores->local_bytes()) +
             " bytes of local memory; " + target_.device + " has " +
             std::to_string(target_.local_memory_bytes));
    opt_ = nullptr;
  }

  // The most terms TILE adds in order. A half type's sum accumulates in float32: its in-order
  // error bound, n float32 roundings of the sum of the terms' magnitudes, reaches the half
  // type's own unit roundoff times that sum at 2^13 terms for float16 and 2^16 for bfloat16
  // (what kiln conformance's tolerances allow many times over); float32 and float64 sums keep
  // blocks past 4096 terms.
  static int64_t in_order_sum_limit(DType dtype) {
    if (dtype == dtypes::float16) return int64_t{1} << 13;
    if (dtype == dtypes::bfloat16) return int64_t{1} << 16;
    return 4096;
  }

  [[noreturn]] void refuse(const std::string& reason) const {
    throw OptError("[opts] " + (opt_ ? opt_->to_string() : std::string("the opts")) +
                   " does not fit kernel " + kernel_ + " " + axes_.to_string() + " on " +
                   target_.device + ": " + reason);
  }

  void needs_workgroups() const {
    if (target_.loop_launch || target_.max_workgroup_size < 2)
      refuse(target_.device + " has no workgroups (max workgroup size " +
             std::to_string(target_.max_workgroup_size) + ")");
  }

  // Bytes per element of a local array: values are held in their compute type, and dialects
  // may give a narrow one (GLSL's shared bool) a whole 32-bit word.
  static int64_t compute_itemsize(DType dtype) {
    return std::max<int64_t>(4, static_cast<int64_t>(dtype.itemsize()));
  }

  const KernelAxes& axes_;
  const std::vector<Opt>& opts_;
  const OptTarget& target_;
  const std::string& kernel_;
  const Opt* opt_ = nullptr;
  KernelPlan plan_;
};

}  // namespace

KernelPlan plan_opts(const KernelAxes& axes, const std::vector<Opt>& opts, const OptTarget& target,
                     const std::string& kernel) {
  return OptChecker(axes, opts, target, kernel).plan();
}

}  // namespace kiln

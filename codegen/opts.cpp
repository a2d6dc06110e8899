#include "codegen/opts.h"

#include <kiln/error.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_set>

#include "codegen/launch_spread.h"
#include "codegen/tensor_cores.h"
#include "core/view.h"

namespace kiln {

int64_t KernelAxes::size(int axis) const {
  const int outputs = static_cast<int>(output.size());
  return axis < outputs ? output[axis] : reduce_sizes[axis - outputs];
}

std::string KernelAxes::to_string() const {
  std::string text = "[";
  for (size_t axis = 0; axis < output.size(); ++axis)
    text += (axis ? " " : "") + sym_sizes[axis].key();
  if (!reduce.empty()) {
    text += " | " + std::string(reduce_op_name(reduce_op)) + " " + reduce_dtype.name();
    for (size_t at = 0; at < reduce.size(); ++at) text += " " + sym_sizes[output.size() + at].key();
  }
  return text + "]";
}

UOpRef kernel_reduce(const UOpRef& ast) {
  std::vector<UOpRef> stack{ast};
  std::unordered_set<const UOp*> seen{ast.get()};
  UOpRef found;
  while (!stack.empty()) {
    const UOpRef node = stack.back();
    stack.pop_back();
    if (node->op() == Op::Reduce) {
      if (found) return nullptr;
      found = node;
      continue;
    }
    if (!is_elementwise(node->op()) && node->op() != Op::View) continue;
    // A reduction read broadcast (fused into its row's kernel: codegen/row_fusion.h) is computed
    // once per row, not by the kernel's own reduction loop.
    if (node->op() == Op::View && !node->tracker().is_injective()) continue;
    for (const UOpRef& src : node->srcs()) {
      if (seen.insert(src.get()).second) stack.push_back(src);
    }
  }
  return found;
}

namespace {

bool mentions(const Sym& value, const std::string& var) {
  const std::vector<std::string> names = value.variables();
  return std::binary_search(names.begin(), names.end(), var);
}

// Fills source_axis and reduce_inputs where the reduction's source axes are the output axes plus
// the reduce axis: an output index of probe variables is carried through the Views between the
// output and the Reduce, and each must arrive as its own variable.
void find_matmul_shape(const UOpRef& ast, const UOpRef& reduce, KernelAxes& axes) {
  const Shape& source_shape = reduce->src()->shape();
  const int reduce_axis = reduce->reduce_arg().axes[0];
  // Nothing to stage where either side is empty (an output shrunk to nothing after the reduction
  // still holds it).
  if (std::count(source_shape.begin(), source_shape.end(), 0) > 0 ||
      std::count(axes.output.begin(), axes.output.end(), 0) > 0)
    return;
  // Every path from the output down to the Reduce must carry the output index there the same
  // way (elementwise ops keep it, Views map it).
  std::vector<Sym> probes;
  for (size_t axis = 0; axis < axes.output.size(); ++axis)
    probes.push_back(Sym::var("probe" + std::to_string(axis), 0, axes.output[axis] - 1));
  std::optional<std::vector<Sym>> arrived;
  bool consistent = true;
  std::set<std::pair<const UOp*, std::vector<Sym>>> walked;
  std::function<void(const UOpRef&, const std::vector<Sym>&)> walk =
      [&](const UOpRef& node, const std::vector<Sym>& index) {
        if (!consistent || !walked.emplace(node.get(), index).second) return;
        if (node == reduce) {
          if (arrived && *arrived != index) consistent = false;
          arrived = index;
          return;
        }
        if (node->op() == Op::View) {
          auto [flat, valid] = node->tracker().to_index(index);
          if (!(valid == Sym(1))) {
            consistent = false;
            return;
          }
          walk(node->src(), unravel_index(flat, to_sym_shape(node->src()->shape())));
          return;
        }
        for (const UOpRef& src : node->srcs()) {
          if (kernel_reduce(src) == reduce) walk(src, index);
        }
      };
  walk(ast, probes);
  if (!consistent || !arrived) return;
  const std::vector<Sym>& index = *arrived;
  if (index.size() != source_shape.size()) return;
  std::vector<int> source_axis(axes.output.size(), -1);
  for (size_t axis = 0; axis < index.size(); ++axis) {
    if (static_cast<int>(axis) == reduce_axis) {
      if (!(index[axis] == Sym(0))) return;
      continue;
    }
    if (index[axis].kind() != SymKind::Var) return;
    const std::string& name = index[axis].var_name();
    const int output = std::stoi(name.substr(5));
    if (source_axis[output] != -1 || index[axis].vmax() != source_shape[axis] - 1) return;
    source_axis[output] = static_cast<int>(axis);
  }
  if (std::count(source_axis.begin(), source_axis.end(), -1) > 0) return;
  for (size_t output = 1; output < source_axis.size(); ++output) {
    if (source_axis[output] < source_axis[output - 1]) return;  // the axes keep their order
  }
  // The source's index in probe variables; the reduce axis is a probe of its own.
  std::vector<Sym> source_index(source_shape.size());
  for (size_t output = 0; output < source_axis.size(); ++output)
    source_index[source_axis[output]] = index[source_axis[output]];
  source_index[reduce_axis] = Sym::var("probe_r", 0, source_shape[reduce_axis] - 1);
  std::vector<UOpRef> stack{reduce->src()};
  std::unordered_set<const UOp*> seen{reduce->src().get()};
  while (!stack.empty()) {
    const UOpRef node = stack.back();
    stack.pop_back();
    if (node->op() == Op::Reduce) return;  // a nested reduction: not matmul-shaped
    // A View of a constant or of indices reads no buffer.
    if (node->op() == Op::View && (node->src()->op() == Op::Const || node->src()->op() == Op::Iota))
      continue;
    if (node->op() == Op::View || node->op() == Op::Buffer) {
      Sym flat, valid(1);
      if (node->op() == Op::View) {
        std::tie(flat, valid) = node->tracker().to_index(source_index);
      } else {
        const SymShape strides = View::contiguous_strides(to_sym_shape(node->shape()));
        flat = Sym(0);
        for (size_t dim = 0; dim < source_index.size(); ++dim)
          flat = flat + source_index[dim] * strides[dim];
      }
      KernelAxes::ReduceInput input{node, {}};
      for (size_t output = 0; output < source_axis.size(); ++output) {
        const std::string var = "probe" + std::to_string(output);
        if (mentions(flat, var) || mentions(valid, var))
          input.output_axes.push_back(static_cast<int>(output));
      }
      axes.reduce_inputs.push_back(std::move(input));
      continue;
    }
    if (!is_elementwise(node->op()) && node->op() != Op::Cast) continue;
    for (const UOpRef& src : node->srcs()) {
      if (seen.insert(src.get()).second) stack.push_back(src);
    }
  }
  axes.source_axis = std::move(source_axis);
  const UOpRef& source = reduce->src();
  if (source->op() == Op::Mul && axes.reduce_inputs.size() == 2 && source->dtype().is_half()) {
    const UOp* first = axes.reduce_inputs[0].node.get();
    const UOp* second = axes.reduce_inputs[1].node.get();
    const UOp* left = source->srcs()[0].get();
    const UOp* right = source->srcs()[1].get();
    axes.products_of_halves =
        ((left == first && right == second) || (left == second && right == first)) &&
        left->dtype() == source->dtype() && right->dtype() == source->dtype();
  }
}

}  // namespace

KernelAxes kernel_axes(const UOpRef& ast) {
  KernelAxes axes;
  axes.output = ast->shape();
  axes.sym_sizes = ast->sym_shape();
  if (const UOpRef reduce = kernel_reduce(ast)) {
    const ReduceArg& arg = reduce->reduce_arg();
    const SymShape source_sizes = reduce->src()->sym_shape();
    for (int axis : arg.axes) {
      axes.reduce.push_back(axis);
      axes.reduce_sizes.push_back(reduce->src()->shape()[axis]);
      axes.sym_sizes.push_back(source_sizes[axis]);
    }
    axes.reduce_op = arg.op;
    axes.reduce_dtype = reduce->dtype();
    axes.reassociable = !reduce->dtype().is_float() || arg.op != ReduceOp::Prod;
    // A symbolic kernel is not tiled (TILE divides its axes).
    if (arg.axes.size() == 1 && !ast->is_symbolic() && !reduce->src()->is_symbolic())
      find_matmul_shape(ast, reduce, axes);
  }
  return axes;
}

std::vector<LaunchAxis> launch_layout(const KernelAxes& axes, const std::vector<Opt>& opts) {
  std::vector<LaunchAxis> launch;
  std::map<int, int64_t, std::greater<int>> local_of;  // the last output axis first
  int64_t flat_local = 1;
  int64_t grid = 1;
  for (const Opt& opt : opts) {
    if (opt.kind == OptKind::Grid) grid = opt.amount;
  }
  for (const Opt& opt : opts) {
    if (opt.kind == OptKind::Group)
      launch.push_back({LaunchAxis::Role::GroupLanes, opt.axis, opt.amount, grid});
    if (opt.kind != OptKind::Local) continue;
    if (opt.axis == Opt::kFlatAxis) {
      flat_local = opt.amount;
    } else {
      local_of[opt.axis] = opt.amount;
    }
  }
  for (const auto& [axis, amount] : local_of)
    launch.push_back({LaunchAxis::Role::Axis, axis, amount});
  if (local_of.size() < axes.output.size() || flat_local > 1 || launch.empty())
    launch.push_back({LaunchAxis::Role::Flat, Opt::kFlatAxis, flat_local});
  return launch;
}

namespace {

class OptChecker {
 public:
  OptChecker(const KernelAxes& axes, const OptTarget& target, const std::string& kernel)
      : axes_(axes), target_(target), kernel_(kernel) {}

  void check(const std::vector<Opt>& opts) {
    std::set<std::tuple<OptKind, int, bool>> seen;
    std::map<int, int64_t> upcast_of, local_of, reduce_upcast_of;
    int64_t group = 0, workgroup = 1;
    int group_axis = -1;
    const Opt* tile = nullptr;
    const Opt* grid = nullptr;
    const Opt* tensor_core = nullptr;

    for (const Opt& opt : opts) {
      opt_ = &opt;
      if (opt.amount < 2) refuse("the amount must be at least 2 (1 changes nothing)");
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
      if (symbolic && opt.kind != OptKind::Local && opt.kind != OptKind::Group)
        refuse("the axis' size " + axes_.sym_sizes[opt.axis].key() +
               " is symbolic: only LOCAL and GROUP apply at every value");
      switch (opt.kind) {
        case OptKind::Local: {
          if (reduce_axis) refuse("LOCAL splits an output axis (GROUP splits a reduce axis)");
          needs_workgroups();
          if (opt.axis != Opt::kFlatAxis) {
            const int64_t items = size / upcast_or_one(upcast_of, opt.axis);
            if (opt.amount > items)
              refuse("the axis has " + std::to_string(items) + " work item(s) to split");
          }
          local_of[opt.axis] = opt.amount;
          workgroup *= opt.amount;
          break;
        }
        case OptKind::Upcast:
          if (size % (opt.amount * upcast_or_one(reduce_upcast_of, opt.axis)) != 0)
            refuse("the amount" +
                   std::string(after_group ? " times the UPCAST before the GROUP" : "") +
                   " must divide the axis' size " + std::to_string(size));
          if (reduce_axis) reduce_upcast_of[opt.axis] = opt.amount;
          if (local_of.count(opt.axis)) refuse("UPCAST must come before LOCAL on the same axis");
          if (reduce_axis && !axes_.reassociable)
            refuse("partial results would reassociate a float product (its rounding changes)");
          if (!reduce_axis) upcast_of[opt.axis] = opt.amount;
          break;
        case OptKind::Unroll:
          if (!reduce_axis) refuse("UNROLL applies to a reduce axis");
          if (size % opt.amount != 0)
            refuse("the amount must divide the axis' size " + std::to_string(size));
          if (opt.amount > 64) refuse("unrolling more than 64 copies only grows the kernel");
          break;
        case OptKind::Group:
          if (!reduce_axis) refuse("GROUP applies to a reduce axis (LOCAL splits an output axis)");
          if (group > 0) refuse("a kernel has at most one GROUP");
          if (!axes_.reassociable)
            refuse("partial results would reassociate a float product (its rounding changes)");
          needs_workgroups();
          group = opt.amount;
          group_axis = opt.axis;
          workgroup *= opt.amount;
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
          tile = &opt;
          break;
        case OptKind::Grid:
          if (!reduce_axis) refuse("GRID applies to the reduce axis of a GROUP");
          needs_workgroups();
          if (!target_.grid)
            refuse(target_.device + "'s dialect has no global atomics and fences for GRID");
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
    if (tile) check_tile(*tile, opts, upcast_of, local_of, tensor_core != nullptr);
    if (tensor_core) check_tensor_cores(*tensor_core, opts);
    if (grid) check_grid(*grid, opts, upcast_of);
    const std::vector<LaunchAxis> launch = launch_layout(axes_, opts);
    for (const Opt& opt : opts) {
      opt_ = &opt;
      if (opt.kind != OptKind::Local && opt.kind != OptKind::Group) continue;
      if (launch.size() > 3)
        refuse("a launch has at most 3 dimensions; these opts need " +
               std::to_string(launch.size()));
      if (workgroup > target_.max_workgroup_size)
        refuse("the workgroup would have " + std::to_string(workgroup) + " work items; " +
               target_.device + " allows at most " + std::to_string(target_.max_workgroup_size));
      for (size_t dim = 0; dim < launch.size(); ++dim) {
        if (launch[dim].local > target_.max_workgroup_dims[dim])
          refuse("workgroup dimension " + std::to_string(dim) + " would have " +
                 std::to_string(launch[dim].local) + " work items; " + target_.device +
                 " allows at most " + std::to_string(target_.max_workgroup_dims[dim]));
      }
      if (opt.kind == OptKind::Group) {
        const int64_t bytes =
            opt.amount * output_lanes(upcast_of) * compute_itemsize(axes_.reduce_dtype);
        if (bytes > target_.local_memory_bytes)
          refuse("its partial results need " + std::to_string(bytes) + " bytes of local memory; " +
                 target_.device + " has " + std::to_string(target_.local_memory_bytes));
        if (std::any_of(opts.begin(), opts.end(),
                        [](const Opt& other) { return other.kind == OptKind::Local; }))
          refuse("a GROUP's workgroup is its reduction's work items only: no LOCAL beside it");
      }
    }
    check_launch_groups(launch, upcast_of, local_of);
  }

 private:
  // Workgroups per launch dimension against the device's limits (CUDA's grid allows 65535 along
  // y and z, Vulkan's lavapipe 65535 along each): where a dimension's do not fit even spread over
  // the hardware dimensions left free, the kernel could not be launched at all.
  void check_launch_groups(const std::vector<LaunchAxis>& launch,
                           const std::map<int, int64_t>& upcast_of,
                           const std::map<int, int64_t>& local_of) const {
    if (launch.size() > 3) return;  // refused above
    auto tiles = [&](int axis) {
      const int64_t upcast = upcast_or_one(upcast_of, axis);
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
          if (!local_of.count(static_cast<int>(axis))) items *= tiles(static_cast<int>(axis));
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

  void check_grid(const Opt& grid, const std::vector<Opt>& opts,
                  const std::map<int, int64_t>& upcast_of) {
    opt_ = &grid;
    const bool grouped = std::any_of(opts.begin(), opts.end(), [&](const Opt& other) {
      return other.kind == OptKind::Group && other.axis == grid.axis;
    });
    if (!grouped)
      refuse("GRID shares a GROUP's reduction between workgroups: no GROUP on the axis");
    int64_t outputs = 1;
    for (int64_t size : axes_.output) outputs *= size;
    if (outputs != 1 || output_lanes(upcast_of) != 1)
      refuse("the workgroups' partials combine into one output; the kernel has " +
             std::to_string(outputs));
    if (axes_.reduce_dtype.itemsize() < 4)
      refuse(std::string("workgroups store neighbouring partial results, and ") +
             axes_.reduce_dtype.name() + " stores are narrower than the 32 bits every device " +
             "writes without touching its neighbours");
    if (grid.amount > target_.max_workgroups[0])
      refuse(target_.device + " launches at most " + std::to_string(target_.max_workgroups[0]) +
             " workgroups along a dimension");
    opt_ = nullptr;
  }

  // `tensor_cores`: the chunks are TC's, 16-bit, which check_tensor_cores counts with its
  // results.
  void check_tile(const Opt& tile, const std::vector<Opt>& opts,
                  const std::map<int, int64_t>& upcast_of, const std::map<int, int64_t>& local_of,
                  bool tensor_cores) {
    opt_ = &tile;
    for (const Opt& other : opts) {
      if (&other != &tile && other.axis == tile.axis && other.kind != OptKind::TensorCore)
        refuse("the reduce axis takes no other opt beside TILE (" + other.to_string() + ")");
      if (other.kind == OptKind::Group) refuse("TILE and GROUP do not combine");
    }
    if (local_of.count(Opt::kFlatAxis))
      refuse("the workgroup must split output axes (a LOCAL on an axis), not the flat index");
    if (local_of.empty()) refuse("the workgroup is one work item: TILE needs a LOCAL");
    for (const auto& [axis, amount] : local_of) {
      const int64_t items = axes_.size(axis) / upcast_or_one(upcast_of, axis);
      if (items % amount != 0)
        refuse("LOCAL(axis " + std::to_string(axis) + ", " + std::to_string(amount) +
               ") must divide the axis' " + std::to_string(items) +
               " work items: every work item reaches the barriers");
    }
    int64_t bytes = 0;
    for (const KernelAxes::ReduceInput& input : axes_.reduce_inputs) {
      int64_t per_step = 1;
      for (int axis : input.output_axes) {
        auto local = local_of.find(axis);
        per_step *= (local == local_of.end() ? 1 : local->second) * upcast_or_one(upcast_of, axis);
      }
      const int64_t row =
          tile_row(per_step, reduce_steps_are_neighbours(input.node, axes_.reduce[0]));
      bytes += row * tile.amount * compute_itemsize(input.node->dtype());
    }
    if (bytes > target_.local_memory_bytes && !tensor_cores)
      refuse("its inputs' chunks need " + std::to_string(bytes) + " bytes of local memory; " +
             target_.device + " has " + std::to_string(target_.local_memory_bytes));
    opt_ = nullptr;
  }

  void check_tensor_cores(const Opt& tensor_core, const std::vector<Opt>& opts) {
    opt_ = &tensor_core;
    std::string why;
    const std::optional<TensorCorePlan> plan = plan_tensor_cores(axes_, opts, why);
    if (!plan) refuse(why);
    if (plan->local_bytes() > target_.local_memory_bytes)
      refuse("its chunks and results need " + std::to_string(plan->local_bytes()) +
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

  static int64_t upcast_or_one(const std::map<int, int64_t>& upcast_of, int axis) {
    auto found = upcast_of.find(axis);
    return found == upcast_of.end() ? 1 : found->second;
  }

  static int64_t output_lanes(const std::map<int, int64_t>& upcast_of) {
    int64_t lanes = 1;
    for (const auto& [axis, amount] : upcast_of) lanes *= amount;
    return lanes;
  }

  // Bytes per element of a local array: values are held in their compute type, and dialects
  // may give a narrow one (GLSL's shared bool) a whole 32-bit word.
  static int64_t compute_itemsize(DType dtype) {
    return std::max<int64_t>(4, static_cast<int64_t>(dtype.itemsize()));
  }

  const KernelAxes& axes_;
  const OptTarget& target_;
  const std::string& kernel_;
  const Opt* opt_ = nullptr;
};

}  // namespace

bool reduce_steps_are_neighbours(const UOpRef& input, int reduce_axis) {
  if (input->op() != Op::View || input->src()->op() != Op::Buffer) return false;
  std::vector<Sym> index(input->sym_shape().size(), Sym(0));
  const Sym first = input->tracker().to_index(index).first;
  index[reduce_axis] = Sym(1);
  return input->tracker().to_index(index).first - first == Sym(1);
}

void check_opts(const KernelAxes& axes, const std::vector<Opt>& opts, const OptTarget& target,
                const std::string& kernel) {
  OptChecker(axes, target, kernel).check(opts);
}

}  // namespace kiln

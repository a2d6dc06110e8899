#include "codegen/opts.h"

#include <kiln/error.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <unordered_set>

namespace kiln {

const char* opt_kind_name(OptKind kind) {
  switch (kind) {
    case OptKind::Local:
      return "LOCAL";
    case OptKind::Upcast:
      return "UPCAST";
    case OptKind::Unroll:
      return "UNROLL";
    case OptKind::Group:
      return "GROUP";
    case OptKind::Rows:
      return "ROWS";
  }
  return "?";
}

std::string Opt::to_string() const {
  const std::string where = axis == kFlatAxis ? "flat" : "axis " + std::to_string(axis);
  return std::string(opt_kind_name(kind)) + "(" + where + ", " + std::to_string(amount) + ")";
}

std::string opts_to_string(const std::vector<Opt>& opts) {
  if (opts.empty()) return "none";
  std::string text;
  for (const Opt& opt : opts) text += (text.empty() ? "" : " ") + opt.to_string();
  return text;
}

int64_t KernelAxes::size(int axis) const {
  const int outputs = static_cast<int>(output.size());
  return axis < outputs ? output[axis] : reduce_sizes[axis - outputs];
}

std::string KernelAxes::to_string() const {
  std::string text = "[";
  for (size_t axis = 0; axis < output.size(); ++axis)
    text += (axis ? " " : "") + std::to_string(output[axis]);
  if (!reduce.empty()) {
    text += " | " + std::string(reduce_op_name(reduce_op)) + " " + reduce_dtype.name();
    for (int64_t size : reduce_sizes) text += " " + std::to_string(size);
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
    for (const UOpRef& src : node->srcs()) {
      if (seen.insert(src.get()).second) stack.push_back(src);
    }
  }
  return found;
}

KernelAxes kernel_axes(const UOpRef& ast) {
  KernelAxes axes;
  axes.output = ast->shape();
  if (const UOpRef reduce = kernel_reduce(ast)) {
    const ReduceArg& arg = reduce->reduce_arg();
    for (int axis : arg.axes) {
      axes.reduce.push_back(axis);
      axes.reduce_sizes.push_back(reduce->src()->shape()[axis]);
    }
    axes.reduce_op = arg.op;
    axes.reduce_dtype = reduce->dtype();
    axes.reassociable = !reduce->dtype().is_float() || arg.op != ReduceOp::Prod;
  }
  return axes;
}

std::vector<LaunchAxis> launch_layout(const KernelAxes& axes, const std::vector<Opt>& opts) {
  std::vector<LaunchAxis> launch;
  std::map<int, int64_t, std::greater<int>> local_of;  // the last output axis first
  int64_t flat_local = 1;
  for (const Opt& opt : opts) {
    if (opt.kind == OptKind::Group)
      launch.push_back({LaunchAxis::Role::GroupLanes, opt.axis, opt.amount});
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
    std::set<std::pair<OptKind, int>> seen;
    std::map<int, int64_t> upcast_of, local_of;
    int64_t group = 0, workgroup = 1;

    for (const Opt& opt : opts) {
      opt_ = &opt;
      if (opt.amount < 2) refuse("the amount must be at least 2 (1 changes nothing)");
      if (!seen.insert({opt.kind, opt.axis}).second)
        refuse("the kernel already has a " + std::string(opt_kind_name(opt.kind)) +
               " on that axis");
      if (opt.axis == Opt::kFlatAxis) {
        if (opt.kind != OptKind::Local) refuse("only LOCAL applies to the flat axis");
      } else if (opt.axis < 0 || opt.axis >= axes_.rank()) {
        refuse("the kernel has axes 0.." + std::to_string(axes_.rank() - 1));
      }
      const bool reduce_axis = opt.axis != Opt::kFlatAxis && axes_.is_reduce_axis(opt.axis);
      const int64_t size = opt.axis == Opt::kFlatAxis ? 0 : axes_.size(opt.axis);
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
          if (size % opt.amount != 0)
            refuse("the amount must divide the axis' size " + std::to_string(size));
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
      }
    }
    opt_ = nullptr;
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
  }

 private:
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

  static int64_t compute_itemsize(DType dtype) {
    return dtype.is_half() ? 4 : static_cast<int64_t>(dtype.itemsize());
  }

  const KernelAxes& axes_;
  const OptTarget& target_;
  const std::string& kernel_;
  const Opt* opt_ = nullptr;
};

}  // namespace

void check_opts(const KernelAxes& axes, const std::vector<Opt>& opts, const OptTarget& target,
                const std::string& kernel) {
  OptChecker(axes, target, kernel).check(opts);
}

}  // namespace kiln

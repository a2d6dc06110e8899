#pragma once
// A kernel's plan: a list of optimisations (opts, codegen/opt.h) checked against the kernel's
// axes (codegen/kernel_axes.h) and the device (OptTarget), and folded into what lowering, the
// launch, the tensor-core planner and the heuristics read: per-axis amounts, the launch
// dimensions, and the TILE, GRID and TC plans. plan_opts is the one place a list is read; it
// refuses a list that does not fit the kernel or the device before anything is built, so an
// invalid list never produces a wrong kernel. A new kind of opt is checked and folded here, and
// applied by one lowering file.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "codegen/kernel_axes.h"
#include "codegen/opt.h"
#include "codegen/opt_target.h"
#include "codegen/tensor_cores.h"

namespace kiln {

// One launch dimension of a kernel. In order (x, y, z): the GROUP's work items, then each LOCAL
// output axis from the last to the first, then the flat index over the other output axes
// (omitted where every output axis has a LOCAL). More than three is invalid.
struct LaunchAxis {
  enum class Role { GroupLanes, Axis, Flat } role;
  int axis;            // the kernel axis (GroupLanes, Axis); kFlatAxis for Flat
  int64_t local;       // work items per workgroup along this dimension
  int64_t groups = 1;  // GroupLanes under a GRID: its workgroups (else one per output)
};
// The reduction opts of one reduce axis (amounts of 1: none). `inner` is the part of `upcast`
// listed before the axis' GROUP: each work item's partial results read neighbouring elements
// (vector loads); the rest of the upcast's parts are a workgroup apart.
struct ReduceAxisPlan {
  int64_t upcast = 1, unroll = 1, group = 1, inner = 1;
};

struct KernelPlan {
  KernelAxes axes;
  std::vector<Opt> opts;               // the list, as given
  std::vector<int64_t> upcast;         // UPCAST per output axis
  std::vector<ReduceAxisPlan> reduce;  // per reduce axis (kernel axis output.size() + i)
  std::map<int, int64_t> local;        // LOCAL by output axis; Opt::kFlatAxis: the flat index
  int64_t workgroup = 1;               // work items per workgroup (the LOCALs', or the GROUP's)
  int64_t tile_chunk = 0;              // TILE: reduce steps per chunk (0: none)
  int64_t grid_groups = 1;             // GRID: the workgroups sharing the reduction (1: none)
  int64_t row_length = 0;              // ROWS: work items per row (0: none)
  std::optional<TensorCorePlan> tensor_cores;  // TC
  std::vector<LaunchAxis> launch;

  int64_t local_of(int axis) const;  // 1 where the axis has no LOCAL
  int64_t output_lanes() const;      // outputs per work item: the product of the UPCASTs
};

// The plan of `opts` for the kernel. Throws OptError naming the opt, the kernel and the limit it
// breaks, where the list does not fit. `kernel` names the kernel in the message.
KernelPlan plan_opts(const KernelAxes& axes, const std::vector<Opt>& opts, const OptTarget& target,
                     const std::string& kernel);

}  // namespace kiln

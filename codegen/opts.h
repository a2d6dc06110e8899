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
#include "codegen/tensor_cores.h"

namespace kiln {

// What a device offers the optimiser (from its DeviceProperties) and how its dialect launches.
struct OptTarget {
  std::string device = "?";  // for messages
  std::string architecture;  // DeviceProperties::architecture ("sm_90"; empty: none named)
  bool loop_launch = true;   // work items run as a loop (the CPU): no workgroups
  bool is_gpu = false;
  int64_t max_workgroup_size = 1;
  int64_t max_workgroup_dims[3] = {1, 1, 1};
  int64_t max_workgroups[3] = {INT64_MAX, INT64_MAX, INT64_MAX};  // per launch dimension
  int64_t local_memory_bytes = 0;
  int64_t compute_units = 1;
  int64_t simd_width = 1;          // a GPU's warp or wavefront
  int64_t max_kernel_buffers = 0;  // buffers one kernel binds (0: no limit below kiln's own)
  bool grid = false;               // the dialect renders GRID (global atomics and fences)
  bool vector_loads = false;       // the dialect joins neighbouring 32-bit loads into vectors
  // TC is valid: the dialect renders matrix fragments (on the device's matrix units where
  // `native_tensor_cores`, else emulated by each work item, which proves the lowering on any
  // device with workgroups). The heuristics choose TC where native (and under KILN_OPTS=gpu,
  // which sets it so that emulated units stand in for a GPU's).
  bool tensor_cores = false;
  bool native_tensor_cores = false;
  // Whether the heuristics give a large full reduction GRID (a GPU): the scheduler then keeps it
  // one kernel (KernelLimits::grid_reductions).
  bool prefers_grid() const { return grid && is_gpu; }
};

// GRID: the scratch buffers a kernel binds after its inputs (the partial results and the
// counter).
constexpr int kGridScratchBuffers = 2;

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

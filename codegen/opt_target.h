#pragma once
// What a device offers the optimiser and the scheduler: its launch model, limits and what its
// dialect renders. Built from a device's properties by the runtime (runtime/opt_policy.h), or
// described by a tool or test for a device it does not have.

#include <cstdint>
#include <string>

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
  // Loop iterations a work item may run before the device stops it (lavapipe's limit; 0: none).
  int64_t max_loop_iterations = 0;
  bool grid = false;          // the dialect renders GRID (global atomics and fences)
  bool vector_loads = false;  // the dialect joins neighbouring 32-bit loads into vectors
  // TC is valid: the dialect renders matrix fragments (on the device's matrix units where
  // `native_tensor_cores`, else emulated by each work item, which proves the lowering on any
  // device with workgroups). The heuristics choose TC where native (and under KILN_OPTS=gpu,
  // which sets it so that emulated units stand in for a GPU's).
  bool tensor_cores = false;
  bool native_tensor_cores = false;
  // Whether the heuristics give a large full reduction GRID (a GPU): the scheduler then keeps it
  // one kernel.
  bool prefers_grid() const { return grid && is_gpu; }
};

// GRID: the scratch buffers a kernel binds after its inputs (the partial results and the
// counter).
constexpr int kGridScratchBuffers = 2;

}  // namespace kiln

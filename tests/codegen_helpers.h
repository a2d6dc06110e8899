#pragma once
// Scheduling and lowering kernels in tests without running them: placeholder buffers, and
// optimiser targets like this machine's CPU and PoCL devices.

#include <catch2/catch.hpp>

#include <kiln/kiln.h>

#include "codegen/heuristics.h"
#include "codegen/lower.h"
#include "codegen/schedule.h"
#include "core/uop.h"

namespace kiln::testing {

inline OptTarget cpu_target() {
  OptTarget target;
  target.device = "CPU (test)";
  return target;
}

// An OpenCL device like PoCL on this machine.
inline OptTarget cl_target() {
  OptTarget target;
  target.device = "CL (test)";
  target.loop_launch = false;
  target.max_workgroup_size = 4096;
  for (int64_t& dim : target.max_workgroup_dims) dim = 4096;
  target.local_memory_bytes = 65536;
  target.compute_units = 2;
  return target;
}

// A GPU like an H100 through CUDA (its grid limits included).
inline OptTarget gpu_target() {
  OptTarget target;
  target.device = "GPU (test)";
  target.loop_launch = false;
  target.is_gpu = true;
  target.max_workgroup_size = 1024;
  target.max_workgroup_dims[0] = target.max_workgroup_dims[1] = 1024;
  target.max_workgroup_dims[2] = 64;
  target.max_workgroups[1] = target.max_workgroups[2] = 65535;
  target.local_memory_bytes = 48 * 1024;
  target.compute_units = 132;
  target.simd_width = 32;
  target.vector_loads = true;
  return target;
}

// What the pipeline does with a list of opts: planned for the kernel (plan_opts throws OptError
// where it does not fit), then lowered.
inline LinearProgram lower_with(const ScheduleItem& item, const std::vector<Opt>& opts,
                                const OptTarget& target) {
  return lower_kernel(item, plan_opts(kernel_axes(item.ast), opts, target, "test"), target);
}

// The heuristics' and the random policy's opts for a kernel.
inline OptChoice heuristic_choice(const ScheduleItem& item, const OptTarget& target) {
  return choose_opts(item, kernel_axes(item.ast), target);
}
inline std::vector<Opt> random_choice(const ScheduleItem& item, const OptTarget& target,
                                      uint64_t seed) {
  return random_opts(item, kernel_axes(item.ast), target, seed);
}

inline LinearProgram lowered(const ScheduleItem& item, const OptTarget& target) {
  return lower_with(item, heuristic_choice(item, target).opts, target);
}

// `target_of` stands for every device (unset: the scheduler's default).
inline Schedule schedule_of(const Tensor& tensor, const ScheduleTargetOf& target_of = {}) {
  return create_schedule({tensor.node()}, "CPU", target_of);
}

// A device that binds at most `max_buffers` buffers per kernel and reduces at most
// `max_reduce_length` elements per output in one (0: any number), where the heuristics keep a
// large full reduction one kernel (GRID) with `grid_reductions`.
inline ScheduleTargetOf scheduled_on(int64_t max_buffers, int64_t max_reduce_length,
                                     bool grid_reductions = false) {
  return [=](const std::string&) {
    ScheduleTarget scheduled;
    scheduled.target.max_kernel_buffers = max_buffers;
    scheduled.target.max_loop_iterations = 4 * max_reduce_length;  // a quarter per reduction
    scheduled.target.grid = scheduled.target.is_gpu = grid_reductions;
    return scheduled;
  };
}

// The one kernel a tensor's schedule holds.
// The node bound to each of a kernel's inputs (a leaf's own Buffer node, else the schedule's).
inline std::vector<UOpRef> bound_inputs(const Schedule& schedule, const ScheduleItem& kernel) {
  std::vector<UOpRef> nodes;
  for (size_t param = 1; param < kernel.buffers.size(); ++param)
    nodes.push_back(schedule.buffers[kernel.buffers[param]].node);
  return nodes;
}

inline ScheduleItem only_kernel(const Tensor& tensor) {
  Schedule schedule = schedule_of(tensor);
  REQUIRE(schedule.items.size() == 1);
  return schedule.items[0];
}

inline Tensor input(Shape shape, uint64_t seed) {
  return Tensor::rand(std::move(shape), seed, "CPU").realize();
}

// Lowering `item` with `opts` for `target` is refused: an OptError whose message has `reason`.
inline void check_refused(const ScheduleItem& item, const std::vector<Opt>& opts,
                          const OptTarget& target, const std::string& reason) {
  try {
    lower_with(item, opts, target);
    FAIL("accepted " << opts_to_string(opts));
  } catch (const OptError& error) {
    CHECK_THAT(error.what(), Catch::Contains(reason));
  }
}

}  // namespace kiln::testing

#include "runtime/realize.h"

#include <kiln/error.h>

#include <algorithm>
#include <chrono>
#include <mutex>

#include "codegen/schedule.h"
#include "runtime/buffer.h"
#include "runtime/debug.h"
#include "runtime/launch_recorder.h"
#include "runtime/prepared_kernel.h"
#include "runtime/registry.h"
#include "runtime/schedule_cache.h"
#include "runtime/trace.h"

namespace kiln {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void run_kernel(const ScheduleItem& item, const KernelLaunch& kernel, LaunchRecorder* recorder) {
  const PreparedKernel& prepared = *kernel.prepared;
  const LinearProgram& program = prepared.program;
  const int64_t items = work_items(program, kernel.values);
  // A kernel without work runs nothing; a capture still records it when other values of its
  // variables would give it work.
  if (items == 0 && (program.variables.empty() || !recorder)) return;
  const std::shared_ptr<Program> compiled = prepared.loaded();  // held while it launches
  LaunchRequest request;
  request.buffers.push_back(buffer_of(*item.output).memory());
  for (const UOpRef& input : item.inputs) request.buffers.push_back(buffer_of(*input).memory());
  for (const std::shared_ptr<Buffer>& scratch : prepared.scratch())
    request.buffers.push_back(scratch->memory());
  int64_t global[3], local[3];
  dispatch_sizes(program, kernel.values, global, local);
  request.global = {global[0], global[1], global[2]};
  request.local = {local[0], local[1], local[2]};
  request.variables = kernel.values;
  KernelStats& stats = prepared.context->stats();
  request.wait = debug_level() >= 2 || tracing_enabled() || stats.time_kernels;
  request.work_per_item = prepared.work_per_item;
  if (recorder) {
    RecordedLaunch launch;
    launch.program = compiled;
    launch.request = request;
    launch.request.wait = false;  // a replay waits for nothing
    launch.written_numel = sym_prod(item.output->sym_shape());
    launch.geometry = prepared.geometry;
    launch.bound = kernel.bound;
    launch.buffers.push_back(std::static_pointer_cast<Buffer>(item.output->storage()));
    for (const UOpRef& input : item.inputs)
      launch.buffers.push_back(std::static_pointer_cast<Buffer>(input->storage()));
    for (const std::shared_ptr<Buffer>& scratch : prepared.scratch())
      launch.buffers.push_back(scratch);
    recorder->record(std::move(launch));
  }
  if (items == 0) return;
  const bool timed = debug_level() >= 2;
  const Clock::time_point launched = Clock::now();
  const double seconds = compiled->launch(request);
  if (request.wait) stats.kernel_nanoseconds += static_cast<int64_t>(seconds * 1e9);
  trace_event(program.name, "kernel", launched, seconds, "global " + std::to_string(items));
  if (timed) {
    double bytes = 0;
    for (const KernelParam& param : program.params)
      bytes += static_cast<double>(param.numel) * param.dtype.itemsize();
    logger().info("{:<28} global {:>10}  {:>9.1f} us  {:>8.2f} GFLOP/s  {:>8.2f} GB/s",
                  program.name, items, seconds * 1e6, estimate_flops(program) / seconds / 1e9,
                  bytes / seconds / 1e9);
  }
}

void run_copy(const ScheduleItem& item, LaunchRecorder* recorder) {
  Buffer& source = buffer_of(*item.inputs[0]);
  Buffer& destination = buffer_of(*item.output);
  // A compile-only device computes no values: there is nothing to move.
  if (source.context().device().properties().compile_only ||
      destination.context().device().properties().compile_only)
    return;
  if (recorder) {
    RecordedLaunch copy;
    copy.buffers = {std::static_pointer_cast<Buffer>(item.inputs[0]->storage()),
                    std::static_pointer_cast<Buffer>(item.output->storage())};
    copy.written_numel = sym_prod(item.output->sym_shape());
    recorder->record(std::move(copy));
  }
  copy_between_devices(source, destination);
}

}  // namespace

void copy_between_devices(Buffer& source, Buffer& destination) {
  std::vector<uint8_t> staging(source.nbytes());
  source.copy_out(staging.data());
  destination.copy_in(staging.data());
}

std::unique_lock<std::recursive_mutex> lock_realizations() {
  // One realize at a time in the process: each runs its kernels on every core already, and the
  // schedule, the buffers it plans and the launch queues are then never shared between threads.
  static std::recursive_mutex realize_mutex;
  return std::unique_lock<std::recursive_mutex>(realize_mutex);
}

std::vector<UOpRef> realize_nodes(const std::vector<UOpRef>& roots, const std::string& device) {
  const std::unique_lock<std::recursive_mutex> one_at_a_time = lock_realizations();
  const Clock::time_point start = Clock::now();
  std::shared_ptr<DeviceContext> context = open_device(device);
  const int64_t compiles_before = context->stats().compiles;
  if (debug_level() >= 5) logger().info("graph:\n{}", graph_to_string(roots));
  // A capture schedules without reading values realized before, and KILN_DEBUG=3 prints each
  // schedule: both schedule afresh.
  LaunchRecorder* const recorder = recorder_for(roots);
  const bool cached = !recorder && debug_level() < 3;
  const OptSettings settings = opt_settings();
  GraphWalk walk;
  const SchedulePlan* plan = nullptr;
  if (cached) {
    walk = walk_graph(roots, device);
    if (walk.cacheable) plan = schedule_cache().find(walk, device, settings);
  }
  Schedule schedule;
  std::vector<KernelLaunch> prepared;
  if (plan) {
    schedule = instantiate(*plan, walk, prepared);
  } else {
    const BufferFactory make_buffer = [](const std::string& name, DType dtype, int64_t numel) {
      return std::make_shared<Buffer>(open_device(name), dtype, numel);
    };
    // Kernels are shaped for the opts each device's target will get (codegen/schedule.h).
    const ScheduleTargetOf target_of = [&](const std::string& name) {
      Device& kernel_device = (name == device ? context : open_device(name))->device();
      return ScheduleTarget{opt_target(kernel_device, settings), uses_heuristics(settings)};
    };
    schedule = create_schedule(roots, device, make_buffer, target_of, !recorder);
    if (debug_level() >= 3) logger().info("schedule:\n{}", schedule_to_string(schedule));
    // Lower and check every kernel before running any, so a dtype error changes nothing.
    prepared.resize(schedule.items.size());
    for (size_t index = 0; index < schedule.items.size(); ++index) {
      if (schedule.items[index].kind == ScheduleItem::Kind::Kernel)
        prepared[index] = prepare_kernel(schedule.items[index]);
    }
    if (cached) schedule_cache().record(walk, device, settings, schedule, prepared);
  }
  std::vector<Device*> launched_on;
  for (size_t index = 0; index < schedule.items.size(); ++index) {
    ScheduleItem& item = schedule.items[index];
    if (item.kind == ScheduleItem::Kind::Copy) {
      run_copy(item, recorder);
    } else if (prepared[index].prepared->context->device().properties().compile_only) {
      const PreparedKernel& kernel = *prepared[index].prepared;
      kernel.context->compile(kernel.source, kernel.program.name);
    } else {
      run_kernel(item, prepared[index], recorder);
      Device& kernel_device = prepared[index].prepared->context->device();
      if (std::find(launched_on.begin(), launched_on.end(), &kernel_device) == launched_on.end())
        launched_on.push_back(&kernel_device);
    }
    // Only later items (and the results) hold an intermediate from here on, so a buffer goes
    // back to the caching allocator right after its last reader, and a later kernel reuses it.
    item = ScheduleItem{};
  }
  for (Device* kernel_device : launched_on) kernel_device->flush();
  // Graphs built on these nodes before they were realized read the results from now on.
  for (size_t index = 0; index < roots.size(); ++index) {
    if (schedule.results[index].get() != roots[index].get())
      roots[index]->set_realized_value(schedule.results[index]);
  }
  trace_event("realize", "realize", start, seconds_since(start),
              std::to_string(schedule.items.size()) + " item(s) on " + device);
  if (debug_level() >= 1 && !schedule.items.empty()) {
    context->device().synchronize();
    logger().info("realize on {}: {} kernel(s), {} compiled, {:.1f} us", device,
                  schedule.items.size(), context->stats().compiles - compiles_before,
                  seconds_since(start) * 1e6);
  }
  return schedule.results;
}

}  // namespace kiln

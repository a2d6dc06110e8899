#include "runtime/realize.h"

#include <kiln/error.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>

#include "codegen/schedule.h"
#include "runtime/buffer.h"
#include "runtime/debug.h"
#include "runtime/index_report.h"
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

// The buffers a schedule binds, by index: leaves as the graph holds them, the others made for
// this realize (their memory is taken at first use).
class BoundBuffers {
 public:
  BoundBuffers(const Schedule& schedule, const std::function<const UOpRef&(size_t)>& node_of,
               const std::function<int64_t(size_t)>& numel_of, const std::string& device,
               const std::shared_ptr<DeviceContext>& context) {
    for (size_t index = 0; index < schedule.buffers.size(); ++index) {
      const ScheduleBuffer& buffer = schedule.buffers[index];
      if (buffer.is_leaf) {
        buffers_.push_back(std::static_pointer_cast<Buffer>(node_of(index)->storage()));
      } else {
        buffers_.push_back(
            std::make_shared<Buffer>(buffer.device == device ? context : open_device(buffer.device),
                                     buffer.node->dtype(), numel_of(index)));
      }
    }
    // A buffer goes back to the caching allocator right after its last reader (a result is kept),
    // so a later kernel reuses it.
    last_use_.assign(schedule.buffers.size(), -1);
    for (size_t index = 0; index < schedule.items.size(); ++index) {
      for (int buffer : schedule.items[index].buffers) last_use_[buffer] = static_cast<int>(index);
    }
    for (const ScheduleResult& result : schedule.results) {
      if (result.buffer >= 0) last_use_[result.buffer] = static_cast<int>(schedule.items.size());
    }
  }

  Buffer& operator[](int index) const { return *buffers_[index]; }
  const std::shared_ptr<Buffer>& shared(int index) const { return buffers_[index]; }

  void release_after(const ScheduleItem& item, size_t item_index) {
    for (int buffer : item.buffers) {
      if (last_use_[buffer] == static_cast<int>(item_index)) buffers_[buffer].reset();
    }
  }

 private:
  std::vector<std::shared_ptr<Buffer>> buffers_;
  std::vector<int> last_use_;
};

// `report`: where the kernel's Gathers report indices outside their axes (null where it has none).
void run_kernel(const ScheduleItem& item, const UOp& output, bool in_place,
                const KernelLaunch& kernel, const BoundBuffers& bound,
                const std::shared_ptr<IndexReport>& report, LaunchRecorder* recorder) {
  const PreparedKernel& prepared = *kernel.prepared;
  const LinearProgram& program = prepared.program;
  const int64_t items = work_items(program, kernel.values);
  // A kernel without work runs nothing; a capture still records it when other values of its
  // variables would give it work.
  if (items == 0 && (program.variables.empty() || !recorder)) return;
  const std::shared_ptr<Program> compiled = prepared.loaded();  // held while it launches
  LaunchRequest request;
  for (int buffer : item.buffers) request.buffers.push_back(bound[buffer].memory());
  for (const std::shared_ptr<Buffer>& scratch : prepared.scratch())
    request.buffers.push_back(scratch->memory());
  if (report) request.buffers.push_back(report->buffer()->memory());
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
    launch.written_numel = sym_prod(output.sym_shape());
    launch.in_place = in_place;
    launch.geometry = prepared.geometry;
    launch.bound = kernel.bound;
    for (int buffer : item.buffers) launch.buffers.push_back(bound.shared(buffer));
    for (const std::shared_ptr<Buffer>& scratch : prepared.scratch())
      launch.buffers.push_back(scratch);
    if (report) launch.buffers.push_back(report->buffer());
    launch.index_report = report;
    recorder->record(std::move(launch));
  }
  if (items == 0) return;
  stats.launches++;
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

void run_copy(const ScheduleItem& item, const UOp& output, const BoundBuffers& bound,
              LaunchRecorder* recorder) {
  Buffer& destination = bound[item.buffers[0]];
  Buffer& source = bound[item.buffers[1]];
  // A compile-only device computes no values: there is nothing to move.
  if (source.context().device().properties().compile_only ||
      destination.context().device().properties().compile_only)
    return;
  if (recorder) {
    RecordedLaunch copy;
    copy.buffers = {bound.shared(item.buffers[1]), bound.shared(item.buffers[0])};
    copy.written_numel = sym_prod(output.sym_shape());
    recorder->record(std::move(copy));
  }
  copy_between_devices(source, destination);
}

// The Buffer node of a result held in `storage`, shaped like the schedule's node for it, its
// variables bound as `bound` binds them (the walk's values, for a plan made for other values).
UOpRef result_node(const UOp& like, std::shared_ptr<Buffer> storage,
                   const std::map<std::string, Sym>& bound) {
  std::shared_ptr<Storage> held = std::move(storage);
  if (!like.is_symbolic())
    return UOp::make(Op::Buffer, like.dtype(), {}, std::move(held), like.shape());
  SymShape shape = like.sym_shape();
  for (Sym& size : shape) size = size.substitute(bound);
  return UOp::make_symbolic(Op::Buffer, like.dtype(), {}, std::move(held), shape);
}

// A cached plan's kernels at the walk's values of their variables (the plan keeps those it was
// made for).
std::vector<KernelLaunch> rebind_kernels(const std::vector<KernelLaunch>& kernels,
                                         const std::map<std::string, Sym>& bound) {
  std::vector<KernelLaunch> rebound = kernels;
  for (KernelLaunch& kernel : rebound) {
    for (size_t at = 0; at < kernel.bound.size(); ++at) {
      auto now = bound.find(kernel.bound[at].var_name());
      if (now == bound.end()) continue;  // not over the walk's variables: as it was made
      kernel.values[at] = now->second.bound_value();
      kernel.bound[at] = now->second;
    }
  }
  return rebound;
}

// The schedule of `roots` made afresh, with its kernels prepared (its leaves are their own
// nodes). Every kernel is lowered and checked before any runs, so a dtype error changes nothing.
std::shared_ptr<const SchedulePlan> schedule_afresh(const std::vector<UOpRef>& roots,
                                                    const std::string& device,
                                                    const std::shared_ptr<DeviceContext>& context,
                                                    const OptSettings& settings,
                                                    bool read_realized) {
  auto context_of = [&](const std::string& name) {
    return name == device ? context : open_device(name);
  };
  // Kernels are shaped for the opts each device's target will get (codegen/schedule.h).
  const ScheduleTargetOf target_of = [&](const std::string& name) {
    Device& kernel_device = context_of(name)->device();
    return ScheduleTarget{opt_target(kernel_device, settings), uses_heuristics(settings)};
  };
  auto plan = std::make_shared<SchedulePlan>();
  plan->schedule = create_schedule(roots, device, target_of, read_realized);
  const Schedule& schedule = plan->schedule;
  if (debug_level() >= 3) logger().info("schedule:\n{}", schedule_to_string(schedule));
  plan->leaf_numbers.assign(schedule.buffers.size(), -1);
  plan->kernels.resize(schedule.items.size());
  for (size_t index = 0; index < schedule.items.size(); ++index) {
    const ScheduleItem& item = schedule.items[index];
    if (item.kind == ScheduleItem::Kind::Kernel)
      plan->kernels[index] =
          prepare_kernel(item, context_of(schedule.buffers[item.buffers[0]].device));
  }
  return plan;
}

}  // namespace

void copy_between_devices(Buffer& source, Buffer& destination) {
  std::vector<uint8_t> staging(source.nbytes());
  source.copy_out(staging.data());
  destination.copy_in(staging.data());
}

// Realizes in several threads run side by side: a realize's schedule and buffers are its own, and
// the caches it shares (schedules, prepared kernels, programs, memory) lock themselves. The CPU
// device runs a small kernel on the calling thread, so two threads' kernels may run at once; a GPU
// device runs what it is given in order (one in-order queue or stream), which keeps a GRID
// kernel's scratch buffers (GPUs only: GRID needs workgroups) to one launch at a time. Two
// threads that realize the same unrealized node both compute it.
std::vector<UOpRef> realize_nodes(const std::vector<UOpRef>& roots, const std::string& device) {
  const Clock::time_point start = Clock::now();
  std::shared_ptr<DeviceContext> context = open_device(device);
  const int64_t compiles_before = context->stats().compiles;
  if (debug_level() >= 5) logger().info("graph:\n{}", graph_to_string(roots));
  // A capture schedules without reading values realized before, and KILN_DEBUG=3 prints each
  // schedule: both schedule afresh.
  const RecorderHold recording = recorder_for(roots);
  LaunchRecorder* const recorder = recording.recorder;
  const bool cached = !recorder && debug_level() < 3;
  const OptSettings settings = opt_settings();
  GraphWalk walk;
  std::shared_ptr<const SchedulePlan> plan;
  if (cached) {
    walk = walk_graph(roots, device);
    if (walk.cacheable) plan = schedule_cache().find(walk, device, settings);
  }
  if (!plan) {
    plan = schedule_afresh(roots, device, context, settings, !recorder);
    if (cached) schedule_cache().record(walk, device, settings, *plan);
  }
  const Schedule& schedule = plan->schedule;
  // Over bound variables, the plan may have been made for other values: the walk's bind it.
  const bool rebinds = walk.cacheable && !walk.bound.empty();
  const std::vector<KernelLaunch> rebound =
      rebinds ? rebind_kernels(plan->kernels, walk.bound) : std::vector<KernelLaunch>{};
  const std::vector<KernelLaunch>& kernels = rebinds ? rebound : plan->kernels;
  std::map<std::string, int64_t> values;
  for (const auto& [name, variable] : walk.bound) values.emplace(name, variable.bound_value());
  auto numel_of = [&](size_t index) {
    const ScheduleBuffer& buffer = schedule.buffers[index];
    return rebinds && buffer.node->is_symbolic() ? sym_prod(buffer.node->sym_shape()).eval(values)
                                                 : buffer.numel;
  };
  BoundBuffers bound(
      schedule, [&](size_t index) -> const UOpRef& { return plan->node(index, walk); }, numel_of,
      device, context);
  // A root an item computes is its new buffer; the others are read as they are.
  std::vector<UOpRef> results;
  for (const ScheduleResult& result : schedule.results) {
    results.push_back(result.buffer < 0 ? result.unchanged
                                        : result_node(*plan->node(result.buffer, walk),
                                                      bound.shared(result.buffer), walk.bound));
  }
  std::vector<Device*> launched_on;
  std::vector<std::shared_ptr<IndexReport>> reports;
  for (size_t index = 0; index < schedule.items.size(); ++index) {
    const ScheduleItem& item = schedule.items[index];
    // (A leaf where the item writes in place: an Assign's target.)
    const UOp& output = *plan->node(item.buffers[0], walk);
    if (item.kind == ScheduleItem::Kind::Copy) {
      run_copy(item, output, bound, recorder);
    } else if (kernels[index].prepared->context->device().properties().compile_only) {
      const PreparedKernel& kernel = *kernels[index].prepared;
      kernel.context->compile(kernel.source, kernel.program.name);
    } else {
      const LinearProgram& program = kernels[index].prepared->program;
      std::shared_ptr<IndexReport> report;
      if (index_errors_param(program) >= 0) {
        report = std::make_shared<IndexReport>(bound[item.buffers[0]].shared_context(), program,
                                               kernels[index].values);
        reports.push_back(report);
      }
      // Writing a leaf that holds values already (an Assign's target; not a snapshot's new
      // buffer, which the realize fills first).
      const bool in_place =
          schedule.buffers[item.buffers[0]].is_leaf && bound[item.buffers[0]].has_memory();
      run_kernel(item, output, in_place, kernels[index], bound, report, recorder);
      Device& kernel_device = kernels[index].prepared->context->device();
      if (std::find(launched_on.begin(), launched_on.end(), &kernel_device) == launched_on.end())
        launched_on.push_back(&kernel_device);
    }
    bound.release_after(item, index);
  }
  for (Device* kernel_device : launched_on) kernel_device->flush();
  // An index outside its axis raises here, before any root holds a value computed from it.
  for (const std::shared_ptr<IndexReport>& report : reports) report->check();
  // Graphs built on these nodes before they were realized read the results from now on.
  for (size_t index = 0; index < roots.size(); ++index) {
    if (results[index].get() != roots[index].get())
      roots[index]->set_realized_value(results[index]);
  }
  trace_event("realize", "realize", start, seconds_since(start),
              std::to_string(schedule.items.size()) + " item(s) on " + device);
  if (debug_level() >= 1 && !schedule.items.empty()) {
    context->device().synchronize();
    logger().info("realize on {}: {} kernel(s), {} compiled, {:.1f} us", device,
                  schedule.items.size(), context->stats().compiles - compiles_before,
                  seconds_since(start) * 1e6);
  }
  return results;
}

}  // namespace kiln

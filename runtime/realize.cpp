#include "runtime/realize.h"

#include <kiln/error.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>

#include "codegen/heuristics.h"
#include "codegen/kernel_variables.h"
#include "codegen/lower.h"
#include "codegen/render.h"
#include "codegen/schedule.h"
#include "codegen/vectorize.h"
#include "core/rewrite.h"
#include "runtime/buffer.h"
#include "runtime/debug.h"
#include "runtime/launch_recorder.h"
#include "runtime/opt_policy.h"
#include "runtime/registry.h"
#include "runtime/trace.h"

namespace kiln {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Arithmetic operations the kernel performs, counting loop trips (for the GFLOP/s figure);
// symbolic loops at the variables' largest values.
double estimate_flops(const LinearProgram& program) {
  double flops = 0, multiplier = 1;
  std::vector<double> multipliers;
  for (const LinInstr& instr : program.instrs) {
    if (instr.op == LinOp::LoopBegin) {
      multipliers.push_back(multiplier);
      multiplier *= static_cast<double>(instr.loop_end.vmax());
    } else if (instr.op == LinOp::LoopEnd) {
      multiplier = multipliers.back();
      multipliers.pop_back();
    } else if (instr.op == LinOp::Alu || instr.op == LinOp::AccUpdate) {
      flops += multiplier;
    }
  }
  return flops * static_cast<double>(program.global_size.vmax());
}

// A device that stops loops after a number of iterations (lavapipe) would give a wrong result:
// the scheduler splits reductions to stay inside it, and a kernel that still loops more (several
// long reductions fused) is refused.
void check_loop_iterations(const LinearProgram& program, Device& device) {
  const int64_t limit = device.properties().max_loop_iterations;
  if (limit <= 0) return;
  const int64_t iterations = loop_iterations(program);
  if (iterations <= limit) return;
  throw DeviceError("[realize] kernel " + program.name + " runs " + std::to_string(iterations) +
                    " loop iterations per work item; " + device.name() +
                    " stops a work item's loops after " + std::to_string(limit) + " in all (" +
                    device.properties().driver +
                    "), so its result would be wrong; realize the reductions it fuses "
                    "separately (.realize()) or use another device");
}

void check_dtypes(const LinearProgram& program, Device& device) {
  std::set<ScalarType> needed;
  for (const KernelParam& param : program.params) needed.insert(param.dtype.type());
  for (const LinInstr& instr : program.instrs) needed.insert(instr.dtype.type());
  for (ScalarType type : needed) {
    const DType dtype(type);
    if (!device.supports(dtype)) {
      throw DTypeError("[realize] device " + device.name() + " does not support " + dtype.name() +
                       " (needed by kernel " + program.name +
                       "); cast to a supported dtype or use " + "another device");
    }
  }
}

struct PreparedKernel {
  LinearProgram program;
  std::string source;
  DeviceContext* context = nullptr;
  OptSettings settings;  // the policy its opts came from
  double work_per_item = 1;
  // Where the program has variables: its launch geometry alone (see RecordedLaunch).
  std::shared_ptr<const LinearProgram> geometry;
};

// A kernel ready to launch: the prepared program (shared by every value of its variables) and
// this launch's values, in program.variables order.
struct KernelLaunch {
  std::shared_ptr<const PreparedKernel> prepared;
  std::vector<int64_t> values;
  std::vector<Sym> bound;  // the bound variable each value came from
};

// Lowered and rendered kernels, by device and kernel: the ast with its buffers replaced by
// numbered placeholders, which hash-consing turns into one node per distinct kernel. A warm
// realize then skips lowering and rendering (most of its overhead).
class PreparedKernelCache {
 public:
  std::shared_ptr<const PreparedKernel> find(DeviceContext* context, const UOp* key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = entries_.find({context, key});
    return found == entries_.end() ? nullptr : found->second.prepared;
  }
  void insert(DeviceContext* context, UOpRef key, std::shared_ptr<const PreparedKernel> prepared) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (entries_.size() >= kMaxEntries) entries_.clear();  // compiled programs stay cached below
    const UOp* address = key.get();                        // read before the move below
    entries_[{context, address}] = Entry{std::move(key), std::move(prepared)};
  }

 private:
  static constexpr size_t kMaxEntries = 4096;
  struct Entry {
    UOpRef key;  // keeps the key node alive, so its address is not reused
    std::shared_ptr<const PreparedKernel> prepared;
  };
  std::mutex mutex_;
  std::map<std::pair<DeviceContext*, const UOp*>, Entry> entries_;
};

PreparedKernelCache& prepared_kernels() {
  static PreparedKernelCache cache;
  return cache;
}

// The launch of a prepared kernel for the values of its variables (by name).
KernelLaunch launch_of(std::shared_ptr<const PreparedKernel> prepared,
                       const UnboundKernel& unbound) {
  KernelLaunch launch;
  for (const Sym& variable : prepared->program.variables) {
    launch.values.push_back(unbound.values.at(variable.var_name()));
    launch.bound.push_back(unbound.bound.at(variable.var_name()));
  }
  launch.prepared = std::move(prepared);
  return launch;
}

KernelLaunch prepare_kernel(const ScheduleItem& item) {
  DeviceContext* context = &buffer_of(*item.output).context();
  ScheduleItem generic = item;
  // The output too: what the opts and the program see of it is its (symbolic) shape and dtype.
  if (item.output->is_symbolic())
    generic.output = UOp::make_symbolic(Op::Buffer, item.output->dtype(), {}, std::string("param0"),
                                        item.output->sym_shape());
  std::unordered_map<const UOp*, UOpRef> placeholder_of;
  generic.inputs.clear();
  for (size_t index = 0; index < item.inputs.size(); ++index) {
    const UOpRef& input = item.inputs[index];
    std::string name = std::string("param") + std::to_string(index + 1);
    UOpRef placeholder =
        input->is_symbolic()
            ? UOp::make_symbolic(Op::Buffer, input->dtype(), {}, std::move(name),
                                 input->sym_shape())
            : UOp::make(Op::Buffer, input->dtype(), {}, std::move(name), input->shape());
    placeholder_of[input.get()] = placeholder;
    generic.inputs.push_back(placeholder);
  }
  bool symbolic = false;
  generic.ast = graph_rewrite({item.ast}, [&](const UOpRef& node) -> UOpRef {
    symbolic |= node->is_symbolic() || (node->op() == Op::View && node->tracker().is_symbolic());
    auto found = placeholder_of.find(node.get());
    return found == placeholder_of.end() ? nullptr : found->second;
  })[0];
  // A symbolic kernel is prepared (and cached) for its variables, not their values.
  UnboundKernel unbound;
  if (symbolic) {
    unbound = unbind_variables(generic);
    generic = unbound.item;
  }
  const OptSettings settings = opt_settings();
  if (auto cached = prepared_kernels().find(context, generic.ast.get());
      cached && cached->settings == settings) {
    if (!symbolic) return {std::move(cached), {}, {}};
    return launch_of(std::move(cached), unbound);
  }

  auto prepared = std::make_shared<PreparedKernel>();
  prepared->context = context;
  prepared->settings = settings;
  const OptTarget target = opt_target(context->device());
  OptChoice choice;
  if (settings.policy == OptPolicy::Default) choice = choose_opts(generic, target);
  if (settings.policy == OptPolicy::Random) {
    choice.opts = random_opts(generic, target, settings.seed);
    choice.reasons.push_back("random (seed " + std::to_string(settings.seed) + ")");
  }
  if (debug_level() >= 5) {
    logger().info("kernel ast:\n{}", graph_to_string({generic.ast}));
    std::string reasons;
    for (const std::string& reason : choice.reasons) reasons += "\n  " + reason;
    logger().info("axes {} on {}; opts ({}): {}{}", kernel_axes(generic.ast).to_string(),
                  target.device, opt_settings_to_string(settings), opts_to_string(choice.opts),
                  reasons);
  }
  // The passes by name, each printed at KILN_DEBUG=5.
  prepared->program = lower_kernel(generic, choice.opts, target);
  if (debug_level() >= 5) logger().info("after lower_kernel:\n{}", prepared->program.to_string());
  prepared->program = vectorize_loads(std::move(prepared->program), context->device().dialect());
  if (debug_level() >= 5)
    logger().info("after vectorize_loads:\n{}", prepared->program.to_string());
  prepared->program = vectorize_stores(std::move(prepared->program), context->device().dialect());
  if (debug_level() >= 5)
    logger().info("after vectorize_stores:\n{}", prepared->program.to_string());
  check_dtypes(prepared->program, context->device());
  check_loop_iterations(prepared->program, context->device());
  prepared->source = render_kernel(prepared->program, context->device().dialect());
  if (debug_level() >= 4)
    logger().info("source of {}:\n{}", prepared->program.name, prepared->source);
  prepared->work_per_item =
      estimate_flops(prepared->program) /
          static_cast<double>(std::max<int64_t>(prepared->program.global_size.vmax(), 1)) +
      1;
  if (!prepared->program.variables.empty()) {
    auto geometry = std::make_shared<LinearProgram>();
    geometry->name = prepared->program.name;
    geometry->launch = prepared->program.launch;
    geometry->global_size = prepared->program.global_size;
    geometry->variables = prepared->program.variables;
    prepared->geometry = std::move(geometry);
  }
  prepared_kernels().insert(context, generic.ast, prepared);
  return launch_of(std::move(prepared), unbound);
}

void run_kernel(const ScheduleItem& item, const KernelLaunch& kernel) {
  const PreparedKernel& prepared = *kernel.prepared;
  const LinearProgram& program = prepared.program;
  const int64_t items = work_items(program, kernel.values);
  // A kernel without work runs nothing; a capture still records it when other values of its
  // variables would give it work.
  if (items == 0 && (program.variables.empty() || !active_recorder())) return;
  Program& compiled = prepared.context->program(prepared.source, program.name);
  LaunchRequest request;
  request.buffers.push_back(buffer_of(*item.output).memory());
  for (const UOpRef& input : item.inputs) request.buffers.push_back(buffer_of(*input).memory());
  int64_t global[3], local[3];
  dispatch_sizes(program, kernel.values, global, local);
  request.global = {global[0], global[1], global[2]};
  request.local = {local[0], local[1], local[2]};
  request.variables = kernel.values;
  KernelStats& stats = prepared.context->stats();
  request.wait = debug_level() >= 2 || tracing_enabled() || stats.time_kernels;
  request.work_per_item = prepared.work_per_item;
  if (LaunchRecorder* recorder = active_recorder()) {
    RecordedLaunch launch;
    launch.program = &compiled;
    launch.request = request;
    launch.request.wait = false;  // a replay waits for nothing
    launch.written_numel = sym_prod(item.output->sym_shape());
    launch.geometry = prepared.geometry;
    launch.bound = kernel.bound;
    launch.buffers.push_back(std::static_pointer_cast<Buffer>(item.output->storage()));
    for (const UOpRef& input : item.inputs)
      launch.buffers.push_back(std::static_pointer_cast<Buffer>(input->storage()));
    recorder->launches.push_back(std::move(launch));
  }
  if (items == 0) return;
  const bool timed = debug_level() >= 2;
  const Clock::time_point launched = Clock::now();
  const double seconds = compiled.launch(request);
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

void run_copy(const ScheduleItem& item) {
  Buffer& source = buffer_of(*item.inputs[0]);
  Buffer& destination = buffer_of(*item.output);
  // A compile-only device computes no values: there is nothing to move.
  if (source.context().device().properties().compile_only ||
      destination.context().device().properties().compile_only)
    return;
  if (LaunchRecorder* recorder = active_recorder()) {
    RecordedLaunch copy;
    copy.buffers = {std::static_pointer_cast<Buffer>(item.inputs[0]->storage()),
                    std::static_pointer_cast<Buffer>(item.output->storage())};
    copy.written_numel = sym_prod(item.output->sym_shape());
    recorder->launches.push_back(std::move(copy));
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
  const BufferFactory make_buffer = [](const std::string& name, DType dtype, int64_t numel) {
    return std::make_shared<Buffer>(open_device(name), dtype, numel);
  };
  if (debug_level() >= 5) logger().info("graph:\n{}", graph_to_string(roots));
  const KernelLimitsOf limits_of = [&](const std::string& name) {
    const DeviceProperties& properties =
        (name == device ? context : open_device(name))->device().properties();
    KernelLimits limits;
    if (properties.max_kernel_buffers > 0)
      limits.max_buffers = std::min(limits.max_buffers, properties.max_kernel_buffers);
    // A quarter of the device's loop limit leaves room for the other loops of a kernel (blocked
    // sums, TILE's chunks).
    if (properties.max_loop_iterations > 0)
      limits.max_reduce_length = std::max<int64_t>(1, properties.max_loop_iterations / 4);
    return limits;
  };
  Schedule schedule = create_schedule(roots, device, make_buffer, limits_of, !active_recorder());
  if (debug_level() >= 3) logger().info("schedule:\n{}", schedule_to_string(schedule));

  // Lower and check every kernel before running any, so a dtype error changes nothing.
  std::vector<KernelLaunch> prepared(schedule.items.size());
  for (size_t index = 0; index < schedule.items.size(); ++index) {
    if (schedule.items[index].kind == ScheduleItem::Kind::Kernel)
      prepared[index] = prepare_kernel(schedule.items[index]);
  }
  std::vector<Device*> launched_on;
  for (size_t index = 0; index < schedule.items.size(); ++index) {
    ScheduleItem& item = schedule.items[index];
    if (item.kind == ScheduleItem::Kind::Copy) {
      run_copy(item);
    } else if (prepared[index].prepared->context->device().properties().compile_only) {
      const PreparedKernel& kernel = *prepared[index].prepared;
      kernel.context->compile(kernel.source, kernel.program.name);
    } else {
      run_kernel(item, prepared[index]);
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

#include "runtime/prepared_kernel.h"

#include <kiln/error.h>
#include <kiln/memory.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <list>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>

#include "codegen/kernel_variables.h"
#include "codegen/pipeline.h"
#include "codegen/tensor_cores.h"
#include "core/rewrite.h"
#include "runtime/buffer.h"
#include "runtime/debug.h"

namespace kiln {
namespace {

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
      throw UnsupportedDTypeError("[realize] device " + device.name() + " does not support " +
                                      dtype.name() + " (needed by kernel " + program.name +
                                      "); cast to a supported dtype or use another device",
                                  dtype);
    }
  }
}

// Lowered and rendered kernels, by device and kernel: the ast over numbered parameters, which
// hash-consing makes one node per distinct kernel. A warm
// realize then skips lowering and rendering (most of its overhead). Holds the
// kernel_cache_limit() kernels used last; schedules and captures keep theirs alive.
class PreparedKernelCache {
 public:
  std::shared_ptr<const PreparedKernel> find(DeviceContext* context, const UOp* key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = entries_.find({context, key});
    if (found == entries_.end()) return nullptr;
    recent_.splice(recent_.begin(), recent_, found->second);
    return found->second->prepared;
  }
  void insert(DeviceContext* context, UOpRef key, std::shared_ptr<const PreparedKernel> prepared) {
    std::list<Entry> dropped;  // destroyed after the lock: their scratch buffers free memory
    std::lock_guard<std::mutex> lock(mutex_);
    const std::pair<DeviceContext*, const UOp*> address{context, key.get()};
    if (auto found = entries_.find(address); found != entries_.end()) {
      dropped.splice(dropped.end(), recent_, found->second);
      entries_.erase(found);
    }
    recent_.push_front(Entry{context, std::move(key), std::move(prepared)});
    entries_.emplace(address, recent_.begin());
    trim(dropped);
  }
  size_t count(const DeviceContext* context) {
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<size_t>(
        std::count_if(recent_.begin(), recent_.end(),
                      [&](const Entry& entry) { return entry.context == context; }));
  }
  void clear(const DeviceContext* context) {
    std::list<Entry> dropped;
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto entry = recent_.begin(); entry != recent_.end();) {
      const auto next = std::next(entry);
      if (entry->context == context) {
        entries_.erase({entry->context, entry->key.get()});
        dropped.splice(dropped.end(), recent_, entry);
      }
      entry = next;
    }
  }
  void trim() {
    std::list<Entry> dropped;
    std::lock_guard<std::mutex> lock(mutex_);
    trim(dropped);
  }

 private:
  struct Entry {
    DeviceContext* context = nullptr;
    UOpRef key;  // keeps the key node alive, so its address is not reused
    std::shared_ptr<const PreparedKernel> prepared;
  };
  // Moves the entries beyond the limit to `dropped`. Under mutex_.
  void trim(std::list<Entry>& dropped) {
    const size_t limit = kernel_cache_limit();
    while (recent_.size() > limit) {
      const auto last = std::prev(recent_.end());
      entries_.erase({last->context, last->key.get()});
      dropped.splice(dropped.end(), recent_, last);
    }
  }

  std::mutex mutex_;
  std::list<Entry> recent_;  // most recently used first
  std::map<std::pair<DeviceContext*, const UOp*>, std::list<Entry>::iterator> entries_;
};

// Lives for the process, as the device registry does: a GRID kernel's scratch buffers are device
// memory, and freeing them from a static destructor ran after NVIDIA's drivers had torn
// themselves down at exit (a segfault after every test had passed, H200, CUDA beside NVIDIA's
// OpenCL and Vulkan).
PreparedKernelCache& prepared_kernels() {
  static PreparedKernelCache* const cache = new PreparedKernelCache();
  return *cache;
}

int64_t workgroup_of(const LinearProgram& program) {
  int64_t workgroup = 1;
  for (const LaunchDim& dim : program.launch) workgroup *= dim.local;
  return workgroup;
}

// Where the driver allows the compiled kernel fewer work items per workgroup than its plan
// launches, that limit; else 0. Loads the kernel (it would be loaded at its first launch anyway)
// into `loaded`, on GPUs (whose drivers set such limits) and wherever KILN_CL_KERNEL_GROUP_LIMIT
// imposes one (PoCL running that path in tests); elsewhere kernels load at their first launch.
int64_t driver_workgroup_limit(DeviceContext& context, const CompiledKernel& compiled,
                               std::shared_ptr<Program>& loaded) {
  loaded.reset();
  const DeviceProperties& properties = context.device().properties();
  const bool limited =
      properties.kind == DeviceKind::GPU || std::getenv("KILN_CL_KERNEL_GROUP_LIMIT") != nullptr;
  const int64_t workgroup = workgroup_of(compiled.program);
  if (workgroup <= 1 || properties.compile_only || !limited) return 0;
  loaded = context.program(compiled.source, compiled.program.name);
  const int64_t allowed = loaded->max_workgroup_size();
  return allowed > 0 && allowed < workgroup ? allowed : 0;
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

}  // namespace

// Symbolic loops count at the variables' largest values.
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
    } else if (instr.op == LinOp::Mma) {
      // A warp's 16x16x16 multiply-adds, per work item.
      flops += multiplier * 2.0 * kFragment * kFragment * kFragment / kWarp;
    }
  }
  return flops * static_cast<double>(program.global_size.vmax());
}

std::shared_ptr<Program> PreparedKernel::loaded() const {
  {
    std::lock_guard<SpinLock> lock(loaded_lock_);
    if (std::shared_ptr<Program> program = loaded_.lock()) {
      context->stats().memory_hits++;
      return program;
    }
  }
  // Outside the lock: this may compile. Threads that miss at once get the context's one program.
  std::shared_ptr<Program> program = context->program(source, this->program.name);
  std::lock_guard<SpinLock> lock(loaded_lock_);
  loaded_ = program;
  return program;
}

void PreparedKernel::remember_loaded(const std::shared_ptr<Program>& program) const {
  std::lock_guard<SpinLock> lock(loaded_lock_);
  loaded_ = program;
}

size_t prepared_kernel_count(const DeviceContext* context) {
  return prepared_kernels().count(context);
}

void clear_prepared_kernels(const DeviceContext* context) {
  prepared_kernels().clear(context);
}

void trim_prepared_kernels() {
  prepared_kernels().trim();
}

const std::vector<std::shared_ptr<Buffer>>& PreparedKernel::scratch() const {
  // Made once, then only read: every launch asks, from any thread.
  if (scratch_made_.load(std::memory_order_acquire)) return scratch_;
  std::lock_guard<std::mutex> lock(scratch_mutex_);
  if (scratch_made_.load(std::memory_order_relaxed)) return scratch_;
  for (const KernelParam& param : program.params) {
    if (!param.scratch) continue;
    auto buffer = std::make_shared<Buffer>(scratch_context, param.dtype, param.numel, false);
    const std::vector<uint8_t> zeros(buffer->nbytes(), 0);
    buffer->copy_in(zeros.data());
    scratch_.push_back(std::move(buffer));
  }
  scratch_made_.store(true, std::memory_order_release);
  return scratch_;
}

KernelLaunch prepare_kernel(const ScheduleItem& kernel,
                            const std::shared_ptr<DeviceContext>& shared_context) {
  DeviceContext* context = shared_context.get();
  ScheduleItem generic = kernel;
  bool symbolic = false;
  for (const UOpRef& node : toposort({kernel.ast}))
    symbolic |= node->is_symbolic() || (node->op() == Op::View && node->tracker().is_symbolic());
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
  const OptTarget target = opt_target(context->device(), settings);
  Device& device = context->device();
  CompileOptions options;
  options.settings = settings;
  options.check = [&device](const LinearProgram& program) {
    check_dtypes(program, device);
    check_loop_iterations(program, device);
  };
  if (debug_level() >= 5) {
    logger().info("kernel ast:\n{}", graph_to_string({generic.ast}));
    logger().info("on {}; opts policy {}", target.device, opt_settings_to_string(settings));
    options.report = [](const std::string& pass, const std::string& result) {
      logger().info("after {}:\n{}", pass, result);
    };
  }
  CompiledKernel compiled = compile_kernel(generic, target, device.dialect(), options);
  // A driver may allow a kernel fewer work items per workgroup than the device (NVIDIA's OpenCL
  // allowed a kernel that fills a buffer 256 of its 1024): such a kernel is planned again within
  // what the driver allows it, a few times at most (the new kernel has a limit of its own).
  // (The kernels set aside count among the context's compiles.)
  OptTarget capped = target;
  std::shared_ptr<Program> loaded;
  for (int attempt = 0;; ++attempt) {
    const int64_t allowed = driver_workgroup_limit(*context, compiled, loaded);
    if (allowed == 0) break;
    if (attempt == 3)
      throw DeviceError("[" + target.device + "] kernel " + compiled.program.name +
                        " asks for workgroups of " +
                        std::to_string(workgroup_of(compiled.program)) +
                        " work items; its driver allows it " + std::to_string(allowed) +
                        ", and kiln's plans within that limit still exceeded it; KILN_NOOPT=1 "
                        "launches without groups");
    if (debug_level() >= 2)
      logger().info("{}: the driver allows it workgroups of {} work items; planned again",
                    compiled.program.name, allowed);
    capped.max_workgroup_size = allowed;
    for (int64_t& dim : capped.max_workgroup_dims) dim = std::min(dim, allowed);
    compiled = compile_kernel(generic, capped, device.dialect(), options);
  }
  if (loaded) prepared->remember_loaded(loaded);
  prepared->program = std::move(compiled.program);
  prepared->source = std::move(compiled.source);
  if (debug_level() == 4)
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
  if (std::any_of(prepared->program.params.begin(), prepared->program.params.end(),
                  [](const KernelParam& param) { return param.scratch; }))
    prepared->scratch_context = shared_context;
  prepared_kernels().insert(context, generic.ast, prepared);
  return launch_of(std::move(prepared), unbound);
}

}  // namespace kiln

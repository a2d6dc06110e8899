#pragma once
// A scheduled kernel made ready to launch: lowered with its opts, vectorized, checked against the
// device and rendered. Prepared kernels are cached by the kernel (its ast over numbered
// parameters, one node per distinct kernel), so a warm realize skips lowering and rendering.

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "codegen/linear.h"
#include "codegen/schedule.h"
#include "core/spin_lock.h"
#include "runtime/buffer.h"
#include "runtime/device_context.h"
#include "runtime/opt_policy.h"

namespace kiln {

struct PreparedKernel {
  LinearProgram program;
  std::string source;
  DeviceContext* context = nullptr;
  OptSettings settings;  // the policy its opts came from
  double work_per_item = 1;
  // Where the program has variables: its launch geometry alone (see RecordedLaunch).
  std::shared_ptr<const LinearProgram> geometry;

  // The loaded program. Remembered without owning it: looking it up by source hashes the whole
  // text, but the context may drop it (kernel_cache_limit()), and then it is looked up again.
  // The caller holds it for as long as it launches it.
  std::shared_ptr<Program> loaded() const;
  // Remembers the program loaded when the kernel was prepared (see driver_workgroup_limit).
  void remember_loaded(const std::shared_ptr<Program>& program) const;

  // The buffers of the program's scratch parameters (KernelParam::scratch), in order: made and
  // zero-filled at the first launch, then kept (a GRID kernel leaves its counter at zero).
  const std::vector<std::shared_ptr<Buffer>>& scratch() const;
  std::shared_ptr<DeviceContext> scratch_context;  // where they live; set where there are any

 private:
  mutable SpinLock loaded_lock_;  // taken by every launch of the kernel, in any thread
  mutable std::weak_ptr<Program> loaded_;
  mutable std::mutex scratch_mutex_;
  mutable std::vector<std::shared_ptr<Buffer>> scratch_;
  mutable std::atomic<bool> scratch_made_{false};
};

// A kernel ready to launch: the prepared program (shared by every value of its variables) and
// this launch's values, in program.variables order.
struct KernelLaunch {
  std::shared_ptr<const PreparedKernel> prepared;
  std::vector<int64_t> values;
  std::vector<Sym> bound;  // the bound variable each value came from
};

// Prepares a schedule's kernel for the device of `context`, from the cache where the same kernel
// was prepared there before with the same opt settings. Throws (DTypeError, DeviceError) where
// the device cannot run it.
KernelLaunch prepare_kernel(const ScheduleItem& kernel,
                            const std::shared_ptr<DeviceContext>& context);

// Prepared kernels in memory, and dropping them: those of a device (clear_cache), or the least
// recently used beyond kernel_cache_limit() (kiln/memory.h).
size_t prepared_kernel_count(const DeviceContext* context);
void clear_prepared_kernels(const DeviceContext* context);
void trim_prepared_kernels();

// Arithmetic operations the kernel performs, counting loop trips (for the GFLOP/s figure).
double estimate_flops(const LinearProgram& program);

}  // namespace kiln

#pragma once
// A device as the runtime uses it: the driver's Device with a caching allocator and the compiled
// kernels (in memory, backed by the disk cache).

#include <atomic>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "runtime/caching_allocator.h"
#include "runtime/device.h"

namespace kiln {

struct KernelStats {
  std::atomic<int64_t> compiles{0};
  std::atomic<int64_t> disk_hits{0};
  std::atomic<int64_t> memory_hits{0};
  // Kernels a realize launched (a captured step's replays are not counted). Not the sum of the
  // three above: on a GPU a kernel of workgroups is loaded when it is prepared (its driver may
  // allow it fewer work items than planned; then it is planned again, and the kernel set aside
  // counts among the compiles too).
  std::atomic<int64_t> launches{0};
  std::atomic<int64_t> compile_microseconds{0};
  // While set, every kernel launched through this context waits for its kernel and adds the
  // kernel's own time (the device's timer: CUDA events, Vulkan timestamps, OpenCL profiling)
  // to kernel_nanoseconds: what `kiln bench` reports for a GPU beside the host's time.
  std::atomic<bool> time_kernels{false};
  std::atomic<int64_t> kernel_nanoseconds{0};
};

class DeviceContext {
 public:
  explicit DeviceContext(std::unique_ptr<Device> device);
  ~DeviceContext();

  Device& device() { return *device_; }
  const std::string& name() const { return device_->name(); }
  CachingAllocator& allocator() { return *allocator_; }

  // The loaded program for this source: from memory, else the disk cache, else compiled now.
  // The context keeps the kernel_cache_limit() programs used last (kiln/memory.h); a program
  // it drops lives on while a caller (a launch, a captured step) still holds it.
  std::shared_ptr<Program> program(const std::string& source, const std::string& kernel_name);
  // Compiles the source into the disk cache unless it is there already; loads nothing (for a
  // compile-only device).
  void compile(const std::string& source, const std::string& kernel_name);
  KernelStats& stats() { return stats_; }
  // Programs held in memory, dropping them all (clear_cache), and dropping those past a new
  // kernel_cache_limit().
  size_t program_count();
  void clear_programs();
  void trim_programs();

 private:
  // The driver's program for `binary`. A driver out of memory (a module's code and constants
  // live in device memory) first gets back what kiln's cache holds, once, as allocations do.
  std::unique_ptr<Program> load(const std::vector<uint8_t>& binary, const std::string& kernel_name);
  // Compiles `source`, counts it and stores the binary under `key` in the disk cache.
  std::vector<uint8_t> compile_and_store(const std::string& key, const std::string& source,
                                         const std::string& kernel_name);

  // Most recently used first; programs_ finds a source's entry in it.
  struct CachedProgram {
    std::string source;
    std::shared_ptr<Program> program;
  };
  // Moves the least recently used programs beyond kernel_cache_limit() to `dropped`, which the
  // caller destroys after releasing mutex_. Under mutex_.
  void trim_programs(std::list<CachedProgram>& dropped);

  std::unique_ptr<Device> device_;
  std::unique_ptr<CachingAllocator> allocator_;
  std::mutex mutex_;
  std::list<CachedProgram> recent_;
  std::unordered_map<std::string, std::list<CachedProgram>::iterator> programs_;
  KernelStats stats_;
};

}  // namespace kiln

// The CPU device: kernels rendered as C, compiled by the system C compiler, loaded with dlopen
// and run across every core by a thread pool.

#include <kiln/error.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <thread>

#include "codegen/cpu_abi.h"
#include "codegen/dialect.h"
#include "devices/cpu/cpu_compiler.h"
#include "devices/cpu/host_memory.h"
#include "devices/cpu/shared_object.h"
#include "devices/cpu/thread_pool.h"
#include "runtime/environment.h"
#include "runtime/plugin.h"

namespace kiln::cpu {
namespace {

// Below this much work a kernel runs on the calling thread: waking the pool costs more.
constexpr double kParallelWorkThreshold = 32768;
constexpr size_t kAlignment = 64;

class HostAllocator : public Allocator {
 public:
  // More than RAM and swap together can never be backed: with overcommit, malloc may still say
  // yes, and the process is killed when a kernel touches the pages.
  explicit HostAllocator(uint64_t largest) : largest_(largest) {}

  DeviceMemory alloc(size_t nbytes) override {
    if (largest_ > 0 && nbytes > largest_) {
      throw OutOfMemoryError("[cpu] cannot allocate " + std::to_string(nbytes) +
                             " bytes: more than the host's physical memory and swap together (" +
                             std::to_string(largest_) + " bytes)");
    }
    // Also keeps the rounding below from wrapping around.
    if (nbytes > std::numeric_limits<size_t>::max() - kAlignment) {
      throw OutOfMemoryError("[cpu] cannot allocate " + std::to_string(nbytes) +
                             " bytes: larger than the address space");
    }
    void* memory =
        std::aligned_alloc(kAlignment, (nbytes + kAlignment - 1) / kAlignment * kAlignment);
    if (!memory) {
      throw OutOfMemoryError("[cpu] out of host memory allocating " + std::to_string(nbytes) +
                             " bytes: aligned_alloc failed (the host has " +
                             std::to_string(largest_) +
                             " bytes of RAM and swap, shared with everything it runs)");
    }
    return memory;
  }
  void free(DeviceMemory memory, size_t) override { std::free(memory); }
  // Kernels run on the host: its memory is theirs as it is.
  DeviceMemory wrap_host(void* host, size_t) override { return host; }
  DeviceMemory wrap_native(void* handle, size_t offset, size_t, size_t alignment) override {
    char* const first = static_cast<char*>(handle) + offset;
    if (reinterpret_cast<uintptr_t>(first) % alignment != 0) {
      throw DeviceError("[cpu] the memory at offset " + std::to_string(offset) +
                        " is not aligned to its elements' " + std::to_string(alignment) + " bytes");
    }
    return first;
  }
  void copy_in(DeviceMemory destination, const void* host, size_t nbytes) override {
    std::memcpy(destination, host, nbytes);
  }
  void copy_out(void* host, DeviceMemory source, size_t nbytes) override {
    std::memcpy(host, source, nbytes);
  }
  // Memory is a host address: a subregion is that address plus the offset. Kernels assume no
  // alignment beyond the element's, so any offset works.
  size_t subregion_alignment() const override { return 1; }
  DeviceMemory subregion(DeviceMemory base, size_t offset, size_t) override {
    return static_cast<uint8_t*>(base) + offset;
  }

 private:
  uint64_t largest_;
};

class CpuProgram : public Program {
 public:
  CpuProgram(const std::vector<uint8_t>& binary, const std::string& kernel_name, ThreadPool& pool)
      : object_(binary, kernel_name), pool_(pool) {
    function_ = reinterpret_cast<CpuKernelFunction>(object_.symbol(kernel_name));
    if (!function_) throw DeviceError("[cpu] kernel object has no function " + kernel_name);
  }

  double launch(const LaunchRequest& request) override {
    const auto start = std::chrono::steady_clock::now();
    std::vector<void*> buffers(request.buffers.begin(), request.buffers.end());
    const long long* variables = request.variables.empty()
                                     ? nullptr
                                     : reinterpret_cast<const long long*>(request.variables.data());
    const int64_t total = request.global.x * request.global.y * request.global.z;
    const double work = static_cast<double>(total) * request.work_per_item;
    const int chunks = work < kParallelWorkThreshold
                           ? 1
                           : static_cast<int>(std::min<int64_t>(total, pool_.size() * 4));
    pool_.parallel_for(total, chunks, [&](int64_t begin, int64_t end) {
      function_(buffers.data(), variables, begin, end);
    });
    if (!request.wait) return 0;
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

 private:
  SharedObject object_;
  ThreadPool& pool_;
  CpuKernelFunction function_ = nullptr;
};

int thread_count() {
  const int64_t configured = integer_from_environment(
      "KILN_CPU_THREADS", 1, 4096, 0, "the CPU device's threads; unset: one per core");
  if (configured > 0) return static_cast<int>(configured);
  return std::max(1u, std::thread::hardware_concurrency());
}

class CpuDevice : public Device {
 public:
  CpuDevice() : compiler_(make_c_compiler()), pool_(thread_count()) {
    properties_.kind = DeviceKind::CPU;
    properties_.driver =
        compiler_->identity().substr(0, compiler_->identity().find(" | ")) + ", dlopen";
    properties_.description = "host CPU, " + std::to_string(pool_.size()) + " thread(s)";
    properties_.max_workgroup_size = 1;
    properties_.compute_units = pool_.size();
    for (DType dtype : dtypes::all) properties_.dtypes.insert(dtype.type());
    const HostMemory memory = host_memory();
    properties_.memory_bytes = memory.physical_bytes;
    properties_.max_allocation_bytes = memory.physical_bytes + memory.swap_bytes;
    allocator_ = std::make_unique<HostAllocator>(properties_.max_allocation_bytes);
  }

  const std::string& name() const override { return name_; }
  const DeviceProperties& properties() const override { return properties_; }
  const Dialect& dialect() const override { return c_dialect(); }
  Allocator& allocator() override { return *allocator_; }
  Compiler& compiler() override { return *compiler_; }
  std::unique_ptr<Program> load_program(const std::vector<uint8_t>& binary,
                                        const std::string& kernel_name) override {
    return std::make_unique<CpuProgram>(binary, kernel_name, pool_);
  }
  // Kernels run synchronously on the CPU: nothing is ever in flight.
  void synchronize() override {}

 private:
  std::string name_ = "CPU";
  DeviceProperties properties_;
  std::unique_ptr<HostAllocator> allocator_;
  std::unique_ptr<Compiler> compiler_;
  ThreadPool pool_;
};

ProbeResult probe() {
  ProbeResult result;
  const std::string problem = compiler_problem();
  if (!problem.empty()) {
    result.reason = problem;
    return result;
  }
  result.device_count = 1;
  result.reason = "host CPU with C compiler '" + compiler_command()[0] + "'";
  return result;
}

std::unique_ptr<Device> create(int) {
  return std::make_unique<CpuDevice>();
}

const PluginEntry kEntry = {
    kPluginAbiVersion, plugin_layout_fingerprint(), "CPU", &probe, &create, nullptr};

}  // namespace
}  // namespace kiln::cpu

extern "C" __attribute__((visibility("default"))) const kiln::PluginEntry* kiln_plugin_entry() {
  return &kiln::cpu::kEntry;
}

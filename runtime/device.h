#pragma once
// The interfaces every device driver implements: Allocator (memory), Compiler (source to binary),
// Program (a compiled kernel that launches) and Device (the three together, plus its properties
// and the renderer dialect it wants). A driver lives in devices/<name>/ as a plugin; see plugin.h.

#include <cstdint>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <kiln/device.h>
#include <kiln/dtype.h>
#include <kiln/error.h>

#include "codegen/dialect.h"
#include "runtime/driver_handle.h"

namespace kiln {

// Opaque device memory as the driver sees it.
using DeviceMemory = void*;

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Throws OutOfMemoryError when the device has no room.
  virtual DeviceMemory alloc(size_t nbytes) = 0;
  virtual void free(DeviceMemory memory, size_t nbytes) = 0;
  virtual void copy_in(DeviceMemory destination, const void* host, size_t nbytes) = 0;
  virtual void copy_out(void* host, DeviceMemory source, size_t nbytes) = 0;

  // Aliasing, for tools that surround a block with guard bytes (kiln conformance). A subregion is
  // a handle to `nbytes` bytes at `offset` inside the allocation `base`, accepted wherever an
  // allocation is (kernel arguments, copies). It is given back with release_subregion, never with
  // free, and before `base` is freed. `offset` must be a multiple of subregion_alignment(); a
  // device that cannot alias memory returns 0 there and need not implement the other two.
  virtual size_t subregion_alignment() const { return 0; }
  virtual DeviceMemory subregion(DeviceMemory base, size_t offset, size_t nbytes) {
    (void)base, (void)offset, (void)nbytes;
    throw DeviceError("this device does not support subregions (subregion_alignment() is 0)");
  }
  virtual void release_subregion(DeviceMemory region) { (void)region; }

  // Zero-copy with the application (Tensor::from_blob): `nbytes` of host memory at `host` as an
  // allocation of this device, which kernels read and write in place; null where the device
  // cannot use host memory so, a DeviceError where this memory does not fit (its alignment). The
  // memory stays the caller's: release_wrapped (never free) gives the handle back once no queued
  // work uses it.
  virtual DeviceMemory wrap_host(void* host, size_t nbytes) {
    (void)host, (void)nbytes;
    return nullptr;
  }
  // The same for an allocation the device API made (Tensor::from_native): `nbytes` at `offset`
  // in `handle`, a handle as native_handle gives them, whose elements need `alignment` bytes.
  // Null where the device cannot take one; a DeviceError where this one is misaligned for the
  // device, or is not the device's or does not hold the bytes where the device can tell.
  virtual DeviceMemory wrap_native(void* handle, size_t offset, size_t nbytes, size_t alignment) {
    (void)handle, (void)offset, (void)nbytes, (void)alignment;
    return nullptr;
  }
  virtual void release_wrapped(DeviceMemory memory) { (void)memory; }
  // The device API's own handle of an allocation (Tensor::native_memory) and the byte offset of
  // the allocation inside it: a host pointer (CPU), a cl_mem (OpenCL), a VkBuffer and an offset
  // (Vulkan), a CUdeviceptr (CUDA).
  virtual std::pair<void*, size_t> native_handle(DeviceMemory memory) { return {memory, 0}; }
};

// Gives a block back to the allocator it came from: the deleter of OwnedDeviceMemory.
struct FreeToAllocator {
  Allocator* allocator = nullptr;
  size_t nbytes = 0;
  void operator()(DeviceMemory memory) const { allocator->free(memory, nbytes); }
};

// A block a device uses for itself (a measurement's buffers, a launch's extra arguments), freed
// when its owner goes, on every path out.
using OwnedDeviceMemory = UniqueHandle<DeviceMemory, FreeToAllocator>;

inline OwnedDeviceMemory allocate_owned(Allocator& allocator, size_t nbytes) {
  return OwnedDeviceMemory(allocator.alloc(nbytes), FreeToAllocator{&allocator, nbytes});
}

// Three launch dimensions; unused ones are 1.
struct LaunchDims {
  int64_t x = 1, y = 1, z = 1;
};

struct LaunchRequest {
  std::vector<DeviceMemory> buffers;  // in the kernel's parameter order
  LaunchDims global;                  // work items
  LaunchDims local;                   // items per group, where the device has groups
  std::vector<int64_t> variables;     // values of the symbolic sizes
  bool wait = false;                  // return only when finished, with the time taken
  double work_per_item = 1;           // rough operations per work item (loops included)
};

class Program {
 public:
  virtual ~Program() = default;
  // Runs the kernel. With `request.wait` it returns once the kernel has finished and gives its
  // time in seconds (0 otherwise).
  virtual double launch(const LaunchRequest& request) = 0;
  // The most work items a workgroup of this kernel may have where the driver allows it fewer than
  // the device's max_workgroup_size (OpenCL's CL_KERNEL_WORK_GROUP_SIZE); 0 where it has no limit
  // of its own. The runtime plans such a kernel again within it.
  virtual int64_t max_workgroup_size() const { return 0; }
};

class Compiler {
 public:
  virtual ~Compiler() = default;
  // Identifies everything that changes the binary besides the source: compiler version, flags
  // and target architecture. Part of the kernel cache key.
  virtual std::string identity() const = 0;
  // Throws CompileError with the compiler's log and the source.
  virtual std::vector<uint8_t> compile(const std::string& source,
                                       const std::string& kernel_name) = 0;
};

enum class DeviceKind { CPU, GPU };

struct DeviceProperties {
  DeviceKind kind = DeviceKind::CPU;
  std::string driver;       // e.g. "gcc 12.2 via dlopen", "PoCL 3.1"
  std::string description;  // the device's own name
  int64_t max_workgroup_size = 1;
  int64_t max_workgroup_dims[3] = {1, 1, 1};  // work items per workgroup along x, y and z
  // Workgroups a launch may have along x, y and z (CUDA's grid limits); unlimited elsewhere.
  int64_t max_workgroups[3] = {INT64_MAX, INT64_MAX, INT64_MAX};
  int64_t local_memory_bytes = 0;
  int warp_width = 1;
  int compute_units = 1;
  // The GPU's architecture as its compiler names it, "sm_90" for an H100 (CUDA compute
  // capability 9.0); empty where the API names none. The optimiser sees it (OptTarget).
  std::string architecture;
  // Matrix units that the dialect's fragments (Dialect::mma) run on: CUDA's tensor cores with
  // bfloat16 and float16, from compute capability 8.0. Where false, TC runs only on dialects
  // that emulate fragments.
  bool tensor_cores = false;
  std::set<ScalarType> dtypes;  // dtypes the device computes
  // The device's memory (host RAM for a CPU device), and the largest single allocation it can
  // make. 0 where the driver cannot tell; an allocation over a known limit is refused with an
  // OutOfMemoryError before any kernel runs.
  uint64_t memory_bytes = 0;
  uint64_t max_allocation_bytes = 0;
  // What sets max_allocation_bytes, for the error that refuses a larger buffer (e.g. Vulkan's
  // "maxStorageBufferRange"); may be empty.
  std::string max_allocation_limit;
  // Buffers one kernel may bind, its output included (Vulkan's maxPerStageDescriptorStorageBuffers:
  // 32 on lavapipe); 0 where the device sets no limit below kiln's own (128). The scheduler
  // splits kernels to fit.
  int64_t max_kernel_buffers = 0;
  // Loop iterations one work item may run in all, every loop counted; 0: no limit. lavapipe stops
  // a work item's loops after 65535 without an error, so a longer reduction would be wrong: the
  // scheduler splits reductions to a quarter of this, and a kernel that still loops more is
  // refused with a DeviceError that names the limit.
  int64_t max_loop_iterations = 0;
  // What identifies the hardware through every API that reaches it, so that one GPU seen
  // through CUDA, OpenCL and Vulkan is recognisable: "PCI 0000:01:00.0" where the driver tells
  // the bus, else "UUID ..."; empty where it tells neither.
  std::string hardware_id;
  // A device that compiles kernels and runs none (opened as NAME@TARGET, e.g. "CUDA@sm_90", to
  // check kernels for a GPU the machine lacks): realize renders and compiles, launches nothing,
  // and its memory cannot be read back.
  bool compile_only = false;
};

// DeviceProperties::hardware_id for a PCI device, in one format for every API: "PCI
// 0000:01:00.0" (domain, bus, device, function in lower-case hex).
inline std::string pci_hardware_id(uint32_t domain, uint32_t bus, uint32_t device,
                                   uint32_t function) {
  char text[40];
  std::snprintf(text, sizeof(text), "PCI %04x:%02x:%02x.%x", domain, bus, device, function);
  return text;
}

// A 16-byte UUID as drivers report one (Vulkan's deviceUUID and pipelineCacheUUID, OpenCL's
// CL_DEVICE_UUID_KHR), as 8-4-4-4-12 lower-case hex digits.
inline std::string uuid_text(const uint8_t* bytes) {
  std::string text;
  char pair[3];
  for (int index = 0; index < 16; ++index) {
    if (index == 4 || index == 6 || index == 8 || index == 10) text += '-';
    std::snprintf(pair, sizeof(pair), "%02x", bytes[index]);
    text += pair;
  }
  return text;
}

// What the device's own vendor tools reach on it, measured by its driver for `kiln bench` to set
// kiln's figures beside. A figure is 0 where the device cannot measure it.
struct DeviceLimits {
  double copy_bytes_per_second = 0;  // a device-to-device copy: bytes read + written per second
  std::string gemm_library;          // the vendor BLAS the GEMM figures come from
  double gemm_float32_flops = 0;     // side^3 SGEMM, row-major float32 (no TF32)
  double gemm_bfloat16_flops = 0;    // side^3 bfloat16 inputs, float32 accumulation
  std::string notes;                 // why a figure is missing
};

// A fixed sequence of kernel launches that a device runs as one (a CUDA graph): what a
// capture's replays launch in place of each kernel (Device::record_graph).
class LaunchGraph {
 public:
  virtual ~LaunchGraph() = default;
  // Runs the kernels in order, one request each: the programs and geometry recorded, with this
  // run's buffers (and the recorded variables).
  virtual void launch(const std::vector<LaunchRequest>& requests) = 0;
};

// One launch of a LaunchGraph: a program of the device, and its request.
struct GraphLaunch {
  Program* program = nullptr;
  LaunchRequest request;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual const std::string& name() const = 0;  // "CPU", "CL:1"
  virtual const DeviceProperties& properties() const = 0;
  virtual const Dialect& dialect() const = 0;
  virtual Allocator& allocator() = 0;
  virtual Compiler& compiler() = 0;
  virtual std::unique_ptr<Program> load_program(const std::vector<uint8_t>& binary,
                                                const std::string& kernel_name) = 0;
  // Waits for every launched kernel and copy to finish.
  virtual void synchronize() = 0;
  // Starts the work launched so far without waiting for it. A device that batches its launches
  // (Vulkan) submits its batch here; kiln calls it at the end of every realize and replay, so
  // work is never left recorded while the device idles.
  virtual void flush() {}
  // The launches as one LaunchGraph where the device has such a thing; null where it has none
  // (a replay then launches each kernel). Throws DeviceError where making it fails.
  virtual std::unique_ptr<LaunchGraph> record_graph(const std::vector<GraphLaunch>& launches) {
    (void)launches;
    return nullptr;
  }
  // Measures the limits above with a copy of `copy_bytes` and GEMMs of `gemm_side`; devices
  // whose limits the host measures (the CPU's memcpy and BLAS) return nothing.
  virtual DeviceLimits measure_limits(size_t copy_bytes, int gemm_side) {
    (void)copy_bytes, (void)gemm_side;
    return {};
  }

  // The device API's own objects kiln uses (kiln::native_device, which documents them).
  virtual NativeDevice native_handles() { return {}; }

  bool supports(DType dtype) const { return properties().dtypes.count(dtype.type()) > 0; }
};

}  // namespace kiln

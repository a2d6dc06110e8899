// The OpenCL device: kernels rendered as OpenCL C, built by the driver (clBuildProgram), cached
// as program binaries, and launched one work item per output element on an in-order queue.

#include <kiln/error.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <set>
#include <string>

#include <unistd.h>

#include "codegen/dialect.h"
#include "devices/opencl/cl_check.h"
#include "devices/opencl/cl_compiler.h"
#include "devices/opencl/cl_info.h"
#include "runtime/environment.h"
#include "runtime/plugin.h"

namespace kiln::opencl {
namespace {

class ClAllocator : public Allocator {
 public:
  ClAllocator(cl_context context, cl_command_queue queue, size_t largest_allocation,
              size_t base_alignment, bool host_unified)
      : context_(context),
        queue_(queue),
        largest_allocation_(largest_allocation),
        base_alignment_(base_alignment),
        host_unified_(host_unified) {}

  DeviceMemory alloc(size_t nbytes) override {
    if (nbytes > largest_allocation_) {
      throw OutOfMemoryError("[cl] cannot allocate " + std::to_string(nbytes) +
                             " bytes: the device's largest " +
                             "buffer (CL_DEVICE_MAX_MEM_ALLOC_SIZE) is " +
                             std::to_string(largest_allocation_) + " bytes");
    }
    return KILN_CL_CREATE(clCreateBuffer, context_, CL_MEM_READ_WRITE, nbytes, nullptr);
  }
  // The driver keeps the memory alive until queued kernels that use it have finished. A failed
  // release could only mean an invalid handle, and this runs from destructors: nothing to throw.
  void free(DeviceMemory memory, size_t) override {
    clReleaseMemObject(static_cast<cl_mem>(memory));
  }
  // Blocking copies: the host memory may go as soon as they return, and the in-order queue puts
  // them after every kernel launched before.
  void copy_in(DeviceMemory destination, const void* host, size_t nbytes) override {
    KILN_CL_CHECK(clEnqueueWriteBuffer(queue_, static_cast<cl_mem>(destination), CL_TRUE, 0, nbytes,
                                       host, 0, nullptr, nullptr));
  }
  void copy_out(void* host, DeviceMemory source, size_t nbytes) override {
    KILN_CL_CHECK(clEnqueueReadBuffer(queue_, static_cast<cl_mem>(source), CL_TRUE, 0, nbytes, host,
                                      0, nullptr, nullptr));
  }

  // Subregions are OpenCL sub-buffers, whose origin must be aligned to
  // CL_DEVICE_MEM_BASE_ADDR_ALIGN. A sub-buffer holds a reference to its parent.
  size_t subregion_alignment() const override { return base_alignment_; }
  DeviceMemory subregion(DeviceMemory base, size_t offset, size_t nbytes) override {
    if (offset % base_alignment_ != 0) {
      throw DeviceError("[cl] subregion: offset " + std::to_string(offset) +
                        " is not a multiple of the device's base address alignment (" +
                        std::to_string(base_alignment_) + " bytes)");
    }
    const cl_buffer_region region{offset, nbytes};
    return KILN_CL_CREATE(clCreateSubBuffer, static_cast<cl_mem>(base), CL_MEM_READ_WRITE,
                          CL_BUFFER_CREATE_TYPE_REGION, &region);
  }
  void release_subregion(DeviceMemory region) override {
    clReleaseMemObject(static_cast<cl_mem>(region));
  }

  // Host memory used in place is CL_MEM_USE_HOST_PTR on a device that shares the host's memory
  // (CL_DEVICE_HOST_UNIFIED_MEMORY: a CPU driver such as PoCL), whose kernels then read and write
  // it. A device with memory of its own would keep a copy there and write it back only when
  // mapped: not the zero-copy from_blob promises, so it is refused.
  DeviceMemory wrap_host(void* host, size_t nbytes) override {
    if (!host_unified_) return nullptr;
    if (nbytes > largest_allocation_) {
      throw OutOfMemoryError("[cl] cannot use " + std::to_string(nbytes) +
                             " bytes of host memory: the device's largest buffer "
                             "(CL_DEVICE_MAX_MEM_ALLOC_SIZE) is " +
                             std::to_string(largest_allocation_) + " bytes");
    }
    // OpenCL has no empty buffers, and an empty tensor's pointer need not point at a byte: a
    // buffer of the driver's own stands for it (nothing reads it).
    if (nbytes == 0) return KILN_CL_CREATE(clCreateBuffer, context_, CL_MEM_READ_WRITE, 1, nullptr);
    const cl_mem memory = KILN_CL_CREATE(clCreateBuffer, context_,
                                         CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, nbytes, host);
    // The driver may still keep a copy (some do for pointers they find misaligned): then a map
    // gives another address, and the memory is refused rather than silently copied.
    cl_int status = CL_SUCCESS;
    void* const mapped = clEnqueueMapBuffer(queue_, memory, CL_TRUE, CL_MAP_READ, 0, nbytes, 0,
                                            nullptr, nullptr, &status);
    if (status == CL_SUCCESS)
      status = clEnqueueUnmapMemObject(queue_, memory, mapped, 0, nullptr, nullptr);
    if (status != CL_SUCCESS || mapped != host) {
      clReleaseMemObject(memory);
      KILN_CL_CHECK(status);
      return nullptr;
    }
    return memory;
  }
  // An application's cl_mem, made in kiln's context (kiln::native_device): retained, or a
  // sub-buffer of it at an offset.
  DeviceMemory wrap_native(void* handle, size_t offset, size_t nbytes, size_t alignment) override {
    const auto memory = static_cast<cl_mem>(handle);
    cl_context context = nullptr;
    KILN_CL_CHECK(clGetMemObjectInfo(memory, CL_MEM_CONTEXT, sizeof(context), &context, nullptr));
    if (context != context_) {
      throw DeviceError(
          "[cl] the cl_mem belongs to another OpenCL context; kiln's device uses its own "
          "(kiln::native_device gives it): make the buffer there");
    }
    size_t size = 0;
    KILN_CL_CHECK(clGetMemObjectInfo(memory, CL_MEM_SIZE, sizeof(size), &size, nullptr));
    if (offset > size || nbytes > size - offset) {
      throw DeviceError("[cl] the cl_mem holds " + std::to_string(size) + " bytes, not " +
                        std::to_string(nbytes) + " at offset " + std::to_string(offset));
    }
    if (offset == 0) {
      KILN_CL_CHECK(clRetainMemObject(memory));
      return memory;
    }
    if (offset % alignment != 0) {
      throw DeviceError("[cl] offset " + std::to_string(offset) +
                        " is not aligned to the elements' " + std::to_string(alignment) + " bytes");
    }
    return subregion(memory, offset, std::max<size_t>(nbytes, 1));
  }
  void release_wrapped(DeviceMemory memory) override {
    clReleaseMemObject(static_cast<cl_mem>(memory));
  }

 private:
  cl_context context_;
  cl_command_queue queue_;
  size_t largest_allocation_;
  size_t base_alignment_;
  bool host_unified_;
};

// The queues of the live devices, finished at exit before the driver's own static objects go.
// PoCL compiles a kernel for its workgroup size when the kernel first runs, so work still queued
// when the process exits would need its compiler (LLVM) after LLVM's static objects were
// destroyed, and aborts ("Failed to create kernel compiler pass"). The exit handler is registered
// once a kernel has run to the end (its compiler's static objects exist by then), so that it runs
// before their destructors.
class QueuesFinishedAtExit {
 public:
  static void add(cl_command_queue queue) {
    std::lock_guard<std::mutex> lock(mutex());
    queues().insert(queue);
  }
  static void remove(cl_command_queue queue) {
    std::lock_guard<std::mutex> lock(mutex());
    queues().erase(queue);
  }
  static void arm() {
    static std::once_flag once;
    std::call_once(once, [] { std::atexit(finish_all); });
  }

 private:
  static void finish_all() {
    std::lock_guard<std::mutex> lock(mutex());
    for (cl_command_queue queue : queues()) clFinish(queue);  // errors: no one to report to
  }
  // Never destroyed: devices are destroyed at exit after this plugin's static objects (the
  // registry that owns them was made first), and their queues still leave this set then.
  static std::mutex& mutex() {
    static std::mutex* const instance = new std::mutex;
    return *instance;
  }
  static std::set<cl_command_queue>& queues() {
    static std::set<cl_command_queue>* const instance = new std::set<cl_command_queue>;
    return *instance;
  }
};

class ClKernelProgram : public Program {
 public:
  ClKernelProgram(std::shared_ptr<const ClProgram> program, ClKernel kernel, cl_command_queue queue,
                  size_t kernel_group_size, std::string name)
      : program_(std::move(program)),
        kernel_(std::move(kernel)),
        queue_(queue),
        kernel_group_size_(kernel_group_size),
        name_(std::move(name)) {}

  int64_t max_workgroup_size() const override { return static_cast<int64_t>(kernel_group_size_); }

  double launch(const LaunchRequest& request) override {
    // The geometry is the kernel's own (its opts chose it): launched as given.
    const size_t global[3] = {static_cast<size_t>(request.global.x),
                              static_cast<size_t>(request.global.y),
                              static_cast<size_t>(request.global.z)};
    const size_t local[3] = {static_cast<size_t>(request.local.x),
                             static_cast<size_t>(request.local.y),
                             static_cast<size_t>(request.local.z)};
    if (global[0] * global[1] * global[2] == 0) return 0;
    if (local[0] * local[1] * local[2] > kernel_group_size_) {
      throw DeviceError("[CL launch] kernel " + name_ + " asks for workgroups of " +
                        std::to_string(local[0] * local[1] * local[2]) +
                        " work items; the driver allows this kernel at most " +
                        std::to_string(kernel_group_size_) +
                        " (CL_KERNEL_WORK_GROUP_SIZE); KILN_NOOPT=1 launches without groups");
    }
    // Arguments live in the kernel object: one launch sets and enqueues at a time.
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t index = 0; index < request.buffers.size(); ++index) {
      cl_mem memory = static_cast<cl_mem>(request.buffers[index]);
      KILN_CL_CHECK(
          clSetKernelArg(kernel_.get(), static_cast<cl_uint>(index), sizeof(memory), &memory));
    }
    // The kernel's variables follow its buffers, as 64-bit integers.
    for (size_t at = 0; at < request.variables.size(); ++at) {
      const cl_long value = request.variables[at];
      KILN_CL_CHECK(clSetKernelArg(kernel_.get(), static_cast<cl_uint>(request.buffers.size() + at),
                                   sizeof(value), &value));
    }
    if (!request.wait) {
      KILN_CL_CHECK(clEnqueueNDRangeKernel(queue_, kernel_.get(), 3, nullptr, global, local, 0,
                                           nullptr, nullptr));
      if (!ran_) {
        // The first run compiles (see QueuesFinishedAtExit): waited for once per kernel.
        KILN_CL_CHECK(clFinish(queue_));
        ran_ = true;
        QueuesFinishedAtExit::arm();
      }
      return 0;
    }
    cl_event raw_event = nullptr;
    KILN_CL_CHECK(clEnqueueNDRangeKernel(queue_, kernel_.get(), 3, nullptr, global, local, 0,
                                         nullptr, &raw_event));
    const ClEvent event(raw_event);
    KILN_CL_CHECK(clWaitForEvents(1, &raw_event));
    ran_ = true;
    QueuesFinishedAtExit::arm();
    cl_ulong start = 0, end = 0;
    KILN_CL_CHECK(clGetEventProfilingInfo(raw_event, CL_PROFILING_COMMAND_START, sizeof(start),
                                          &start, nullptr));
    KILN_CL_CHECK(
        clGetEventProfilingInfo(raw_event, CL_PROFILING_COMMAND_END, sizeof(end), &end, nullptr));
    return static_cast<double>(end - start) * 1e-9;
  }

 private:
  std::shared_ptr<const ClProgram> program_;
  ClKernel kernel_;  // released first: the program's last release is BinaryPrograms' own
  cl_command_queue queue_;
  size_t kernel_group_size_;
  std::string name_;
  std::mutex mutex_;
  bool ran_ = false;  // launched and waited for once
};

struct Capabilities {
  bool fp64 = false;
  bool int64 = false;
  bool correctly_rounded_divide_sqrt = false;
};

Capabilities capabilities_of(cl_device_id device) {
  Capabilities found;
  // The dialect enables these through their extension pragmas, so the extension must be listed.
  found.fp64 = has_extension(device, "cl_khr_fp64");
  // 64-bit integers are core in the full profile; the embedded profile needs cles_khr_int64.
  found.int64 = device_string(device, CL_DEVICE_PROFILE) == "FULL_PROFILE" ||
                has_extension(device, "cles_khr_int64");
  const auto single_config =
      KILN_CL_DEVICE_VALUE(cl_device_fp_config, device, CL_DEVICE_SINGLE_FP_CONFIG);
  found.correctly_rounded_divide_sqrt = (single_config & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
  return found;
}

class ClDevice : public Device {
 public:
  ClDevice(int index, ClDeviceId id) : device_id_(id.device) {
    name_ = index == 0 ? "CL" : "CL:" + std::to_string(index);
    context_ =
        ClContext(KILN_CL_CREATE(clCreateContext, nullptr, 1, &device_id_, nullptr, nullptr));
    // Profiling on: KILN_DEBUG=2 times each kernel with its event; the cost is a timestamp.
    queue_ = ClQueue(KILN_CL_CREATE(clCreateCommandQueue, context_.get(), device_id_,
                                    CL_QUEUE_PROFILING_ENABLE));
    QueuesFinishedAtExit::add(queue_.get());

    const Capabilities capabilities = capabilities_of(device_id_);
    const auto type = KILN_CL_DEVICE_VALUE(cl_device_type, device_id_, CL_DEVICE_TYPE);
    const std::string device_name = device_string(device_id_, CL_DEVICE_NAME);
    const std::string platform_name = platform_string(id.platform, CL_PLATFORM_NAME);
    const std::string driver_version = device_string(device_id_, CL_DRIVER_VERSION);
    is_gpu_ = (type & (CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR)) != 0;
    properties_.kind = is_gpu_ ? DeviceKind::GPU : DeviceKind::CPU;
    // CL_DEVICE_VERSION reads "OpenCL <major.minor> <vendor text>": keep the version only.
    const std::string device_version = device_string(device_id_, CL_DEVICE_VERSION);
    properties_.driver = platform_name + " " + driver_version + " (" +
                         device_version.substr(0, device_version.find(' ', sizeof("OpenCL"))) + ")";
    properties_.description = device_name + " (" + device_type_name(type) + ")";
    properties_.max_workgroup_size = static_cast<int64_t>(
        KILN_CL_DEVICE_VALUE(size_t, device_id_, CL_DEVICE_MAX_WORK_GROUP_SIZE));
    properties_.local_memory_bytes =
        static_cast<int64_t>(KILN_CL_DEVICE_VALUE(cl_ulong, device_id_, CL_DEVICE_LOCAL_MEM_SIZE));
    properties_.compute_units =
        static_cast<int>(KILN_CL_DEVICE_VALUE(cl_uint, device_id_, CL_DEVICE_MAX_COMPUTE_UNITS));
    properties_.dtypes = {ScalarType::Bool,   ScalarType::Int8,    ScalarType::Int16,
                          ScalarType::Int32,  ScalarType::UInt8,   ScalarType::UInt16,
                          ScalarType::UInt32, ScalarType::Float32, ScalarType::BFloat16};
    if (capabilities.int64) properties_.dtypes.insert({ScalarType::Int64, ScalarType::UInt64});
    // float16 is stored with vload_half/vstore_half and computed in float: core OpenCL C.
    properties_.dtypes.insert(ScalarType::Float16);
    properties_.hardware_id = hardware_id_of(device_id_);
    if (capabilities.fp64) properties_.dtypes.insert(ScalarType::Float64);

    // Vectors of 16-bit elements are read as 32-bit words, the first element in the low half: a
    // little-endian device's order.
    const bool little_endian =
        KILN_CL_DEVICE_VALUE(cl_bool, device_id_, CL_DEVICE_ENDIAN_LITTLE) == CL_TRUE;
    dialect_ = opencl_dialect(capabilities.fp64, /*vector_loads=*/is_gpu_ && little_endian);
    // -w: generated code may divide by a literal 0 behind a guard, and some drivers (PoCL) print
    // the compiler's warning count on the user's stderr. Errors still come back in the build log.
    build_options_ = "-w";
    // Division and sqrt rounded like the CPU device's, where the device can.
    if (capabilities.correctly_rounded_divide_sqrt)
      build_options_ += " -cl-fp32-correctly-rounded-divide-sqrt";
    // Everything that changes the binary besides the source: the cache key.
    const std::string identity = "OpenCL | platform: " + platform_name + " " +
                                 platform_string(id.platform, CL_PLATFORM_VERSION) +
                                 " | device: " + device_name + " | driver: " + driver_version +
                                 " | options: " + build_options_;
    compiler_ = make_cl_compiler(context_.get(), device_id_, identity, build_options_);
    programs_ =
        std::make_unique<BinaryPrograms>(context_.get(), device_id_, queue_.get(), build_options_);
    const auto largest_allocation =
        KILN_CL_DEVICE_VALUE(cl_ulong, device_id_, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
    properties_.memory_bytes =
        KILN_CL_DEVICE_VALUE(cl_ulong, device_id_, CL_DEVICE_GLOBAL_MEM_SIZE);
    properties_.max_allocation_bytes = largest_allocation;
    properties_.max_allocation_limit = "CL_DEVICE_MAX_MEM_ALLOC_SIZE";
    const auto base_alignment_bits =
        KILN_CL_DEVICE_VALUE(cl_uint, device_id_, CL_DEVICE_MEM_BASE_ADDR_ALIGN);
    // Deprecated since OpenCL 2.0: a driver that no longer answers shares nothing.
    cl_bool host_unified = CL_FALSE;
    if (clGetDeviceInfo(device_id_, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof(host_unified),
                        &host_unified, nullptr) != CL_SUCCESS)
      host_unified = CL_FALSE;
    allocator_ = std::make_unique<ClAllocator>(
        context_.get(), queue_.get(), static_cast<size_t>(largest_allocation),
        std::max<size_t>(1, base_alignment_bits / 8), host_unified == CL_TRUE);

    size_t item_sizes[3] = {1, 1, 1};
    KILN_CL_CHECK(clGetDeviceInfo(device_id_, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof(item_sizes),
                                  item_sizes, nullptr));
    for (int dim = 0; dim < 3; ++dim)
      properties_.max_workgroup_dims[dim] = static_cast<int64_t>(item_sizes[dim]);
    // OpenCL has no query for the SIMD width before a kernel exists: 32 is NVIDIA's warp and a
    // multiple of the others' (Intel 8-32); the optimiser uses it only as a smallest group.
    properties_.warp_width = is_gpu_ ? 32 : 1;
  }

  ~ClDevice() override {
    // Let queued work finish before the queue and context go; errors have no one to go to here.
    if (queue_) {
      QueuesFinishedAtExit::remove(queue_.get());
      clFinish(queue_.get());
    }
  }

  const std::string& name() const override { return name_; }
  const DeviceProperties& properties() const override { return properties_; }
  const Dialect& dialect() const override { return dialect_; }
  Allocator& allocator() override { return *allocator_; }
  Compiler& compiler() override { return *compiler_; }
  NativeDevice native_handles() override {
    NativeDevice handles;
    KILN_CL_CHECK(clGetDeviceInfo(device_id_, CL_DEVICE_PLATFORM, sizeof(cl_platform_id),
                                  &handles.platform, nullptr));
    handles.device = device_id_;
    handles.context = context_.get();
    handles.queue = queue_.get();
    return handles;
  }

  std::unique_ptr<Program> load_program(const std::vector<uint8_t>& binary,
                                        const std::string& kernel_name) override {
    std::shared_ptr<const ClProgram> program = programs_->load(binary, kernel_name);
    ClKernel kernel(KILN_CL_CREATE(clCreateKernel, program->get(), kernel_name.c_str()));
    size_t kernel_group_size = 1;
    KILN_CL_CHECK(clGetKernelWorkGroupInfo(kernel.get(), device_id_, CL_KERNEL_WORK_GROUP_SIZE,
                                           sizeof(kernel_group_size), &kernel_group_size, nullptr));
    // KILN_CL_KERNEL_GROUP_LIMIT=N allows every kernel at most N work items per workgroup: the
    // limit NVIDIA's OpenCL puts on some kernels (256 of its 1024), so that PoCL runs the path
    // (the runtime plans the kernel again) where CI can check it.
    const int64_t limit =
        integer_from_environment("KILN_CL_KERNEL_GROUP_LIMIT", 1, INT32_MAX, INT32_MAX,
                                 "the work items a kernel's workgroup may have");
    kernel_group_size = std::min(kernel_group_size, static_cast<size_t>(limit));
    return std::make_unique<ClKernelProgram>(std::move(program), std::move(kernel), queue_.get(),
                                             kernel_group_size, kernel_name);
  }

  void synchronize() override { KILN_CL_CHECK(clFinish(queue_.get())); }
  // OpenCL may hold enqueued kernels until a flush; this issues them to the device.
  void flush() override { KILN_CL_CHECK(clFlush(queue_.get())); }

 private:
  // Declared first: released last, after everything created in it.
  cl_device_id device_id_;
  ClContext context_;
  ClQueue queue_;
  std::string name_;
  bool is_gpu_ = false;
  DeviceProperties properties_;
  Dialect dialect_;
  std::string build_options_;
  std::unique_ptr<Compiler> compiler_;
  std::unique_ptr<BinaryPrograms> programs_;
  std::unique_ptr<ClAllocator> allocator_;
};

// PoCL's own kernel cache (~/.cache/pocl) is shared by processes without a lock that holds for
// every step: processes building one kernel at once, cold, abort inside PoCL
// (pocl_binary.c: Assertion 'len > 0'). kiln keeps the binaries in its own cache, written
// atomically, so PoCL's is only a second copy: it is turned off for this process, where PoCL
// reads it, before the first OpenCL call opens the platforms. A value the user set is kept
// (setenv does not overwrite), so POCL_KERNEL_CACHE=1 still turns it on for debugging PoCL.
// Other drivers ignore the variables.
//
// Even with its cache off PoCL builds each kernel through files in its cache directory, named by
// the kernel's hash: two processes building one kernel at once still race there ("Final linking
// of kernel ... failed", then an abort; pocl/pocl#430). So each process gets a directory of its
// own (removed when it exits), unless the user chose one. A process kiln starts inherits its
// parent's choice, which KILN_POCL_CACHE_DIR_PID marks as kiln's, and makes its own.
class PrivateDirectory {
 public:
  PrivateDirectory() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/kiln-pocl-XXXXXX";
    if (::mkdtemp(pattern.data())) path_ = pattern;
  }
  ~PrivateDirectory() {
    std::error_code ignored;
    if (!path_.empty() && owner_ == ::getpid()) std::filesystem::remove_all(path_, ignored);
  }
  PrivateDirectory(const PrivateDirectory&) = delete;
  PrivateDirectory& operator=(const PrivateDirectory&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  pid_t owner_ = ::getpid();
};

void configure_pocl_files() {
  ::setenv("POCL_KERNEL_CACHE", "0", /*overwrite=*/0);
  const std::string pid = std::to_string(::getpid());
  const char* owner = std::getenv("KILN_POCL_CACHE_DIR_PID");
  const bool chosen_by_user = std::getenv("POCL_CACHE_DIR") != nullptr && owner == nullptr;
  if (chosen_by_user || (owner && pid == owner)) return;
  static const PrivateDirectory directory;
  if (directory.path().empty()) return;  // PoCL's default, as before
  ::setenv("POCL_CACHE_DIR", directory.path().c_str(), /*overwrite=*/1);
  ::setenv("KILN_POCL_CACHE_DIR_PID", pid.c_str(), /*overwrite=*/1);
}

ProbeResult probe() {
  ProbeResult result;
  configure_pocl_files();
  const std::vector<ClDeviceId> devices = all_devices();
  if (devices.empty()) {
    result.reason =
        "no OpenCL platform with a device found (install an OpenCL driver, e.g. Debian's "
        "pocl-opencl-icd; `clinfo` lists what the ICD loader sees)";
    return result;
  }
  result.device_count = static_cast<int>(devices.size());
  for (size_t index = 0; index < devices.size(); ++index) {
    const auto type = KILN_CL_DEVICE_VALUE(cl_device_type, devices[index].device, CL_DEVICE_TYPE);
    result.reason +=
        (index ? "; " : "") + std::string(index ? "CL:" + std::to_string(index) : "CL") + ": " +
        device_string(devices[index].device, CL_DEVICE_NAME) + " (" + device_type_name(type) +
        ", " + platform_string(devices[index].platform, CL_PLATFORM_NAME) + ")";
    // The registry marks every device of a plugin alike; the first decides, so that a CPU driver
    // such as PoCL never displaces the CPU device as the default.
    if (index == 0) result.is_gpu = (type & CL_DEVICE_TYPE_GPU) != 0;
  }
  return result;
}

std::unique_ptr<Device> create(int index) {
  const std::vector<ClDeviceId> devices = all_devices();
  if (index < 0 || static_cast<size_t>(index) >= devices.size()) {
    throw DeviceError("[cl] no OpenCL device " + std::to_string(index) + " (found " +
                      std::to_string(devices.size()) + ")");
  }
  return std::make_unique<ClDevice>(index, devices[index]);
}

const PluginEntry kEntry = {
    kPluginAbiVersion, plugin_layout_fingerprint(), "CL", &probe, &create, nullptr};

}  // namespace
}  // namespace kiln::opencl

extern "C" __attribute__((visibility("default"))) const kiln::PluginEntry* kiln_plugin_entry() {
  return &kiln::opencl::kEntry;
}

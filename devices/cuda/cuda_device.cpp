// The CUDA device: kernels rendered as CUDA C++, compiled by NVRTC to a cubin for the GPU's
// architecture, loaded as modules and launched on one stream of the device's primary context.
// The driver and NVRTC are loaded at run time (cuda_api.h).
//
// "CUDA@sm_90" opens a device that only compiles: kernels are rendered and compiled for that
// architecture, nothing runs (for checking kernels on machines without a GPU).

#include <kiln/error.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "codegen/dialect.h"
#include "devices/cuda/cuda_api.h"
#include "devices/cuda/cuda_graph.h"
#include "devices/cuda/cuda_limits.h"
#include "devices/cuda/cuda_memory.h"
#include "devices/cuda/cuda_program.h"
#include "devices/cuda/cuda_stream.h"
#include "devices/cuda/nvrtc_compiler.h"
#include "runtime/plugin.h"

namespace kiln::cuda {
namespace {

// Every dtype: half types are stored in 16 bits and computed in float, by the dialect.
std::set<ScalarType> all_dtypes() {
  return {ScalarType::Bool,   ScalarType::Int8,    ScalarType::Int16,    ScalarType::Int32,
          ScalarType::Int64,  ScalarType::UInt8,   ScalarType::UInt16,   ScalarType::UInt32,
          ScalarType::UInt64, ScalarType::Float16, ScalarType::BFloat16, ScalarType::Float32,
          ScalarType::Float64};
}

const DriverApi& loaded_driver() {
  const DriverApi& api = driver();
  if (!api.error.empty()) throw DeviceError("[cuda] " + api.error);
  return api;
}

std::string version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

// The device's primary context, retained while the device is open.
class PrimaryContext {
 public:
  explicit PrimaryContext(CUdevice device) : device_(device) {
    KILN_CU_CHECK(driver().cuDevicePrimaryCtxRetain(&context_, device_));
  }
  ~PrimaryContext() { KILN_CU_WARN(driver().cuDevicePrimaryCtxRelease_v2(device_)); }
  PrimaryContext(const PrimaryContext&) = delete;
  PrimaryContext& operator=(const PrimaryContext&) = delete;
  CUcontext get() const { return context_; }

 private:
  CUdevice device_;
  CUcontext context_ = nullptr;
};

int attribute(CUdevice device, CUdevice_attribute which, const char* name) {
  const auto check = [name](CUresult status, const char* call) {
    if (status != CUDA_SUCCESS) check_cu(status, (std::string(call) + " for " + name).c_str());
  };
  int value = 0;
  KILN_CU_CHECK_WITH(check, driver().cuDeviceGetAttribute(&value, which, device));
  return value;
}

#define KILN_CU_ATTRIBUTE(device, name) attribute(device, CU_DEVICE_ATTRIBUTE_##name, #name)

std::string device_name_of(CUdevice device) {
  char name[256] = {};
  KILN_CU_CHECK(driver().cuDeviceGetName(name, sizeof(name), device));
  return name;
}

std::string pci_bus_id_of(CUdevice device) {
  char bus_id[64] = {};
  if (driver().cuDeviceGetPCIBusId(bus_id, sizeof(bus_id), device) != CUDA_SUCCESS) return "";
  return bus_id;
}

class CudaDevice : public Device {
 public:
  CudaDevice(int index, CUdevice device)
      : device_(device), context_(device), stream_(context_.get()) {
    name_ = index == 0 ? "CUDA" : "CUDA:" + std::to_string(index);
    const DriverApi& api = loaded_driver();

    const int major = KILN_CU_ATTRIBUTE(device_, COMPUTE_CAPABILITY_MAJOR);
    const int minor = KILN_CU_ATTRIBUTE(device_, COMPUTE_CAPABILITY_MINOR);
    const std::string architecture = "sm_" + std::to_string(major * 10 + minor);
    properties_.kind = DeviceKind::GPU;
    properties_.architecture = architecture;
    properties_.tensor_cores = major >= 8;
    properties_.driver = "CUDA driver " + version_text(api.version) + ", NVRTC " +
                         std::to_string(nvrtc().major) + "." + std::to_string(nvrtc().minor);
    properties_.description =
        device_name_of(device_) + " (" + architecture + ", PCI " + pci_bus_id_of(device_) + ")";
    properties_.max_workgroup_size = KILN_CU_ATTRIBUTE(device_, MAX_THREADS_PER_BLOCK);
    properties_.max_workgroup_dims[0] = KILN_CU_ATTRIBUTE(device_, MAX_BLOCK_DIM_X);
    properties_.max_workgroup_dims[1] = KILN_CU_ATTRIBUTE(device_, MAX_BLOCK_DIM_Y);
    properties_.max_workgroup_dims[2] = KILN_CU_ATTRIBUTE(device_, MAX_BLOCK_DIM_Z);
    properties_.max_workgroups[0] = KILN_CU_ATTRIBUTE(device_, MAX_GRID_DIM_X);
    properties_.max_workgroups[1] = KILN_CU_ATTRIBUTE(device_, MAX_GRID_DIM_Y);
    properties_.max_workgroups[2] = KILN_CU_ATTRIBUTE(device_, MAX_GRID_DIM_Z);
    // Static __shared__ arrays: more than this needs dynamic shared memory and an opt-in.
    properties_.local_memory_bytes = KILN_CU_ATTRIBUTE(device_, MAX_SHARED_MEMORY_PER_BLOCK);
    properties_.warp_width = KILN_CU_ATTRIBUTE(device_, WARP_SIZE);
    properties_.compute_units = KILN_CU_ATTRIBUTE(device_, MULTIPROCESSOR_COUNT);
    properties_.dtypes = all_dtypes();
    properties_.hardware_id =
        pci_hardware_id(static_cast<uint32_t>(KILN_CU_ATTRIBUTE(device_, PCI_DOMAIN_ID)),
                        static_cast<uint32_t>(KILN_CU_ATTRIBUTE(device_, PCI_BUS_ID)),
                        static_cast<uint32_t>(KILN_CU_ATTRIBUTE(device_, PCI_DEVICE_ID)), 0);
    size_t total = 0;
    KILN_CU_CHECK(api.cuDeviceTotalMem_v2(&total, device_));
    properties_.memory_bytes = total;
    properties_.max_allocation_bytes = total;

    compiler_ = make_nvrtc_compiler(major * 10 + minor, api.version);
    allocator_ = std::make_unique<CudaAllocator>(stream_, total);
  }

  const std::string& name() const override { return name_; }
  const DeviceProperties& properties() const override { return properties_; }
  const Dialect& dialect() const override { return cuda_dialect(); }
  Allocator& allocator() override { return *allocator_; }
  Compiler& compiler() override { return *compiler_; }
  NativeDevice native_handles() override {
    NativeDevice handles;
    handles.device = reinterpret_cast<void*>(static_cast<intptr_t>(device_));
    handles.context = stream_.context();
    handles.queue = stream_.get();
    return handles;
  }

  std::unique_ptr<Program> load_program(const std::vector<uint8_t>& binary,
                                        const std::string& kernel_name) override {
    stream_.make_current();
    CUmodule module = nullptr;
    KILN_CU_CHECK_WITH(KernelCheck(stream_, kernel_name),
                       driver().cuModuleLoadData(&module, binary.data()));
    return std::make_unique<CudaProgram>(stream_, OwnedModule(module), kernel_name);
  }

  void synchronize() override { stream_.synchronize(); }

  std::unique_ptr<LaunchGraph> record_graph(const std::vector<GraphLaunch>& launches) override {
    if (!driver().graphs) return nullptr;  // a driver older than CUDA 12.0
    return std::make_unique<CudaGraph>(stream_, launches);
  }

  DeviceLimits measure_limits(size_t copy_bytes, int gemm_side) override {
    return measure_cuda_limits(stream_, *allocator_, copy_bytes, gemm_side);
  }

 private:
  // In order of construction; destroyed in reverse: the allocator and the stream wait for queued
  // work before the context is released.
  CUdevice device_;
  PrimaryContext context_;
  CudaStream stream_;
  std::string name_;
  DeviceProperties properties_;
  std::unique_ptr<Compiler> compiler_;
  std::unique_ptr<CudaAllocator> allocator_;
};

// Host memory standing in for a GPU's: inputs can be uploaded and kernels planned, but there is
// no kernel result to read back.
class CompileOnlyAllocator : public Allocator {
 public:
  explicit CompileOnlyAllocator(std::string device) : device_(std::move(device)) {}
  DeviceMemory alloc(size_t nbytes) override {
    void* memory = std::aligned_alloc(256, (std::max<size_t>(nbytes, 1) + 255) / 256 * 256);
    if (!memory)
      throw OutOfMemoryError("[cuda] " + device_ + ": cannot allocate " + std::to_string(nbytes) +
                             " bytes of host memory");
    return memory;
  }
  void free(DeviceMemory memory, size_t) override { std::free(memory); }
  void copy_in(DeviceMemory destination, const void* host, size_t nbytes) override {
    std::memcpy(destination, host, nbytes);
  }
  void copy_out(void*, DeviceMemory, size_t) override {
    throw CompileOnlyError("[cuda] " + device_ +
                           " only compiles kernels: nothing runs there, so there are no values to "
                           "read (run on a GPU: KILN_DEVICE=CUDA)");
  }

 private:
  std::string device_;
};

class CompileOnlyDevice : public Device {
 public:
  explicit CompileOnlyDevice(int architecture)
      : name_("CUDA@sm_" + std::to_string(architecture)), allocator_(name_) {
    properties_.kind = DeviceKind::GPU;
    properties_.compile_only = true;
    properties_.architecture = "sm_" + std::to_string(architecture);
    properties_.tensor_cores = architecture >= 80;
    properties_.driver = "NVRTC " + std::to_string(nvrtc().major) + "." +
                         std::to_string(nvrtc().minor) + " (compile only)";
    properties_.description = "kernels compiled for sm_" + std::to_string(architecture) +
                              ", not run; limits as on an H100";
    // What every architecture since sm_50 allows, and an H100's 132 SMs, so the optimiser
    // makes the choices it makes on a real part.
    properties_.max_workgroup_size = 1024;
    properties_.max_workgroup_dims[0] = 1024;
    properties_.max_workgroup_dims[1] = 1024;
    properties_.max_workgroup_dims[2] = 64;
    properties_.max_workgroups[0] = INT_MAX;
    properties_.max_workgroups[1] = 65535;
    properties_.max_workgroups[2] = 65535;
    properties_.local_memory_bytes = 48 * 1024;
    properties_.warp_width = 32;
    properties_.compute_units = 132;
    properties_.dtypes = all_dtypes();
    compiler_ = make_nvrtc_compiler(architecture, 0);
  }

  const std::string& name() const override { return name_; }
  const DeviceProperties& properties() const override { return properties_; }
  const Dialect& dialect() const override { return cuda_dialect(); }
  Allocator& allocator() override { return allocator_; }
  Compiler& compiler() override { return *compiler_; }
  std::unique_ptr<Program> load_program(const std::vector<uint8_t>&,
                                        const std::string& kernel_name) override {
    throw DeviceError("[cuda] " + name_ + " only compiles: kernel " + kernel_name +
                      " cannot be loaded without a GPU");
  }
  void synchronize() override {}

 private:
  std::string name_;
  DeviceProperties properties_;
  CompileOnlyAllocator allocator_;
  std::unique_ptr<Compiler> compiler_;
};

ProbeResult probe() {
  ProbeResult result;
  const DriverApi& api = driver();
  if (!api.error.empty()) {
    result.reason = api.error;
    return result;
  }
  if (!nvrtc().error.empty()) {
    result.reason = nvrtc().error;
    return result;
  }
  if (api.version / 1000 < nvrtc().major) {
    // Its cubins and PTX need a driver of NVRTC's major version: every kernel load would fail.
    result.reason = "the NVIDIA driver supports CUDA " + version_text(api.version) + ", and " +
                    nvrtc().library + " (NVRTC " + std::to_string(nvrtc().major) + "." +
                    std::to_string(nvrtc().minor) + ") makes code that needs a driver for CUDA " +
                    std::to_string(nvrtc().major) +
                    ": install a newer driver, or name an NVRTC for CUDA " +
                    std::to_string(api.version / 1000) + " in KILN_NVRTC";
    return result;
  }
  int count = 0;
  KILN_CU_CHECK(api.cuDeviceGetCount(&count));
  if (count == 0) {
    result.reason = "the NVIDIA driver found no GPU";
    return result;
  }
  result.device_count = count;
  result.is_gpu = true;
  for (int index = 0; index < count; ++index) {
    CUdevice device = 0;
    KILN_CU_CHECK(api.cuDeviceGet(&device, index));
    const int major = KILN_CU_ATTRIBUTE(device, COMPUTE_CAPABILITY_MAJOR);
    const int minor = KILN_CU_ATTRIBUTE(device, COMPUTE_CAPABILITY_MINOR);
    result.reason +=
        (index ? "; " : "") + std::string(index ? "CUDA:" + std::to_string(index) : "CUDA") + ": " +
        device_name_of(device) + " (sm_" + std::to_string(major * 10 + minor) + ", PCI " +
        pci_bus_id_of(device) + ", driver " + version_text(api.version) + ")";
  }
  return result;
}

std::unique_ptr<Device> create(int index) {
  const DriverApi& api = loaded_driver();
  int count = 0;
  KILN_CU_CHECK(api.cuDeviceGetCount(&count));
  if (index < 0 || index >= count) {
    throw DeviceError("[cuda] no CUDA device " + std::to_string(index) + " (found " +
                      std::to_string(count) + ")");
  }
  CUdevice device = 0;
  KILN_CU_CHECK(api.cuDeviceGet(&device, index));
  return std::make_unique<CudaDevice>(index, device);
}

// An empty target means the first GPU's architecture, else an H100's (sm_90).
std::unique_ptr<Device> create_compile_only(const std::string& target) {
  if (!target.empty()) return std::make_unique<CompileOnlyDevice>(parse_architecture(target));
  int architecture = 90;
  int count = 0;
  CUdevice device = 0;
  if (driver().error.empty() && driver().cuDeviceGetCount(&count) == CUDA_SUCCESS && count > 0 &&
      driver().cuDeviceGet(&device, 0) == CUDA_SUCCESS) {
    architecture = 10 * KILN_CU_ATTRIBUTE(device, COMPUTE_CAPABILITY_MAJOR) +
                   KILN_CU_ATTRIBUTE(device, COMPUTE_CAPABILITY_MINOR);
  }
  return std::make_unique<CompileOnlyDevice>(architecture);
}

const PluginEntry kEntry = {kPluginAbiVersion, plugin_layout_fingerprint(), "CUDA", &probe,
                            &create,           &create_compile_only};

}  // namespace
}  // namespace kiln::cuda

extern "C" __attribute__((visibility("default"))) const kiln::PluginEntry* kiln_plugin_entry() {
  return &kiln::cuda::kEntry;
}

// The Vulkan device: kernels rendered as GLSL compute shaders, compiled to SPIR-V by glslang in
// process, cached, and run as compute pipelines on one queue of a Vulkan 1.2 device. Linked
// against the Vulkan loader (libvulkan.so.1): where it is missing the plugin does not load and
// the registry says why.

#include <kiln/error.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "codegen/dialect.h"
#include "devices/vulkan/glslang_compiler.h"
#include "devices/vulkan/vk_check.h"
#include "devices/vulkan/vk_instance.h"
#include "devices/vulkan/vk_memory.h"
#include "devices/vulkan/vk_program.h"
#include "devices/vulkan/vk_queue.h"
#include "runtime/plugin.h"

namespace kiln::vulkan {
namespace {

// The logical device's deleter: waits for it to go idle, then destroys it.
struct IdleThenDestroy {
  void operator()(VkDevice device) const {
    vkDeviceWaitIdle(device);
    vkDestroyDevice(device, nullptr);
  }
};
using LogicalDevice = UniqueHandle<VkDevice, IdleThenDestroy>;

LogicalDevice create_logical_device(const PhysicalDeviceInfo& info) {
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queue_info{};
  queue_info.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  queue_info.queueFamilyIndex = info.compute_family;
  queue_info.queueCount = 1;
  queue_info.pQueuePriorities = &priority;

  // Every feature kiln's shaders may use, where the device has it (the dtypes follow).
  VkPhysicalDeviceVulkan12Features features12{};
  features12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  features12.shaderInt8 = info.shader_int8;
  features12.storageBuffer8BitAccess = info.storage_8bit;
  VkPhysicalDeviceVulkan11Features features11{};
  features11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
  features11.pNext = &features12;
  features11.storageBuffer16BitAccess = info.storage_16bit;
  VkPhysicalDeviceFeatures2 features{};
  features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  features.pNext = &features11;
  features.features.shaderInt64 = info.shader_int64;
  features.features.shaderFloat64 = info.shader_float64;
  features.features.shaderInt16 = info.shader_int16;

  VkDeviceCreateInfo create_info{};
  create_info.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  create_info.pNext = &features;
  create_info.queueCreateInfoCount = 1;
  create_info.pQueueCreateInfos = &queue_info;
  // Host memory used in place (Tensor::from_blob), where the device can import it.
  const char* const host_memory = VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME;
  if (info.host_pointer_alignment > 0) {
    create_info.enabledExtensionCount = 1;
    create_info.ppEnabledExtensionNames = &host_memory;
  }
  VkDevice device = VK_NULL_HANDLE;
  KILN_VK_CHECK(vkCreateDevice(info.handle, &create_info, nullptr, &device));
  return LogicalDevice(device);
}

// The dtypes the device's features allow: bytes need 8-bit storage and int8 arithmetic (bool is
// stored as a byte), 16-bit types 16-bit storage and int16 (float16 and bfloat16 are stored as
// their bits and computed in float), 64-bit types shaderInt64 or shaderFloat64.
std::set<ScalarType> dtypes_of(const PhysicalDeviceInfo& info) {
  std::set<ScalarType> dtypes = {ScalarType::Int32, ScalarType::UInt32, ScalarType::Float32};
  if (info.storage_8bit && info.shader_int8)
    dtypes.insert({ScalarType::Bool, ScalarType::Int8, ScalarType::UInt8});
  if (info.storage_16bit && info.shader_int16)
    dtypes.insert(
        {ScalarType::Int16, ScalarType::UInt16, ScalarType::Float16, ScalarType::BFloat16});
  if (info.shader_int64) dtypes.insert({ScalarType::Int64, ScalarType::UInt64});
  // float64 helpers (fmod) work on its bits as uint64.
  if (info.shader_float64 && info.shader_int64) dtypes.insert(ScalarType::Float64);
  return dtypes;
}

std::string version_text(uint32_t version) {
  return std::to_string(VK_API_VERSION_MAJOR(version)) + "." +
         std::to_string(VK_API_VERSION_MINOR(version)) + "." +
         std::to_string(VK_API_VERSION_PATCH(version));
}

class VulkanDevice : public Device {
 public:
  VulkanDevice(int index, std::shared_ptr<Instance> instance, PhysicalDeviceInfo info)
      : instance_(std::move(instance)), info_(std::move(info)) {
    name_ = index == 0 ? "VULKAN" : "VULKAN:" + std::to_string(index);
    logical_ = create_logical_device(info_);
    const VkDevice device = logical_.get();
    const VkPhysicalDeviceLimits& limits = info_.properties.limits;

    VkPhysicalDeviceFloatControlsProperties float_properties{};
    float_properties.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES;
    VkPhysicalDeviceMaintenance3Properties maintenance{};
    maintenance.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES;
    maintenance.pNext = &float_properties;
    VkPhysicalDeviceSubgroupProperties subgroup{};
    subgroup.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
    subgroup.pNext = &maintenance;
    VkPhysicalDeviceProperties2 properties2{};
    properties2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
    properties2.pNext = &subgroup;
    vkGetPhysicalDeviceProperties2(info_.handle, &properties2);

    // Each buffer is bound whole, so one buffer may hold what one binding covers.
    uint64_t heap_bytes = 0;
    for (uint32_t heap = 0; heap < info_.memory.memoryHeapCount; ++heap) {
      if (info_.memory.memoryHeaps[heap].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
        heap_bytes = std::max<uint64_t>(heap_bytes, info_.memory.memoryHeaps[heap].size);
    }
    const uint64_t largest_buffer =
        std::min<uint64_t>({maintenance.maxMemoryAllocationSize, limits.maxStorageBufferRange,
                            heap_bytes ? heap_bytes : UINT64_MAX});
    properties_.max_allocation_limit =
        largest_buffer == limits.maxStorageBufferRange
            ? "maxStorageBufferRange: a kernel binds each buffer whole"
        : largest_buffer == maintenance.maxMemoryAllocationSize ? "maxMemoryAllocationSize"
                                                                : "the device-local heap";

    // kiln's kernels bind at most 128 buffers (the scheduler's limit); a driver may offer billions,
    // and each submission's descriptor pool is sized for this.
    const uint32_t max_bindings = std::min(
        {limits.maxPerStageDescriptorStorageBuffers, limits.maxDescriptorSetStorageBuffers, 128u});
    queue_ = std::make_unique<CommandQueue>(device, info_.compute_family, max_bindings,
                                            info_.timestamp_bits, limits.timestampPeriod);
    allocator_ = std::make_unique<VkAllocator>(device, info_, *queue_, largest_buffer);

    VkPipelineCacheCreateInfo cache_info{};
    cache_info.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
    VkPipelineCache cache = VK_NULL_HANDLE;
    KILN_VK_CHECK(vkCreatePipelineCache(device, &cache_info, nullptr, &cache));
    pipeline_cache_ = OwnedPipelineCache(cache, device);

    const std::string device_name = info_.properties.deviceName;
    properties_.kind = info_.is_gpu() ? DeviceKind::GPU : DeviceKind::CPU;
    properties_.driver = info_.driver_name + " " + info_.driver_info + " (Vulkan " +
                         version_text(info_.properties.apiVersion) + ")";
    properties_.description = device_name + " (" + info_.type_name() + ")";
    properties_.max_workgroup_size = limits.maxComputeWorkGroupInvocations;
    for (int dim = 0; dim < 3; ++dim) {
      properties_.max_workgroup_dims[dim] = limits.maxComputeWorkGroupSize[dim];
      properties_.max_workgroups[dim] = limits.maxComputeWorkGroupCount[dim];
      dispatch_limits_.max_groups[dim] = limits.maxComputeWorkGroupCount[dim];
      dispatch_limits_.max_local[dim] = limits.maxComputeWorkGroupSize[dim];
    }
    dispatch_limits_.max_invocations = limits.maxComputeWorkGroupInvocations;
    properties_.local_memory_bytes = limits.maxComputeSharedMemorySize;
    properties_.warp_width = info_.is_gpu() ? static_cast<int>(subgroup.subgroupSize) : 1;
    // Core Vulkan has no count of compute units: NVIDIA's and AMD's extensions tell them, a CPU
    // driver (lavapipe) runs on the host's cores, and another GPU is taken to have 64.
    properties_.compute_units =
        info_.compute_units > 0 ? info_.compute_units
        : info_.is_gpu()        ? 64
                         : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    properties_.dtypes = dtypes_of(info_);
    properties_.memory_bytes = heap_bytes;
    properties_.max_allocation_bytes = largest_buffer;
    properties_.max_kernel_buffers = max_bindings;
    // llvmpipe (lavapipe) ends every loop of a shader invocation once 65535 iterations have run
    // in all (its guard against endless loops; gallivm's LP_MAX_TGSI_LOOP_ITERATIONS), silently.
    if (info_.driver_id == VK_DRIVER_ID_MESA_LLVMPIPE) properties_.max_loop_iterations = 65535;
    properties_.hardware_id = info_.hardware_id;

    // kiln's float semantics (NaN, infinities, -0 and subnormals kept) where the device can; the
    // compiler's identity names everything besides the source that decides the driver's binary.
    FloatControls float_controls;
    float_controls.preserve_inf_nan_32 = float_properties.shaderSignedZeroInfNanPreserveFloat32;
    float_controls.preserve_inf_nan_64 = float_properties.shaderSignedZeroInfNanPreserveFloat64;
    // Denormal modes: 32-bit floats take their own unless the device ties every width together
    // (INDEPENDENCE_NONE); 64-bit floats only where every width is independent (under
    // INDEPENDENCE_32_BIT_ONLY they would have to share float16's mode), else the device's
    // default stands. NVIDIA's driver (580) offers no DenormPreserve for 32-bit floats and
    // flushes them: kiln conformance finds that out and compares accordingly.
    const VkShaderFloatControlsIndependence independence =
        float_properties.denormBehaviorIndependence;
    if (independence != VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_NONE)
      float_controls.preserve_denorm_32 = float_properties.shaderDenormPreserveFloat32;
    if (independence == VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_ALL)
      float_controls.preserve_denorm_64 = float_properties.shaderDenormPreserveFloat64;
    compiler_ = make_glslang_compiler(
        "device: " + device_name + " | driver: " + properties_.driver + " " +
            std::to_string(info_.properties.driverVersion) +
            " | pipeline cache: " + uuid_text(info_.properties.pipelineCacheUUID),
        float_controls, limits.maxComputeWorkGroupSize);
  }

  ~VulkanDevice() override {
    try {
      if (queue_) queue_->wait_idle();
    } catch (const Error&) {
    }
  }

  const std::string& name() const override { return name_; }
  const DeviceProperties& properties() const override { return properties_; }
  const Dialect& dialect() const override { return glsl_dialect(); }
  Allocator& allocator() override { return *allocator_; }
  Compiler& compiler() override { return *compiler_; }
  NativeDevice native_handles() override {
    NativeDevice handles;
    handles.instance = instance_->get();
    handles.physical_device = info_.handle;
    handles.device = logical_.get();
    handles.queue = queue_->handle();
    handles.queue_family = info_.compute_family;
    return handles;
  }

  std::unique_ptr<Program> load_program(const std::vector<uint8_t>& binary,
                                        const std::string& kernel_name) override {
    return std::make_unique<VkKernelProgram>(logical_.get(), *queue_, pipeline_cache_.get(), binary,
                                             kernel_name, dispatch_limits_, *allocator_);
  }

  void synchronize() override {
    queue_->wait_idle();
    allocator_->collect();
  }
  void flush() override { queue_->flush(); }

  // The device's copy bandwidth: the faster of its own copy (vkCmdCopyBuffer between two of
  // kiln's buffers) and a shader that copies 16 bytes per invocation, each timed with the
  // queue's timestamps, best of five. NVIDIA's driver copies slower than a shader does on a
  // compute queue (an H100: 844 GB/s), which would put kiln's own kernels above their limit.
  // Vulkan has no vendor GEMM to set matmul beside.
  DeviceLimits measure_limits(size_t copy_bytes, int) override {
    DeviceLimits limits;
    limits.notes = "no vendor GEMM through Vulkan: matmul has no limit beside it";
    const size_t bytes = std::min<size_t>(copy_bytes, properties_.max_allocation_bytes) / 16 * 16;
    if (bytes == 0) return limits;
    const OwnedDeviceMemory source_block = allocate_owned(*allocator_, bytes);
    const OwnedDeviceMemory destination_block = allocate_owned(*allocator_, bytes);
    const DeviceMemory source = source_block.get(), destination = destination_block.get();
    const VkBlock& from = block_of(source);
    const VkBlock& to = block_of(destination);
    const VkBufferCopy region{from.offset, to.offset, bytes};
    double best = 0;
    auto keep_best = [&best](int run, double seconds) {
      if (run > 0 && seconds > 0 && (best == 0 || seconds < best)) best = seconds;  // warm
    };
    for (int run = 0; run < 6; ++run) {
      const uint64_t serial = queue_->record(
          [&](VkCommandBuffer commands, VkDescriptorPool) {
            vkCmdCopyBuffer(commands, from.buffer, to.buffer, 1, &region);
          },
          /*timed=*/true);
      keep_best(run, queue_->wait_timed(serial));
    }
    const std::unique_ptr<Program> shader = copy_shader(bytes / 16);
    LaunchRequest request;
    request.buffers = {destination, source};
    const int64_t groups = std::clamp<int64_t>(static_cast<int64_t>(bytes / 16 / kCopyGroup), 1,
                                               dispatch_limits_.max_groups[0]);
    request.global = {groups * kCopyGroup, 1, 1};
    request.local = {kCopyGroup, 1, 1};
    request.wait = true;
    // The shader's copy is checked where its loop ends: a limit from a copy that stopped short
    // would be no limit.
    const size_t tail = std::min<size_t>(bytes, size_t{1} << 20);
    std::vector<uint8_t> pattern(tail), copied(tail);
    for (size_t at = 0; at < tail; ++at) pattern[at] = static_cast<uint8_t>(at * 131 + 7);
    const size_t alignment = std::max<size_t>(allocator_->subregion_alignment(), 1);
    const size_t tail_offset = (bytes - tail) / alignment * alignment;
    DeviceMemory source_tail = allocator_->subregion(source, tail_offset, tail);
    allocator_->copy_in(source_tail, pattern.data(), tail);
    allocator_->release_subregion(source_tail);
    for (int run = 0; run < 6; ++run) keep_best(run, shader->launch(request));
    DeviceMemory destination_tail = allocator_->subregion(destination, tail_offset, tail);
    allocator_->copy_out(copied.data(), destination_tail, tail);
    allocator_->release_subregion(destination_tail);
    if (copied != pattern)
      throw InternalError("[vulkan] the copy shader that measures the copy limit left the last " +
                          std::to_string(tail) + " bytes of " + std::to_string(bytes) +
                          " uncopied");
    if (best > 0) limits.copy_bytes_per_second = 2.0 * static_cast<double>(bytes) / best;
    return limits;
  }

 private:
  static constexpr int64_t kCopyGroup = 256;

  // A shader that copies `vectors` 16-byte values from binding 1 to binding 0, in a loop over as
  // many workgroups as a launch has (a launch may have fewer than the copy needs).
  std::unique_ptr<Program> copy_shader(size_t vectors) {
    const std::string name = "kiln_copy_limit";
    const std::string source =
        "#version 450\n"
        "layout(local_size_x = " +
        std::to_string(kCopyGroup) +
        ", local_size_x_id = 0, local_size_y = 1, local_size_y_id = 1, local_size_z = 1, "
        "local_size_z_id = 2) in;\n"
        "layout(std430, binding = 0) restrict writeonly buffer Destination { uvec4 destination[]; "
        "};\n"
        "layout(std430, binding = 1) restrict readonly buffer Source { uvec4 source[]; };\n"
        "void main() {\n"
        "  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;\n"
        "  for (uint i = gl_GlobalInvocationID.x; i < " +
        std::to_string(vectors) +
        "u; i += stride) destination[i] = source[i];\n"
        "}\n";
    return load_program(compiler_->compile(source, name), name);
  }

  // Declared first: destroyed last, after everything made from them.
  std::shared_ptr<Instance> instance_;
  PhysicalDeviceInfo info_;
  LogicalDevice logical_;
  std::unique_ptr<CommandQueue> queue_;
  OwnedPipelineCache pipeline_cache_;
  std::unique_ptr<VkAllocator> allocator_;
  std::unique_ptr<Compiler> compiler_;
  std::string name_;
  DeviceProperties properties_;
  DispatchLimits dispatch_limits_{};
};

ProbeResult probe() {
  ProbeResult result;
  std::shared_ptr<Instance> instance;
  try {
    instance = Instance::create();
  } catch (const Error& error) {
    result.reason = error.what();
    return result;
  }
  std::vector<std::string> skipped;
  const std::vector<PhysicalDeviceInfo> devices = instance->devices(&skipped);
  std::string skipped_text;
  for (const std::string& line : skipped) skipped_text += "; skipped " + line;
  if (devices.empty()) {
    result.reason =
        "no Vulkan 1.2 device with a compute queue (install a Vulkan driver, e.g. Debian's "
        "mesa-vulkan-drivers for lavapipe; `vulkaninfo --summary` lists what the loader sees)" +
        skipped_text;
    return result;
  }
  result.device_count = static_cast<int>(devices.size());
  for (size_t index = 0; index < devices.size(); ++index) {
    result.reason += (index ? "; " : "") +
                     std::string(index ? "VULKAN:" + std::to_string(index) : "VULKAN") + ": " +
                     devices[index].properties.deviceName + " (" + devices[index].type_name() +
                     ", " + devices[index].driver_name + ")";
  }
  result.reason += skipped_text;
  // The first device decides for all (GPUs sort first): lavapipe never becomes the default.
  result.is_gpu = devices[0].is_gpu();
  return result;
}

std::unique_ptr<Device> create(int index) {
  std::shared_ptr<Instance> instance = Instance::create();
  std::vector<PhysicalDeviceInfo> devices = instance->devices();
  if (index < 0 || static_cast<size_t>(index) >= devices.size()) {
    throw DeviceError("[vulkan] no Vulkan device " + std::to_string(index) + " (found " +
                      std::to_string(devices.size()) + ")");
  }
  return std::make_unique<VulkanDevice>(index, std::move(instance),
                                        std::move(devices[static_cast<size_t>(index)]));
}

const PluginEntry kEntry = {
    kPluginAbiVersion, plugin_layout_fingerprint(), "VULKAN", &probe, &create, nullptr};

}  // namespace
}  // namespace kiln::vulkan

extern "C" __attribute__((visibility("default"))) const kiln::PluginEntry* kiln_plugin_entry() {
  return &kiln::vulkan::kEntry;
}

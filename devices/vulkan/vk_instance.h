#pragma once
// The Vulkan instance and the physical devices kiln can use: those with a compute queue and
// Vulkan 1.2, GPUs first, then in the loader's order (VULKAN is the first, VULKAN:1 the second).

#include <vulkan/vulkan.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "devices/vulkan/vk_check.h"

namespace kiln::vulkan {

// What kiln reads of one physical device.
struct PhysicalDeviceInfo {
  VkPhysicalDevice handle = VK_NULL_HANDLE;
  VkPhysicalDeviceProperties properties{};
  VkPhysicalDeviceMemoryProperties memory{};
  uint32_t compute_family = 0;  // the queue family kiln submits to
  uint32_t timestamp_bits = 0;  // 0: the queue cannot time kernels
  // Features kiln enables where present; they decide the dtypes.
  bool shader_int64 = false, shader_float64 = false, shader_int16 = false, shader_int8 = false;
  bool storage_8bit = false, storage_16bit = false;
  // Host memory can be imported (VK_EXT_external_memory_host) at multiples of this many bytes
  // (minImportedHostPointerAlignment); 0 where the device cannot import it.
  VkDeviceSize host_pointer_alignment = 0;
  VkDriverId driver_id{};
  std::string driver_name, driver_info;  // "llvmpipe", "Mesa 22.3.6 (LLVM 15.0.6)"
  // Streaming multiprocessors or compute units, where an extension tells them
  // (VK_NV_shader_sm_builtins, VK_AMD_shader_core_properties); 0 where none does.
  int compute_units = 0;
  std::string uuid;         // deviceUUID, as 8-4-4-4-12 hex digits
  std::string hardware_id;  // pci_hardware_id() where VK_EXT_pci_bus_info is offered, else the UUID

  bool is_gpu() const;
  std::string type_name() const;  // "discrete GPU", "CPU", ...
};

// Owns the VkInstance; every device object made from it must go first.
class Instance {
 public:
  // Throws DeviceError when the loader finds no driver or offers no Vulkan 1.2.
  static std::shared_ptr<Instance> create();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  VkInstance get() const { return instance_.get(); }
  // Usable devices in kiln's order; `skipped` (optional) gets one line per device left out, why.
  std::vector<PhysicalDeviceInfo> devices(std::vector<std::string>* skipped = nullptr) const;

  // For create() only (Key is private): owns `instance`.
  struct Key {
   private:
    Key() = default;
    friend class Instance;
  };
  Instance(Key, OwnedInstance instance) : instance_(std::move(instance)) {}

 private:
  OwnedInstance instance_;
};

}  // namespace kiln::vulkan

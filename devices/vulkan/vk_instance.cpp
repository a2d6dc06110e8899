#include "devices/vulkan/vk_instance.h"

#include <kiln/error.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>

#include "devices/vulkan/vk_check.h"
#include "runtime/device.h"

namespace kiln::vulkan {
namespace {

// The names of the device extensions the device offers.
std::set<std::string> device_extensions(VkPhysicalDevice device) {
  uint32_t count = 0;
  KILN_VK_CHECK(vkEnumerateDeviceExtensionProperties(device, nullptr, &count, nullptr));
  std::vector<VkExtensionProperties> extensions(count);
  KILN_VK_CHECK(vkEnumerateDeviceExtensionProperties(device, nullptr, &count, extensions.data()));
  std::set<std::string> names;
  for (const VkExtensionProperties& extension : extensions) names.insert(extension.extensionName);
  return names;
}

// Fills `info` from the device; false (with `why`) when kiln cannot use it.
bool read_device(VkPhysicalDevice device, PhysicalDeviceInfo& info, std::string& why) {
  info.handle = device;
  vkGetPhysicalDeviceProperties(device, &info.properties);
  vkGetPhysicalDeviceMemoryProperties(device, &info.memory);
  if (info.properties.apiVersion < VK_API_VERSION_1_2) {
    why = std::string(info.properties.deviceName) + ": Vulkan " +
          std::to_string(VK_API_VERSION_MAJOR(info.properties.apiVersion)) + "." +
          std::to_string(VK_API_VERSION_MINOR(info.properties.apiVersion)) + " (kiln needs 1.2)";
    return false;
  }
  uint32_t family_count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(device, &family_count, nullptr);
  std::vector<VkQueueFamilyProperties> families(family_count);
  vkGetPhysicalDeviceQueueFamilyProperties(device, &family_count, families.data());
  bool found = false;
  // A compute-only family where there is one (it runs beside graphics work), else any with
  // compute.
  for (int pass = 0; pass < 2 && !found; ++pass) {
    for (uint32_t family = 0; family < family_count; ++family) {
      const VkQueueFlags flags = families[family].queueFlags;
      if (!(flags & VK_QUEUE_COMPUTE_BIT)) continue;
      if (pass == 0 && (flags & VK_QUEUE_GRAPHICS_BIT)) continue;
      info.compute_family = family;
      info.timestamp_bits = families[family].timestampValidBits;
      found = true;
      break;
    }
  }
  if (!found) {
    why = std::string(info.properties.deviceName) + ": no queue family with compute";
    return false;
  }

  VkPhysicalDeviceVulkan12Features features12{};
  features12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  VkPhysicalDeviceVulkan11Features features11{};
  features11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
  features11.pNext = &features12;
  VkPhysicalDeviceFeatures2 features{};
  features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  features.pNext = &features11;
  vkGetPhysicalDeviceFeatures2(device, &features);
  info.shader_int64 = features.features.shaderInt64;
  info.shader_float64 = features.features.shaderFloat64;
  info.shader_int16 = features.features.shaderInt16;
  info.shader_int8 = features12.shaderInt8;
  info.storage_8bit = features12.storageBuffer8BitAccess;
  info.storage_16bit = features11.storageBuffer16BitAccess;

  const std::set<std::string> extensions = device_extensions(device);
  const bool has_pci_bus_info = extensions.count(VK_EXT_PCI_BUS_INFO_EXTENSION_NAME) > 0;
  VkPhysicalDevicePCIBusInfoPropertiesEXT pci{};
  pci.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PCI_BUS_INFO_PROPERTIES_EXT;
  VkPhysicalDeviceShaderSMBuiltinsPropertiesNV nvidia_cores{};
  nvidia_cores.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV;
  VkPhysicalDeviceShaderCorePropertiesAMD amd_cores{};
  amd_cores.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD;
  // Only structures of extensions the device offers may be chained.
  void* chain = nullptr;
  if (has_pci_bus_info) {
    pci.pNext = chain;
    chain = &pci;
  }
  const bool has_nvidia_cores = extensions.count(VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME) > 0;
  if (has_nvidia_cores) {
    nvidia_cores.pNext = chain;
    chain = &nvidia_cores;
  }
  const bool has_amd_cores = extensions.count(VK_AMD_SHADER_CORE_PROPERTIES_EXTENSION_NAME) > 0;
  if (has_amd_cores) {
    amd_cores.pNext = chain;
    chain = &amd_cores;
  }
  VkPhysicalDeviceExternalMemoryHostPropertiesEXT host_memory{};
  host_memory.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT;
  const bool has_host_memory = extensions.count(VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME) > 0;
  if (has_host_memory) {
    host_memory.pNext = chain;
    chain = &host_memory;
  }
  VkPhysicalDeviceDriverProperties driver{};
  driver.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES;
  driver.pNext = chain;
  VkPhysicalDeviceIDProperties ids{};
  ids.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES;
  ids.pNext = &driver;
  VkPhysicalDeviceProperties2 properties{};
  properties.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  properties.pNext = &ids;
  vkGetPhysicalDeviceProperties2(device, &properties);
  info.driver_id = driver.driverID;
  info.driver_name = driver.driverName;
  info.driver_info = driver.driverInfo;
  info.uuid = uuid_text(ids.deviceUUID);
  if (has_host_memory) info.host_pointer_alignment = host_memory.minImportedHostPointerAlignment;
  if (has_nvidia_cores) info.compute_units = static_cast<int>(nvidia_cores.shaderSMCount);
  if (has_amd_cores)
    info.compute_units =
        static_cast<int>(amd_cores.shaderEngineCount * amd_cores.shaderArraysPerEngineCount *
                         amd_cores.computeUnitsPerShaderArray);
  info.hardware_id =
      has_pci_bus_info ? pci_hardware_id(pci.pciDomain, pci.pciBus, pci.pciDevice, pci.pciFunction)
                       : "UUID " + info.uuid;
  return true;
}

}  // namespace

bool PhysicalDeviceInfo::is_gpu() const {
  const VkPhysicalDeviceType type = properties.deviceType;
  return type == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU ||
         type == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ||
         type == VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU;
}

std::string PhysicalDeviceInfo::type_name() const {
  switch (properties.deviceType) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return "CPU";
    default:
      return "other";
  }
}

std::shared_ptr<Instance> Instance::create() {
  uint32_t loader_version = VK_API_VERSION_1_0;
  KILN_VK_CHECK(vkEnumerateInstanceVersion(&loader_version));
  if (loader_version < VK_API_VERSION_1_2) {
    throw DeviceError("[vulkan] the Vulkan loader offers Vulkan " +
                      std::to_string(VK_API_VERSION_MAJOR(loader_version)) + "." +
                      std::to_string(VK_API_VERSION_MINOR(loader_version)) +
                      "; kiln needs 1.2 (update libvulkan1)");
  }
  VkApplicationInfo application{};
  application.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  application.pApplicationName = "kiln";
  application.pEngineName = "kiln";
  application.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo create_info{};
  create_info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  create_info.pApplicationInfo = &application;
  VkInstance instance = VK_NULL_HANDLE;
  const VkResult result = vkCreateInstance(&create_info, nullptr, &instance);
  if (result == VK_ERROR_INCOMPATIBLE_DRIVER) {
    throw DeviceError(vk_failure("vkCreateInstance", result) +
                      ": no Vulkan driver is installed (on Debian, mesa-vulkan-drivers gives "
                      "lavapipe; `vulkaninfo --summary` lists what the loader sees)");
  }
  KILN_VK_CHECK(result);
  OwnedInstance owned(instance);
  return std::make_shared<Instance>(Key{}, std::move(owned));
}

std::vector<PhysicalDeviceInfo> Instance::devices(std::vector<std::string>* skipped) const {
  uint32_t count = 0;
  KILN_VK_CHECK(vkEnumeratePhysicalDevices(instance_.get(), &count, nullptr));
  std::vector<VkPhysicalDevice> handles(count);
  KILN_VK_CHECK(vkEnumeratePhysicalDevices(instance_.get(), &count, handles.data()));
  std::vector<PhysicalDeviceInfo> usable;
  for (VkPhysicalDevice handle : handles) {
    PhysicalDeviceInfo info;
    std::string why;
    if (read_device(handle, info, why)) {
      usable.push_back(std::move(info));
    } else if (skipped) {
      skipped->push_back(why);
    }
  }
  // GPUs first, so that VULKAN is the GPU on a machine that also has lavapipe installed.
  std::stable_sort(usable.begin(), usable.end(),
                   [](const PhysicalDeviceInfo& a, const PhysicalDeviceInfo& b) {
                     return a.is_gpu() && !b.is_gpu();
                   });
  return usable;
}

}  // namespace kiln::vulkan

#pragma once
// Checked Vulkan calls and owned Vulkan handles.
//
//   KILN_VK_CHECK(vkQueueSubmit(queue, 1, &submit, fence));   // throws on an error result
//   OwnedBuffer buffer(raw, device);                          // destroyed with its owner
//
// A failure throws DeviceError("[vulkan] vkQueueSubmit(queue, 1, &submit, fence) failed:
// VK_ERROR_DEVICE_LOST (-4)"), or OutOfMemoryError (a DeviceError) when the driver ran out of
// memory, so the caching allocator can release its blocks and retry.

#include <vulkan/vulkan.h>

#include <string>

#include "runtime/driver_handle.h"

namespace kiln::vulkan {

// "VK_ERROR_DEVICE_LOST"; "unknown VkResult" for codes the table lacks.
const char* vk_result_name(VkResult result);

// The message for a failed call: "[vulkan] <call_text> failed: NAME (code)".
std::string vk_failure(const char* call_text, VkResult result);

// Throws DeviceError (OutOfMemoryError for memory exhaustion) unless `result` is a success code.
void check_vk(VkResult result, const char* call_text);

// The deleter of a handle made from a VkDevice: `Destroy(device, handle, nullptr)`. The device
// must outlive the handle's owner.
template <typename Handle, void (*Destroy)(VkDevice, Handle, const VkAllocationCallbacks*)>
struct DestroyWithDevice {
  DestroyWithDevice() = default;
  // Implicit, so that an owner is made as OwnedFence(fence, device).
  DestroyWithDevice(VkDevice device) : device(device) {}  // NOLINT(google-explicit-constructor)
  void operator()(Handle handle) const { Destroy(device, handle, nullptr); }
  VkDevice device = VK_NULL_HANDLE;
};

// The instance, destroyed alone once every device made from it has gone.
struct DestroyInstance {
  void operator()(VkInstance instance) const { vkDestroyInstance(instance, nullptr); }
};
using OwnedInstance = UniqueHandle<VkInstance, DestroyInstance>;

// A move-only owner of one handle made from `device`, destroyed when the owner goes:
//   OwnedFence fence(raw_fence, device);
template <typename Handle, void (*Destroy)(VkDevice, Handle, const VkAllocationCallbacks*)>
using VkOwned = UniqueHandle<Handle, DestroyWithDevice<Handle, Destroy>>;

using OwnedBuffer = VkOwned<VkBuffer, vkDestroyBuffer>;
using OwnedMemory = VkOwned<VkDeviceMemory, vkFreeMemory>;
using OwnedShaderModule = VkOwned<VkShaderModule, vkDestroyShaderModule>;
using OwnedDescriptorSetLayout = VkOwned<VkDescriptorSetLayout, vkDestroyDescriptorSetLayout>;
using OwnedPipelineLayout = VkOwned<VkPipelineLayout, vkDestroyPipelineLayout>;
using OwnedPipeline = VkOwned<VkPipeline, vkDestroyPipeline>;
using OwnedPipelineCache = VkOwned<VkPipelineCache, vkDestroyPipelineCache>;
using OwnedDescriptorPool = VkOwned<VkDescriptorPool, vkDestroyDescriptorPool>;
using OwnedCommandPool = VkOwned<VkCommandPool, vkDestroyCommandPool>;
using OwnedFence = VkOwned<VkFence, vkDestroyFence>;
using OwnedQueryPool = VkOwned<VkQueryPool, vkDestroyQueryPool>;

}  // namespace kiln::vulkan

#define KILN_VK_CHECK(call) ::kiln::vulkan::check_vk((call), #call)

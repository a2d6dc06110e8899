#pragma once
// Checked Vulkan calls and owned Vulkan handles.
//
//   KILN_VK_CHECK(vkQueueSubmit(queue, 1, &submit, fence));   // throws on an error result
//   VkOwned<VkBuffer, vkDestroyBuffer> buffer(device, raw);   // destroyed with its owner
//
// A failure throws DeviceError("[vulkan] vkQueueSubmit(queue, 1, &submit, fence) failed:
// VK_ERROR_DEVICE_LOST (-4)"), or OutOfMemoryError (a DeviceError) when the driver ran out of
// memory, so the caching allocator can release its blocks and retry.

#include <vulkan/vulkan.h>

#include <string>
#include <utility>

namespace kiln::vulkan {

// "VK_ERROR_DEVICE_LOST"; "unknown VkResult" for codes the table lacks.
const char* vk_result_name(VkResult result);

// The message for a failed call: "[vulkan] <call_text> failed: NAME (code)".
std::string vk_failure(const char* call_text, VkResult result);

// Throws DeviceError (OutOfMemoryError for memory exhaustion) unless `result` is a success code.
void check_vk(VkResult result, const char* call_text);

// A move-only owner of one handle made from a VkDevice, destroyed with `Destroy` when the owner
// goes. The device must outlive it.
template <typename Handle, void (*Destroy)(VkDevice, Handle, const VkAllocationCallbacks*)>
class VkOwned {
 public:
  VkOwned() = default;
  VkOwned(VkDevice device, Handle handle) : device_(device), handle_(handle) {}
  ~VkOwned() { reset(); }
  VkOwned(VkOwned&& other) noexcept
      : device_(other.device_), handle_(std::exchange(other.handle_, VK_NULL_HANDLE)) {}
  VkOwned& operator=(VkOwned&& other) noexcept {
    if (this != &other) {
      reset();
      device_ = other.device_;
      handle_ = std::exchange(other.handle_, VK_NULL_HANDLE);
    }
    return *this;
  }
  VkOwned(const VkOwned&) = delete;
  VkOwned& operator=(const VkOwned&) = delete;

  Handle get() const { return handle_; }
  explicit operator bool() const { return handle_ != VK_NULL_HANDLE; }
  void reset() {
    if (handle_ != VK_NULL_HANDLE)
      Destroy(device_, std::exchange(handle_, VK_NULL_HANDLE), nullptr);
  }

 private:
  VkDevice device_ = VK_NULL_HANDLE;
  Handle handle_ = VK_NULL_HANDLE;
};

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

#pragma once
// Device memory for the Vulkan device: one VkBuffer with its own VkDeviceMemory per allocation
// (the caching allocator above reuses them), subregions as offsets into one, and copies either
// through a mapping (where device memory is host-visible, as on lavapipe and integrated GPUs) or
// through two host-visible staging buffers used in turn.

#include <vulkan/vulkan.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "devices/vulkan/vk_check.h"
#include "devices/vulkan/vk_instance.h"
#include "devices/vulkan/vk_queue.h"
#include "runtime/device.h"

namespace kiln::vulkan {

// What a DeviceMemory of this device points to: a whole allocation, or a subregion of one.
struct VkBlock {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize offset = 0;  // within `buffer`
  VkDeviceSize size = 0;
  uint8_t* mapped = nullptr;  // the host address of this block's first byte, where mapped
  VkBlock* base = nullptr;    // the allocation a subregion lies in; nullptr for an allocation
  // An application's buffer (Tensor::from_native), whose size kiln does not know: bound over
  // `size` bytes only, where kiln's own blocks are bound to the end of their buffer.
  bool foreign = false;
  // The last submission that may touch the allocation: raised by launches in several threads.
  std::atomic<uint64_t> last_use{0};
  // An allocation's own; the buffer is destroyed before the memory bound to it.
  OwnedMemory owned_memory;
  OwnedBuffer owned_buffer;

  VkBlock& allocation() { return base ? *base : *this; }
  // Notes that submission `serial` uses the block; a later serial noted first is kept.
  void used_by(uint64_t serial) {
    uint64_t seen = last_use.load();
    while (seen < serial && !last_use.compare_exchange_weak(seen, serial)) {
    }
  }
};

VkBlock& block_of(DeviceMemory memory);

class VkAllocator : public Allocator {
 public:
  // `largest_allocation`: the most one buffer may hold (kiln binds each buffer whole, so this
  // includes the device's maxStorageBufferRange).
  VkAllocator(VkDevice device, const PhysicalDeviceInfo& info, CommandQueue& queue,
              VkDeviceSize largest_allocation);
  ~VkAllocator() override;

  DeviceMemory alloc(size_t nbytes) override;
  void free(DeviceMemory memory, size_t nbytes) override;
  void copy_in(DeviceMemory destination, const void* host, size_t nbytes) override;
  void copy_out(void* host, DeviceMemory source, size_t nbytes) override;

  size_t subregion_alignment() const override { return static_cast<size_t>(offset_alignment_); }
  DeviceMemory subregion(DeviceMemory base, size_t offset, size_t nbytes) override;
  void release_subregion(DeviceMemory region) override;
  std::pair<void*, size_t> native_handle(DeviceMemory memory) override;
  // Host memory imported with VK_EXT_external_memory_host: the whole import granules (pages) the
  // bytes lie in, which the process has mapped, with the block starting at the bytes. Null where
  // the device cannot import; a DeviceError where the pointer is not at a storage buffer offset
  // the device binds.
  DeviceMemory wrap_host(void* host, size_t nbytes) override;
  // An application's VkBuffer made on kiln's VkDevice (kiln::native_device) with storage and
  // transfer usage, holding `nbytes` at `offset`; copies go through the staging buffers.
  DeviceMemory wrap_native(void* handle, size_t offset, size_t nbytes, size_t alignment) override;
  void release_wrapped(DeviceMemory memory) override { free(memory, 0); }

  // Whether buffers are host-visible and copied through a mapping ("mapped" for `kiln devices`).
  bool mapped() const { return mapped_; }
  // Frees the allocations given back while the queue still used them, where it has finished.
  void collect();

 private:
  std::unique_ptr<VkBlock> make_block(VkDeviceSize size, uint32_t memory_type, bool map,
                                      VkBufferUsageFlags usage);
  // The staging buffer to use next, once the queue is done with it.
  VkBlock& next_staging();

  VkDevice device_;
  CommandQueue& queue_;
  VkDeviceSize largest_allocation_;
  VkDeviceSize offset_alignment_;
  uint32_t device_type_ = 0;  // memory type index of kiln's buffers
  uint32_t staging_type_ = 0;
  bool mapped_ = false;
  VkPhysicalDeviceMemoryProperties memory_properties_{};
  VkDeviceSize host_pointer_alignment_ = 0;  // 0: host memory cannot be imported
  PFN_vkGetMemoryHostPointerPropertiesEXT host_pointer_properties_ = nullptr;
  std::vector<std::unique_ptr<VkBlock>> staging_;
  size_t next_staging_ = 0;
  std::mutex staging_mutex_;                       // one copy through the staging buffers at a time
  std::vector<std::unique_ptr<VkBlock>> retired_;  // freed while in use
  std::mutex mutex_;                               // retired_
};

}  // namespace kiln::vulkan

#include "devices/vulkan/vk_memory.h"

#include <kiln/error.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "runtime/environment.h"

namespace kiln::vulkan {
namespace {

constexpr VkDeviceSize kStagingBytes = 8 << 20;
constexpr VkBufferUsageFlags kStorageUsage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                             VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                             VK_BUFFER_USAGE_TRANSFER_DST_BIT;

// The first memory type allowed by `type_bits` that has every flag of `wanted`; -1 if none.
int find_memory_type(const VkPhysicalDeviceMemoryProperties& memory, uint32_t type_bits,
                     VkMemoryPropertyFlags wanted) {
  for (uint32_t type = 0; type < memory.memoryTypeCount; ++type) {
    if ((type_bits & (1u << type)) && (memory.memoryTypes[type].propertyFlags & wanted) == wanted)
      return static_cast<int>(type);
  }
  return -1;
}

constexpr VkBufferUsageFlags kStagingUsage =
    VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;

// A buffer of `size` bytes for `usage` (`next`: a structure chained to its create info), with no
// memory bound yet.
OwnedBuffer create_buffer(VkDevice device, VkDeviceSize size, VkBufferUsageFlags usage,
                          const void* next = nullptr) {
  VkBufferCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  info.pNext = next;
  info.size = size;
  info.usage = usage;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkBuffer raw = VK_NULL_HANDLE;
  KILN_VK_CHECK(vkCreateBuffer(device, &info, nullptr, &raw));
  return OwnedBuffer(raw, device);
}

// The memory types a buffer of `usage` may use on this device.
uint32_t memory_type_bits(VkDevice device, VkBufferUsageFlags usage) {
  const OwnedBuffer probe = create_buffer(device, 256, usage);
  VkMemoryRequirements requirements{};
  vkGetBufferMemoryRequirements(device, probe.get(), &requirements);
  return requirements.memoryTypeBits;
}

}  // namespace

VkBlock& block_of(DeviceMemory memory) {
  if (!memory) throw InternalError("[vulkan] a null buffer was passed to the device");
  return *static_cast<VkBlock*>(memory);
}

VkAllocator::VkAllocator(VkDevice device, const PhysicalDeviceInfo& info, CommandQueue& queue,
                         VkDeviceSize largest_allocation)
    : device_(device),
      queue_(queue),
      largest_allocation_(largest_allocation),
      offset_alignment_(
          std::max<VkDeviceSize>(4, info.properties.limits.minStorageBufferOffsetAlignment)),
      memory_properties_(info.memory) {
  const VkPhysicalDeviceMemoryProperties& memory = info.memory;
  if (info.host_pointer_alignment > 0) {
    // Imported for kiln's buffers' usage, and not only as a dedicated allocation.
    VkPhysicalDeviceExternalBufferInfo wanted{};
    wanted.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_BUFFER_INFO;
    wanted.usage = kStorageUsage;
    wanted.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
    VkExternalBufferProperties offered{};
    offered.sType = VK_STRUCTURE_TYPE_EXTERNAL_BUFFER_PROPERTIES;
    vkGetPhysicalDeviceExternalBufferProperties(info.handle, &wanted, &offered);
    const VkExternalMemoryFeatureFlags features =
        offered.externalMemoryProperties.externalMemoryFeatures;
    host_pointer_properties_ = reinterpret_cast<PFN_vkGetMemoryHostPointerPropertiesEXT>(
        vkGetDeviceProcAddr(device, "vkGetMemoryHostPointerPropertiesEXT"));
    if (host_pointer_properties_ && (features & VK_EXTERNAL_MEMORY_FEATURE_IMPORTABLE_BIT) &&
        !(features & VK_EXTERNAL_MEMORY_FEATURE_DEDICATED_ONLY_BIT))
      host_pointer_alignment_ = info.host_pointer_alignment;
  }
  const uint32_t type_bits = memory_type_bits(device, kStorageUsage);
  const int local = find_memory_type(memory, type_bits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  if (local < 0) {
    const int any = find_memory_type(memory, type_bits, 0);
    if (any < 0) throw DeviceError("[vulkan] no memory type can hold a storage buffer");
    device_type_ = static_cast<uint32_t>(any);
  } else {
    device_type_ = static_cast<uint32_t>(local);
  }
  // Mapped copies where device memory is host-visible and its heap is the device's largest, on a
  // CPU or an integrated GPU. Not on a discrete GPU: its host-visible window (all of its memory
  // with resizable BAR) is uncached, and reading it back from the host is slow.
  const VkMemoryPropertyFlags host =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  const int local_host =
      find_memory_type(memory, type_bits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | host);
  // KILN_VULKAN_STAGING=1 copies through the staging buffers anyway: a discrete GPU's path,
  // tested on lavapipe.
  const bool force_staging =
      switch_from_environment("KILN_VULKAN_STAGING", "mapped copies where the memory allows them",
                              "copies through staging buffers", /*unset=*/false);
  if (local_host >= 0 && !force_staging &&
      info.properties.deviceType != VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU) {
    const uint32_t heap = memory.memoryTypes[local_host].heapIndex;
    bool largest = true;
    for (uint32_t other = 0; other < memory.memoryHeapCount; ++other) {
      if ((memory.memoryHeaps[other].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) &&
          memory.memoryHeaps[other].size > memory.memoryHeaps[heap].size)
        largest = false;
    }
    if (largest) {
      mapped_ = true;
      device_type_ = static_cast<uint32_t>(local_host);
    }
  }
  // Host-cached memory reads back faster where there is such a type.
  const uint32_t staging_bits = memory_type_bits(device, kStagingUsage);
  int staging = find_memory_type(memory, staging_bits, host | VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
  if (staging < 0) staging = find_memory_type(memory, staging_bits, host);
  if (staging < 0) throw DeviceError("[vulkan] no host-visible memory type for staging copies");
  staging_type_ = static_cast<uint32_t>(staging);
}

VkAllocator::~VkAllocator() {
  // Blocks still queued go once the queue is idle; errors have no one to go to from here.
  try {
    queue_.wait_idle();
  } catch (const Error&) {
  }
}

std::unique_ptr<VkBlock> VkAllocator::make_block(VkDeviceSize size, uint32_t memory_type, bool map,
                                                 VkBufferUsageFlags usage) {
  auto block = std::make_unique<VkBlock>();
  block->owned_buffer = create_buffer(device_, size, usage);
  const VkBuffer buffer = block->owned_buffer.get();
  VkMemoryRequirements requirements{};
  vkGetBufferMemoryRequirements(device_, buffer, &requirements);
  VkMemoryAllocateInfo allocate{};
  allocate.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  allocate.allocationSize = requirements.size;
  allocate.memoryTypeIndex = memory_type;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  KILN_VK_CHECK(vkAllocateMemory(device_, &allocate, nullptr, &memory));
  block->owned_memory = OwnedMemory(memory, device_);
  KILN_VK_CHECK(vkBindBufferMemory(device_, buffer, memory, 0));
  if (map) {
    void* address = nullptr;
    KILN_VK_CHECK(vkMapMemory(device_, memory, 0, VK_WHOLE_SIZE, 0, &address));
    block->mapped = static_cast<uint8_t*>(address);
  }
  block->buffer = buffer;
  block->size = size;
  return block;
}

DeviceMemory VkAllocator::alloc(size_t nbytes) {
  if (nbytes > largest_allocation_) {
    throw OutOfMemoryError("[vulkan] cannot allocate " + std::to_string(nbytes) +
                           " bytes: a kernel binds each buffer whole, and the device binds at "
                           "most " +
                           std::to_string(largest_allocation_) +
                           " bytes of one (maxStorageBufferRange, maxMemoryAllocationSize)");
  }
  collect();
  // Vulkan has no empty buffers; a descriptor's range stays a multiple of 4 bytes.
  const VkDeviceSize size = std::max<VkDeviceSize>(4, (nbytes + 3) / 4 * 4);
  try {
    return make_block(size, device_type_, mapped_, kStorageUsage).release();
  } catch (const OutOfMemoryError&) {
    // Buffers given back while queued work still used them hold memory until it finishes.
    queue_.wait_idle();
    collect();
    return make_block(size, device_type_, mapped_, kStorageUsage).release();
  }
}

void VkAllocator::free(DeviceMemory memory, size_t) {
  std::unique_ptr<VkBlock> block(&block_of(memory));
  std::lock_guard<std::mutex> lock(mutex_);
  // Runs from destructors: a lost device keeps the block (it may still be in use) and says
  // nothing here; the next call that can report it does.
  bool done = false;
  try {
    done = queue_.finished(block->last_use);
  } catch (const Error&) {
  }
  if (!done) retired_.push_back(std::move(block));
}

void VkAllocator::collect() {
  std::lock_guard<std::mutex> lock(mutex_);
  retired_.erase(std::remove_if(retired_.begin(), retired_.end(),
                                [this](const std::unique_ptr<VkBlock>& block) {
                                  return queue_.finished(block->last_use);
                                }),
                 retired_.end());
}

VkBlock& VkAllocator::next_staging() {
  // Made on first use: with mapped copies only an application's buffer (from_native) needs them.
  while (staging_.size() < 2)
    staging_.push_back(make_block(kStagingBytes, staging_type_, /*map=*/true, kStagingUsage));
  VkBlock& staging = *staging_[next_staging_];
  next_staging_ = (next_staging_ + 1) % staging_.size();
  queue_.wait(staging.last_use);
  return staging;
}

void VkAllocator::copy_in(DeviceMemory destination, const void* host, size_t nbytes) {
  VkBlock& block = block_of(destination);
  VkBlock& allocation = block.allocation();
  if (nbytes > block.size)
    throw InternalError("[vulkan] copy_in of " + std::to_string(nbytes) +
                        " bytes into a block of " + std::to_string(block.size));
  if (block.mapped) {
    // Earlier kernels may still read or write this memory (a block reused by the cache).
    queue_.wait(allocation.last_use);
    if (nbytes) std::memcpy(block.mapped, host, nbytes);
    return;
  }
  const auto* bytes = static_cast<const uint8_t*>(host);
  std::lock_guard<std::mutex> lock(staging_mutex_);
  for (size_t done = 0; done < nbytes; done += kStagingBytes) {
    const VkDeviceSize chunk = std::min<VkDeviceSize>(kStagingBytes, nbytes - done);
    VkBlock& staging = next_staging();
    std::memcpy(staging.mapped, bytes + done, chunk);
    const VkBufferCopy region{0, block.offset + done, chunk};
    const uint64_t serial = queue_.record([&](VkCommandBuffer commands, VkDescriptorPool) {
      vkCmdCopyBuffer(commands, staging.buffer, block.buffer, 1, &region);
    });
    staging.used_by(serial);
    allocation.used_by(serial);
  }
  // An upload is wanted soon: the device starts on it now rather than at the next realize's end.
  queue_.flush();
}

void VkAllocator::copy_out(void* host, DeviceMemory source, size_t nbytes) {
  VkBlock& block = block_of(source);
  VkBlock& allocation = block.allocation();
  if (nbytes > block.size)
    throw InternalError("[vulkan] copy_out of " + std::to_string(nbytes) +
                        " bytes from a block of " + std::to_string(block.size));
  if (block.mapped) {
    queue_.wait(allocation.last_use);
    if (nbytes) std::memcpy(host, block.mapped, nbytes);
    return;
  }
  auto* bytes = static_cast<uint8_t*>(host);
  std::lock_guard<std::mutex> lock(staging_mutex_);
  for (size_t done = 0; done < nbytes; done += kStagingBytes) {
    const VkDeviceSize chunk = std::min<VkDeviceSize>(kStagingBytes, nbytes - done);
    VkBlock& staging = next_staging();
    const VkBufferCopy region{block.offset + done, 0, chunk};
    const uint64_t serial = queue_.record([&](VkCommandBuffer commands, VkDescriptorPool) {
      vkCmdCopyBuffer(commands, block.buffer, staging.buffer, 1, &region);
    });
    staging.used_by(serial);
    allocation.used_by(serial);
    queue_.wait(serial);
    std::memcpy(bytes + done, staging.mapped, chunk);
  }
}

DeviceMemory VkAllocator::wrap_host(void* host, size_t nbytes) {
  if (host_pointer_alignment_ == 0) return nullptr;
  const auto address = reinterpret_cast<uintptr_t>(host);
  const uintptr_t granule = host_pointer_alignment_;
  const uintptr_t start = address / granule * granule;
  const VkDeviceSize offset = address - start;
  if (offset % offset_alignment_ != 0) {
    throw DeviceError("[vulkan] host memory is bound at multiples of " +
                      std::to_string(offset_alignment_) +
                      " bytes (minStorageBufferOffsetAlignment): the pointer must be aligned so");
  }
  // Vulkan has no empty buffers, and the descriptor's range stays a multiple of 4 bytes; both
  // lie inside the granule the pointer is in.
  const VkDeviceSize block_size = std::max<VkDeviceSize>(4, (nbytes + 3) / 4 * 4);
  const VkDeviceSize size = (offset + block_size + granule - 1) / granule * granule;
  if (size - offset > largest_allocation_) {
    throw OutOfMemoryError("[vulkan] cannot use " + std::to_string(nbytes) +
                           " bytes of host memory: a kernel binds each buffer whole, and the "
                           "device binds at most " +
                           std::to_string(largest_allocation_) + " bytes of one");
  }
  void* const import_start = reinterpret_cast<void*>(start);
  VkMemoryHostPointerPropertiesEXT pointer{};
  pointer.sType = VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT;
  KILN_VK_CHECK(host_pointer_properties_(
      device_, VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT, import_start, &pointer));

  auto block = std::make_unique<VkBlock>();
  VkExternalMemoryBufferCreateInfo external{};
  external.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO;
  external.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
  block->owned_buffer = create_buffer(device_, size, kStorageUsage, &external);
  const VkBuffer buffer = block->owned_buffer.get();
  VkMemoryRequirements requirements{};
  vkGetBufferMemoryRequirements(device_, buffer, &requirements);
  const uint32_t allowed = requirements.memoryTypeBits & pointer.memoryTypeBits;
  // The application reads and writes the memory directly, and nothing flushes it: coherent.
  const VkMemoryPropertyFlags coherent = VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  int type = find_memory_type(memory_properties_, allowed & (1u << device_type_), coherent);
  if (type < 0) type = find_memory_type(memory_properties_, allowed, coherent);
  if (type < 0 || requirements.size > size) {
    throw DeviceError("[vulkan] no memory type of a storage buffer can import this host memory");
  }
  VkImportMemoryHostPointerInfoEXT import{};
  import.sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT;
  import.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
  import.pHostPointer = import_start;
  VkMemoryAllocateInfo allocate{};
  allocate.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  allocate.pNext = &import;
  allocate.allocationSize = size;
  allocate.memoryTypeIndex = static_cast<uint32_t>(type);
  VkDeviceMemory memory = VK_NULL_HANDLE;
  KILN_VK_CHECK(vkAllocateMemory(device_, &allocate, nullptr, &memory));
  block->owned_memory = OwnedMemory(memory, device_);
  KILN_VK_CHECK(vkBindBufferMemory(device_, buffer, memory, 0));
  block->buffer = buffer;
  block->offset = offset;
  block->size = block_size;
  // Copies through a mapping read and write the host memory itself.
  if (mapped_) block->mapped = static_cast<uint8_t*>(host);
  return block.release();
}

DeviceMemory VkAllocator::wrap_native(void* handle, size_t offset, size_t nbytes,
                                      size_t alignment) {
  if (offset % offset_alignment_ != 0 || offset % alignment != 0) {
    throw DeviceError("[vulkan] offset " + std::to_string(offset) +
                      " is not a multiple of the device's storage buffer offset alignment (" +
                      std::to_string(offset_alignment_) + " bytes)");
  }
  if (nbytes > largest_allocation_) {
    throw DeviceError("[vulkan] a kernel binds each buffer whole, and the device binds at most " +
                      std::to_string(largest_allocation_) + " bytes of one, not " +
                      std::to_string(nbytes));
  }
  auto block = std::make_unique<VkBlock>();
  block->buffer = reinterpret_cast<VkBuffer>(handle);
  block->offset = offset;
  block->size = nbytes;
  block->foreign = true;
  return block.release();  // not the allocator's: owns neither buffer nor memory, copies staged
}

DeviceMemory VkAllocator::subregion(DeviceMemory base, size_t offset, size_t nbytes) {
  VkBlock& parent = block_of(base);
  if (offset % offset_alignment_ != 0) {
    throw DeviceError("[vulkan] subregion: offset " + std::to_string(offset) +
                      " is not a multiple of the device's storage buffer offset alignment (" +
                      std::to_string(offset_alignment_) + " bytes)");
  }
  if (offset + nbytes > parent.size)
    throw InternalError("[vulkan] subregion [" + std::to_string(offset) + ", +" +
                        std::to_string(nbytes) + ") outside a block of " +
                        std::to_string(parent.size) + " bytes");
  auto region = std::make_unique<VkBlock>();
  region->buffer = parent.buffer;
  region->offset = parent.offset + offset;
  region->size = std::max<VkDeviceSize>(4, (nbytes + 3) / 4 * 4);
  if (region->offset - parent.offset + region->size > parent.size) region->size = nbytes;
  region->mapped = parent.mapped ? parent.mapped + offset : nullptr;
  region->foreign = parent.foreign;
  region->base = &parent.allocation();
  return region.release();
}

void VkAllocator::release_subregion(DeviceMemory region) {
  std::unique_ptr<VkBlock> block(&block_of(region));
}

std::pair<void*, size_t> VkAllocator::native_handle(DeviceMemory memory) {
  const VkBlock& block = block_of(memory);
  return {reinterpret_cast<void*>(block.buffer), static_cast<size_t>(block.offset)};
}

}  // namespace kiln::vulkan

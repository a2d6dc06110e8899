#include "runtime/caching_allocator.h"

#include <kiln/error.h>

namespace kiln {

DeviceMemory CachingAllocator::alloc(size_t nbytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = free_blocks_.find(nbytes);
    if (found != free_blocks_.end() && !found->second.empty()) {
      DeviceMemory memory = found->second.back();
      found->second.pop_back();
      cached_bytes_ -= nbytes;
      return memory;
    }
  }
  try {
    return driver_.alloc(nbytes);
  } catch (const OutOfMemoryError&) {
    release_cached();
    return driver_.alloc(nbytes);
  }
}

void CachingAllocator::free(DeviceMemory memory, size_t nbytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_blocks_[nbytes].push_back(memory);
  cached_bytes_ += nbytes;
}

void CachingAllocator::release_cached() {
  std::map<size_t, std::vector<DeviceMemory>> blocks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    blocks.swap(free_blocks_);
    cached_bytes_ = 0;
  }
  for (auto& [nbytes, memories] : blocks) {
    for (DeviceMemory memory : memories) driver_.free(memory, nbytes);
  }
}

size_t CachingAllocator::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cached_bytes_;
}

}  // namespace kiln

#pragma once
// Keeps freed device blocks by size and hands them back before asking the driver, so a loop that
// realizes the same shapes allocates once. On out-of-memory it releases every cached block and
// tries once more.

#include <map>
#include <mutex>
#include <vector>

#include "runtime/device.h"

namespace kiln {

class CachingAllocator {
 public:
  explicit CachingAllocator(Allocator& driver) : driver_(driver) {}
  ~CachingAllocator() { release_cached(); }
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  DeviceMemory alloc(size_t nbytes);
  void free(DeviceMemory memory, size_t nbytes);
  // Returns every cached block to the driver.
  void release_cached();
  size_t cached_bytes() const;
  Allocator& driver() { return driver_; }

 private:
  Allocator& driver_;
  mutable std::mutex mutex_;
  std::map<size_t, std::vector<DeviceMemory>> free_blocks_;
  size_t cached_bytes_ = 0;
};

}  // namespace kiln

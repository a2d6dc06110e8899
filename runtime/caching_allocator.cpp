#include "runtime/caching_allocator.h"

#include <algorithm>

namespace kiln {

size_t default_cache_limit(uint64_t device_memory_bytes) {
  constexpr uint64_t kGiB = uint64_t{1} << 30;
  if (device_memory_bytes == 0) return kGiB;
  return static_cast<size_t>(std::min(device_memory_bytes / 4, kGiB));
}

CachingAllocator::CachingAllocator(Allocator& driver, size_t cache_limit)
    : driver_(driver), limit_(cache_limit) {}

DeviceMemory CachingAllocator::alloc(size_t nbytes) {
  {
    std::lock_guard<SpinLock> lock(mutex_);
    auto found = by_size_.find(nbytes);
    if (found != by_size_.end()) {
      // Last in, first out: kiln conformance relies on getting the block it freed last.
      const Age age = found->second.back();
      DeviceMemory memory = age->memory;
      found->second.pop_back();
      if (found->second.empty()) by_size_.erase(found);
      by_age_.erase(age);
      cached_bytes_ -= nbytes;
      active_bytes_ += static_cast<int64_t>(nbytes);
      return memory;
    }
  }
  DeviceMemory memory = retry_after_release([&] { return driver_.alloc(nbytes); });
  std::lock_guard<SpinLock> lock(mutex_);
  active_bytes_ += static_cast<int64_t>(nbytes);
  return memory;
}

void CachingAllocator::free(DeviceMemory memory, size_t nbytes) {
  std::vector<CachedBlock> evicted;
  {
    std::lock_guard<SpinLock> lock(mutex_);
    active_bytes_ -= static_cast<int64_t>(nbytes);
    if (nbytes > limit_) {
      evicted.push_back({memory, nbytes});
    } else {
      by_age_.push_back({memory, nbytes});
      by_size_[nbytes].push_back(std::prev(by_age_.end()));
      cached_bytes_ += nbytes;
      evicted = evict_to(limit_);
    }
  }
  release(evicted);
}

void CachingAllocator::throw_after_release(const OutOfMemoryError& error, size_t released) const {
  // The driver's reason, with what kiln held: what is in use, and the cache it gave back.
  int64_t active = 0;
  {
    std::lock_guard<SpinLock> lock(mutex_);
    active = active_bytes_;
  }
  throw OutOfMemoryError(std::string(error.what()) + "; kiln's buffers in use hold " +
                         std::to_string(active) + " bytes, and its cache of freed blocks (" +
                         std::to_string(released) +
                         " bytes) was given back to the driver before one more try");
}

std::vector<CachingAllocator::CachedBlock> CachingAllocator::evict_to(size_t target) {
  std::vector<CachedBlock> evicted;
  while (cached_bytes_ > target) {
    const CachedBlock oldest = by_age_.front();
    // The oldest block overall is also the oldest of its size.
    auto same_size = by_size_.find(oldest.nbytes);
    same_size->second.pop_front();
    if (same_size->second.empty()) by_size_.erase(same_size);
    by_age_.pop_front();
    cached_bytes_ -= oldest.nbytes;
    evicted.push_back(oldest);
  }
  return evicted;
}

void CachingAllocator::release(const std::vector<CachedBlock>& blocks) {
  for (const CachedBlock& block : blocks) driver_.free(block.memory, block.nbytes);
}

void CachingAllocator::release_cached() {
  std::vector<CachedBlock> evicted;
  {
    std::lock_guard<SpinLock> lock(mutex_);
    evicted = evict_to(0);
  }
  release(evicted);
}

size_t CachingAllocator::set_cache_limit(size_t bytes) {
  std::vector<CachedBlock> evicted;
  size_t previous = 0;
  {
    std::lock_guard<SpinLock> lock(mutex_);
    previous = limit_;
    limit_ = bytes;
    evicted = evict_to(limit_);
  }
  release(evicted);
  return previous;
}

size_t CachingAllocator::cache_limit() const {
  std::lock_guard<SpinLock> lock(mutex_);
  return limit_;
}

size_t CachingAllocator::cached_bytes() const {
  std::lock_guard<SpinLock> lock(mutex_);
  return cached_bytes_;
}

size_t CachingAllocator::active_bytes() const {
  std::lock_guard<SpinLock> lock(mutex_);
  return static_cast<size_t>(std::max<int64_t>(0, active_bytes_));
}

}  // namespace kiln

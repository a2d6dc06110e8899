#pragma once
// Keeps freed device blocks by size and hands them back before asking the driver, so a loop that
// realizes the same shapes allocates once. The cache is bounded: when the freed blocks it holds
// exceed its limit, the least recently freed go back to the driver. On out-of-memory it releases
// every cached block and tries once more. The public face is include/kiln/memory.h.

#include <kiln/error.h>

#include <cstdint>
#include <deque>
#include <list>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/spin_lock.h"
#include "runtime/device.h"

namespace kiln {

// The limit a device's cache starts with: a quarter of `device_memory_bytes`, at most 1 GiB; 1 GiB
// when the device's memory is unknown (0).
size_t default_cache_limit(uint64_t device_memory_bytes);

class CachingAllocator {
 public:
  CachingAllocator(Allocator& driver, size_t cache_limit);
  ~CachingAllocator() { release_cached(); }
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of `nbytes`: the most recently freed block of exactly that size, else a new one.
  DeviceMemory alloc(size_t nbytes);
  // Keeps the block for reuse, then returns the least recently freed blocks to the driver until
  // the cache is within its limit (a block larger than the limit goes back at once).
  void free(DeviceMemory memory, size_t nbytes);
  // Returns every cached block to the driver.
  void release_cached();
  // Sets the limit, releasing cached blocks beyond it now; returns the previous limit.
  size_t set_cache_limit(size_t bytes);
  size_t cache_limit() const;
  // Bytes in freed blocks held for reuse.
  size_t cached_bytes() const;
  // Bytes handed out by alloc() and not yet given back with free().
  size_t active_bytes() const;
  Allocator& driver() { return driver_; }

  // Runs `attempt`, something that takes device memory from the driver (an allocation, a
  // program's load). Out of memory, it gives every cached block back and runs it once more; if
  // that fails too, the error also says what kiln's buffers hold and what the cache gave back.
  template <typename Attempt>
  auto retry_after_release(Attempt&& attempt) -> decltype(attempt()) {
    try {
      return attempt();
    } catch (const OutOfMemoryError&) {
    }
    const size_t released = cached_bytes();
    release_cached();
    try {
      return attempt();
    } catch (const OutOfMemoryError& error) {
      throw_after_release(error, released);
    }
  }

 private:
  struct CachedBlock {
    DeviceMemory memory;
    size_t nbytes;
  };
  using Age = std::list<CachedBlock>::iterator;

  // Takes the least recently freed blocks out until the cache holds at most `target` bytes;
  // the caller gives them to the driver after unlocking.
  std::vector<CachedBlock> evict_to(size_t target);
  void release(const std::vector<CachedBlock>& blocks);
  [[noreturn]] void throw_after_release(const OutOfMemoryError& error, size_t released) const;

  Allocator& driver_;
  mutable SpinLock mutex_;  // taken by every allocation and free: held for a few map operations
  std::list<CachedBlock> by_age_;                        // least recently freed first
  std::unordered_map<size_t, std::deque<Age>> by_size_;  // per size, most recently freed last
  size_t cached_bytes_ = 0;
  // Signed: a tool may put a block of its own into the cache (kiln conformance's guarded blocks)
  // and take it out again later, which counts as a free before the matching alloc.
  int64_t active_bytes_ = 0;
  size_t limit_;
};

}  // namespace kiln

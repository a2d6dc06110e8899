// The public memory API (include/kiln/memory.h): each device's CachingAllocator.

#include <kiln/memory.h>
#include <kiln/tensor.h>

#include "runtime/registry.h"

namespace kiln {
namespace {

CachingAllocator& allocator_of(const std::string& device) {
  return open_device(device.empty() ? default_device() : device)->allocator();
}

}  // namespace

size_t cache_limit(const std::string& device) {
  return allocator_of(device).cache_limit();
}

size_t set_cache_limit(size_t bytes, const std::string& device) {
  return allocator_of(device).set_cache_limit(bytes);
}

void clear_cache(const std::string& device) {
  allocator_of(device).release_cached();
}

size_t cached_bytes(const std::string& device) {
  return allocator_of(device).cached_bytes();
}

size_t active_bytes(const std::string& device) {
  return allocator_of(device).active_bytes();
}

}  // namespace kiln

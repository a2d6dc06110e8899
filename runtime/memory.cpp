// The public memory API (include/kiln/memory.h): each device's CachingAllocator, and the bound
// of the in-memory kernel caches.

#include <kiln/device.h>
#include <kiln/memory.h>

#include <atomic>

#include "runtime/prepared_kernel.h"
#include "runtime/registry.h"
#include "runtime/schedule_cache.h"

namespace kiln {
namespace {

// About 0.5 MB a kernel on Vulkan (lavapipe's pipelines), so at most some 64 MB of programs per
// device, while a loop of up to 128 distinct kernels still never loads one twice.
constexpr size_t kDefaultKernelCacheLimit = 128;
std::atomic<size_t> kernel_limit{kDefaultKernelCacheLimit};

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
  std::shared_ptr<DeviceContext> context = open_device(device.empty() ? default_device() : device);
  // The schedules hold prepared kernels (and their scratch buffers): dropped first.
  schedule_cache().clear();
  clear_prepared_kernels(context.get());
  context->clear_programs();
  context->allocator().release_cached();
}

size_t cached_bytes(const std::string& device) {
  return allocator_of(device).cached_bytes();
}

size_t active_bytes(const std::string& device) {
  return allocator_of(device).active_bytes();
}

size_t kernel_cache_limit() {
  return kernel_limit.load();
}

size_t set_kernel_cache_limit(size_t entries) {
  const size_t previous = kernel_limit.exchange(entries);
  schedule_cache().trim();
  trim_prepared_kernels();
  for (const std::shared_ptr<DeviceContext>& context : open_devices()) context->trim_programs();
  return previous;
}

KernelCacheSizes kernel_cache_sizes(const std::string& device) {
  std::shared_ptr<DeviceContext> context = open_device(device.empty() ? default_device() : device);
  KernelCacheSizes sizes;
  sizes.programs = context->program_count();
  sizes.prepared_kernels = prepared_kernel_count(context.get());
  sizes.schedules = schedule_cache().size();
  return sizes;
}

}  // namespace kiln

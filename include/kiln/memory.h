#pragma once
// Device memory: how much kiln holds on a device, and the cache of freed blocks.
//
// A tensor's buffer is allocated on the device when it is first computed and freed when the last
// tensor (or intermediate of a realize) using it goes. Freed blocks are not returned to the driver
// at once: each device keeps them in a cache and hands a block to the next allocation of exactly
// the same size, so a loop that realizes the same shapes allocates once.
//
// The cache is bounded by its limit. When freeing a block takes the cached bytes over the limit,
// the least recently freed blocks are returned to the driver until they fit; a block larger than
// the limit is returned at once. A limit of 0 turns caching off. The default limit is a quarter
// of the device's memory (physical RAM for the CPU), at most 1 GiB (1 GiB where the device does
// not report its memory). When an allocation fails, the whole cache is returned to the driver and
// the allocation tried once more; if it fails again it throws OutOfMemoryError.
//
// An allocation larger than the device can make at all (for the CPU, more than RAM and swap
// together; for OpenCL, more than CL_DEVICE_MAX_MEM_ALLOC_SIZE) throws OutOfMemoryError naming
// the dtype, the size and the limit when the realize that needs it is scheduled, before any of
// its kernels runs.
//
// Compiled kernels are cached in memory too: each device keeps the programs it has loaded (a
// driver module or pipeline, a shared object on the CPU), and kiln keeps the kernels it has
// lowered and rendered and the schedules of the graphs it has realized, so that a loop realizing
// the same graphs compiles and schedules once. Each of these caches holds at most
// kernel_cache_limit() entries (per device for programs and kernels), dropping the least recently
// used beyond it; the default is 128. A dropped kernel is loaded again from the disk cache
// (include/kiln/config.h: KILN_CACHE_DIR) when next needed, without compiling. A program that a
// captured step records, or that is launching, lives until they are done with it.
//
// `device` names a device as KILN_DEVICE does ("CPU", "CL:1"); empty means default_device(). An
// unknown or unavailable device throws DeviceError. Every function is safe to call from any
// thread.

#include <cstddef>
#include <string>

namespace kiln {

// The cache limit of `device`, in bytes.
size_t cache_limit(const std::string& device = "");

// Sets the cache limit of `device` and returns the previous one. Cached blocks beyond the new
// limit are returned to the driver now.
size_t set_cache_limit(size_t bytes, const std::string& device = "");

// Returns every cached block of `device` to the driver, and drops the kernels `device` keeps in
// memory (its programs and prepared kernels) and every cached schedule. Memory in use by tensors,
// and kernels that captured steps hold, are untouched.
void clear_cache(const std::string& device = "");

// Bytes in freed blocks that `device`'s cache holds for reuse (at most cache_limit()).
size_t cached_bytes(const std::string& device = "");

// Bytes of `device` memory in use by buffers (tensors and intermediates), not counting the cache.
size_t active_bytes(const std::string& device = "");

// The most entries each in-memory kernel cache holds (see above).
size_t kernel_cache_limit();

// Sets the kernel cache limit of every device and returns the previous one. Entries beyond the
// new limit are dropped now. A limit of 0 keeps no kernel in memory past its use: every realize
// then loads its kernels again.
size_t set_kernel_cache_limit(size_t entries);

// What the in-memory kernel caches hold now.
struct KernelCacheSizes {
  size_t programs = 0;          // loaded programs of the device
  size_t prepared_kernels = 0;  // kernels lowered and rendered for the device
  size_t schedules = 0;         // cached schedules (of every device)
};
KernelCacheSizes kernel_cache_sizes(const std::string& device = "");

}  // namespace kiln

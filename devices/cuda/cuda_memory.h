#pragma once
// Device memory for the CUDA device: cuMemAlloc blocks, copies through pinned staging buffers on
// the device's stream (so they are ordered after the kernels launched before them), and
// subregions as pointer offsets.

#include <cuda.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "devices/cuda/cuda_api.h"
#include "devices/cuda/cuda_stream.h"
#include "runtime/device.h"

namespace kiln::cuda {

CUdeviceptr device_pointer(DeviceMemory memory);

class CudaAllocator : public Allocator {
 public:
  // `stream` belongs to the device and outlives the allocator; its context is made current on
  // the calling thread before each driver call.
  CudaAllocator(CudaStream& stream, uint64_t memory_bytes);
  ~CudaAllocator() override;
  CudaAllocator(const CudaAllocator&) = delete;
  CudaAllocator& operator=(const CudaAllocator&) = delete;

  DeviceMemory alloc(size_t nbytes) override;
  // Waits for the queued work first: a kernel may still read the block.
  void free(DeviceMemory memory, size_t nbytes) override;
  // Returns once `host` may be reused; the copy itself may still be in flight on the stream.
  void copy_in(DeviceMemory destination, const void* host, size_t nbytes) override;
  // Returns once the bytes are in `host`.
  void copy_out(void* host, DeviceMemory source, size_t nbytes) override;

  // cuMemAlloc aligns every block to 256 bytes; kernels assume no more of a subregion.
  size_t subregion_alignment() const override { return 256; }
  DeviceMemory subregion(DeviceMemory base, size_t offset, size_t nbytes) override;
  void release_subregion(DeviceMemory) override {}
  // A CUdeviceptr of the application's in the device's primary context (cuMemAlloc, the CUDA
  // runtime's cudaMalloc), at an offset; the application frees it. Kernels load whole vectors
  // and assume what cuMemAlloc gives (256-byte alignment), as subregions do: a misaligned load
  // would end the context, the application's too.
  DeviceMemory wrap_native(void* handle, size_t offset, size_t, size_t) override {
    char* const first = static_cast<char*>(handle) + offset;
    if (reinterpret_cast<uintptr_t>(first) % subregion_alignment() != 0) {
      throw DeviceError("[cuda] kernels read memory aligned to " +
                        std::to_string(subregion_alignment()) +
                        " bytes (as cuMemAlloc gives it); the pointer plus offset " +
                        std::to_string(offset) + " is not");
    }
    return first;
  }
  std::pair<void*, size_t> native_handle(DeviceMemory memory) override {
    return {reinterpret_cast<void*>(static_cast<uintptr_t>(device_pointer(memory))), 0};
  }

 private:
  static constexpr size_t kStagingBytes = size_t{8} << 20;
  struct Staging {
    OwnedPinnedHost host;  // kStagingBytes
    OwnedEvent done;       // destroyed before `host`
    bool pending = false;  // a copy through it may still run
  };
  // The next staging buffer in turn (allocated on first use), once its last copy has finished.
  Staging& next_staging();

  CudaStream& stream_;
  uint64_t memory_bytes_;
  std::mutex mutex_;  // the staging buffers
  std::array<Staging, 2> staging_;
  size_t next_slot_ = 0;
};

}  // namespace kiln::cuda

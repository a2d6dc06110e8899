#include "devices/cuda/cuda_memory.h"

#include <kiln/error.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "devices/cuda/cuda_api.h"

namespace kiln::cuda {

CUdeviceptr device_pointer(DeviceMemory memory) {
  return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(memory));
}

namespace {

DeviceMemory as_memory(CUdeviceptr pointer) {
  return reinterpret_cast<DeviceMemory>(static_cast<uintptr_t>(pointer));
}

}  // namespace

CudaAllocator::CudaAllocator(CUcontext context, CUstream stream, uint64_t memory_bytes)
    : context_(context), stream_(stream), memory_bytes_(memory_bytes) {}

CudaAllocator::~CudaAllocator() {
  // Errors have no one to go to from here: the device is going away.
  driver().cuCtxSetCurrent(context_);
  for (Staging& slot : staging_) {
    if (slot.done) {
      driver().cuEventSynchronize(slot.done);
      driver().cuEventDestroy_v2(slot.done);
    }
    if (slot.host) driver().cuMemFreeHost(slot.host);
  }
}

DeviceMemory CudaAllocator::alloc(size_t nbytes) {
  KILN_CU_CHECK(driver().cuCtxSetCurrent(context_));
  CUdeviceptr pointer = 0;
  const CUresult status = driver().cuMemAlloc_v2(&pointer, std::max<size_t>(nbytes, 1));
  if (status == CUDA_ERROR_OUT_OF_MEMORY) {
    throw OutOfMemoryError("[cuda] cannot allocate " + std::to_string(nbytes) +
                           " bytes: the GPU's memory (" + std::to_string(memory_bytes_) +
                           " bytes) is used up (cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY)");
  }
  check_cu(status, "cuMemAlloc_v2(&pointer, nbytes)");
  return as_memory(pointer);
}

void CudaAllocator::free(DeviceMemory memory, size_t) {
  // cuMemFree waits for kernels that may still use the block. A failure can only be an invalid
  // pointer (our bug) or a context already lost; this runs from destructors: nothing to throw.
  driver().cuCtxSetCurrent(context_);
  driver().cuMemFree_v2(device_pointer(memory));
}

CudaAllocator::Staging& CudaAllocator::staging(size_t slot) {
  Staging& staging = staging_[slot];
  if (!staging.host) {
    KILN_CU_CHECK(driver().cuMemHostAlloc(&staging.host, kStagingBytes, 0));
    KILN_CU_CHECK(driver().cuEventCreate(&staging.done, CU_EVENT_DISABLE_TIMING));
  }
  return staging;
}

void CudaAllocator::wait(Staging& slot) {
  if (!slot.pending) return;
  slot.pending = false;
  KILN_CU_CHECK(driver().cuEventSynchronize(slot.done));
}

void CudaAllocator::copy_in(DeviceMemory destination, const void* host, size_t nbytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  KILN_CU_CHECK(driver().cuCtxSetCurrent(context_));
  const auto* bytes = static_cast<const uint8_t*>(host);
  // Two buffers in turn: the host fills one while the other is copied to the device.
  for (size_t offset = 0, chunk = 0; offset < nbytes; offset += kStagingBytes, ++chunk) {
    const size_t length = std::min(kStagingBytes, nbytes - offset);
    Staging& slot = staging(chunk % 2);
    wait(slot);
    std::memcpy(slot.host, bytes + offset, length);
    KILN_CU_CHECK(driver().cuMemcpyHtoDAsync_v2(device_pointer(destination) + offset, slot.host,
                                                length, stream_));
    KILN_CU_CHECK(driver().cuEventRecord(slot.done, stream_));
    slot.pending = true;
  }
}

void CudaAllocator::copy_out(void* host, DeviceMemory source, size_t nbytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  KILN_CU_CHECK(driver().cuCtxSetCurrent(context_));
  auto* bytes = static_cast<uint8_t*>(host);
  const size_t chunks = (nbytes + kStagingBytes - 1) / kStagingBytes;
  auto start = [&](size_t chunk) {
    const size_t offset = chunk * kStagingBytes;
    Staging& slot = staging(chunk % 2);
    wait(slot);
    KILN_CU_CHECK(driver().cuMemcpyDtoHAsync_v2(slot.host, device_pointer(source) + offset,
                                                std::min(kStagingBytes, nbytes - offset), stream_));
    KILN_CU_CHECK(driver().cuEventRecord(slot.done, stream_));
    slot.pending = true;
  };
  // The device fills one buffer while the host reads the other.
  if (chunks > 0) start(0);
  for (size_t chunk = 0; chunk < chunks; ++chunk) {
    if (chunk + 1 < chunks) start(chunk + 1);
    Staging& slot = staging_[chunk % 2];
    wait(slot);
    const size_t offset = chunk * kStagingBytes;
    std::memcpy(bytes + offset, slot.host, std::min(kStagingBytes, nbytes - offset));
  }
}

DeviceMemory CudaAllocator::subregion(DeviceMemory base, size_t offset, size_t) {
  if (offset % subregion_alignment() != 0) {
    throw DeviceError("[cuda] subregion: offset " + std::to_string(offset) +
                      " is not a multiple of " + std::to_string(subregion_alignment()) + " bytes");
  }
  return as_memory(device_pointer(base) + offset);
}

}  // namespace kiln::cuda

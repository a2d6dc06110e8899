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

CudaAllocator::CudaAllocator(CudaStream& stream, uint64_t memory_bytes)
    : stream_(stream), memory_bytes_(memory_bytes) {}

CudaAllocator::~CudaAllocator() {
  // Errors have no one to go to from here (the device is going away): they are logged. The
  // staging buffers' owners then free them, once no copy uses them.
  KILN_CU_WARN(driver().cuCtxSetCurrent(stream_.context()));
  KILN_CU_WARN(driver().cuStreamSynchronize(stream_.get()));
}

DeviceMemory CudaAllocator::alloc(size_t nbytes) {
  stream_.make_current();
  const auto check = [&](CUresult status, const char* call) {
    if (status == CUDA_ERROR_OUT_OF_MEMORY) {
      throw OutOfMemoryError("[cuda] cannot allocate " + std::to_string(nbytes) +
                             " bytes: the GPU's memory (" + std::to_string(memory_bytes_) +
                             " bytes) is used up (" + call_name(call) +
                             " failed: " + cu_error_text(status) + ")");
    }
    stream_.check(status, call);
  };
  CUdeviceptr pointer = 0;
  KILN_CU_CHECK_WITH(check, driver().cuMemAlloc_v2(&pointer, std::max<size_t>(nbytes, 1)));
  return as_memory(pointer);
}

void CudaAllocator::free(DeviceMemory memory, size_t nbytes) {
  // cuMemFree is not promised to wait for queued kernels that use the block, so wait here
  // (blocks go back to the driver rarely: the caching allocator keeps them). A failure could only
  // be our bug or a context already lost (a kernel's fault, which the next checked call raises);
  // this runs from destructors, so it is logged, not thrown.
  const auto warn = [nbytes](CUresult status, const char* call) {
    if (status != CUDA_SUCCESS)
      warn_cu(
          status,
          (std::string(call) + " freeing a block of " + std::to_string(nbytes) + " bytes").c_str());
  };
  KILN_CU_CHECK_WITH(warn, driver().cuCtxSetCurrent(stream_.context()));
  KILN_CU_CHECK_WITH(warn, driver().cuStreamSynchronize(stream_.get()));
  KILN_CU_CHECK_WITH(warn, driver().cuMemFree_v2(device_pointer(memory)));
}

CudaAllocator::Staging& CudaAllocator::next_staging() {
  Staging& slot = staging_[next_slot_];
  next_slot_ = (next_slot_ + 1) % staging_.size();
  if (!slot.host) {
    // Where the event cannot be made, the buffer's owner frees it.
    void* host = nullptr;
    KILN_CU_CHECK_WITH(stream_.check, driver().cuMemHostAlloc(&host, kStagingBytes, 0));
    OwnedPinnedHost pinned(host);
    CUevent done = nullptr;
    KILN_CU_CHECK_WITH(stream_.check, driver().cuEventCreate(&done, CU_EVENT_DISABLE_TIMING));
    slot.done.reset(done);
    slot.host = std::move(pinned);
  }
  if (slot.pending) {
    slot.pending = false;
    KILN_CU_CHECK_WITH(stream_.check, driver().cuEventSynchronize(slot.done.get()));
  }
  return slot;
}

void CudaAllocator::copy_in(DeviceMemory destination, const void* host, size_t nbytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  stream_.make_current();
  const auto* bytes = static_cast<const uint8_t*>(host);
  // The buffers in turn: the host fills one while the other is copied to the device.
  for (size_t offset = 0; offset < nbytes; offset += kStagingBytes) {
    const size_t length = std::min(kStagingBytes, nbytes - offset);
    Staging& slot = next_staging();
    std::memcpy(slot.host.get(), bytes + offset, length);
    KILN_CU_CHECK_WITH(stream_.check,
                       driver().cuMemcpyHtoDAsync_v2(device_pointer(destination) + offset,
                                                     slot.host.get(), length, stream_.get()));
    KILN_CU_CHECK_WITH(stream_.check, driver().cuEventRecord(slot.done.get(), stream_.get()));
    slot.pending = true;
  }
}

void CudaAllocator::copy_out(void* host, DeviceMemory source, size_t nbytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  stream_.make_current();
  auto* bytes = static_cast<uint8_t*>(host);
  const size_t chunks = (nbytes + kStagingBytes - 1) / kStagingBytes;
  auto start = [&](size_t chunk) -> Staging& {
    const size_t offset = chunk * kStagingBytes;
    Staging& slot = next_staging();
    KILN_CU_CHECK_WITH(stream_.check, driver().cuMemcpyDtoHAsync_v2(
                                          slot.host.get(), device_pointer(source) + offset,
                                          std::min(kStagingBytes, nbytes - offset), stream_.get()));
    KILN_CU_CHECK_WITH(stream_.check, driver().cuEventRecord(slot.done.get(), stream_.get()));
    slot.pending = true;
    return slot;
  };
  // The device fills one buffer while the host reads the other.
  Staging* current = chunks > 0 ? &start(0) : nullptr;
  for (size_t chunk = 0; chunk < chunks; ++chunk) {
    Staging* following = chunk + 1 < chunks ? &start(chunk + 1) : nullptr;
    current->pending = false;
    KILN_CU_CHECK_WITH(stream_.check, driver().cuEventSynchronize(current->done.get()));
    const size_t offset = chunk * kStagingBytes;
    std::memcpy(bytes + offset, current->host.get(), std::min(kStagingBytes, nbytes - offset));
    current = following;
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

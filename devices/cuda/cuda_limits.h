#pragma once
// The CUDA device's own limits for `kiln bench`: the bandwidth of a device-to-device copy, and
// cuBLAS GEMMs (float32 and bfloat16), cuBLAS loaded at run time where it is present.

#include <cuda.h>

#include "devices/cuda/cuda_memory.h"
#include "devices/cuda/cuda_stream.h"
#include "runtime/device.h"

namespace kiln::cuda {

// Runs on `stream`, with memory from `allocator`.
DeviceLimits measure_cuda_limits(CudaStream& stream, CudaAllocator& allocator, size_t copy_bytes,
                                 int gemm_side);

}  // namespace kiln::cuda

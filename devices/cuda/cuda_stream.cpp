#include "devices/cuda/cuda_stream.h"

#include <kiln/error.h>

#include "devices/cuda/cuda_api.h"

namespace kiln::cuda {
namespace {

// Errors a faulting kernel leaves in the context: every later call fails with them.
bool left_by_a_kernel(CUresult status) {
  switch (status) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
      return true;
    default:
      return false;
  }
}

}  // namespace

CudaStream::CudaStream(CUcontext context) : context_(context) {
  KILN_CU_CHECK(driver().cuCtxSetCurrent(context_));
  CUstream stream = nullptr;
  KILN_CU_CHECK(driver().cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  stream_.reset(stream);
}

CudaStream::~CudaStream() {
  // Errors have no one to go to from a destructor: they are logged. The stream is destroyed
  // after this, by its owner.
  KILN_CU_WARN(driver().cuCtxSetCurrent(context_));
  KILN_CU_WARN(driver().cuStreamSynchronize(stream_.get()));
}

void CudaStream::make_current() const {
  KILN_CU_CHECK(driver().cuCtxSetCurrent(context_));
}

void CudaStream::launched(const std::string& kernel) {
  std::lock_guard<std::mutex> lock(mutex_);
  last_kernel_ = kernel;
}

void CudaStream::check(CUresult status, const char* call) const {
  if (status == CUDA_SUCCESS) return;
  if (!left_by_a_kernel(status)) check_cu(status, call);
  std::string kernel;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    kernel = last_kernel_;
  }
  throw DeviceLostError(cu_failure(call, status) + " (the last kernel launched was " +
                        (kernel.empty() ? std::string("none") : kernel) +
                        "; after this error the CUDA context is unusable: restart the process, "
                        "and run with KILN_DEBUG=2 to wait for each kernel and find the one that "
                        "fails)");
}

void CudaStream::synchronize() const {
  make_current();
  KILN_CU_CHECK_WITH(check, driver().cuStreamSynchronize(stream_.get()));
}

void KernelCheck::operator()(CUresult status, const char* call) const {
  if (status != CUDA_SUCCESS)
    stream_.check(status, (std::string(call) + " for kernel " + kernel_).c_str());
}

}  // namespace kiln::cuda

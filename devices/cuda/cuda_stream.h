#pragma once
// The CUDA device's one stream in its primary context. Kernels and copies all go through it, so
// they run in the order they were issued. A fault inside a kernel surfaces at a later call on
// the stream (a copy, a wait); errors raised here name the kernel launched last.

#include <cuda.h>

#include <mutex>
#include <string>

#include "devices/cuda/cuda_api.h"

namespace kiln::cuda {

class CudaStream {
 public:
  explicit CudaStream(CUcontext context);
  ~CudaStream();  // waits for the queued work, then destroys the stream
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  CUstream get() const { return stream_.get(); }
  CUcontext context() const { return context_; }
  // Makes the device's context current on the calling thread (any thread may use the device).
  void make_current() const;
  // Records the kernel just launched, for the errors below.
  void launched(const std::string& kernel);
  // Throws like check_cu, naming the last kernel launched when `status` is an error that a
  // kernel leaves behind (and saying that such an error ends the context's use). A checker for
  // KILN_CU_CHECK_WITH(stream.check, call).
  void check(CUresult status, const char* call) const;
  // Waits for everything queued.
  void synchronize() const;

 private:
  CUcontext context_;
  OwnedStream stream_;
  mutable std::mutex mutex_;
  std::string last_kernel_;
};

// A checker for KILN_CU_CHECK_WITH: checks like CudaStream::check, naming the kernel the call was
// for ("cuLaunchKernel(...) for kernel E_4").
class KernelCheck {
 public:
  KernelCheck(const CudaStream& stream, const std::string& kernel)
      : stream_(stream), kernel_(kernel) {}
  void operator()(CUresult status, const char* call) const;

 private:
  const CudaStream& stream_;
  const std::string& kernel_;
};

}  // namespace kiln::cuda

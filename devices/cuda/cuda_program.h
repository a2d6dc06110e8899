#pragma once
// A kernel loaded from a cubin: its launches on the device's stream, and the driver's form of one
// launch, which CUDA graphs' nodes take too (cuda_graph.h).

#include <cuda.h>

#include <mutex>
#include <string>
#include <vector>

#include "devices/cuda/cuda_stream.h"
#include "runtime/device.h"

namespace kiln::cuda {

// One launch as the driver takes it: the grid and block, and the kernel's arguments (its
// buffers' pointers, then its variables as 64-bit integers) with the array of pointers to them
// that cuLaunchKernel and a graph's kernel node read. Movable, not copyable: `arguments` points
// into the other two.
struct DriverLaunch {
  CUfunction function = nullptr;
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  std::vector<CUdeviceptr> pointers;
  std::vector<long long> variables;
  std::vector<void*> arguments;
  bool empty = false;  // no work items: nothing to launch

  DriverLaunch() = default;
  DriverLaunch(DriverLaunch&&) = default;
  DriverLaunch& operator=(DriverLaunch&&) = default;
  DriverLaunch(const DriverLaunch&) = delete;
  DriverLaunch& operator=(const DriverLaunch&) = delete;
};

class CudaProgram : public Program {
 public:
  // Owns `module` from here on, also when construction fails.
  CudaProgram(CudaStream& stream, CUmodule module, std::string name);
  ~CudaProgram() override;
  CudaProgram(const CudaProgram&) = delete;
  CudaProgram& operator=(const CudaProgram&) = delete;

  double launch(const LaunchRequest& request) override;

  // `request` in the driver's form; throws DeviceError where the geometry exceeds CUDA's limits
  // or the compiled kernel's.
  DriverLaunch prepare(const LaunchRequest& request) const;
  const std::string& name() const { return name_; }
  CudaStream& stream() const { return stream_; }

 private:
  void check(CUresult status, const char* call) const;
  // Waits for queued launches (the module must outlive them), then frees everything; errors
  // have no one to go to from a destructor, so they are logged.
  void release();

  CudaStream& stream_;
  CUmodule module_;
  std::string name_;
  CUfunction function_ = nullptr;
  int max_threads_ = 0;
  CUevent start_ = nullptr, end_ = nullptr;
  std::mutex mutex_;
};

}  // namespace kiln::cuda

#pragma once
// A kernel loaded from a cubin: its launches on the device's stream, and the driver's form of one
// launch, which CUDA graphs' nodes take too (cuda_graph.h).

#include <cuda.h>

#include <mutex>
#include <string>
#include <vector>

#include "devices/cuda/cuda_api.h"
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
  CudaProgram(CudaStream& stream, OwnedModule module, std::string name);
  ~CudaProgram() override;
  CudaProgram(const CudaProgram&) = delete;
  CudaProgram& operator=(const CudaProgram&) = delete;

  double launch(const LaunchRequest& request) override;
  // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: fewer than the device's where the kernel needs many
  // registers.
  int64_t max_workgroup_size() const override { return max_threads_; }

  // `request` in the driver's form; throws DeviceError where the geometry exceeds CUDA's limits
  // or the compiled kernel's.
  DriverLaunch prepare(const LaunchRequest& request) const;
  const std::string& name() const { return name_; }
  CudaStream& stream() const { return stream_; }

 private:
  // A checker for KILN_CU_CHECK_WITH: CudaStream::check, naming this kernel.
  void check(CUresult status, const char* call) const;

  CudaStream& stream_;
  OwnedModule module_;  // first: it must outlive the events and the launches (see the destructor)
  std::string name_;
  CUfunction function_ = nullptr;
  int max_threads_ = 0;
  OwnedEvent start_, end_;
  std::mutex mutex_;
};

}  // namespace kiln::cuda

#include "devices/cuda/cuda_program.h"

#include <kiln/error.h>

#include <climits>

#include "devices/cuda/cuda_api.h"
#include "devices/cuda/cuda_memory.h"

namespace kiln::cuda {

CudaProgram::CudaProgram(CudaStream& stream, CUmodule module, std::string name)
    : stream_(stream), module_(module), name_(std::move(name)) {
  try {
    check(driver().cuModuleGetFunction(&function_, module_, name_.c_str()), "cuModuleGetFunction");
    check(driver().cuFuncGetAttribute(&max_threads_, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                                      function_),
          "cuFuncGetAttribute(MAX_THREADS_PER_BLOCK)");
    check(driver().cuEventCreate(&start_, CU_EVENT_DEFAULT), "cuEventCreate");
    check(driver().cuEventCreate(&end_, CU_EVENT_DEFAULT), "cuEventCreate");
  } catch (...) {
    release();
    throw;
  }
}

CudaProgram::~CudaProgram() {
  release();
}

DriverLaunch CudaProgram::prepare(const LaunchRequest& request) const {
  DriverLaunch launch;
  launch.function = function_;
  const int64_t global[3] = {request.global.x, request.global.y, request.global.z};
  const int64_t local[3] = {request.local.x, request.local.y, request.local.z};
  if (global[0] * global[1] * global[2] == 0) {
    launch.empty = true;
    return launch;
  }
  // The kernel's geometry is its own (its opts chose it and checked the device's limits).
  static constexpr int64_t kMaxGrid[3] = {INT_MAX, 65535, 65535};
  for (int dim = 0; dim < 3; ++dim) {
    const int64_t groups = (global[dim] + local[dim] - 1) / local[dim];
    if (groups > kMaxGrid[dim]) {
      throw DeviceError("[cuda launch] kernel " + name_ + " needs " + std::to_string(groups) +
                        " blocks along grid dimension " + std::to_string(dim) +
                        "; CUDA allows at most " + std::to_string(kMaxGrid[dim]));
    }
    launch.grid[dim] = static_cast<unsigned>(groups);
    launch.block[dim] = static_cast<unsigned>(local[dim]);
  }
  if (local[0] * local[1] * local[2] > max_threads_) {
    throw DeviceError("[cuda launch] kernel " + name_ + " asks for blocks of " +
                      std::to_string(local[0] * local[1] * local[2]) +
                      " threads; the compiled kernel allows at most " +
                      std::to_string(max_threads_) +
                      " (CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK); KILN_NOOPT=1 launches "
                      "without blocks");
  }
  launch.pointers.reserve(request.buffers.size());
  for (DeviceMemory memory : request.buffers) launch.pointers.push_back(device_pointer(memory));
  // The kernel's variables follow its buffers, as 64-bit integers.
  launch.variables.assign(request.variables.begin(), request.variables.end());
  for (CUdeviceptr& pointer : launch.pointers) launch.arguments.push_back(&pointer);
  for (long long& value : launch.variables) launch.arguments.push_back(&value);
  return launch;
}

double CudaProgram::launch(const LaunchRequest& request) {
  DriverLaunch launch = prepare(request);
  if (launch.empty) return 0;
  std::lock_guard<std::mutex> lock(mutex_);  // the timing events
  stream_.make_current();
  if (request.wait) check(driver().cuEventRecord(start_, stream_.get()), "cuEventRecord");
  check(driver().cuLaunchKernel(function_, launch.grid[0], launch.grid[1], launch.grid[2],
                                launch.block[0], launch.block[1], launch.block[2], 0, stream_.get(),
                                launch.arguments.data(), nullptr),
        "cuLaunchKernel");
  stream_.launched(name_);
  if (!request.wait) return 0;
  check(driver().cuEventRecord(end_, stream_.get()), "cuEventRecord");
  // A fault inside the kernel shows here, named after it.
  check(driver().cuEventSynchronize(end_), "cuEventSynchronize (after the kernel ran)");
  float milliseconds = 0;
  check(driver().event_elapsed_time(&milliseconds, start_, end_), "cuEventElapsedTime");
  return milliseconds * 1e-3;
}

void CudaProgram::check(CUresult status, const char* call) const {
  if (status != CUDA_SUCCESS)
    stream_.check(status, (std::string(call) + " for kernel " + name_).c_str());
}

void CudaProgram::release() {
  warn_cu(driver().cuCtxSetCurrent(stream_.context()), "cuCtxSetCurrent");
  warn_cu(driver().cuStreamSynchronize(stream_.get()), "cuStreamSynchronize");
  if (start_) warn_cu(driver().cuEventDestroy_v2(start_), "cuEventDestroy_v2");
  if (end_) warn_cu(driver().cuEventDestroy_v2(end_), "cuEventDestroy_v2");
  warn_cu(driver().cuModuleUnload(module_), "cuModuleUnload");
}

}  // namespace kiln::cuda

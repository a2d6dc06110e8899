#include "devices/cuda/cuda_program.h"

#include <kiln/error.h>

#include <climits>

#include "devices/cuda/cuda_api.h"
#include "devices/cuda/cuda_memory.h"

namespace kiln::cuda {

namespace {

OwnedEvent create_event(unsigned flags, const KernelCheck& check) {
  CUevent event = nullptr;
  KILN_CU_CHECK_WITH(check, driver().cuEventCreate(&event, flags));
  return OwnedEvent(event);
}

}  // namespace

CudaProgram::CudaProgram(CudaStream& stream, OwnedModule module, std::string name)
    : stream_(stream), module_(std::move(module)), name_(std::move(name)) {
  // Where this throws, the members made so far release what they own.
  KILN_CU_CHECK_WITH(check, driver().cuModuleGetFunction(&function_, module_.get(), name_.c_str()));
  KILN_CU_CHECK_WITH(check, driver().cuFuncGetAttribute(
                                &max_threads_, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, function_));
  start_ = create_event(CU_EVENT_DEFAULT, KernelCheck(stream_, name_));
  end_ = create_event(CU_EVENT_DEFAULT, KernelCheck(stream_, name_));
}

CudaProgram::~CudaProgram() {
  // The module must outlive the launches queued with it; errors have no one to go to from a
  // destructor, so they are logged. The members then free the events and the module.
  KILN_CU_WARN(driver().cuCtxSetCurrent(stream_.context()));
  KILN_CU_WARN(driver().cuStreamSynchronize(stream_.get()));
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
  if (request.wait) KILN_CU_CHECK_WITH(check, driver().cuEventRecord(start_.get(), stream_.get()));
  KILN_CU_CHECK_WITH(
      check, driver().cuLaunchKernel(function_, launch.grid[0], launch.grid[1], launch.grid[2],
                                     launch.block[0], launch.block[1], launch.block[2], 0,
                                     stream_.get(), launch.arguments.data(), nullptr));
  stream_.launched(name_);
  if (!request.wait) return 0;
  KILN_CU_CHECK_WITH(check, driver().cuEventRecord(end_.get(), stream_.get()));
  // A fault inside the kernel shows here, named after it.
  KILN_CU_CHECK_WITH(check, driver().cuEventSynchronize(end_.get()));
  float milliseconds = 0;
  KILN_CU_CHECK_WITH(check, driver().event_elapsed_time(&milliseconds, start_.get(), end_.get()));
  return milliseconds * 1e-3;
}

void CudaProgram::check(CUresult status, const char* call) const {
  KernelCheck(stream_, name_)(status, call);
}

}  // namespace kiln::cuda

#pragma once
// The CUDA driver API and NVRTC, loaded at run time: the plugin links neither, so one build runs
// on machines with and without an NVIDIA driver, and `kiln devices` can say why CUDA is missing.
//
// Each entry point is listed once, under its versioned symbol name: cuda.h renames many functions
// by macro (cuMemAlloc is cuMemAlloc_v2), and dlsym must ask for the real name. Every call goes
// through a macro that keeps its text:
//
//   KILN_CU_CHECK(driver().cuMemAlloc_v2(&pointer, nbytes));
//   KILN_CU_CHECK_WITH(stream.check, driver().cuEventRecord(event, stream.get()));
//   KILN_CU_WARN(driver().cuEventDestroy_v2(event));      // where nothing can be thrown
//   KILN_NVRTC_CHECK(nvrtc().nvrtcGetPTXSize(program, &size));
//
// and a failure throws DeviceError("[cuda] cuMemAlloc_v2(&pointer, nbytes) failed:
// CUDA_ERROR_OUT_OF_MEMORY (2): out of memory"), OutOfMemoryError for memory exhaustion. The
// driver objects kiln holds are owned by UniqueHandles (OwnedModule, OwnedEvent, ...) below.

#include <cuda.h>
#include <nvrtc.h>

#include <string>

#include "runtime/driver_handle.h"

namespace kiln::cuda {

#define KILN_CUDA_DRIVER_FUNCTIONS(X) \
  X(cuInit)                           \
  X(cuDriverGetVersion)               \
  X(cuGetErrorName)                   \
  X(cuGetErrorString)                 \
  X(cuDeviceGetCount)                 \
  X(cuDeviceGet)                      \
  X(cuDeviceGetName)                  \
  X(cuDeviceGetAttribute)             \
  X(cuDeviceGetPCIBusId)              \
  X(cuDeviceTotalMem_v2)              \
  X(cuDevicePrimaryCtxRetain)         \
  X(cuDevicePrimaryCtxRelease_v2)     \
  X(cuCtxSetCurrent)                  \
  X(cuStreamCreate)                   \
  X(cuStreamDestroy_v2)               \
  X(cuStreamSynchronize)              \
  X(cuMemAlloc_v2)                    \
  X(cuMemFree_v2)                     \
  X(cuMemHostAlloc)                   \
  X(cuMemFreeHost)                    \
  X(cuMemcpyHtoDAsync_v2)             \
  X(cuMemcpyDtoHAsync_v2)             \
  X(cuMemcpyDtoDAsync_v2)             \
  X(cuModuleLoadData)                 \
  X(cuModuleUnload)                   \
  X(cuModuleGetFunction)              \
  X(cuFuncGetAttribute)               \
  X(cuLaunchKernel)                   \
  X(cuEventCreate)                    \
  X(cuEventRecord)                    \
  X(cuEventSynchronize)               \
  X(cuEventDestroy_v2)

// CUDA graphs (captured steps' replays, cuda_graph.h): optional, since the _v2 entries came with
// CUDA 12.0 drivers; without them replays launch each kernel.
#define KILN_CUDA_GRAPH_FUNCTIONS(X)   \
  X(cuGraphCreate)                     \
  X(cuGraphDestroy)                    \
  X(cuGraphAddKernelNode_v2)           \
  X(cuGraphInstantiateWithFlags)       \
  X(cuGraphExecDestroy)                \
  X(cuGraphExecKernelNodeSetParams_v2) \
  X(cuGraphLaunch)

#define KILN_NVRTC_FUNCTIONS(X) \
  X(nvrtcVersion)               \
  X(nvrtcGetErrorString)        \
  X(nvrtcGetNumSupportedArchs)  \
  X(nvrtcGetSupportedArchs)     \
  X(nvrtcCreateProgram)         \
  X(nvrtcDestroyProgram)        \
  X(nvrtcCompileProgram)        \
  X(nvrtcGetProgramLogSize)     \
  X(nvrtcGetProgramLog)         \
  X(nvrtcGetCUBINSize)          \
  X(nvrtcGetCUBIN)              \
  X(nvrtcGetPTXSize)            \
  X(nvrtcGetPTX)

#define KILN_CUDA_DECLARE_ENTRY(name) decltype(&::name) name = nullptr;

// The driver's entry points. `error` is empty when every one was found and cuInit succeeded;
// otherwise it says why CUDA cannot run here and the entries must not be called.
struct DriverApi {
  KILN_CUDA_DRIVER_FUNCTIONS(KILN_CUDA_DECLARE_ENTRY)
  // cuEventElapsedTime_v2 (drivers and headers for CUDA 12.8 and newer), else the first version,
  // which takes the same arguments: named apart, since cuda.h renames the function by macro only
  // from 12.8 on.
  CUresult (*event_elapsed_time)(float* milliseconds, CUevent start, CUevent end) = nullptr;
  KILN_CUDA_GRAPH_FUNCTIONS(KILN_CUDA_DECLARE_ENTRY)
  bool graphs = false;  // every graph entry point was found
  std::string error;
  std::string library;  // the file loaded
  int version = 0;      // cuDriverGetVersion: 13000 for CUDA 13.0
};

struct NvrtcApi {
  KILN_NVRTC_FUNCTIONS(KILN_CUDA_DECLARE_ENTRY)
  std::string error;
  std::string library;
  int major = 0, minor = 0;
};

#undef KILN_CUDA_DECLARE_ENTRY

// Loaded (and cuInit called) once per process. KILN_CUDA_DRIVER names another file than
// libcuda.so.1 (tests point it at the toolkit's stub); KILN_NVRTC another libnvrtc.
const DriverApi& driver();
const NvrtcApi& nvrtc();

// "CUDA_ERROR_OUT_OF_MEMORY (2): out of memory", from the driver when it is loaded.
std::string cu_error_text(CUresult status);

// A call's text without the table it went through: "cuMemAlloc_v2(&pointer, nbytes)" for
// "driver().cuMemAlloc_v2(&pointer, nbytes)" (also "nvrtc().", "cublas().", "api.").
std::string call_name(const char* call_text);

// The message for a failed call: "[cuda] <call_name> failed: <cu_error_text>".
std::string cu_failure(const char* call_text, CUresult status);

// Throws DeviceError (OutOfMemoryError for CUDA_ERROR_OUT_OF_MEMORY) unless status is success.
void check_cu(CUresult status, const char* call_text);
void check_nvrtc(nvrtcResult status, const char* call_text);
// Where nothing can be thrown (destructors, frees on their behalf): logs a failed call as a
// warning, with its name, rather than lose it.
void warn_cu(CUresult status, const char* call_text);
void warn_nvrtc(nvrtcResult status, const char* call_text);

// Deleters of the driver objects kiln owns: each releases its object through the loaded driver
// (or NVRTC), a failure logged with the call's text. Where a release needs the object's context
// current, its owner's owner makes it current first (CudaProgram, CudaGraph, CudaAllocator).
struct DestroyStream {
  void operator()(CUstream stream) const;
};
struct UnloadModule {
  void operator()(CUmodule module) const;
};
struct DestroyEvent {
  void operator()(CUevent event) const;
};
struct DestroyGraph {
  void operator()(CUgraph graph) const;
};
struct DestroyGraphExec {
  void operator()(CUgraphExec exec) const;
};
struct FreePinnedHost {
  void operator()(void* host) const;
};
struct DestroyNvrtcProgram {
  void operator()(nvrtcProgram program) const;
};

using OwnedStream = UniqueHandle<CUstream, DestroyStream>;
using OwnedModule = UniqueHandle<CUmodule, UnloadModule>;
using OwnedEvent = UniqueHandle<CUevent, DestroyEvent>;
using OwnedGraph = UniqueHandle<CUgraph, DestroyGraph>;
using OwnedGraphExec = UniqueHandle<CUgraphExec, DestroyGraphExec>;
using OwnedPinnedHost = UniqueHandle<void*, FreePinnedHost>;  // cuMemHostAlloc's
using OwnedNvrtcProgram = UniqueHandle<nvrtcProgram, DestroyNvrtcProgram>;

}  // namespace kiln::cuda

#define KILN_CU_CHECK(call) ::kiln::cuda::check_cu((call), #call)
#define KILN_CU_WARN(call) ::kiln::cuda::warn_cu((call), #call)
#define KILN_NVRTC_CHECK(call) ::kiln::cuda::check_nvrtc((call), #call)
#define KILN_NVRTC_WARN(call) ::kiln::cuda::warn_nvrtc((call), #call)
// The same through `checker(status, call_text)`, for any of the three libraries' statuses, where
// the checker adds what the driver cannot know: the kernel launched last (CudaStream::check), the
// kernel a call was for (KernelCheck), NVRTC's log for a failed compile.
#define KILN_CU_CHECK_WITH(checker, call) checker((call), #call)

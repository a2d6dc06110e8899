#include "devices/cuda/cuda_api.h"
#include "runtime/debug.h"

#include <dlfcn.h>

#include <kiln/error.h>

#include <cstdlib>
#include <string_view>
#include <vector>

namespace kiln::cuda {
namespace {

// Where NVRTC is when nothing else names it: the toolkit kiln was built with (CMake fills this
// in), then the loader's search path.
#ifndef KILN_NVRTC_BUILD_PATH
#define KILN_NVRTC_BUILD_PATH ""
#endif

// dlopen's handle for the process's life: the entry points are used until exit, and unloading a
// driver library while other threads may still call it gains nothing.
void* open_first(const std::vector<std::string>& candidates, std::string& opened,
                 std::string& errors) {
  for (const std::string& candidate : candidates) {
    if (candidate.empty()) continue;
    if (void* handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      opened = candidate;
      return handle;
    }
    const char* why = dlerror();
    errors += (errors.empty() ? "" : "; ") + std::string(why ? why : candidate.c_str());
  }
  return nullptr;
}

template <typename Function>
bool load_symbol(void* handle, const char* name, Function& function, std::string& missing) {
  function = reinterpret_cast<Function>(dlsym(handle, name));
  if (!function) missing += (missing.empty() ? "" : ", ") + std::string(name);
  return function != nullptr;
}

DriverApi load_driver() {
  DriverApi api;
  const char* requested = std::getenv("KILN_CUDA_DRIVER");
  std::string errors;
  void* handle =
      open_first({requested && *requested ? requested : "libcuda.so.1"}, api.library, errors);
  if (!handle) {
    api.error = "no NVIDIA driver: " + errors +
                " (libcuda.so.1 comes with the NVIDIA driver, not with the CUDA toolkit)";
    return api;
  }
  std::string missing;
#define KILN_CUDA_LOAD_ENTRY(name) load_symbol(handle, #name, api.name, missing);
  KILN_CUDA_DRIVER_FUNCTIONS(KILN_CUDA_LOAD_ENTRY)
#undef KILN_CUDA_LOAD_ENTRY
  std::string ignored;
  if (!load_symbol(handle, "cuEventElapsedTime_v2", api.event_elapsed_time, ignored))
    load_symbol(handle, "cuEventElapsedTime", api.event_elapsed_time, missing);
  std::string missing_graphs;
#define KILN_CUDA_LOAD_ENTRY(name) load_symbol(handle, #name, api.name, missing_graphs);
  KILN_CUDA_GRAPH_FUNCTIONS(KILN_CUDA_LOAD_ENTRY)
#undef KILN_CUDA_LOAD_ENTRY
  api.graphs = missing_graphs.empty();
  if (!missing.empty()) {
    api.error = "the NVIDIA driver in " + api.library + " is too old for kiln (it lacks " +
                missing + "); kiln's CUDA device needs a driver for CUDA " +
                std::to_string(CUDA_VERSION / 1000) + "." +
                std::to_string(CUDA_VERSION % 1000 / 10) + " or newer";
    return api;
  }
  const CUresult status = api.cuInit(0);
  if (status == CUDA_ERROR_STUB_LIBRARY) {
    api.error = api.library +
                " is the CUDA toolkit's stub library, not a driver (cuInit: "
                "CUDA_ERROR_STUB_LIBRARY): no NVIDIA driver is installed";
  } else if (status == CUDA_ERROR_NO_DEVICE) {
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    api.error = "the NVIDIA driver found no GPU (cuInit: CUDA_ERROR_NO_DEVICE" +
                std::string(visible ? "; CUDA_VISIBLE_DEVICES=" + std::string(visible) : "") + ")";
  } else if (status != CUDA_SUCCESS) {
    const char* name = nullptr;
    api.cuGetErrorName(status, &name);
    api.error = "cuInit(0) failed: " + std::string(name ? name : "error") + " (" +
                std::to_string(static_cast<int>(status)) + ")";
  } else if (api.cuDriverGetVersion(&api.version) != CUDA_SUCCESS) {
    api.error = "cuDriverGetVersion failed after cuInit succeeded";
  }
  return api;
}

NvrtcApi load_nvrtc() {
  NvrtcApi api;
  const char* requested = std::getenv("KILN_NVRTC");
  std::vector<std::string> candidates;
  if (requested && *requested) {
    candidates = {requested};
  } else {
    // The major version kiln's headers declare: NVRTC's API is stable within one. An older
    // driver runs only code from an NVRTC of its own major version or older, so where the
    // driver is older than those headers, its own version's NVRTC comes first.
    candidates = {"libnvrtc.so." + std::to_string(CUDA_VERSION / 1000), KILN_NVRTC_BUILD_PATH,
                  "libnvrtc.so"};
    const DriverApi& loaded = driver();
    if (loaded.error.empty() && loaded.version / 1000 < CUDA_VERSION / 1000) {
      // CUDA 11's soname carries its minor version too.
      const int major = loaded.version / 1000;
      candidates.insert(candidates.begin(),
                        "libnvrtc.so." + std::to_string(major) + (major == 11 ? ".2" : ""));
    }
  }
  std::string errors;
  void* handle = open_first(candidates, api.library, errors);
  if (!handle) {
    api.error = "NVRTC not found: " + errors +
                " (install the CUDA toolkit, or name libnvrtc.so in KILN_NVRTC)";
    return api;
  }
  std::string missing;
#define KILN_NVRTC_LOAD_ENTRY(name) load_symbol(handle, #name, api.name, missing);
  KILN_NVRTC_FUNCTIONS(KILN_NVRTC_LOAD_ENTRY)
#undef KILN_NVRTC_LOAD_ENTRY
  if (!missing.empty()) {
    api.error = api.library + " lacks " + missing + ": an NVRTC too old for kiln";
    return api;
  }
  if (api.nvrtcVersion(&api.major, &api.minor) != NVRTC_SUCCESS)
    api.error = api.library + ": nvrtcVersion failed";
  return api;
}

}  // namespace

const DriverApi& driver() {
  static const DriverApi api = load_driver();
  return api;
}

const NvrtcApi& nvrtc() {
  static const NvrtcApi api = load_nvrtc();
  return api;
}

std::string cu_error_text(CUresult status) {
  const DriverApi& api = driver();
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.cuGetErrorName) api.cuGetErrorName(status, &name);
  if (api.cuGetErrorString) api.cuGetErrorString(status, &text);
  return std::string(name ? name : "CUDA error") + " (" + std::to_string(static_cast<int>(status)) +
         ")" + (text ? std::string(": ") + text : "");
}

std::string call_name(const char* call_text) {
  std::string_view text = call_text;
  for (std::string_view table : {"driver().", "nvrtc().", "cublas().", "api."}) {
    if (text.substr(0, table.size()) == table) text.remove_prefix(table.size());
  }
  return std::string(text);
}

std::string cu_failure(const char* call_text, CUresult status) {
  return "[cuda] " + call_name(call_text) + " failed: " + cu_error_text(status);
}

void check_cu(CUresult status, const char* call_text) {
  if (status == CUDA_SUCCESS) return;
  const std::string message = cu_failure(call_text, status);
  if (status == CUDA_ERROR_OUT_OF_MEMORY) throw OutOfMemoryError(message);
  throw DeviceError(message);
}

void warn_cu(CUresult status, const char* call_text) {
  if (status == CUDA_SUCCESS) return;
  logger().warn("{} (while releasing; the error is not raised)", cu_failure(call_text, status));
}

namespace {

std::string nvrtc_failure(const char* call_text, nvrtcResult status) {
  const NvrtcApi& api = nvrtc();
  const char* text = api.nvrtcGetErrorString ? api.nvrtcGetErrorString(status) : nullptr;
  return "[cuda] " + call_name(call_text) + " failed: " + std::string(text ? text : "NVRTC error") +
         " (" + std::to_string(static_cast<int>(status)) + ")";
}

}  // namespace

void check_nvrtc(nvrtcResult status, const char* call_text) {
  if (status == NVRTC_SUCCESS) return;
  throw DeviceError(nvrtc_failure(call_text, status));
}

void warn_nvrtc(nvrtcResult status, const char* call_text) {
  if (status == NVRTC_SUCCESS) return;
  logger().warn("{} (while releasing; the error is not raised)", nvrtc_failure(call_text, status));
}

void DestroyStream::operator()(CUstream stream) const {
  KILN_CU_WARN(driver().cuStreamDestroy_v2(stream));
}

void UnloadModule::operator()(CUmodule module) const {
  KILN_CU_WARN(driver().cuModuleUnload(module));
}

void DestroyEvent::operator()(CUevent event) const {
  KILN_CU_WARN(driver().cuEventDestroy_v2(event));
}

void DestroyGraph::operator()(CUgraph graph) const {
  KILN_CU_WARN(driver().cuGraphDestroy(graph));
}

void DestroyGraphExec::operator()(CUgraphExec exec) const {
  KILN_CU_WARN(driver().cuGraphExecDestroy(exec));
}

void FreePinnedHost::operator()(void* host) const {
  KILN_CU_WARN(driver().cuMemFreeHost(host));
}

void DestroyNvrtcProgram::operator()(nvrtcProgram program) const {
  KILN_NVRTC_WARN(nvrtc().nvrtcDestroyProgram(&program));
}

}  // namespace kiln::cuda

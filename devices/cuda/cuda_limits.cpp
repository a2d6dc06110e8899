#include "devices/cuda/cuda_limits.h"

#include <dlfcn.h>
// The GEMM figures need cuBLAS's declarations; a toolkit without its development headers still
// builds the device, and the bench then says why there are none.
#if __has_include(<cublas_api.h>)
#include <cublas_api.h>
#define KILN_CUDA_HAS_CUBLAS_HEADERS 1
#endif

#include <kiln/error.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <vector>

#include "devices/cuda/cuda_api.h"
#include "runtime/debug.h"

namespace kiln::cuda {
namespace {

#ifdef KILN_CUDA_HAS_CUBLAS_HEADERS
#define KILN_CUBLAS_FUNCTIONS(X) \
  X(cublasCreate_v2)             \
  X(cublasDestroy_v2)            \
  X(cublasGetVersion_v2)         \
  X(cublasSetStream_v2)          \
  X(cublasSgemm_v2)

struct CublasApi {
#define KILN_CUBLAS_DECLARE_ENTRY(name) decltype(&::name) name = nullptr;
  KILN_CUBLAS_FUNCTIONS(KILN_CUBLAS_DECLARE_ENTRY)
#undef KILN_CUBLAS_DECLARE_ENTRY
  // Overloaded in C++ (a legacy cudaDataType computeType): the C signature, spelled out.
  using GemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                    int, const void*, const void*, cudaDataType, int, const void*,
                                    cudaDataType, int, const void*, void*, cudaDataType, int,
                                    cublasComputeType_t, cublasGemmAlgo_t);
  GemmEx cublasGemmEx = nullptr;
  std::string library;
  std::string error;
};

// cuBLAS for the bench only: where it is missing the GEMM figures are, and nothing else is.
const CublasApi& cublas() {
  static const CublasApi api = [] {
    CublasApi loaded;
    std::vector<std::string> candidates;
    if (const char* requested = std::getenv("KILN_CUBLAS"); requested && *requested)
      candidates.push_back(requested);
    const std::string soname = "libcublas.so." + std::to_string(CUDA_VERSION / 1000);
    candidates.push_back(soname);
    // Beside NVRTC: the toolkit's lib64 is often not on the loader's path.
    if (std::filesystem::path(nvrtc().library).is_absolute())
      candidates.push_back(
          (std::filesystem::path(nvrtc().library).parent_path() / soname).string());
    void* handle = nullptr;
    for (const std::string& candidate : candidates) {
      if ((handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL))) {
        loaded.library = candidate;
        break;
      }
    }
    if (!handle) {
      loaded.error = "cuBLAS not found (" + soname + ")";
      return loaded;
    }
    std::string missing;
#define KILN_CUBLAS_LOAD_ENTRY(name)                                           \
  loaded.name = reinterpret_cast<decltype(loaded.name)>(dlsym(handle, #name)); \
  if (!loaded.name) missing += (missing.empty() ? "" : ", ") + std::string(#name);
    KILN_CUBLAS_FUNCTIONS(KILN_CUBLAS_LOAD_ENTRY)
    KILN_CUBLAS_LOAD_ENTRY(cublasGemmEx)
#undef KILN_CUBLAS_LOAD_ENTRY
    if (!missing.empty()) loaded.error = loaded.library + " lacks " + missing;
    return loaded;
  }();
  return api;
}

std::string cublas_failure(cublasStatus_t status, const char* call) {
  return "[cuda] " + call_name(call) + " failed: cuBLAS status " +
         std::to_string(static_cast<int>(status));
}

void check_cublas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) throw DeviceError(cublas_failure(status, call));
}

void warn_cublas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS)
    logger().warn("{} (while releasing; the error is not raised)", cublas_failure(status, call));
}

#define KILN_CUBLAS_CHECK(call) check_cublas((call), #call)
#define KILN_CUBLAS_WARN(call) warn_cublas((call), #call)

// The cuBLAS handle's deleter; a failure is logged, as from any destructor.
struct DestroyCublas {
  void operator()(cublasHandle_t handle) const {
    KILN_CUBLAS_WARN(cublas().cublasDestroy_v2(handle));
  }
};
using OwnedCublas = UniqueHandle<cublasHandle_t, DestroyCublas>;

#endif  // KILN_CUDA_HAS_CUBLAS_HEADERS

// The shortest of `repeat` timed runs of `run` after one warm-up, in seconds, timed with events.
double best_time(CUstream stream, const std::function<void()>& run, int repeat = 5) {
  CUevent created = nullptr;
  KILN_CU_CHECK(driver().cuEventCreate(&created, CU_EVENT_DEFAULT));
  const OwnedEvent start(created);
  KILN_CU_CHECK(driver().cuEventCreate(&created, CU_EVENT_DEFAULT));
  const OwnedEvent end(created);
  double best = 0;
  run();
  for (int index = 0; index < repeat; ++index) {
    KILN_CU_CHECK(driver().cuEventRecord(start.get(), stream));
    run();
    KILN_CU_CHECK(driver().cuEventRecord(end.get(), stream));
    KILN_CU_CHECK(driver().cuEventSynchronize(end.get()));
    float milliseconds = 0;
    KILN_CU_CHECK(driver().event_elapsed_time(&milliseconds, start.get(), end.get()));
    const double seconds = milliseconds * 1e-3;
    if (index == 0 || seconds < best) best = seconds;
  }
  return best;
}

// Random values in [-1, 1) (never time on zeros: they can run faster than real data).
std::vector<float> random_floats(size_t count) {
  std::mt19937 generator(7);
  std::uniform_real_distribution<float> distribution(-1.0f, 1.0f);
  std::vector<float> values(count);
  for (float& value : values) value = distribution(generator);
  return values;
}

#ifdef KILN_CUDA_HAS_CUBLAS_HEADERS
uint16_t to_bfloat16(float value) {
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return static_cast<uint16_t>((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);  // nearest even
}

void measure_gemms(CUstream stream, CudaAllocator& allocator, int side, DeviceLimits& limits) {
  const CublasApi& api = cublas();
  if (!api.error.empty()) {
    limits.notes += api.error + "; ";
    return;
  }
  const size_t count = static_cast<size_t>(side) * side;
  const double flops = 2.0 * side * side * side;
  cublasHandle_t created = nullptr;
  KILN_CUBLAS_CHECK(api.cublasCreate_v2(&created));
  const OwnedCublas handle(created);
  KILN_CUBLAS_CHECK(api.cublasSetStream_v2(handle.get(), stream));
  int version = 0;
  KILN_CUBLAS_CHECK(api.cublasGetVersion_v2(handle.get(), &version));
  limits.gemm_library =
      "cuBLAS " + std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100);
  const std::vector<float> values = random_floats(count);
  {
    const OwnedDeviceMemory a = allocate_owned(allocator, count * 4),
                            b = allocate_owned(allocator, count * 4),
                            c = allocate_owned(allocator, count * 4);
    allocator.copy_in(a.get(), values.data(), count * 4);
    allocator.copy_in(b.get(), values.data(), count * 4);
    const float alpha = 1, beta = 0;
    limits.gemm_float32_flops =
        flops / best_time(stream, [&] {
          KILN_CUBLAS_CHECK(api.cublasSgemm_v2(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, side, side,
                                               side, &alpha, static_cast<const float*>(a.get()),
                                               side, static_cast<const float*>(b.get()), side,
                                               &beta, static_cast<float*>(c.get()), side));
        });
  }
  {
    std::vector<uint16_t> halves(count);
    std::transform(values.begin(), values.end(), halves.begin(), to_bfloat16);
    const OwnedDeviceMemory a = allocate_owned(allocator, count * 2),
                            b = allocate_owned(allocator, count * 2),
                            c = allocate_owned(allocator, count * 2);
    allocator.copy_in(a.get(), halves.data(), count * 2);
    allocator.copy_in(b.get(), halves.data(), count * 2);
    const float alpha = 1, beta = 0;
    limits.gemm_bfloat16_flops =
        flops / best_time(stream, [&] {
          KILN_CUBLAS_CHECK(api.cublasGemmEx(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, side, side,
                                             side, &alpha, a.get(), CUDA_R_16BF, side, b.get(),
                                             CUDA_R_16BF, side, &beta, c.get(), CUDA_R_16BF, side,
                                             CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        });
  }
}

#else
void measure_gemms(CUstream, CudaAllocator&, int, DeviceLimits& limits) {
  limits.notes += "kiln was built without cuBLAS's headers (cublas_api.h): no GEMM figures; ";
}
#endif  // KILN_CUDA_HAS_CUBLAS_HEADERS

}  // namespace

DeviceLimits measure_cuda_limits(CudaStream& cuda_stream, CudaAllocator& allocator,
                                 size_t copy_bytes, int gemm_side) {
  DeviceLimits limits;
  cuda_stream.make_current();
  const CUstream stream = cuda_stream.get();
  {
    const OwnedDeviceMemory source = allocate_owned(allocator, copy_bytes),
                            destination = allocate_owned(allocator, copy_bytes);
    const std::vector<float> values = random_floats(copy_bytes / 4);
    allocator.copy_in(source.get(), values.data(), values.size() * 4);
    limits.copy_bytes_per_second =
        2.0 * static_cast<double>(copy_bytes) / best_time(stream, [&] {
          KILN_CU_CHECK(driver().cuMemcpyDtoDAsync_v2(
              device_pointer(destination.get()), device_pointer(source.get()), copy_bytes, stream));
        });
  }
  try {
    measure_gemms(stream, allocator, gemm_side, limits);
  } catch (const Error& error) {
    limits.notes += std::string("cuBLAS GEMM: ") + error.what() + "; ";
  }
  return limits;
}

}  // namespace kiln::cuda

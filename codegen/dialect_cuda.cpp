// The CUDA C++ dialect, compiled at run time by NVRTC. Kernels are `extern "C"` (unmangled names
// for cuModuleGetFunction), one thread per work item over 3-D ids, workgroups are thread blocks
// with `__shared__` arrays, and the block size the kernel was lowered for is promised to the
// compiler with __launch_bounds__. Compile with --fmad=false: a * b + c then rounds twice, as on
// the CPU device (-ffp-contract=off), so devices agree bit for bit where rounding is correct.

#include "codegen/dialect.h"
#include "codegen/linear.h"

namespace kiln {
namespace {

const char* const kHalfMacros = R"(#define KILN_FN static __device__ __forceinline__
#define kiln_u32 unsigned int
#define kiln_u16 unsigned short
#define KILN_U32(x) ((unsigned int)(x))
#define KILN_U16(x) ((unsigned short)(x))
#define KILN_FLOAT(x) ((float)(x))
#define KILN_AS_FLOAT(x) __uint_as_float(x)
#define KILN_AS_BITS(x) __float_as_uint(x)
#define KILN_AS_DOUBLE(x) __longlong_as_double((long long)(x))
#define KILN_AS_BITS64(x) ((unsigned long long)__double_as_longlong(x))
)";

const char* const kIndexHelpers =
    R"(static __device__ __forceinline__ long long kiln_floordiv(long long a, long long b) { long long q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }
static __device__ __forceinline__ long long kiln_floormod(long long a, long long b) { return a - kiln_floordiv(a, b) * b; }
)";

Dialect make_cuda_dialect() {
  Dialect dialect;
  dialect.name = "CUDA";
  dialect.prelude = std::string(kHalfMacros) + kHalfConversionSource + kIndexHelpers;
  dialect.launch_style = Dialect::LaunchStyle::kGlobalId;
  dialect.signature = [](const LinearProgram& program, const Dialect& self) {
    int64_t block = 1;
    for (const LaunchDim& launch : program.launch) block *= launch.local;
    std::string text = "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(block) +
                       ") " + program.name + "(";
    for (size_t param = 0; param < program.params.size(); ++param) {
      const KernelParam& info = program.params[param];
      // Scratch is written by every workgroup and read by the last: volatile, so that those
      // reads go to memory rather than to a cache that may hold it from before.
      const std::string qualifier = info.scratch ? "volatile " : info.is_output ? "" : "const ";
      text += std::string(param > 0 ? ", " : "") + qualifier + self.type_name(info.dtype) +
              "* __restrict__ " + param_name(param);
    }
    // Variables follow the buffers, as 64-bit integers.
    for (const Sym& variable : program.variables)
      text += ", const long long " + variable.var_name();
    return text + ") {\n";
  };
  dialect.launch_id = [](LaunchId kind, int dim) {
    const std::string axis = dim == 0 ? "x" : dim == 1 ? "y" : "z";
    if (kind == LaunchId::Local) return "(long long)threadIdx." + axis;
    if (kind == LaunchId::Group) return "(long long)blockIdx." + axis;
    return "((long long)blockIdx." + axis + " * blockDim." + axis + " + threadIdx." + axis + ")";
  };
  dialect.local_qualifier = "__shared__ ";
  dialect.barrier = "__syncthreads();";
  dialect.global_fence = "__threadfence();";
  dialect.atomic_increment = [](const std::string& counter) {
    return "atomicAdd((unsigned int*)" + counter + ", 1u)";
  };
  dialect.index_type = "long long";
  // Signed overflow is undefined in C++ and NVRTC's optimiser relies on it, as OpenCL C's does.
  dialect.signed_overflow_wraps = false;
  dialect.type_names = c_dialect().type_names;  // C's types; bool is stored as a byte
  dialect.math_prefix = "";
  dialect.float32_math_suffix = "f";
  // NVRTC has no <math.h>: the specials are bit patterns.
  dialect.float32_infinity = "__int_as_float(0x7f800000)";
  dialect.float32_nan = "__int_as_float(0x7fffffff)";
  dialect.float64_infinity = "__longlong_as_double(0x7ff0000000000000LL)";
  dialect.float64_nan = "__longlong_as_double(0x7fffffffffffffffLL)";
  use_plain_element_access(dialect);
  // float4 and friends are read in one 16-byte access, which must be aligned: blocks from
  // cuMemAlloc (and subregions) are 256-byte aligned, so the first index must be a multiple of
  // the width.
  dialect.vector_widths = {4, 2};
  dialect.vector_loads_aligned = true;
  dialect.vector_type = [](DType dtype, int width) {
    return vector_element_name(dtype) + std::to_string(width);
  };
  dialect.vector_load = [](DType dtype, int width, const std::string& buffer,
                           const std::string& index) {
    return "(*(const " + vector_element_name(dtype) + std::to_string(width) + "*)(" + buffer +
           " + " + index + "))";
  };
  dialect.vector_lane = [](const std::string& value, int lane) {
    return value + "." + std::string(1, "xyzw"[lane]);
  };
  dialect.vector_store = [](DType dtype, const std::string& buffer, const std::string& index,
                            const std::vector<std::string>& values) {
    const std::string type = vector_element_name(dtype) + std::to_string(values.size());
    std::string lanes;
    for (const std::string& value : values) lanes += (lanes.empty() ? "" : ", ") + value;
    return "*(" + type + "*)(" + buffer + " + " + index + ") = make_" + type + "(" + lanes + ")";
  };
  dialect.word_buffer = [](const std::string& buffer, bool writable) {
    return std::string("((") + (writable ? "" : "const ") + "unsigned int*)" + buffer + ")";
  };
  // Tensor cores through NVRTC's WMMA builtins (what <mma.h> wraps, so no header is needed):
  // 16x16x16, float16 (sm_70 on) or bfloat16 (sm_80 on) inputs, float32 accumulators. A is
  // column-major, B row-major: the builtins' layout argument is 1 and 0, and the product's is 2.
  dialect.fragment_alignment = "__align__(32) ";
  dialect.fragment_load = [](DType dtype, bool matrix_b, const std::string& name,
                             const std::string& address, int64_t stride) {
    const bool bfloat16 = dtype == dtypes::bfloat16;
    const std::string builtin =
        std::string(bfloat16 ? "__mma_bf16" : "__hmma") + "_m16n16k16_ld_" + (matrix_b ? "b" : "a");
    // Registers of 2 halves each: a bfloat16 fragment is 8 elements per work item, a float16
    // one 16 (<mma.h>'s fragment sizes).
    return "int " + name + "[" + (bfloat16 ? "4" : "8") + "]; " + builtin + "(" + name +
           ", (const int*)" + address + ", " + std::to_string(stride) + ", " +
           (matrix_b ? "0" : "1") + ");";
  };
  dialect.mma = [](DType dtype, const std::string& accumulator, const std::string& a,
                   const std::string& b) {
    const std::string builtin =
        dtype == dtypes::bfloat16 ? "__mma_bf16_m16n16k16_mma_f32" : "__hmma_m16n16k16_mma_f32f32";
    return builtin + "(" + accumulator + ", " + a + ", " + b + ", " + accumulator + ", 2, 0);";
  };
  dialect.fragment_store = [](const std::string& address, const std::string& accumulator,
                              int64_t stride) {
    return "__hmma_m16n16k16_st_c_f32((float*)" + address + ", " + accumulator + ", " +
           std::to_string(stride) + ", 0);";
  };
  return dialect;
}

}  // namespace

const Dialect& cuda_dialect() {
  static const Dialect dialect = make_cuda_dialect();
  return dialect;
}

}  // namespace kiln

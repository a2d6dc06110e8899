// The OpenCL C dialect: one work item per flat output index, buffers in the __global address
// space. OpenCL C differs from C in spellings the renderer takes from here: `long` is 64 bits,
// math functions are overloaded (no f suffix, no __builtin_ prefix), and the float specials are
// the INFINITY and NAN macros.

#include "codegen/dialect.h"
#include "codegen/linear.h"

namespace kiln {
namespace {

// Contraction off: a * b + c rounds twice, as on the CPU device (-ffp-contract=off), so devices
// agree bit for bit on the same kernel where the driver rounds correctly.
const char* const kContractOff = "#pragma OPENCL FP_CONTRACT OFF\n";
const char* const kEnableFp64 = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";

// Helpers are plain (not inline) functions: OpenCL C 1.1 has no `static`, and C99 `inline` alone
// would need an external definition. bfloat16 is stored as ushort and converted with the shared
// integer conversions: exact storage emulation, computed in float like every half type. float16
// buffers are read and written with vload_half/vstore_half_rte; a computed value is rounded to
// float16 with the shared conversions (a `half` variable needs cl_khr_fp16).
const char* const kHalfMacros = R"(#define KILN_FN
#define kiln_u32 uint
#define kiln_u16 ushort
#define KILN_U32(x) ((uint)(x))
#define KILN_U16(x) ((ushort)(x))
#define KILN_FLOAT(x) ((float)(x))
#define KILN_AS_FLOAT(x) as_float(x)
#define KILN_AS_BITS(x) as_uint(x)
#define KILN_AS_DOUBLE(x) as_double(x)
#define KILN_AS_BITS64(x) as_ulong(x)
)";

const char* const kIndexHelpers =
    R"(long kiln_floordiv(long a, long b) { long q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }
long kiln_floormod(long a, long b) { return a - kiln_floordiv(a, b) * b; }
)";

// tanh(+-inf) must be exactly +-1 (C99 and OpenCL both say so), and past 9.1 (float) or 19.1
// (double) the correctly rounded tanh is +-1; PoCL's float tanh stops at 0.99999994, so
// tanh(x).cast(int32) differed from the CPU. A macro over the overloaded builtins serves float and
// double alike (OpenCL C cannot overload its own functions); its argument is always a value's
// name, so evaluating it more than once is free.
const char* const kTanh =
    "#define kiln_tanh(x) (fabs(x) > (sizeof(x) == 4 ? 9.1f : 19.1f) ? sign(x) : tanh(x))\n";

}  // namespace

Dialect opencl_dialect(bool has_fp64, bool vector_loads) {
  Dialect dialect;
  dialect.name = "OpenCL";
  dialect.prelude = kContractOff;
  if (has_fp64) dialect.prelude += kEnableFp64;
  dialect.prelude += std::string(kHalfMacros) + kHalfConversionSource + kIndexHelpers;
  dialect.prelude += kTanh;
  dialect.launch_style = Dialect::LaunchStyle::kGlobalId;
  dialect.signature = [](const LinearProgram& program, const Dialect& self) {
    std::string text = "__kernel void " + program.name + "(";
    for (size_t param = 0; param < program.params.size(); ++param) {
      const KernelParam& info = program.params[param];
      // Scratch is written by every workgroup and read by the last: volatile, so that those
      // reads go to memory.
      const std::string qualifier = info.scratch ? "volatile " : info.is_output ? "" : "const ";
      text += std::string(param > 0 ? ", " : "") + "__global " + qualifier +
              self.type_name(info.dtype) + "* restrict " + param_name(param);
    }
    // Variables follow the buffers, as 64-bit integers.
    for (const Sym& variable : program.variables) text += ", const long " + variable.var_name();
    return text + ") {\n";
  };
  // The ids are size_t; the index arithmetic is signed 64-bit, as in the C dialect.
  dialect.launch_id = [](LaunchId kind, int dim) {
    const char* function = kind == LaunchId::Global  ? "(long)get_global_id("
                           : kind == LaunchId::Local ? "(long)get_local_id("
                                                     : "(long)get_group_id(";
    return function + std::to_string(dim) + ")";
  };
  dialect.local_qualifier = "__local ";
  dialect.barrier = "barrier(CLK_LOCAL_MEM_FENCE);";
  dialect.global_fence = "mem_fence(CLK_GLOBAL_MEM_FENCE);";
  dialect.atomic_increment = [](const std::string& counter) {
    return "atomic_inc(" + counter + ")";
  };
  dialect.index_type = "long";
  // OpenCL C has no -fwrapv: signed overflow is undefined, and compilers use that (PoCL turns
  // `(a + b) < a` into `b < 0`).
  dialect.signed_overflow_wraps = false;
  dialect.int64_literal_suffix = "L";
  dialect.uint64_literal_suffix = "UL";
  // bool is stored as uchar: OpenCL C forbids bool in kernel arguments and its size is unspecified.
  // float16 buffers are `half` pointers, which core OpenCL C allows for vload_half/vstore_half.
  dialect.type_names = {"uchar", "char",  "short", "int",    "long",  "uchar", "ushort",
                        "uint",  "ulong", "half",  "ushort", "float", "double"};
  dialect.half_to_float = "kiln_half_to_float";
  dialect.float_to_half = "kiln_float_to_half";
  dialect.bfloat16_to_float = "kiln_bf16_to_float";
  dialect.float_to_bfloat16 = "kiln_float_to_bf16";
  dialect.math_prefix = "";
  dialect.float32_math_suffix = "";
  dialect.math_helpers = {"tanh"};
  dialect.reduce_loop_pragma = "";
  dialect.float32_infinity = "INFINITY";
  dialect.float32_nan = "NAN";
  dialect.float64_infinity = "((double)INFINITY)";
  dialect.float64_nan = "((double)NAN)";
  use_plain_element_access(dialect);
  // vloadn reads n elements at any element-aligned address.
  if (vector_loads) dialect.vector_widths = {8, 4, 2};
  dialect.vector_type = [](DType dtype, int width) {
    return vector_element_name(dtype) + std::to_string(width);
  };
  dialect.vector_load = [](DType, int width, const std::string& buffer, const std::string& index) {
    return "vload" + std::to_string(width) + "(0, " + buffer + " + " + index + ")";
  };
  dialect.vector_lane = [](const std::string& value, int lane) {
    return value + ".s" + std::string(1, "0123456789abcdef"[lane]);
  };
  dialect.vector_store = [](DType dtype, const std::string& buffer, const std::string& index,
                            const std::vector<std::string>& values) {
    std::string lanes;
    for (const std::string& value : values) lanes += (lanes.empty() ? "" : ", ") + value;
    const std::string width = std::to_string(values.size());
    return "vstore" + width + "((" + vector_element_name(dtype) + width + ")(" + lanes + "), 0, " +
           buffer + " + " + index + ")";
  };
  dialect.word_buffer = [](const std::string& buffer, bool writable) {
    return std::string("((") + (writable ? "" : "const ") + "__global uint*)" + buffer + ")";
  };
  const auto plain_load = dialect.load;
  const auto plain_store = dialect.store;
  dialect.load = [plain_load](DType dtype, const std::string& buffer, const std::string& index) {
    if (dtype == dtypes::float16) return "vload_half(" + index + ", " + buffer + ")";
    return plain_load(dtype, buffer, index);
  };
  dialect.store = [plain_store](DType dtype, const std::string& buffer, const std::string& index,
                                const std::string& value) {
    if (dtype == dtypes::float16)
      return "vstore_half_rte(" + value + ", " + index + ", " + buffer + ")";
    return plain_store(dtype, buffer, index, value);
  };
  return dialect;
}

}  // namespace kiln

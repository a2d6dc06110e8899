// The OpenCL C dialect: one work item per flat output index, buffers in the __global address
// space. OpenCL C differs from C in spellings the renderer takes from here: `long` is 64 bits,
// math functions are overloaded (no f suffix, no __builtin_ prefix), and the float specials are
// the INFINITY and NAN macros.

#include "codegen/dialect.h"

namespace kiln {
namespace {

// Contraction off: a * b + c rounds twice, as on the CPU device (-ffp-contract=off), so devices
// agree bit for bit on the same kernel where the driver rounds correctly.
const char* const kContractOff = "#pragma OPENCL FP_CONTRACT OFF\n";
const char* const kEnableFp16 = "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n";
const char* const kEnableFp64 = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";

// Plain (not inline) functions: OpenCL C 1.1 has no `static`, and C99 `inline` alone would need
// an external definition. bfloat16 is stored as ushort and converted with integer operations,
// as in the C prelude: exact storage emulation, computed in float like every half type.
const char* const kHelpers =
    R"(float kiln_bf16_to_float(ushort b) { return as_float((uint)b << 16); }
ushort kiln_float_to_bf16(float value) {
  uint bits = as_uint(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return (ushort)((bits >> 16) | 0x40u);
  return (ushort)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}
long kiln_floordiv(long a, long b) { long q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }
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

Dialect opencl_dialect(bool has_fp16, bool has_fp64) {
  Dialect dialect;
  dialect.name = "OpenCL";
  dialect.prelude = kContractOff;
  if (has_fp16) dialect.prelude += kEnableFp16;
  if (has_fp64) dialect.prelude += kEnableFp64;
  dialect.prelude += kHelpers;
  dialect.prelude += kTanh;
  dialect.launch_style = Dialect::LaunchStyle::kGlobalId;
  dialect.kernel_prefix = "__kernel void";
  dialect.buffer_qualifier = "__global ";
  // get_global_id returns size_t; the index arithmetic is signed 64-bit, as in the C dialect.
  dialect.global_index_expression = "(long)get_global_id(0)";
  // A power of two no larger than any device's smallest useful work-group: a launch of a multiple
  // of it always splits into equal power-of-two groups, so the device launches it exactly.
  dialect.unguarded_multiple = 64;
  dialect.index_type = "long";
  // OpenCL C has no -fwrapv: signed overflow is undefined, and compilers use that (PoCL turns
  // `(a + b) < a` into `b < 0`).
  dialect.signed_overflow_wraps = false;
  dialect.int64_literal_suffix = "L";
  dialect.uint64_literal_suffix = "UL";
  // bool is stored as uchar: OpenCL C forbids bool in kernel arguments and its size is unspecified.
  // float16 is `half` (usable only with cl_khr_fp16; the device reports it unsupported otherwise).
  dialect.type_names = {"uchar", "char",  "short", "int",    "long",  "uchar", "ushort",
                        "uint",  "ulong", "half",  "ushort", "float", "double"};
  dialect.half_to_float = "convert_float";
  dialect.float_to_half = "convert_half_rte";
  dialect.bfloat16_to_float = "kiln_bf16_to_float";
  dialect.float_to_bfloat16 = "kiln_float_to_bf16";
  dialect.math_prefix = "";
  dialect.float32_math_suffix = "";
  dialect.math_overrides = {{"tanh", "kiln_tanh"}};
  dialect.reduce_loop_pragma = "";
  dialect.unroll_pragma = "#pragma unroll";
  // Eight float lanes fill an AVX2 register (PoCL on a CPU) and hide add latency on a GPU.
  dialect.reduction_lanes = 8;
  dialect.restrict_keyword = "restrict";
  dialect.float32_infinity = "INFINITY";
  dialect.float32_nan = "NAN";
  dialect.float64_infinity = "((double)INFINITY)";
  dialect.float64_nan = "((double)NAN)";
  return dialect;
}

}  // namespace kiln

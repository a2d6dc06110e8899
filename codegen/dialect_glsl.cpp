// The GLSL 4.50 compute dialect for Vulkan, compiled to SPIR-V by glslang.
//
// GLSL differs from C in more than spelling, and each difference is a hook or table entry here:
// casts are constructors (`int8_t(x)`); a value initialised at run time cannot be `const`; bools
// have their own operators (||, &&, ^^, no ordering) and are stored as bytes; buffers are std430
// blocks declared before `main`, bound in parameter order; `shared` arrays live outside `main`;
// the workgroup size is part of the shader (local_size_x/y/z); math is overloaded and lacks fmod
// and erf, and its pow is undefined for negative bases; float64 has arithmetic, sqrt and rounding
// but no transcendental functions. Subscripts are 32-bit.

#include "codegen/dialect.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "codegen/glsl_math.h"
#include "codegen/linear.h"

namespace kiln {
namespace {

const char* const kHeader = R"(#version 450
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_16bit_storage : require
#define KILN_FN
#define kiln_u32 uint
#define kiln_u16 uint16_t
#define KILN_U32(x) uint(x)
#define KILN_U16(x) uint16_t(x)
#define KILN_FLOAT(x) float(x)
#define KILN_AS_FLOAT(x) uintBitsToFloat(x)
#define KILN_AS_BITS(x) floatBitsToUint(x)
#define KILN_AS_DOUBLE(x) kiln_bits_double(x)
#define KILN_AS_BITS64(x) kiln_double_bits(x)
)";

// C semantics where GLSL's differ or are missing (between the float32 and float64 math
// libraries, glsl_math.h, which hold fmod too). pow takes C's special cases, then
// kiln_pow_positive; a zero's sign is taken from its bits alone, since a device that flushes
// subnormals (NVIDIA's) finds a subnormal == 0 but keeps its mantissa bits. NVIDIA's compiler
// divides as a * (1 / b): for |b| > 2^126 the reciprocal is subnormal and flushed, and a / b
// came out 0 where it is as large as 2^-126 a, so kiln_div scales both operands by 1/4 first
// (the divisor through its exponent bits: a compiler that sees (a / 4) / (b / 4) folds it back).
// Vulkan allows a quotient 2.5 ulp off (NVIDIA's 6 / 3.734 was 2 off): one correction step with
// the exact remainder fma(-q, b, a) brings it within kiln's 1 ulp (skipped where q is 0, infinite
// or NaN, or 1 / b overflows: a subnormal b on a device that keeps subnormals). A dividend past
// 2^126 is taken a quarter and the quotient times 4 (exact): where the driver's fma does not fuse
// (lavapipe's), q * b near FLT_MAX rounded to inf and made FLT_MAX / 9.36 -inf.
// Signed `%` is undefined for negative operands in GLSL, so index arithmetic divides and multiplies
// back.
const char* const kHelpers =
    R"(uint64_t kiln_double_bits(double x) { uvec2 words = unpackDouble2x32(x); return (uint64_t(words.y) << 32) | uint64_t(words.x); }
double kiln_bits_double(uint64_t bits) { return packDouble2x32(uvec2(uint(bits & 0xfffffffful), uint(bits >> 32))); }
float kiln_pow(float a, float b) {
  const float inf = uintBitsToFloat(0x7f800000u);
  if (b == 0.0 || a == 1.0) return 1.0;
  if (isnan(a) || isnan(b)) return a + b;
  bool b_integer = trunc(b) == b;
  bool b_odd = b_integer && abs(b) < 16777216.0 && (int(abs(b)) & 1) == 1;
  if (isinf(b)) return abs(a) == 1.0 ? 1.0 : ((abs(a) > 1.0) == (b > 0.0) ? inf : 0.0);
  if (a == 0.0) return b < 0.0 ? (b_odd ? uintBitsToFloat((floatBitsToUint(a) & 0x80000000u) | 0x7f800000u) : inf) : (b_odd ? a : 0.0);
  if (isinf(a)) { float magnitude = b > 0.0 ? inf : 0.0; return a < 0.0 && b_odd ? -magnitude : magnitude; }
  if (a < 0.0) { if (!b_integer) return uintBitsToFloat(0x7fc00000u); float magnitude = kiln_pow_positive(-a, b); return b_odd ? -magnitude : magnitude; }
  return kiln_pow_positive(a, b);
}
float kiln_div(float a, float b) {
  precise float n = a, d = b, scale = 1.0;
  if (abs(d) > 8.50705917e37 && !isinf(d)) { n = n * 0.25; d = uintBitsToFloat(floatBitsToUint(d) - 0x01000000u); }
  if (abs(n) > 8.50705917e37 && !isinf(n)) { n = n * 0.25; scale = 4.0; }
  precise float q = n / d;
  precise float y = 1.0 / d;
  if (isinf(q) || isnan(q) || q == 0.0 || isinf(y)) return q * scale;
  precise float r = fma(-q, d, n);
  precise float refined = fma(r, y, q);
  return refined * scale;
}
double kiln_div(double a, double b) { return a / b; }
bool kiln_lt(int a, int b) { return a < b; }
bool kiln_lt(int64_t a, int64_t b) { ivec2 x = unpackInt2x32(a), y = unpackInt2x32(b); return x.y < y.y || (x.y == y.y && uint(x.x) < uint(y.x)); }
int kiln_floordiv(int a, int b) { int q = a / b; return (a - q * b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }
int kiln_floormod(int a, int b) { return a - kiln_floordiv(a, b) * b; }
int64_t kiln_floordiv(int64_t a, int64_t b) { int64_t q = a / b; return (a - q * b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }
int64_t kiln_floormod(int64_t a, int64_t b) { return a - kiln_floordiv(a, b) * b; }
)";

const char* const kAxes[3] = {"x", "y", "z"};

Dialect make_glsl_dialect() {
  Dialect dialect;
  dialect.name = "GLSL";
  dialect.prelude =
      std::string(kHeader) + kHalfConversionSource + kGlslFloatMath + kHelpers + kGlslDoubleMath;
  dialect.launch_style = Dialect::LaunchStyle::kGlobalId;
  dialect.signature = [](const LinearProgram& program, const Dialect& self) {
    // The workgroup size is the kernel's own, and also specialization constants 0, 1 and 2, so
    // that a device can build the pipeline for the size it launches with.
    std::string text = "layout(";
    for (int dim = 0; dim < 3; ++dim) {
      const int64_t local = dim < static_cast<int>(program.launch.size())
                                ? program.launch[static_cast<size_t>(dim)].local
                                : 1;
      text += std::string(dim > 0 ? ", " : "") + "local_size_" + kAxes[dim] + " = " +
              std::to_string(local) + ", local_size_" + kAxes[dim] + "_id = " + std::to_string(dim);
    }
    text += ") in;\n";
    // Push constants: zeros the compiler cannot see (Dialect::float32_zero, and in signed
    // comparisons), then the kernel's variables, each an int64 the device pushes with every
    // launch, read as an ivec2 so that only a kernel with a variable past 2^31 needs int64
    // arithmetic (shaderInt64).
    const size_t pushed = std::min<size_t>(program.variables.size(), kGlslPushVariables);
    text += "layout(push_constant) uniform KilnPush { float zero; int izero;";
    for (size_t at = 0; at < pushed; ++at)
      text += " ivec2 " + program.variables[at].var_name() + ";";
    text += " } kiln_push;\n";
    if (program.variables.size() > pushed) {
      text += "layout(std430, binding = " + std::to_string(program.params.size()) +
              ") restrict readonly buffer KilnVariables { ivec2 kiln_variables[]; };\n";
    }
    for (size_t param = 0; param < program.params.size(); ++param) {
      const KernelParam& info = program.params[param];
      // Scratch is written by every workgroup and read by the last: coherent between them.
      const std::string qualifier = info.scratch     ? "coherent "
                                    : info.is_output ? "restrict "
                                                     : "restrict readonly ";
      text += "layout(std430, binding = " + std::to_string(param) + ") " + qualifier +
              "buffer KilnBuffer" + std::to_string(param) + " { " + self.type_name(info.dtype) +
              " " + param_name(param) + "[]; };\n";
    }
    text += "void main() {\n";
    for (size_t at = 0; at < program.variables.size(); ++at) {
      const Sym& variable = program.variables[at];
      const std::string& name = variable.var_name();
      const std::string slot =
          at < pushed ? "kiln_push." + name : "kiln_variables[" + std::to_string(at - pushed) + "]";
      // GLSL's subscripts are 32-bit: a variable whose bound passes that range is held in 64
      // bits, and index_text's sym_text computes the expressions using it in 64 bits too.
      if (variable.vmax() > std::numeric_limits<int32_t>::max())
        text += "  int64_t " + name + " = packInt2x32(" + slot + ");\n";
      else
        text += "  int " + name + " = " + slot + ".x;\n";
    }
    return text;
  };
  dialect.launch_id = [](LaunchId kind, int dim) {
    const char* builtin = kind == LaunchId::Global  ? "int(gl_GlobalInvocationID."
                          : kind == LaunchId::Local ? "int(gl_LocalInvocationID."
                                                    : "int(gl_WorkGroupID.";
    return builtin + std::string(kAxes[dim]) + ")";
  };
  dialect.local_qualifier = "shared ";
  dialect.local_arrays_outside_kernel = true;
  dialect.barrier = "memoryBarrierShared(); barrier();";
  dialect.global_fence = "memoryBarrierBuffer();";
  dialect.atomic_increment = [](const std::string& counter) {
    return "atomicAdd(" + counter + "[0], 1u)";
  };
  dialect.index_type = "int";
  dialect.wide_index_type = "int64_t";
  dialect.value_qualifier = "";
  dialect.exact_qualifier = "precise ";
  dialect.signed_overflow_wraps = true;  // GLSL integer arithmetic wraps
  dialect.int64_literal_suffix = "l";
  dialect.uint64_literal_suffix = "ul";
  dialect.uint32_literal_suffix = "u";
  dialect.float32_literal_suffix = "";
  dialect.float64_literal_suffix = "lf";
  dialect.true_literal = "true";
  dialect.false_literal = "false";
  dialect.float32_infinity = "uintBitsToFloat(0x7f800000u)";
  dialect.float32_nan = "uintBitsToFloat(0x7fc00000u)";
  dialect.float64_infinity = "packDouble2x32(uvec2(0u, 0x7ff00000u))";
  dialect.float64_nan = "packDouble2x32(uvec2(0u, 0x7ff80000u))";
  // A zero from the push constants (always 0): the compiler cannot fold arithmetic with it.
  dialect.float32_zero = "kiln_push.zero";
  dialect.float64_zero = "double(kiln_push.zero)";
  dialect.cast = [](const std::string& type, const std::string& value) {
    return type + "(" + value + ")";
  };
  dialect.type_names = {"uint8_t",  "int8_t",   "int16_t", "int",      "int64_t",
                        "uint8_t",  "uint16_t", "uint",    "uint64_t", "uint16_t",
                        "uint16_t", "float",    "double"};
  dialect.bool_type = "bool";
  const OperandClass boolean = OperandClass::Bool;
  dialect.op_spellings = {
      {{Op::Or, boolean}, "($0 || $1)"},
      {{Op::And, boolean}, "($0 && $1)"},
      {{Op::Xor, boolean}, "($0 ^^ $1)"},
      {{Op::Div, OperandClass::Float}, "kiln_div($0, $1)"},
      {{Op::CmpLt, boolean}, "(int($0) < int($1))"},
      {{Op::CmpLe, boolean}, "(int($0) <= int($1))"},
      {{Op::CmpGt, boolean}, "(int($0) > int($1))"},
      {{Op::CmpGe, boolean}, "(int($0) >= int($1))"},
      // C's remainder (the dividend's sign); GLSL's % is undefined for negative operands.
      {{Op::Mod, OperandClass::Signed}, "($0 - $1 * ($0 / $1))"},
      // Ordered signed comparisons add a zero the compiler cannot see: lavapipe (Mesa 22.3)
      // answered int64_t(x) < 5 false for every 32-bit x, where the constant stood alone. It also
      // found a sum of int64 zeros < 0 true: 64-bit ones compare their 32-bit words (kiln_lt).
      {{Op::CmpLt, OperandClass::Signed}, "kiln_lt($0, $1 + kiln_push.izero)"},
      {{Op::CmpLe, OperandClass::Signed}, "(!kiln_lt($1 + kiln_push.izero, $0))"},
      {{Op::CmpGt, OperandClass::Signed}, "kiln_lt($1 + kiln_push.izero, $0)"},
      {{Op::CmpGe, OperandClass::Signed}, "(!kiln_lt($0, $1 + kiln_push.izero))"},
      // Unsigned ones too: lavapipe proved uint8 < 0 false, then folded false * x to 0 for a NaN
      // or infinite x, though the multiply is `precise`.
      {{Op::CmpLt, OperandClass::Unsigned}, "($0 < $1 + uint(kiln_push.izero))"},
      {{Op::CmpLe, OperandClass::Unsigned}, "($0 <= $1 + uint(kiln_push.izero))"},
      {{Op::CmpGt, OperandClass::Unsigned}, "($0 > $1 + uint(kiln_push.izero))"},
      {{Op::CmpGe, OperandClass::Unsigned}, "($0 >= $1 + uint(kiln_push.izero))"},
  };
  dialect.math_prefix = "";
  dialect.float32_math_suffix = "";
  dialect.math_names = {{"fabs", "abs"}, {"rint", "roundEven"}};
  // GLSL's own are far less accurate than kiln promises (glsl_math.cpp): kiln's library instead.
  dialect.math_helpers = {"exp", "exp2", "log", "log2", "sin", "cos",
                          "tan", "tanh", "erf", "pow",  "fmod"};
  const std::set<std::string> inverse = {"asin",  "acos",  "atan",  "atan2",   "sinh",
                                         "cosh",  "asinh", "acosh", "atanh",   "log10",
                                         "log1p", "expm1", "hypot", "copysign"};
  dialect.math_helpers.insert(inverse.begin(), inverse.end());
  dialect.math_libraries.push_back({inverse, glsl_inverse_math()});
  use_plain_element_access(dialect);
  const auto plain_load = dialect.load;
  const auto plain_store = dialect.store;
  dialect.load = [plain_load](DType dtype, const std::string& buffer, const std::string& index) {
    if (dtype.is_bool()) return "(" + buffer + "[" + index + "] != uint8_t(0))";
    return plain_load(dtype, buffer, index);
  };
  dialect.store = [plain_store](DType dtype, const std::string& buffer, const std::string& index,
                                const std::string& value) {
    if (dtype.is_bool())
      return buffer + "[" + index + "] = " + value + " ? uint8_t(1) : uint8_t(0)";
    return plain_store(dtype, buffer, index, value);
  };
  return dialect;
}

}  // namespace

const Dialect& glsl_dialect() {
  static const Dialect dialect = make_glsl_dialect();
  return dialect;
}

}  // namespace kiln

// The C dialect: plain C99 compiled by the system C compiler, one function per kernel that the
// CPU device calls on each thread with a range of flat output indices.

#include "codegen/dialect.h"

namespace kiln {
namespace {

// Helpers every C kernel may use. Half conversions round to nearest even and keep NaN and inf;
// they use only integer operations so that no header is needed (faster compiles).
const char* const kCPrelude = R"(#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
/* glibc's vector math (libmvec, within 4 ulp): lets loops that call these vectorize. Not pow:
   its vector form returns NaN for pow(-inf, 0.5), where C requires +inf. */
#define KILN_SIMD __attribute__((simd("notinbranch")))
KILN_SIMD float expf(float); KILN_SIMD float logf(float); KILN_SIMD float sinf(float);
KILN_SIMD float cosf(float);
KILN_SIMD double exp(double); KILN_SIMD double log(double); KILN_SIMD double sin(double);
KILN_SIMD double cos(double);
#endif
typedef unsigned int kiln_u32;
static inline float kiln_bits_to_float(kiln_u32 bits) { union { kiln_u32 u; float f; } v; v.u = bits; return v.f; }
static inline kiln_u32 kiln_float_to_bits(float value) { union { kiln_u32 u; float f; } v; v.f = value; return v.u; }
static inline float kiln_half_to_float(unsigned short h) {
  kiln_u32 sign = ((kiln_u32)h & 0x8000u) << 16, exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0) {
    float magnitude = (float)mantissa * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return kiln_bits_to_float(sign | 0x7f800000u | (mantissa << 13));
  return kiln_bits_to_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}
static inline unsigned short kiln_float_to_half(float value) {
  kiln_u32 bits = kiln_float_to_bits(value), sign = (bits >> 16) & 0x8000u, magnitude = bits & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) return (unsigned short)(sign | 0x7c00u | (magnitude > 0x7f800000u ? 0x200u : 0u));
  if (magnitude >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u);
  if (magnitude < 0x38800000u) {
    if (magnitude < 0x33000000u) return (unsigned short)sign;
    kiln_u32 exponent = magnitude >> 23, mantissa = (magnitude & 0x7fffffu) | 0x800000u, shift = 126u - exponent;
    kiln_u32 result = mantissa >> shift, dropped = mantissa & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
    if (dropped > halfway || (dropped == halfway && (result & 1u))) result += 1u;
    return (unsigned short)(sign | result);
  }
  kiln_u32 result = (magnitude - 0x38000000u) >> 13, dropped = magnitude & 0x1fffu;
  if (dropped > 0x1000u || (dropped == 0x1000u && (result & 1u))) result += 1u;
  return (unsigned short)(sign | result);
}
static inline float kiln_bf16_to_float(unsigned short b) { return kiln_bits_to_float((kiln_u32)b << 16); }
static inline unsigned short kiln_float_to_bf16(float value) {
  kiln_u32 bits = kiln_float_to_bits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((bits >> 16) | 0x40u);
  return (unsigned short)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}
/* gcc's vectorizer turns pow(x, 0.5) into sqrt(x), which differs at -0 and -inf: pow stays a
   call it cannot see through. */
__attribute__((noinline)) static float kiln_powf(float a, float b) { return __builtin_powf(a, b); }
__attribute__((noinline)) static double kiln_pow(double a, double b) { return __builtin_pow(a, b); }
/* NaN-propagating float max and min as reductions that `omp simd` may reassociate, so the loop
   vectorizes. The private copies start from the accumulator's value: max(x, x) is x. */
#pragma omp declare reduction(kiln_max : float, double : omp_out = (omp_in != omp_in || omp_in > omp_out) ? omp_in : omp_out) initializer(omp_priv = omp_orig)
#pragma omp declare reduction(kiln_min : float, double : omp_out = (omp_in != omp_in || omp_in < omp_out) ? omp_in : omp_out) initializer(omp_priv = omp_orig)
static inline long long kiln_floordiv(long long a, long long b) { long long q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }
static inline long long kiln_floormod(long long a, long long b) { return a - kiln_floordiv(a, b) * b; }
)";

Dialect make_c_dialect() {
  Dialect dialect;
  dialect.name = "C";
  dialect.prelude = kCPrelude;
  dialect.launch_style = Dialect::LaunchStyle::kCpuLoop;
  dialect.index_type = "long long";
  dialect.type_names = {"unsigned char",
                        "signed char",
                        "short",
                        "int",
                        "long long",
                        "unsigned char",
                        "unsigned short",
                        "unsigned int",
                        "unsigned long long",
                        "unsigned short",
                        "unsigned short",
                        "float",
                        "double"};
  dialect.math_prefix = "__builtin_";
  dialect.math_overrides = {{"pow", "kiln_pow"}};
  dialect.float32_math_suffix = "f";
  // Lets the compiler reassociate one float sum, max or min so the loop vectorizes (needs
  // -fopenmp-simd).
  dialect.reduce_loop_pragma = "#pragma omp simd reduction";
  dialect.max_reduction_name = "kiln_max";
  dialect.min_reduction_name = "kiln_min";
  // Work items write distinct outputs and read inputs only (buffers never alias).
  dialect.work_item_loop_pragma = "#pragma omp simd";
  dialect.restrict_keyword = "restrict";
  dialect.float32_infinity = "__builtin_inff()";
  dialect.float32_nan = "__builtin_nanf(\"\")";
  dialect.float64_infinity = "__builtin_inf()";
  dialect.float64_nan = "__builtin_nan(\"\")";
  use_half_conversion_functions(dialect);
  return dialect;
}

}  // namespace

void use_half_conversion_functions(Dialect& dialect) {
  const std::string half_to_float = dialect.half_to_float, float_to_half = dialect.float_to_half;
  const std::string bf16_to_float = dialect.bfloat16_to_float;
  const std::string float_to_bf16 = dialect.float_to_bfloat16;
  dialect.load_half = [=](DType dtype, const std::string& buffer, const std::string& index) {
    return (dtype == dtypes::float16 ? half_to_float : bf16_to_float) + "(" + buffer + "[" + index +
           "])";
  };
  dialect.store_half = [=](DType dtype, const std::string& buffer, const std::string& index,
                           const std::string& value) {
    return buffer + "[" + index +
           "] = " + (dtype == dtypes::float16 ? float_to_half : float_to_bf16) + "(" + value + ")";
  };
}

const Dialect& c_dialect() {
  static const Dialect dialect = make_c_dialect();
  return dialect;
}

}  // namespace kiln

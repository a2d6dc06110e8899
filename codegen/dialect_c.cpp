// The C dialect: plain C99 compiled by the system C compiler, one function per kernel that the
// CPU device calls on each thread with a range of flat output indices.

#include "codegen/cpu_abi.h"
#include "codegen/dialect.h"

namespace kiln {
namespace {

// Helpers every C kernel may use. Half conversions round to nearest even and keep NaN and inf;
// they use only integer operations so that no header is needed (faster compiles).
const char* const kCPrelude = R"(#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
/* glibc's vector math (libmvec, within 4 ulp): lets loops that call these vectorize. Not pow:
   its vector form returns NaN for pow(-inf, 0.5), where C requires +inf. Not logf: its vector
   form is off by up to 3.94 ulp (kiln promises 3), so float log is kiln_logf below. */
#define KILN_SIMD __attribute__((simd("notinbranch")))
KILN_SIMD float expf(float); KILN_SIMD float sinf(float); KILN_SIMD float cosf(float);
KILN_SIMD double exp(double); KILN_SIMD double log(double); KILN_SIMD double sin(double);
KILN_SIMD double cos(double);
#endif
#define KILN_FN static inline
#define kiln_u32 unsigned int
#define kiln_u16 unsigned short
#define KILN_U32(x) ((unsigned int)(x))
#define KILN_U16(x) ((unsigned short)(x))
#define KILN_FLOAT(x) ((float)(x))
static inline float KILN_AS_FLOAT(unsigned int bits) { union { unsigned int u; float f; } v; v.u = bits; return v.f; }
static inline unsigned int KILN_AS_BITS(float value) { union { unsigned int u; float f; } v; v.f = value; return v.u; }
static inline double KILN_AS_DOUBLE(unsigned long long bits) { union { unsigned long long u; double f; } v; v.u = bits; return v.f; }
static inline unsigned long long KILN_AS_BITS64(double value) { union { unsigned long long u; double f; } v; v.f = value; return v.u; }
)";

// After the half conversions.
const char* const kCHelpers =
    R"(/* gcc's vectorizer turns pow(x, 0.5) into sqrt(x), which differs at -0 and -inf: pow stays a
   call it cannot see through. */
__attribute__((noinline)) static float kiln_powf(float a, float b) { return __builtin_powf(a, b); }
__attribute__((noinline)) static double kiln_pow(double a, double b) { return __builtin_pow(a, b); }
/* NaN-propagating float max and min as reductions that `omp simd` may reassociate, so the loop
   vectorizes. The private copies start from the accumulator's value: max(x, x) is x. */
#pragma omp declare reduction(kiln_max : float, double : omp_out = (omp_in != omp_in || omp_in > omp_out) ? omp_in : omp_out) initializer(omp_priv = omp_orig)
#pragma omp declare reduction(kiln_min : float, double : omp_out = (omp_in != omp_in || omp_in < omp_out) ? omp_in : omp_out) initializer(omp_priv = omp_orig)
/* log without a branch, so that loops calling it vectorize (within 1 ulp): x = 2^e m with m in
   [sqrt(1/2), sqrt(2)), log m = 2 atanh(s) with s = (m - 1) / (m + 1), its series to s^11, and
   e ln 2 in two parts; subnormals scaled by 2^24 first, the special values selected last. */
static inline float kiln_logf(float x) {
  const int subnormal = KILN_AS_BITS(x) < 0x00800000u;
  const unsigned int bits = KILN_AS_BITS(subnormal ? x * 16777216.0f : x);
  const float mantissa = KILN_AS_FLOAT((bits & 0x007fffffu) | 0x3f800000u);
  const int above = mantissa > 1.41421354f;
  const float m = above ? mantissa * 0.5f : mantissa;
  const float k = (float)((int)(bits >> 23) - 127 - (subnormal ? 24 : 0) + above);
  const float f = m - 1.0f, s = f / (2.0f + f), z = s * s, half_f2 = 0.5f * f * f;
  const float tail = z * (0.66666667f + z * (0.4f + z * (0.28571429f + z * (0.22222222f + z * 0.18181818f))));
  const float log_m = f - (half_f2 - s * (half_f2 + tail));
  float result = k * 0.693145751953125f + (log_m + k * 1.4286068203e-6f);
  result = x == __builtin_inff() ? x : result;
  result = x == 0.0f ? -__builtin_inff() : result;
  return x < 0.0f || x != x ? __builtin_nanf("") : result;
}
static inline double kiln_log(double x) { return log(x); }
static inline long long kiln_floordiv(long long a, long long b) { long long q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }
static inline long long kiln_floormod(long long a, long long b) { return a - kiln_floordiv(a, b) * b; }
)";

Dialect make_c_dialect() {
  Dialect dialect;
  dialect.name = "C";
  dialect.prelude = std::string(kCPrelude) + kHalfConversionSource + kCHelpers;
  dialect.signature = cpu_kernel_signature;
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
  dialect.math_helpers = {"pow", "log"};
  dialect.float32_math_suffix = "f";
  // Lets the compiler reassociate one float sum, max or min so the loop vectorizes (needs
  // -fopenmp-simd).
  dialect.reduce_loop_pragma = "#pragma omp simd reduction";
  dialect.max_reduction_name = "kiln_max";
  dialect.min_reduction_name = "kiln_min";
  // Work items write distinct outputs and read no element another work item writes (buffers
  // never alias; a scatter's work item reads and updates only the lines it owns).
  dialect.work_item_loop_pragma = "#pragma omp simd";
  dialect.float32_infinity = "__builtin_inff()";
  dialect.float32_nan = "__builtin_nanf(\"\")";
  dialect.float64_infinity = "__builtin_inf()";
  dialect.float64_nan = "__builtin_nan(\"\")";
  use_plain_element_access(dialect);
  return dialect;
}

}  // namespace

const Dialect& c_dialect() {
  static const Dialect dialect = make_c_dialect();
  return dialect;
}

}  // namespace kiln

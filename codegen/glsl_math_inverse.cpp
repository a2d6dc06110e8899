// The GLSL dialect's inverse and hyperbolic functions, log10, log1p, expm1, hypot and copysign,
// for float and double, built on glsl_math.cpp's exp, log and expm1 series (GLSL's own asin,
// atan, sinh... promise nothing of their precision, and lavapipe's are polynomials good to a few
// digits). One source serves both precisions: REAL is the type, `$` the literal suffix (none for
// float, lf for double) and REAL_<name> the precision's constants.
//
// - expm1: x itself's series for |x| <= ln2 / 2; else 2^k (expm1(r) + 1) - 1 with x = k ln2 + r,
//   as tanh's; exp(x) - 1 once exp(x) swamps the 1, -1 once it vanishes beside it.
// - log1p: Kahan's log(u) * x / (u - 1) with u = 1 + x: the rounding of u cancels.
// - sinh, cosh: from expm1 of |x| (no cancellation near 0); exp(|x|/2)^2 / 2 where exp(|x|)
//   alone would overflow first.
// - asinh, acosh, atanh: through log1p of an argument with no cancellation; log(2|x|) past where
//   x^2 + 1 rounds to x^2.
// - atan: |x| > 1 through pi/2 - atan(1/|x|); then c = k/4 nearest |x| (k = 0..4) and
//   atan(x) = atan(c) + atan(t), t = (x - c) / (1 + xc) in [-1/8, 1/8], atan(t) by its series
//   (t^21 is below a double's ulp), atan(c) and pi/2 - atan(c) in two parts.
// - atan2: atan(|y| / |x|) with C's zero and infinity cases, reflected into the right quadrant.
// - asin, acos: atan2 of x and sqrt((1 - x)(1 + x)), whose factors are exact near +-1.
// - hypot: the larger magnitude times sqrt(1 + r^2), r = smaller / larger (no overflow).
// - copysign: the bits.
// Divisions whose divisor may pass 2^126 go through the prelude's kiln_div (NVIDIA's a * (1 / b)
// flushes that reciprocal to 0).

#include "codegen/glsl_math.h"

#include <string>

namespace kiln {
namespace {

const char* const kFloatConstants =
    R"(const float float_pi_hi = 3.141592741e+00, float_pi_lo = -8.742277657e-08;
const float float_pio2_hi = 1.570796371e+00, float_pio2_lo = -4.371138829e-08;
const float float_pio4 = 7.853981853e-01;
const float float_ln2 = 6.931471825e-01;
// ln 2 in two parts, the first short enough that k times it is exact (exp's reduction).
const float float_ln2_hi = 0.693145751953125, float_ln2_lo = 1.4286068203e-6;
const float float_inv_ln10_hi = 4.342944920e-01, float_inv_ln10_lo = -1.010304995e-08;
const float float_atan_hi[5] = float[](0.0, 2.449786663e-01, 4.636476040e-01, 6.435011029e-01, 7.853981853e-01);
const float float_atan_lo[5] = float[](0.0, -3.178677765e-09, 5.012158688e-09, 5.868937336e-09, -2.185569414e-08);
const float float_atanc_hi[5] = float[](1.570796371e+00, 1.325817704e+00, 1.107148767e+00, 9.272952080e-01, 7.853981853e-01);
const float float_atanc_lo[5] = float[](-4.371138829e-08, -4.053271141e-08, -4.872354964e-08, 1.002431738e-08, -2.185569414e-08);
const float float_expm1_big = 16.0, float_expm1_small = -18.0, float_exp_safe = 88.0;
const float float_log_big = 8192.0;
float float_inf() { return kiln_f_inf(); }
float float_nan() { return kiln_f_nan(); }
bool kiln_negative(float x) { return kiln_f_negative(x); }
float kiln_copysign(float a, float b) { return uintBitsToFloat((floatBitsToUint(a) & 0x7fffffffu) | (floatBitsToUint(b) & 0x80000000u)); }
)";

const char* const kDoubleConstants =
    R"(const double double_pi_hi = 3.14159265358979312e+00lf, double_pi_lo = 1.22464679914735321e-16lf;
const double double_pio2_hi = 1.57079632679489656e+00lf, double_pio2_lo = 6.12323399573676604e-17lf;
const double double_pio4 = 7.85398163397448279e-01lf;
const double double_ln2 = 6.93147180559945286e-01lf;
const double double_ln2_hi = 0.6931471803691238lf, double_ln2_lo = 1.9082149292705877e-10lf;
const double double_inv_ln10_hi = 4.34294481903251817e-01lf, double_inv_ln10_lo = 1.09831965021676507e-17lf;
const double double_atan_hi[5] = double[](0.0lf, 2.44978663126864143e-01lf, 4.63647609000806094e-01lf, 6.43501108793284371e-01lf, 7.85398163397448279e-01lf);
const double double_atan_lo[5] = double[](0.0lf, 1.06987556187344514e-17lf, 2.26987774529616871e-17lf, 1.58347850514442862e-17lf, 3.06161699786838302e-17lf);
const double double_atanc_hi[5] = double[](1.57079632679489656e+00lf, 1.32581766366803255e+00lf, 1.10714871779409041e+00lf, 9.27295218001612187e-01lf, 7.85398163397448279e-01lf);
const double double_atanc_lo[5] = double[](6.12323399573676604e-17lf, -8.82442937395113632e-17lf, 9.40447137356637941e-17lf, 4.53975549059233742e-17lf, 3.06161699786838302e-17lf);
const double double_expm1_big = 40.0lf, double_expm1_small = -38.0lf, double_exp_safe = 709.0lf;
const double double_log_big = 268435456.0lf;
double double_inf() { return kiln_d_inf(); }
double double_nan() { return kiln_d_nan(); }
bool kiln_negative(double x) { return kiln_d_negative(x); }
double kiln_copysign(double a, double b) {
  uvec2 words = unpackDouble2x32(a);
  words.y = (words.y & 0x7fffffffu) | (unpackDouble2x32(b).y & 0x80000000u);
  return packDouble2x32(words);
}
)";

const char* const kTemplate =
    R"(REAL kiln_expm1(REAL x) {
  if (isnan(x) || x == 0.0$) return x;  // -0 stays -0 (the series would give +0)
  if (x > REAL_expm1_big) return kiln_exp(x) - 1.0$;
  if (x < REAL_expm1_small) return -1.0$;
  if (abs(x) <= 0.34657359027997264$) return kiln_expm1_taylor(x);
  precise REAL k = roundEven(x * 1.4426950408889634$);
  precise REAL r = (x - k * REAL_ln2_hi) - k * REAL_ln2_lo;
  precise REAL power = kiln_scalbn(1.0$, int(k));
  precise REAL value = power * kiln_expm1_taylor(r) + (power - 1.0$);
  return value;
}
REAL kiln_log1p(REAL x) {
  if (isnan(x)) return x;
  if (x < -1.0$) return REAL_nan();
  if (x == -1.0$) return -REAL_inf();
  if (isinf(x)) return x;
  precise REAL u = 1.0$ + x;
  if (u == 1.0$) return x;
  precise REAL value = kiln_log(u) * kiln_div(x, u - 1.0$);
  return value;
}
REAL kiln_log10(REAL x) {
  precise REAL l = kiln_log(x);
  if (isnan(l) || isinf(l) || l == 0.0$) return l;
  precise REAL value = l * REAL_inv_ln10_hi + l * REAL_inv_ln10_lo;
  return value;
}
// e^|x| / 2 for |x| past where expm1's form is needed, without overflowing early.
REAL kiln_half_exp(REAL ax) {
  if (ax < REAL_exp_safe) return 0.5$ * kiln_exp(ax);
  precise REAL w = kiln_exp(0.5$ * ax);
  precise REAL value = (0.5$ * w) * w;
  return value;
}
REAL kiln_sinh(REAL x) {
  if (isnan(x) || isinf(x)) return x;
  precise REAL ax = abs(x);
  precise REAL value;
  if (ax < REAL_expm1_big) {
    precise REAL e = kiln_expm1(ax);
    value = 0.5$ * (e + e / (e + 1.0$));
  } else {
    value = kiln_half_exp(ax);
  }
  return kiln_negative(x) ? -value : value;
}
REAL kiln_cosh(REAL x) {
  if (isnan(x)) return x;
  precise REAL ax = abs(x);
  if (isinf(ax)) return ax;
  if (ax >= REAL_expm1_big) return kiln_half_exp(ax);
  precise REAL e = kiln_expm1(ax);
  precise REAL value = 1.0$ + e * e / (2.0$ * (1.0$ + e));
  return value;
}
REAL kiln_asinh(REAL x) {
  if (isnan(x) || isinf(x)) return x;
  precise REAL ax = abs(x);
  precise REAL value;
  if (ax > REAL_log_big) {
    value = kiln_log(ax) + REAL_ln2;
  } else if (ax > 2.0$) {
    value = kiln_log(2.0$ * ax + 1.0$ / (sqrt(ax * ax + 1.0$) + ax));
  } else {
    precise REAL t = ax * ax;
    value = kiln_log1p(ax + t / (1.0$ + sqrt(1.0$ + t)));
  }
  return kiln_negative(x) ? -value : value;
}
REAL kiln_acosh(REAL x) {
  if (isnan(x)) return x;
  if (x < 1.0$) return REAL_nan();
  if (isinf(x)) return x;
  if (x > REAL_log_big) return kiln_log(x) + REAL_ln2;
  if (x > 2.0$) return kiln_log(2.0$ * x - 1.0$ / (x + sqrt(x * x - 1.0$)));
  precise REAL t = x - 1.0$;
  return kiln_log1p(t + sqrt(2.0$ * t + t * t));
}
REAL kiln_atanh(REAL x) {
  if (isnan(x)) return x;
  precise REAL ax = abs(x);
  if (ax > 1.0$) return REAL_nan();
  precise REAL value;
  if (ax == 1.0$) {
    value = REAL_inf();
  } else if (ax < 0.5$) {
    precise REAL t = ax + ax;
    value = 0.5$ * kiln_log1p(t + t * ax / (1.0$ - ax));
  } else {
    value = 0.5$ * kiln_log1p((ax + ax) / (1.0$ - ax));
  }
  return kiln_negative(x) ? -value : value;
}
REAL kiln_atan(REAL x) {
  if (isnan(x)) return x;
  precise REAL ax = abs(x);
  bool inverted = ax > 1.0$;
  precise REAL a = inverted ? 1.0$ / ax : ax;
  int k = int(roundEven(a * 4.0$));
  precise REAL c = REAL(k) * 0.25$;
  precise REAL t = (a - c) / (1.0$ + a * c);
  precise REAL z = t * t;
  precise REAL series = t + t * z * (-0.33333333333333333$ + z * (0.2$ + z * (-0.14285714285714285$ + z * (0.11111111111111111$ + z * (-0.090909090909090909$ + z * (0.076923076923076923$ + z * (-0.066666666666666667$ + z * (0.058823529411764706$ + z * (-0.052631578947368421$ + z * 0.047619047619047619$)))))))));
  precise REAL value = inverted ? REAL_atanc_hi[k] + (REAL_atanc_lo[k] - series)
                                : REAL_atan_hi[k] + (REAL_atan_lo[k] + series);
  return kiln_negative(x) ? -value : value;
}
REAL kiln_atan2(REAL y, REAL x) {
  if (isnan(x) || isnan(y)) return x + y;
  precise REAL ay = abs(y), ax = abs(x);
  precise REAL angle;
  if (ay == 0.0$) angle = 0.0$;
  else if (isinf(ax) && isinf(ay)) angle = REAL_pio4;
  else if (ax == 0.0$ || isinf(ay)) return kiln_negative(y) ? -REAL_pio2_hi : REAL_pio2_hi;
  else if (isinf(ax)) angle = 0.0$;
  else angle = kiln_atan(kiln_div(ay, ax));
  if (kiln_negative(x)) angle = (REAL_pi_hi - angle) + REAL_pi_lo;
  return kiln_negative(y) ? -angle : angle;
}
REAL kiln_asin(REAL x) {
  if (isnan(x)) return x;
  precise REAL ax = abs(x);
  if (ax > 1.0$) return REAL_nan();
  precise REAL value = kiln_atan2(ax, sqrt((1.0$ - ax) * (1.0$ + ax)));
  return kiln_negative(x) ? -value : value;
}
REAL kiln_acos(REAL x) {
  if (isnan(x)) return x;
  if (abs(x) > 1.0$) return REAL_nan();
  return kiln_atan2(sqrt((1.0$ - x) * (1.0$ + x)), x);
}
REAL kiln_hypot(REAL a, REAL b) {
  if (isinf(a) || isinf(b)) return REAL_inf();
  if (isnan(a) || isnan(b)) return a + b;
  precise REAL big = max(abs(a), abs(b)), small = min(abs(a), abs(b));
  if (big == 0.0$) return 0.0$;
  precise REAL r = kiln_div(small, big);
  precise REAL value = big * sqrt(1.0$ + r * r);
  return value;
}
)";

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

std::string instantiate(const char* constants, const std::string& type, const std::string& suffix) {
  std::string text = kTemplate;
  replace_all(text, "REAL", type);
  replace_all(text, "$", suffix);
  return constants + text;
}

}  // namespace

const std::string& glsl_inverse_math() {
  static const std::string source =
      instantiate(kFloatConstants, "float", "") + instantiate(kDoubleConstants, "double", "lf");
  return source;
}

}  // namespace kiln

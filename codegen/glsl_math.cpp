// float32 math for the GLSL dialect, accurate to a few ulp over the whole range. GLSL's built-in
// functions promise far less (Vulkan allows exp 3 + 2|x| ulp and sin an absolute error of 2^-11
// on [-pi, pi], nothing beyond), and lavapipe's flush subnormal results and lose whole periods of
// sin for large arguments. kiln's tolerances are OpenCL's full profile (exp 3 ulp, sin 4, ...),
// so the dialect computes these itself:
//
// - exp, exp2: x = k ln2 + r with ln2 in two parts (k ln2_hi exact), |r| <= ln2 / 2, e^r by its
//   Taylor series to r^7, and the result scaled by 2^k in at most two exact steps and one
//   rounding (subnormal results included).
// - log, log2: x = 2^e m, m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s) with s = (m-1)/(m+1),
//   the series to s^11; subnormal x are scaled by 2^24 first.
// - sin, cos, tan: x = (4n + q) pi/2 + r, |r| <= pi/4, found by multiplying the 24-bit mantissa
//   by a 96-bit window of 2/pi in integers (exact for every float, however large), r kept as a
//   sum of two floats; then the Taylor series of sin and cos on [-pi/4, pi/4].
// - tanh: expm1(2|x|) / (expm1(2|x|) + 2), expm1 from the same reduction as exp.
// - pow: exp2(b log2 a) with log2 a and the product carried in two floats (b log2 a reaches 150,
//   where one float's rounding alone would cost 40 ulp of the result).
// - erf: its Taylor series for |x| < 1; 1 - exp(-x^2) h(1/x) / x beyond, h a polynomial fitted
//   for this library (float: degree 11 over 1/x in [1/4, 1]; double: three pieces); +-1 from
//   |x| = 4 (float) or 6 (double) on.
// - fmod: exact, from the integer mantissas, by modular exponentiation (C's fmod is exact).
// - float64 (glsl_math_double.cpp): the same algorithms with longer series, a 192-bit window of
//   2/pi, and 64-bit integers (so float64 needs shaderInt64 as well as shaderFloat64).
//
// Every local is `precise`: without it a compiler may fold or fuse the steps that carry the
// rounding error (the two-float products, Cody-Waite's subtraction). No helper loops: lavapipe
// counts every loop iteration of a work item against one limit (DeviceProperties::
// max_loop_iterations), and a helper's loop inside a reduction would use it up unseen.

#include "codegen/glsl_math.h"

namespace kiln {

const char* const kGlslFloatMath =
    R"(const uint kiln_two_over_pi[10] = uint[](0xA2F9836Eu, 0x4E441529u, 0xFC2757D1u, 0xF534DDC0u, 0xDB629599u, 0x3C439041u, 0xFE5163ABu, 0xDEBBC561u, 0xB7246E3Au, 0x424DD2E0u);
float kiln_f_inf() { return uintBitsToFloat(0x7f800000u); }
float kiln_f_nan() { return uintBitsToFloat(0x7fc00000u); }
bool kiln_f_negative(float x) { return (floatBitsToUint(x) >> 31) != 0u; }
float kiln_scalbn(float x, int k) {
  precise float y = x;
  if (k > 127) { y = y * 1.2676506002282294e30; k = min(k - 100, 127); }
  else if (k < -126) { y = y * 7.888609052210118e-31; k = max(k + 100, -126); }
  precise float scaled = y * intBitsToFloat((k + 127) << 23);
  return scaled;
}
void kiln_split(float a, out float hi, out float lo) {
  precise float c = 4097.0 * a;
  precise float h = c - (c - a);
  hi = h;
  lo = a - h;
}
float kiln_two_prod(float a, float b, out float error) {
  precise float p = a * b;
  float a_hi, a_lo, b_hi, b_lo;
  kiln_split(a, a_hi, a_lo);
  kiln_split(b, b_hi, b_lo);
  precise float e = ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo;
  error = e;
  return p;
}
float kiln_two_sum(float a, float b, out float error) {
  precise float s = a + b;
  precise float bb = s - a;
  precise float e = (a - (s - bb)) + (b - bb);
  error = e;
  return s;
}
// a + b = s + error exactly, for |a| >= |b|: renormalizes a two-float value.
float kiln_fast_two_sum(float a, float b, out float error) {
  precise float sum = a + b;
  precise float e = b - (sum - a);
  error = e;
  return sum;
}
float kiln_expm1_taylor(float r) {
  precise float p = r + r * r * (0.5 + r * (0.16666667 + r * (0.041666668 + r * (0.008333334 + r * (0.0013888889 + r * (1.9841270e-4 + r * 2.4801587e-5))))));
  return p;
}
float kiln_exp(float x) {
  if (isnan(x)) return x;
  if (x > 89.0) return kiln_f_inf();
  if (x < -104.0) return 0.0;
  precise float k = roundEven(x * 1.44269504);
  precise float r = (x - k * 0.693145751953125) - k * 1.4286068203e-6;
  precise float p = 1.0 + kiln_expm1_taylor(r);
  return kiln_scalbn(p, int(k));
}
float kiln_exp2(float x) {
  if (isnan(x)) return x;
  if (x > 129.0) return kiln_f_inf();
  if (x < -151.0) return 0.0;
  precise float k = roundEven(x);
  precise float r = (x - k) * 0.69314718;
  precise float p = 1.0 + kiln_expm1_taylor(r);
  return kiln_scalbn(p, int(k));
}
// log(m) for x = 2^e m, m in [sqrt(1/2), sqrt(2)); x positive and finite. Also s and f = m - 1.
float kiln_log_mantissa(float x, out int e, out float f_out, out float s_out) {
  precise float y = x;
  int exponent = 0;
  if (y < 1.17549435e-38) { y = y * 16777216.0; exponent = -24; }
  int bits = floatBitsToInt(y);
  exponent += (bits >> 23) - 127;
  precise float m = intBitsToFloat((bits & 0x007fffff) | 0x3f800000);
  if (m > 1.41421354) { m = m * 0.5; exponent += 1; }
  precise float f = m - 1.0;
  precise float s = f / (2.0 + f);
  precise float z = s * s;
  precise float tail = z * (0.66666667 + z * (0.4 + z * (0.28571429 + z * (0.22222222 + z * 0.18181818))));
  precise float half_f2 = 0.5 * f * f;
  precise float log_m = f - (half_f2 - s * (half_f2 + tail));
  e = exponent;
  f_out = f;
  s_out = s;
  return log_m;
}
float kiln_log(float x) {
  if (isnan(x)) return x;
  if (x < 0.0) return kiln_f_nan();
  if (x == 0.0) return -kiln_f_inf();
  if (isinf(x)) return x;
  int e; float f, s;
  precise float log_m = kiln_log_mantissa(x, e, f, s);
  precise float k = float(e);
  precise float result = k * 0.693145751953125 + (log_m + k * 1.4286068203e-6);
  return result;
}
float kiln_log2(float x) {
  if (isnan(x)) return x;
  if (x < 0.0) return kiln_f_nan();
  if (x == 0.0) return -kiln_f_inf();
  if (isinf(x)) return x;
  int e; float f, s;
  precise float log_m = kiln_log_mantissa(x, e, f, s);
  precise float result = float(e) + log_m * 1.44269504;
  return result;
}
uint kiln_bits_at(uint q[5], int position) {
  int word = position >> 5, offset = position & 31;
  if (offset == 0) return q[word];
  return (q[word] >> uint(offset)) | (q[word + 1] << uint(32 - offset));
}
// |x| = (4n + quadrant) pi/2 + r_hi + r_lo with |r| <= pi/4, for finite x; returns the quadrant.
int kiln_reduce_half_pi(float ax, out float r_hi, out float r_lo) {
  if (ax <= 0.78539816) { r_hi = ax; r_lo = 0.0; return 0; }
  uint bits = floatBitsToUint(ax);
  int s = int(bits >> 23) - 150;  // ax = m 2^s, m the 24-bit mantissa
  uint m = (bits & 0x7fffffu) | 0x800000u;
  // Bits of 2/pi from bit k0 on (bit k weighs 2^-k); those before it make multiples of 4.
  int k0 = max(1, s - 1);
  int word = (k0 - 1) >> 5, offset = (k0 - 1) & 31;
  uint w0 = kiln_two_over_pi[word], w1 = kiln_two_over_pi[word + 1];
  uint w2 = kiln_two_over_pi[word + 2], w3 = kiln_two_over_pi[word + 3];
  if (offset != 0) {
    w0 = (w0 << uint(offset)) | (w1 >> uint(32 - offset));
    w1 = (w1 << uint(offset)) | (w2 >> uint(32 - offset));
    w2 = (w2 << uint(offset)) | (w3 >> uint(32 - offset));
  }
  uint h0, l0, h1, l1, h2, l2, carry1, carry2, carry3;
  umulExtended(m, w2, h2, l2);
  umulExtended(m, w1, h1, l1);
  umulExtended(m, w0, h0, l0);
  uint q[5];
  q[0] = l2;
  q[1] = uaddCarry(h2, l1, carry1);
  q[2] = uaddCarry(h1, l0, carry2);
  q[2] = uaddCarry(q[2], carry1, carry3);
  q[3] = h0 + carry2 + carry3;
  q[4] = 0u;
  int t = k0 + 95 - s;  // ax 2/pi = q / 2^t
  int quadrant = int(kiln_bits_at(q, t) & 3u);
  uint high = kiln_bits_at(q, t - 32), low = kiln_bits_at(q, t - 64);
  bool negative = high >= 0x80000000u;
  if (negative) {  // round to the nearest quadrant: the fraction becomes 1 - fraction, r < 0
    quadrant = (quadrant + 1) & 3;
    high = ~high;
    low = ~low + 1u;
    if (low == 0u) high += 1u;
  }
  if (high == 0u && low == 0u) { r_hi = 0.0; r_lo = 0.0; return quadrant; }
  int shift = high != 0u ? 31 - findMSB(high) : 32 + 31 - findMSB(low);
  uint top = high, bottom = low;
  if (shift >= 32) { top = bottom; bottom = 0u; shift -= 32; }
  if (shift > 0) { top = (top << uint(shift)) | (bottom >> uint(32 - shift)); bottom <<= uint(shift); }
  int leading = high != 0u ? 31 - findMSB(high) : 32 + 31 - findMSB(low);
  precise float f_hi = float(top >> 8u) * kiln_scalbn(1.0, -24 - leading);
  precise float f_lo = float(((top & 0xffu) << 16u) | (bottom >> 16u)) * kiln_scalbn(1.0, -48 - leading);
  float product_error;
  precise float p = kiln_two_prod(f_hi, 1.57079637, product_error);
  precise float tail = product_error + (f_hi * -4.37113900e-8 + f_lo * 1.57079637);
  precise float sum = p + tail;
  precise float rest = tail - (sum - p);
  r_hi = negative ? -sum : sum;
  r_lo = negative ? -rest : rest;
  return quadrant;
}
float kiln_sin_kernel(float r, float r_lo) {
  precise float z = r * r;
  precise float p = z * r * (-0.16666667 + z * (0.0083333333 + z * (-1.9841270e-4 + z * (2.7557319e-6 - z * 2.5052108e-8))));
  precise float result = r + (p + r_lo * (1.0 - 0.5 * z));
  return result;
}
float kiln_cos_kernel(float r, float r_lo) {
  precise float z = r * r;
  precise float half_z = 0.5 * z;
  precise float w = 1.0 - half_z;
  precise float c = z * z * (0.041666667 + z * (-0.0013888889 + z * (2.4801587e-5 + z * (-2.7557319e-7 + z * 2.0876757e-9))));
  precise float result = w + (((1.0 - w) - half_z) + (c - r * r_lo));
  return result;
}
float kiln_sin(float x) {
  if (isnan(x) || isinf(x)) return kiln_f_nan();
  float r, r_lo;
  int quadrant = kiln_reduce_half_pi(abs(x), r, r_lo);
  precise float value = (quadrant & 1) == 0 ? kiln_sin_kernel(r, r_lo) : kiln_cos_kernel(r, r_lo);
  if ((quadrant & 2) != 0) value = -value;
  return kiln_f_negative(x) ? -value : value;
}
float kiln_cos(float x) {
  if (isnan(x) || isinf(x)) return kiln_f_nan();
  float r, r_lo;
  int quadrant = kiln_reduce_half_pi(abs(x), r, r_lo);
  precise float value = (quadrant & 1) == 0 ? kiln_cos_kernel(r, r_lo) : kiln_sin_kernel(r, r_lo);
  if (quadrant == 1 || quadrant == 2) value = -value;
  return value;
}
float kiln_tan(float x) {
  if (isnan(x) || isinf(x)) return kiln_f_nan();
  float r, r_lo;
  int quadrant = kiln_reduce_half_pi(abs(x), r, r_lo);
  precise float sine = kiln_sin_kernel(r, r_lo), cosine = kiln_cos_kernel(r, r_lo);
  precise float value = (quadrant & 1) == 0 ? sine / cosine : -cosine / sine;
  return kiln_f_negative(x) ? -value : value;
}
float kiln_tanh(float x) {
  if (isnan(x)) return x;
  precise float ax = abs(x);
  if (ax < 2.4414062e-4) return x;
  if (ax > 9.1) return kiln_f_negative(x) ? -1.0 : 1.0;
  precise float y = 2.0 * ax;
  precise float t;
  if (y < 0.34657359) {
    t = kiln_expm1_taylor(y);
  } else {
    precise float k = roundEven(y * 1.44269504);
    precise float r = (y - k * 0.693145751953125) - k * 1.4286068203e-6;
    precise float power = kiln_scalbn(1.0, int(k));
    t = power * kiln_expm1_taylor(r) + (power - 1.0);
  }
  precise float value = t / (t + 2.0);
  return kiln_f_negative(x) ? -value : value;
}
// a^b for a > 0 finite, a != 1, b finite and nonzero.
float kiln_pow_positive(float a, float b) {
  int e; float f, s;
  kiln_log_mantissa(a, e, f, s);
  // log m = 2 atanh(s) with s = f / (2 + f) in two floats: s_lo from the division's remainder.
  float d_error, p_error;
  precise float d = kiln_two_sum(2.0, f, d_error);
  precise float p = kiln_two_prod(s, d, p_error);
  precise float s_lo = (((f - p) - p_error) - s * d_error) / d;
  precise float z = s * s;
  precise float tail = s * z * (0.66666667 + z * (0.4 + z * (0.28571429 + z * (0.22222222 + z * 0.18181818))));
  // log2 a = e + log m * log2(e), then y = b log2 a, each in two floats (kept normalized: the
  // low part below half an ulp of the high one).
  float ln_lo, l_error, l_lo, sum_error, log2_lo, y_error, y_lo;
  precise float ln_hi = kiln_fast_two_sum(2.0 * s, 2.0 * s_lo + tail, ln_lo);
  precise float l = kiln_two_prod(ln_hi, 1.44269502, l_error);
  l = kiln_fast_two_sum(l, l_error + (ln_hi * 1.9259630e-8 + ln_lo * 1.44269502), l_lo);
  precise float log2_hi = kiln_two_sum(float(e), l, sum_error);
  log2_hi = kiln_fast_two_sum(log2_hi, sum_error + l_lo, log2_lo);
  if (log2_hi == 0.0) return 1.0;
  if (abs(b) > 1.8446744e19) return (log2_hi > 0.0) == (b > 0.0) ? kiln_f_inf() : 0.0;
  precise float y = kiln_two_prod(b, log2_hi, y_error);
  y = kiln_fast_two_sum(y, y_error + b * log2_lo, y_lo);
  if (y > 129.0) return kiln_f_inf();
  if (y < -152.0) return 0.0;
  precise float k = roundEven(y);
  precise float r = ((y - k) + y_lo) * 0.69314718;
  precise float power = 1.0 + kiln_expm1_taylor(r);
  return kiln_scalbn(power, int(k));
}
float kiln_erf(float x) {
  if (isnan(x)) return x;
  precise float ax = abs(x);
  precise float value;
  if (ax < 1.0) {
    precise float z = x * x;
    value = ax * (1.1283791671 + z * (-0.37612638903 + z * (0.11283791671 + z * (-0.026866170645 + z * (0.0052239776254 + z * (-8.5483270230e-4 + z * (1.2055332981e-4 + z * (-1.4925650358e-5 + z * (1.6462114365e-6 + z * (-1.6365844691e-7 + z * (1.4807192815e-8 - z * 1.2290555302e-9)))))))))));
  } else if (ax < 4.0) {
    // erfc(x) = exp(-x^2) h(1/x) / x, h fitted over 1/x in [1/4, 1] (w in [-1, 1]).
    float square_error;
    precise float square = kiln_two_prod(ax, ax, square_error);
    precise float w = (1.0 / ax - 0.625) * 2.6666667;
    precise float h = 0.48952478 + w * (-0.064344622 + w * (-1.8205606e-4 + w * (0.0038022790 + w * (-0.0015431101 + w * (3.6769692e-4 + w * (-2.8585519e-5 + w * (-2.5066251e-5 + w * (1.8475064e-5 + w * (-7.6859715e-6 + w * (1.1923705e-6 + w * 2.6911763e-7))))))))));
    precise float erfc = kiln_exp(-square) * (1.0 - square_error) * h / ax;
    value = 1.0 - erfc;
  } else {
    value = 1.0;
  }
  return kiln_f_negative(x) ? -value : value;
}
// a b mod m for a, b < m < 2^24, in 32-bit integers (no shaderInt64 needed): the 48-bit
// product's high word is reduced 8 bits at a time.
uint kiln_mulmod24(uint a, uint b, uint m) {
  uint high, low;
  umulExtended(a, b, high, low);
  uint r = high % m;
  r = (r << 8) % m;
  r = (r << 8) % m;
  r = (r << 8) % m;
  r = (r << 8) % m;
  return (r + low % m) % m;
}
// 2^d mod m for 0 <= d < 512, by squaring, written out (no loop).
uint kiln_pow2_mod(int d, uint m) {
  uint power = 1u % m, base = 2u % m;
  if ((d & 1) != 0) power = kiln_mulmod24(power, base, m);
  base = kiln_mulmod24(base, base, m);
  if ((d & 2) != 0) power = kiln_mulmod24(power, base, m);
  base = kiln_mulmod24(base, base, m);
  if ((d & 4) != 0) power = kiln_mulmod24(power, base, m);
  base = kiln_mulmod24(base, base, m);
  if ((d & 8) != 0) power = kiln_mulmod24(power, base, m);
  base = kiln_mulmod24(base, base, m);
  if ((d & 16) != 0) power = kiln_mulmod24(power, base, m);
  base = kiln_mulmod24(base, base, m);
  if ((d & 32) != 0) power = kiln_mulmod24(power, base, m);
  base = kiln_mulmod24(base, base, m);
  if ((d & 64) != 0) power = kiln_mulmod24(power, base, m);
  base = kiln_mulmod24(base, base, m);
  if ((d & 128) != 0) power = kiln_mulmod24(power, base, m);
  base = kiln_mulmod24(base, base, m);
  if ((d & 256) != 0) power = kiln_mulmod24(power, base, m);
  base = kiln_mulmod24(base, base, m);
  return power;
}
// C's fmod, exact: |x| = mx 2^ex and |y| = my 2^ey with integer mantissas, and
// |x| mod |y| = (mx 2^(ex - ey) mod my) 2^ey.
float kiln_fmod(float x, float y) {
  uint bits_x = floatBitsToUint(x), bits_y = floatBitsToUint(y);
  uint sign = bits_x & 0x80000000u, abs_x = bits_x & 0x7fffffffu, abs_y = bits_y & 0x7fffffffu;
  if (abs_y == 0u || abs_x >= 0x7f800000u || abs_y > 0x7f800000u) return kiln_f_nan();
  if (abs_x < abs_y) return x;
  int ex = max(int(abs_x >> 23), 1) - 150, ey = max(int(abs_y >> 23), 1) - 150;
  uint mx = (abs_x & 0x7fffffu) | (abs_x >= 0x800000u ? 0x800000u : 0u);
  uint m = (abs_y & 0x7fffffu) | (abs_y >= 0x800000u ? 0x800000u : 0u);
  uint r = kiln_mulmod24(mx % m, kiln_pow2_mod(ex - ey, m), m);
  return uintBitsToFloat(sign | floatBitsToUint(kiln_scalbn(float(r), ey)));
}
)";

}  // namespace kiln

// The GLSL dialect's float64 math library: glsl_math.cpp's algorithms in double (see there for
// what each does and why), with longer series, a 192-bit window of 2/pi for sin, cos and tan (a
// double's mantissa is 53 bits), erfc fitted on three pieces of 1/x, and fmod's modular
// arithmetic on 53-bit mantissas. It uses 64-bit integers, so float64 needs shaderInt64 too.

#include "codegen/glsl_math.h"

namespace kiln {

const char* const kGlslDoubleMath =
    R"(const uint kiln_two_over_pi_wide[44] = uint[](0xA2F9836Eu, 0x4E441529u, 0xFC2757D1u, 0xF534DDC0u, 0xDB629599u, 0x3C439041u, 0xFE5163ABu, 0xDEBBC561u, 0xB7246E3Au, 0x424DD2E0u, 0x06492EEAu, 0x09D1921Cu, 0xFE1DEB1Cu, 0xB129A73Eu, 0xE88235F5u, 0x2EBB4484u, 0xE99C7026u, 0xB45F7E41u, 0x3991D639u, 0x835339F4u, 0x9C845F8Bu, 0xBDF9283Bu, 0x1FF897FFu, 0xDE05980Fu, 0xEF2F118Bu, 0x5A0A6D1Fu, 0x6D367ECFu, 0x27CB09B7u, 0x4F463F66u, 0x9E5FEA2Du, 0x7527BAC7u, 0xEBE5F17Bu, 0x3D0739F7u, 0x8A5292EAu, 0x6BFB5FB1u, 0x1F8D5D08u, 0x56033046u, 0xFC7B6BABu, 0xF0CFBC20u, 0x9AF4361Du, 0xA9E39161u, 0x5EE61B08u, 0x6599855Fu, 0x14A06840u);
double kiln_d_inf() { return kiln_bits_double(0x7ff0000000000000ul); }
double kiln_d_nan() { return kiln_bits_double(0x7ff8000000000000ul); }
bool kiln_d_negative(double x) { return (kiln_double_bits(x) >> 63) != 0ul; }
double kiln_d_pow2(int k) { return kiln_bits_double(uint64_t(k + 1023) << 52); }
double kiln_scalbn(double x, int k) {
  precise double y = x;
  if (k > 1023) { y = y * kiln_d_pow2(1000); k = min(k - 1000, 1023); }
  else if (k < -1022) { y = y * kiln_d_pow2(-1000); k = max(k + 1000, -1022); }
  precise double scaled = y * kiln_d_pow2(k);
  return scaled;
}
void kiln_split(double a, out double hi, out double lo) {
  precise double c = 134217729.0lf * a;
  precise double h = c - (c - a);
  hi = h;
  lo = a - h;
}
double kiln_two_prod(double a, double b, out double error) {
  precise double p = a * b;
  double a_hi, a_lo, b_hi, b_lo;
  kiln_split(a, a_hi, a_lo);
  kiln_split(b, b_hi, b_lo);
  precise double e = ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo;
  error = e;
  return p;
}
double kiln_two_sum(double a, double b, out double error) {
  precise double s = a + b;
  precise double bb = s - a;
  precise double e = (a - (s - bb)) + (b - bb);
  error = e;
  return s;
}
// a + b = s + error exactly, for |a| >= |b|: renormalizes a two-double value.
double kiln_fast_two_sum(double a, double b, out double error) {
  precise double sum = a + b;
  precise double e = b - (sum - a);
  error = e;
  return sum;
}
double kiln_expm1_taylor(double r) {
  precise double p = r + r * r * (0.5lf + r * (0.16666666666666666lf + r * (0.041666666666666664lf + r * (0.008333333333333333lf + r * (0.001388888888888889lf + r * (0.0001984126984126984lf + r * (2.48015873015873e-05lf + r * (2.7557319223985893e-06lf + r * (2.755731922398589e-07lf + r * (2.505210838544172e-08lf + r * (2.08767569878681e-09lf + r * (1.6059043836821613e-10lf + r * (1.1470745597729725e-11lf)))))))))))));
  return p;
}
double kiln_exp(double x) {
  if (isnan(x)) return x;
  if (x > 710.0lf) return kiln_d_inf();
  if (x < -746.0lf) return 0.0lf;
  precise double k = roundEven(x * 1.4426950408889634lf);
  precise double r = (x - k * 0.6931471803691238lf) - k * 1.9082149292705877e-10lf;
  precise double p = 1.0lf + kiln_expm1_taylor(r);
  return kiln_scalbn(p, int(k));
}
double kiln_exp2(double x) {
  if (isnan(x)) return x;
  if (x > 1025.0lf) return kiln_d_inf();
  if (x < -1076.0lf) return 0.0lf;
  precise double k = roundEven(x);
  precise double r = (x - k) * 0.6931471805599453lf;
  precise double p = 1.0lf + kiln_expm1_taylor(r);
  return kiln_scalbn(p, int(k));
}
double kiln_log_mantissa(double x, out int e, out double f_out, out double s_out) {
  precise double y = x;
  int exponent = 0;
  if (y < 2.2250738585072014e-308lf) { y = y * kiln_d_pow2(54); exponent = -54; }
  uint64_t bits = kiln_double_bits(y);
  exponent += int(bits >> 52) - 1023;
  precise double m = kiln_bits_double((bits & 0xffffffffffffful) | 0x3ff0000000000000ul);
  if (m > 1.4142135623730951lf) { m = m * 0.5lf; exponent += 1; }
  precise double f = m - 1.0lf;
  precise double s = f / (2.0lf + f);
  precise double z = s * s;
  precise double tail = z * (0.6666666666666666lf + z * (0.4lf + z * (0.2857142857142857lf + z * (0.2222222222222222lf + z * (0.18181818181818182lf + z * (0.15384615384615385lf + z * (0.13333333333333333lf + z * (0.11764705882352941lf + z * (0.10526315789473684lf + z * (0.09523809523809523lf + z * (0.08695652173913043lf + z * (0.08lf))))))))))));
  precise double half_f2 = 0.5lf * f * f;
  precise double log_m = f - (half_f2 - s * (half_f2 + tail));
  e = exponent;
  f_out = f;
  s_out = s;
  return log_m;
}
double kiln_log(double x) {
  if (isnan(x)) return x;
  if (x < 0.0lf) return kiln_d_nan();
  if (x == 0.0lf) return -kiln_d_inf();
  if (isinf(x)) return x;
  int e; double f, s;
  precise double log_m = kiln_log_mantissa(x, e, f, s);
  precise double k = double(e);
  precise double result = k * 0.6931471803691238lf + (log_m + k * 1.9082149292705877e-10lf);
  return result;
}
double kiln_log2(double x) {
  if (isnan(x)) return x;
  if (x < 0.0lf) return kiln_d_nan();
  if (x == 0.0lf) return -kiln_d_inf();
  if (isinf(x)) return x;
  int e; double f, s;
  precise double log_m = kiln_log_mantissa(x, e, f, s);
  precise double result = double(e) + log_m * 1.4426950408889634lf;
  return result;
}
uint kiln_bits_at(uint q[9], int position) {
  int word = position >> 5, offset = position & 31;
  if (offset == 0) return q[word];
  return (q[word] >> uint(offset)) | (q[word + 1] << uint(32 - offset));
}
uint kiln_window_word(int word, int offset) {
  if (offset == 0) return kiln_two_over_pi_wide[word];
  return (kiln_two_over_pi_wide[word] << uint(offset)) | (kiln_two_over_pi_wide[word + 1] >> uint(32 - offset));
}
#define KILN_LO32(v) ((v) & 0xfffffffful)
#define KILN_HI32(v) ((v) >> 32)
// |x| = (4n + quadrant) pi/2 + r_hi + r_lo with |r| <= pi/4, for finite x; returns the quadrant.
int kiln_reduce_half_pi(double ax, out double r_hi, out double r_lo) {
  if (ax <= 0.7853981633974483lf) { r_hi = ax; r_lo = 0.0lf; return 0; }
  uint64_t bits = kiln_double_bits(ax);
  int s = int(bits >> 52) - 1075;  // ax = m 2^s, m the 53-bit mantissa
  uint64_t m = (bits & 0xffffffffffffful) | 0x10000000000000ul;
  int k0 = max(1, s - 1);
  int word = (k0 - 1) >> 5, offset = (k0 - 1) & 31;
  // The 192 bits of 2/pi from bit k0, least significant word first; m in two words.
  uint64_t w0 = uint64_t(kiln_window_word(word + 5, offset)), w1 = uint64_t(kiln_window_word(word + 4, offset));
  uint64_t w2 = uint64_t(kiln_window_word(word + 3, offset)), w3 = uint64_t(kiln_window_word(word + 2, offset));
  uint64_t w4 = uint64_t(kiln_window_word(word + 1, offset)), w5 = uint64_t(kiln_window_word(word, offset));
  uint64_t m0 = m & 0xfffffffful, m1 = m >> 32;
  uint64_t a0 = m0 * w0, a1 = m0 * w1, a2 = m0 * w2, a3 = m0 * w3, a4 = m0 * w4, a5 = m0 * w5;
  uint64_t b0 = m1 * w0, b1 = m1 * w1, b2 = m1 * w2, b3 = m1 * w3, b4 = m1 * w4, b5 = m1 * w5;
  uint q[9];
  uint64_t column = KILN_LO32(a0);
  q[0] = uint(column);
  column = (column >> 32) + KILN_LO32(a1) + KILN_LO32(b0) + KILN_HI32(a0);
  q[1] = uint(column);
  column = (column >> 32) + KILN_LO32(a2) + KILN_LO32(b1) + KILN_HI32(a1) + KILN_HI32(b0);
  q[2] = uint(column);
  column = (column >> 32) + KILN_LO32(a3) + KILN_LO32(b2) + KILN_HI32(a2) + KILN_HI32(b1);
  q[3] = uint(column);
  column = (column >> 32) + KILN_LO32(a4) + KILN_LO32(b3) + KILN_HI32(a3) + KILN_HI32(b2);
  q[4] = uint(column);
  column = (column >> 32) + KILN_LO32(a5) + KILN_LO32(b4) + KILN_HI32(a4) + KILN_HI32(b3);
  q[5] = uint(column);
  column = (column >> 32) + KILN_LO32(b5) + KILN_HI32(a5) + KILN_HI32(b4);
  q[6] = uint(column);
  column = (column >> 32) + KILN_HI32(b5);
  q[7] = uint(column);
  q[8] = 0u;
  int t = k0 + 191 - s;  // ax 2/pi = q / 2^t
  int quadrant = int(kiln_bits_at(q, t) & 3u);
  uint f0 = kiln_bits_at(q, t - 32), f1 = kiln_bits_at(q, t - 64);
  uint f2 = kiln_bits_at(q, t - 96), f3 = kiln_bits_at(q, t - 128);
  bool negative = f0 >= 0x80000000u;
  if (negative) {  // round to the nearest quadrant: the fraction becomes 1 - fraction, r < 0
    quadrant = (quadrant + 1) & 3;
    f0 = ~f0; f1 = ~f1; f2 = ~f2; f3 = ~f3 + 1u;
    if (f3 == 0u) { f2 += 1u; if (f2 == 0u) { f1 += 1u; if (f1 == 0u) f0 += 1u; } }
  }
  // Normalized: the fraction's leading one at the top of f0.
  int leading = 0;
  if (f0 == 0u) { f0 = f1; f1 = f2; f2 = f3; f3 = 0u; leading += 32; }
  if (f0 == 0u) { f0 = f1; f1 = f2; f2 = f3; f3 = 0u; leading += 32; }
  if (f0 == 0u) { f0 = f1; f1 = f2; f2 = f3; f3 = 0u; leading += 32; }
  if (f0 == 0u) { r_hi = 0.0lf; r_lo = 0.0lf; return quadrant; }
  int shift = 31 - findMSB(f0);
  if (shift > 0) {
    f0 = (f0 << uint(shift)) | (f1 >> uint(32 - shift));
    f1 = (f1 << uint(shift)) | (f2 >> uint(32 - shift));
    f2 = (f2 << uint(shift)) | (f3 >> uint(32 - shift));
    f3 <<= uint(shift);
  }
  leading += shift;
  uint64_t top = (uint64_t(f0) << 21) | uint64_t(f1 >> 11);
  uint64_t next = ((uint64_t(f1) & 0x7fful) << 42) | (uint64_t(f2) << 10) | uint64_t(f3 >> 22);
  precise double f_hi = double(top) * kiln_d_pow2(-53 - leading);
  precise double f_lo = double(next) * kiln_d_pow2(-106 - leading);
  double product_error;
  precise double p = kiln_two_prod(f_hi, 1.5707963267948966lf, product_error);
  precise double tail = product_error + (f_hi * 6.123233995736766e-17lf + f_lo * 1.5707963267948966lf);
  precise double sum = p + tail;
  precise double rest = tail - (sum - p);
  r_hi = negative ? -sum : sum;
  r_lo = negative ? -rest : rest;
  return quadrant;
}
double kiln_sin_kernel(double r, double r_lo) {
  precise double z = r * r;
  precise double p = z * r * (-0.16666666666666666lf + z * (0.008333333333333333lf + z * (-0.0001984126984126984lf + z * (2.7557319223985893e-06lf + z * (-2.505210838544172e-08lf + z * (1.6059043836821613e-10lf + z * (-7.647163731819816e-13lf + z * (2.8114572543455206e-15lf + z * (-8.22063524662433e-18lf + z * (1.9572941063391263e-20lf))))))))));
  precise double result = r + (p + r_lo * (1.0lf - 0.5lf * z));
  return result;
}
double kiln_cos_kernel(double r, double r_lo) {
  precise double z = r * r;
  precise double half_z = 0.5lf * z;
  precise double w = 1.0lf - half_z;
  precise double c = z * z * (0.041666666666666664lf + z * (-0.001388888888888889lf + z * (2.48015873015873e-05lf + z * (-2.755731922398589e-07lf + z * (2.08767569878681e-09lf + z * (-1.1470745597729725e-11lf + z * (4.779477332387385e-14lf + z * (-1.5619206968586225e-16lf + z * (4.110317623312165e-19lf)))))))));
  precise double result = w + (((1.0lf - w) - half_z) + (c - r * r_lo));
  return result;
}
double kiln_sin(double x) {
  if (isnan(x) || isinf(x)) return kiln_d_nan();
  double r, r_lo;
  int quadrant = kiln_reduce_half_pi(abs(x), r, r_lo);
  precise double value = (quadrant & 1) == 0 ? kiln_sin_kernel(r, r_lo) : kiln_cos_kernel(r, r_lo);
  if ((quadrant & 2) != 0) value = -value;
  return kiln_d_negative(x) ? -value : value;
}
double kiln_cos(double x) {
  if (isnan(x) || isinf(x)) return kiln_d_nan();
  double r, r_lo;
  int quadrant = kiln_reduce_half_pi(abs(x), r, r_lo);
  precise double value = (quadrant & 1) == 0 ? kiln_cos_kernel(r, r_lo) : kiln_sin_kernel(r, r_lo);
  if (quadrant == 1 || quadrant == 2) value = -value;
  return value;
}
double kiln_tan(double x) {
  if (isnan(x) || isinf(x)) return kiln_d_nan();
  double r, r_lo;
  int quadrant = kiln_reduce_half_pi(abs(x), r, r_lo);
  precise double sine = kiln_sin_kernel(r, r_lo), cosine = kiln_cos_kernel(r, r_lo);
  precise double value = (quadrant & 1) == 0 ? sine / cosine : -cosine / sine;
  return kiln_d_negative(x) ? -value : value;
}
double kiln_tanh(double x) {
  if (isnan(x)) return x;
  precise double ax = abs(x);
  if (ax < 7.450580596923828e-9lf) return x;
  if (ax > 19.1lf) return kiln_d_negative(x) ? -1.0lf : 1.0lf;
  precise double y = 2.0lf * ax;
  precise double t;
  if (y < 0.34657359027997264lf) {
    t = kiln_expm1_taylor(y);
  } else {
    precise double k = roundEven(y * 1.4426950408889634lf);
    precise double r = (y - k * 0.6931471803691238lf) - k * 1.9082149292705877e-10lf;
    precise double power = kiln_d_pow2(int(k));
    t = power * kiln_expm1_taylor(r) + (power - 1.0lf);
  }
  precise double value = t / (t + 2.0lf);
  return kiln_d_negative(x) ? -value : value;
}
double kiln_pow_positive(double a, double b) {
  int e; double f, s;
  kiln_log_mantissa(a, e, f, s);
  double d_error, p_error;
  precise double d = kiln_two_sum(2.0lf, f, d_error);
  precise double p = kiln_two_prod(s, d, p_error);
  precise double s_lo = (((f - p) - p_error) - s * d_error) / d;
  precise double z = s * s;
  precise double tail = s * z * (0.6666666666666666lf + z * (0.4lf + z * (0.2857142857142857lf + z * (0.2222222222222222lf + z * (0.18181818181818182lf + z * (0.15384615384615385lf + z * (0.13333333333333333lf + z * (0.11764705882352941lf + z * (0.10526315789473684lf + z * (0.09523809523809523lf + z * (0.08695652173913043lf + z * (0.08lf))))))))))));
  double ln_lo, l_error, l_lo, sum_error, log2_lo, y_error, y_lo;
  precise double ln_hi = kiln_fast_two_sum(2.0lf * s, 2.0lf * s_lo + tail, ln_lo);
  precise double l = kiln_two_prod(ln_hi, 1.4426950408889634lf, l_error);
  l = kiln_fast_two_sum(l, l_error + (ln_hi * 2.0355273740931033e-17lf + ln_lo * 1.4426950408889634lf), l_lo);
  precise double log2_hi = kiln_two_sum(double(e), l, sum_error);
  log2_hi = kiln_fast_two_sum(log2_hi, sum_error + l_lo, log2_lo);
  if (log2_hi == 0.0lf) return 1.0lf;
  if (abs(b) > 1.8446744073709552e19lf) return (log2_hi > 0.0lf) == (b > 0.0lf) ? kiln_d_inf() : 0.0lf;
  precise double y = kiln_two_prod(b, log2_hi, y_error);
  y = kiln_fast_two_sum(y, y_error + b * log2_lo, y_lo);
  if (y > 1025.0lf) return kiln_d_inf();
  if (y < -1077.0lf) return 0.0lf;
  precise double k = roundEven(y);
  precise double r = ((y - k) + y_lo) * 0.6931471805599453lf;
  precise double power = 1.0lf + kiln_expm1_taylor(r);
  return kiln_scalbn(power, int(k));
}
double kiln_pow(double a, double b) {
  double inf = kiln_d_inf();
  if (b == 0.0lf || a == 1.0lf) return 1.0lf;
  if (isnan(a) || isnan(b)) return a + b;
  bool b_integer = trunc(b) == b;
  bool b_odd = b_integer && abs(b) < 9007199254740992.0lf && (int64_t(abs(b)) & 1l) == 1l;
  if (isinf(b)) return abs(a) == 1.0lf ? 1.0lf : ((abs(a) > 1.0lf) == (b > 0.0lf) ? inf : 0.0lf);
  if (a == 0.0lf) return b < 0.0lf ? (b_odd ? kiln_bits_double((kiln_double_bits(a) & 0x8000000000000000ul) | 0x7ff0000000000000ul) : inf) : (b_odd ? a : 0.0lf);
  if (isinf(a)) { double magnitude = b > 0.0lf ? inf : 0.0lf; return a < 0.0lf && b_odd ? -magnitude : magnitude; }
  if (a < 0.0lf) { if (!b_integer) return kiln_d_nan(); double magnitude = kiln_pow_positive(-a, b); return b_odd ? -magnitude : magnitude; }
  return kiln_pow_positive(a, b);
}
double kiln_erf(double x) {
  if (isnan(x)) return x;
  precise double ax = abs(x);
  precise double value;
  if (ax < 1.0lf) {
    precise double z = x * x;
    value = ax * (1.1283791670955126lf + z * (-0.37612638903183754lf + z * (0.11283791670955126lf + z * (-0.026866170645131252lf + z * (0.005223977625442188lf + z * (-0.0008548327023450853lf + z * (0.00012055332981789664lf + z * (-1.492565035840625e-05lf + z * (1.6462114365889248e-06lf + z * (-1.6365844691234924e-07lf + z * (1.4807192815879218e-08lf + z * (-1.2290555301717928e-09lf + z * (9.422759064650411e-11lf + z * (-6.7113668551641105e-12lf + z * (4.4632242632864775e-13lf + z * (-2.7835162072109215e-14lf + z * (1.6342614095367152e-15lf + z * (-9.063970842808673e-17lf + z * (4.763348040515068e-18lf)))))))))))))))))));
  } else if (ax < 6.0lf) {
    // erfc(x) = exp(-x^2) h(1/x) / x, h fitted on three pieces of 1/x.
    double square_error;
    precise double square = kiln_two_prod(ax, ax, square_error);
    precise double v = 1.0lf / ax;
    precise double h;
    if (ax < 2.0lf) {
      precise double w = (v - 0.75lf) * 4.0lf;
      h = 0.46817959203854037lf + w * (-0.04227024444636883lf + w * (0.0012092420392932257lf + w * (0.00062958124598322lf + w * (-0.00019713177833110095lf + w * (3.68053905498283e-05lf + w * (-4.423080506324635e-06lf + w * (3.422973144671678e-08lf + w * (1.6981364175537587e-07lf + w * (-6.19046368421988e-08lf + w * (1.5041474990632376e-08lf + w * (-2.759432064711344e-09lf + w * (3.355329852473688e-10lf + w * (1.8923554976640057e-12lf + w * (-1.8778930934629676e-11lf + w * (9.67863708806843e-12lf + w * (-2.4577466267086116e-12lf))))))))))))))));
    } else if (ax < 3.5lf) {
      precise double w = (v - 0.39285714285714285lf) * 9.333333333333332lf;
      h = 0.5281251128951815lf + w * (-0.016575616852921755lf + w * (-0.0009501408740270875lf + w * (0.0002076941964283228lf + w * (-1.5651493376122587e-05lf + w * (-2.604878774790354e-07lf + w * (2.5046895707378723e-07lf + w * (-3.803142247653668e-08lf + w * (2.713137338186381e-09lf + w * (1.567165009277302e-10lf + w * (-8.258458246269473e-11lf + w * (1.4017617685413602e-11lf + w * (-1.2173451977268323e-12lf))))))))))));
    } else {
      precise double w = (v - 0.22619047619047616lf) * 16.8lf;
      h = 0.5507437184499075lf + w * (-0.0066120674293444984lf + w * (-0.0006502353020117236lf + w * (4.650927196962015e-05lf + w * (9.930076345473136e-08lf + w * (-2.48125442636785e-07lf + w * (1.843339681178423e-08lf + w * (1.8153586413487125e-10lf + w * (-1.6477201141272507e-10lf + w * (1.5377534591637364e-11lf + w * (-1.2266179626250629e-13lf + w * (-1.4592586513790106e-13lf + w * (1.8695984871453776e-14lf))))))))))));
    }
    precise double erfc = kiln_exp(-square) * (1.0lf - square_error) * h * v;
    value = 1.0lf - erfc;
  } else {
    value = 1.0lf;
  }
  return kiln_d_negative(x) ? -value : value;
}
// a b mod m for a, b < m < 2^53: the quotient estimated in double (within 3 of the true one),
// the remainder from wrapping 64-bit arithmetic, then corrected.
uint64_t kiln_mulmod(uint64_t a, uint64_t b, uint64_t m) {
  uint64_t q = uint64_t(double(a) * double(b) / double(m));
  uint64_t r = a * b - q * m;
  if ((r >> 63) != 0ul) r += m;
  if ((r >> 63) != 0ul) r += m;
  if ((r >> 63) != 0ul) r += m;
  if ((r >> 63) != 0ul) r += m;
  if (r >= m) r -= m;
  if (r >= m) r -= m;
  if (r >= m) r -= m;
  if (r >= m) r -= m;
  return r;
}
// 2^d mod m for 0 <= d < 4096, by squaring, written out (no loop).
uint64_t kiln_pow2_mod(int d, uint64_t m) {
  uint64_t power = 1ul % m, base = 2ul % m;
  if ((d & 1) != 0) power = kiln_mulmod(power, base, m);
  base = kiln_mulmod(base, base, m);
  if ((d & 2) != 0) power = kiln_mulmod(power, base, m);
  base = kiln_mulmod(base, base, m);
  if ((d & 4) != 0) power = kiln_mulmod(power, base, m);
  base = kiln_mulmod(base, base, m);
  if ((d & 8) != 0) power = kiln_mulmod(power, base, m);
  base = kiln_mulmod(base, base, m);
  if ((d & 16) != 0) power = kiln_mulmod(power, base, m);
  base = kiln_mulmod(base, base, m);
  if ((d & 32) != 0) power = kiln_mulmod(power, base, m);
  base = kiln_mulmod(base, base, m);
  if ((d & 64) != 0) power = kiln_mulmod(power, base, m);
  base = kiln_mulmod(base, base, m);
  if ((d & 128) != 0) power = kiln_mulmod(power, base, m);
  base = kiln_mulmod(base, base, m);
  if ((d & 256) != 0) power = kiln_mulmod(power, base, m);
  base = kiln_mulmod(base, base, m);
  if ((d & 512) != 0) power = kiln_mulmod(power, base, m);
  base = kiln_mulmod(base, base, m);
  if ((d & 1024) != 0) power = kiln_mulmod(power, base, m);
  base = kiln_mulmod(base, base, m);
  if ((d & 2048) != 0) power = kiln_mulmod(power, base, m);
  base = kiln_mulmod(base, base, m);
  return power;
}
double kiln_fmod(double x, double y) {
  uint64_t bits_x = kiln_double_bits(x), bits_y = kiln_double_bits(y);
  uint64_t sign = bits_x & 0x8000000000000000ul;
  uint64_t abs_x = bits_x & 0x7ffffffffffffffful, abs_y = bits_y & 0x7ffffffffffffffful;
  if (abs_y == 0ul || abs_x >= 0x7ff0000000000000ul || abs_y > 0x7ff0000000000000ul) return kiln_d_nan();
  if (abs_x < abs_y) return x;
  int ex = max(int(abs_x >> 52), 1) - 1075, ey = max(int(abs_y >> 52), 1) - 1075;
  uint64_t mx = (abs_x & 0xffffffffffffful) | (abs_x >= 0x10000000000000ul ? 0x10000000000000ul : 0ul);
  uint64_t m = (abs_y & 0xffffffffffffful) | (abs_y >= 0x10000000000000ul ? 0x10000000000000ul : 0ul);
  uint64_t r = kiln_mulmod(mx % m, kiln_pow2_mod(ex - ey, m), m);
  return kiln_bits_double(sign | kiln_double_bits(kiln_scalbn(double(r), ey)));
}
)";

}  // namespace kiln

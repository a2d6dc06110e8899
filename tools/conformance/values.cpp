// Input values for the battery: edge values first, then seeded pseudo-random values.
//
// The left (role 0) and right (role 1) edge lists line up, so that binary ops meet the pairs that
// matter: NaN with a number, inf - inf, 0 / 0, x / -0.0, INT_MIN / -1, INT_MIN % -1, x / 0, x % 0,
// -7 / 2 and 7 % -2 (C truncation), MAX + 1 (wraparound). Float edges also hold the values where
// casts saturate or round (2^31, 2^63, 2^64, 65520 for float16, 2049 for float16, ...).

#include "tools/conformance/values.h"

#include <cmath>
#include <limits>

#include "core/hash.h"

namespace kiln::conformance {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<double> float_edges(DType dtype, int role) {
  const double sub = min_subnormal_of(dtype), normal = min_normal_of(dtype),
               big = max_finite_of(dtype);
  if (role == 1) {
    return {1,  kNaN, kInf, -kInf, kInf, 0,     -0.0, 0,  0,   -0.0, 2, 0.5, big,  2, -2,  2,
            -2, 2,    -2,   3,     kInf, -kInf, 1,    -1, sub, 0.25, 7, -7,  1e-3, 3, 0.1, -0.0};
  }
  return {kNaN,
          1,
          kInf,
          kInf,
          -kInf,
          -0.0,
          0,
          kInf,
          1,
          -1,
          sub,
          normal,
          big,
          -big,
          2.5,
          -2.5,
          5.5,
          -5.5,
          7,
          -7,
          0.5,
          1e-3,
          -sub,
          3 * sub,
          1.5,
          3.5,
          -0.5,
          0.49999997,
          127.9,
          -128.9,
          255.9,
          256,
          -0.9,
          32767.5,
          65504,
          65520,
          2049,
          2051,
          257,
          259,
          2147483520.0,
          2147483648.0,
          -2147483904.0,
          4294967296.0,
          9.2233715e18,
          9.223372036854775808e18,
          1.8446744073709551616e19,
          1e30,
          -1e30,
          100,
          -100,
          0.1,
          1e10};
}

// Intended signed values; each is wrapped into the dtype (so -1 is all ones for unsigned types).
std::vector<double> int_edges(DType dtype, int role) {
  const double low = int_as_double(dtype, int_min_of(dtype));
  const double high = int_as_double(dtype, int_max_of(dtype));
  if (role == 1)
    return {-1,  1, -1, 1,    2, -2, -2, 2, 0,   0, 0, 0, low,
            low, 3, 7,  high, 1, -3, 1,  2, 255, 1, 1, 2, 2};
  return {low, low, high, high, -7,   7,        -7,   7,    0,   -1,  1,     5,     low,
          -1,  100, -100, 1,    high, 16777217, 2049, 2051, 257, 259, 65520, 65504, 131073};
}

int64_t wrap_intended(DType dtype, double value) {
  if (dtype.is_unsigned() && value >= 9223372036854775808.0) return int_max_of(dtype);
  if (!dtype.is_unsigned() && value <= -9223372036854775808.0) return int_min_of(dtype);
  if (value >= 9223372036854775807.0) return int_max_of(dtype);
  return wrap(dtype, static_cast<uint64_t>(static_cast<int64_t>(value)));
}

}  // namespace

uint64_t Random::next() {
  state += 0x9e3779b97f4a7c15ull;
  uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double Random::uniform() {
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}
int64_t Random::range(int64_t low, int64_t high) {
  return low + static_cast<int64_t>(next() % static_cast<uint64_t>(high - low + 1));
}

uint64_t hash_text(const std::string& text) {
  return stable_hash(text);
}

HostTensor generate(DType dtype, const Shape& shape, Values kind, int role, uint64_t seed) {
  HostTensor tensor(dtype, shape);
  Random random{seed * 0x2545f4914f6cdd1dull + static_cast<uint64_t>(role) + 1};
  std::vector<double> edges;
  if (kind == Values::General || kind == Values::Divisor) {
    edges = dtype.is_float() ? float_edges(dtype, kind == Values::Divisor ? 1 : role)
                             : int_edges(dtype, kind == Values::Divisor ? 1 : role);
  }
  if (kind == Values::Unit && dtype.is_float()) {
    double below_one = 0.5;  // the largest value of the dtype below 1
    while (round_to(dtype, (1 + below_one) / 2) < 1)
      below_one = round_to(dtype, (1 + below_one) / 2);
    edges = {kNaN,      1,          -1,  0,    -0.0, kInf, -kInf, min_subnormal_of(dtype),
             below_one, -below_one, 1.5, -1.5, 0.5,  -0.5, 1e-3,  min_normal_of(dtype)};
  }
  const int64_t count = tensor.numel();
  // One-element tensors draw one edge at random, so that different cases see different edges.
  const size_t first = count == 1 && !edges.empty() ? random.next() % edges.size() : 0;
  for (int64_t index = 0; index < count; ++index) {
    Scalar& out = tensor.data[static_cast<size_t>(index)];
    if (dtype.is_bool()) {
      out.i =
          index < 2 && kind != Values::Positive ? index : static_cast<int64_t>(random.next() & 1);
      if (kind == Values::Positive || kind == Values::NearOne) out.i = 1;
      continue;
    }
    const size_t edge = first + static_cast<size_t>(index);
    if (edge < edges.size()) {
      if (dtype.is_float()) {
        out.f = round_to(dtype, edges[edge]);
      } else {
        out.i = wrap_intended(dtype, edges[edge]);
      }
      continue;
    }
    double value = 0;
    switch (kind) {
      case Values::General:
      case Values::Divisor:
        if (dtype.is_float()) {
          value = random.next() % 2 ? random.uniform() * 20 - 10
                                    : std::ldexp(1.0 + random.uniform(),
                                                 static_cast<int>(random.range(-20, 20))) *
                                          (random.next() % 2 ? 1 : -1);
        } else if (random.next() % 2) {
          value = static_cast<double>(random.range(-100, 100));
        } else {
          out.i = wrap(dtype, random.next());
          continue;
        }
        break;
      case Values::Small:
        value =
            dtype.is_float() ? random.uniform() * 8 - 4 : static_cast<double>(random.range(-8, 8));
        break;
      case Values::SmallInt:
        value = static_cast<double>(random.range(-8, 8));
        break;
      case Values::Positive:
        value = dtype.is_float() ? 0.25 + random.uniform() * 3.75
                                 : static_cast<double>(random.range(1, 8));
        break;
      case Values::NearOne: {
        const uint64_t pick = random.next() % 8;
        value = pick < 3    ? 1.0
                : pick == 3 ? -1.0
                : pick == 4 ? 2.0
                : pick == 5 ? 0.5
                            : 0.5 + random.uniform() * 1.5;
        if (!dtype.is_float()) value = std::round(value);
        break;
      }
      case Values::Exponent:
        value = static_cast<double>(random.range(-6, 6)) * 0.5;
        break;
      case Values::Bool:
        value = static_cast<double>(random.next() & 1);
        break;
      case Values::Interior:
        value = dtype.is_float() ? random.uniform() * 1.8 - 0.9 : 0;
        break;
      case Values::AboveOne:
        value = dtype.is_float() ? 1.25 + random.uniform() * 2.75
                                 : static_cast<double>(random.range(2, 4));
        break;
      case Values::Unit:
        value =
            dtype.is_float() ? random.uniform() * 2 - 1 : static_cast<double>(random.range(-1, 1));
        break;
    }
    if (dtype.is_float()) {
      out.f = round_to(dtype, value);
    } else {
      if (dtype.is_unsigned() && value < 0) value = -value;
      out.i = wrap_intended(dtype, value);
    }
  }
  return tensor;
}

}  // namespace kiln::conformance

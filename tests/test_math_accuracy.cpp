// Math functions swept over many float32 and float64 inputs on every device, against the C
// library in long double: the ulp bounds kiln promises (the conformance battery's tolerances:
// exp, exp2, log, log2, log10, log1p, expm1 3 ulp; sin, cos, asin, acos, sinh, cosh, asinh, acosh,
// hypot 4; tan, tanh, atan, atanh 5; atan2 6; erf, pow 16) hold everywhere, not only
// at the battery's few values. (The CPU's vector logf was once 3.94 ulp off for 1.5% of [0.5, 2).)
// On a device that flushes float32 subnormals (NVIDIA's Vulkan driver), a float32 result may
// also be the function of the input flushed to zero, or a subnormal result flushed to zero, as
// kiln conformance compares there.

#include <catch2/catch.hpp>

#include <kiln/kiln.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>

#include "tools/conformance/runner.h"

using namespace kiln;

namespace {

struct MathCase {
  const char* name;
  std::function<Tensor(const Tensor&)> op;
  long double (*reference)(long double);
  double ulps;
};

const MathCase kCases[] = {
    {"exp", [](const Tensor& x) { return x.exp(); }, [](long double v) { return expl(v); }, 3},
    {"exp2", [](const Tensor& x) { return x.exp2(); }, [](long double v) { return exp2l(v); }, 3},
    {"log", [](const Tensor& x) { return x.abs().log(); },
     [](long double v) { return logl(fabsl(v)); }, 3},
    {"log2", [](const Tensor& x) { return x.abs().log2(); },
     [](long double v) { return log2l(fabsl(v)); }, 3},
    {"sin", [](const Tensor& x) { return x.sin(); }, [](long double v) { return sinl(v); }, 4},
    {"cos", [](const Tensor& x) { return x.cos(); }, [](long double v) { return cosl(v); }, 4},
    {"tan", [](const Tensor& x) { return x.tan(); }, [](long double v) { return tanl(v); }, 5},
    {"tanh", [](const Tensor& x) { return x.tanh(); }, [](long double v) { return tanhl(v); }, 5},
    {"erf", [](const Tensor& x) { return x.erf(); }, [](long double v) { return erfl(v); }, 16},
    {"asin", [](const Tensor& x) { return x.asin(); }, [](long double v) { return asinl(v); }, 4},
    {"acos", [](const Tensor& x) { return x.acos(); }, [](long double v) { return acosl(v); }, 4},
    {"atan", [](const Tensor& x) { return x.atan(); }, [](long double v) { return atanl(v); }, 5},
    {"sinh", [](const Tensor& x) { return x.sinh(); }, [](long double v) { return sinhl(v); }, 4},
    {"cosh", [](const Tensor& x) { return x.cosh(); }, [](long double v) { return coshl(v); }, 4},
    {"asinh", [](const Tensor& x) { return x.asinh(); }, [](long double v) { return asinhl(v); },
     4},
    {"acosh", [](const Tensor& x) { return x.abs().acosh(); },
     [](long double v) { return acoshl(fabsl(v)); }, 4},
    {"atanh", [](const Tensor& x) { return x.atanh(); }, [](long double v) { return atanhl(v); },
     5},
    {"log10", [](const Tensor& x) { return x.abs().log10(); },
     [](long double v) { return log10l(fabsl(v)); }, 3},
    {"log1p", [](const Tensor& x) { return x.log1p(); }, [](long double v) { return log1pl(v); },
     3},
    {"expm1", [](const Tensor& x) { return x.expm1(); }, [](long double v) { return expm1l(v); },
     3},
};

struct BinaryMathCase {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> op;
  long double (*reference)(long double, long double);
  double ulps;
};

const BinaryMathCase kBinaryCases[] = {
    {"atan2", [](const Tensor& y, const Tensor& x) { return atan2(y, x); },
     [](long double y, long double x) { return atan2l(y, x); }, 6},
    {"hypot", [](const Tensor& a, const Tensor& b) { return hypot(a, b); },
     [](long double a, long double b) { return hypotl(a, b); }, 4},
};

// |got - want| in ulps of `want` rounded to T (subnormal ulps below the normal range); 0 where
// both are the same NaN or infinity, huge where only one is.
template <typename T>
double ulp_error(T got, long double want) {
  const T rounded = static_cast<T>(want);
  if (std::isnan(rounded) || std::isnan(got))
    return std::isnan(rounded) && std::isnan(got) ? 0 : 1e30;
  if (std::isinf(rounded) || std::isinf(got)) return rounded == got ? 0 : 1e30;
  const int digits = std::numeric_limits<T>::digits;
  const int lowest = std::numeric_limits<T>::min_exponent - digits;
  int exponent = 0;
  std::frexp(static_cast<double>(rounded == 0 ? std::numeric_limits<T>::min() : rounded),
             &exponent);
  const long double ulp = std::ldexp(1.0L, std::max(exponent - digits, lowest));
  return static_cast<double>(fabsl(static_cast<long double>(got) - want) / ulp);
}

// Random bit patterns, then values spread over [-10, 10], [-200, 200] and [-1, 1].
template <typename T, typename Bits>
std::vector<T> inputs(size_t count) {
  std::mt19937_64 random(42);
  std::vector<T> values(count);
  for (size_t index = 0; index < count; ++index) {
    const Bits bits = static_cast<Bits>(random());
    std::memcpy(&values[index], &bits, sizeof(T));
    if (index % 4 == 1)
      values[index] = static_cast<T>(std::uniform_real_distribution<double>(-10, 10)(random));
    if (index % 4 == 2)
      values[index] = static_cast<T>(std::uniform_real_distribution<double>(-200, 200)(random));
    if (index % 4 == 3)  // the domain of asin, acos and atanh
      values[index] = static_cast<T>(std::uniform_real_distribution<double>(-1, 1)(random));
  }
  return values;
}

// x, or a zero of its sign where x is a float32 subnormal.
template <typename T>
T flushed(T x) {
  return sizeof(T) == 4 && x != 0 && std::fabs(x) < std::numeric_limits<float>::min()
             ? std::copysign(T(0), x)
             : x;
}

template <typename T, typename Bits>
void sweep(const std::string& device, size_t count, bool flushes) {
  const std::vector<T> values = inputs<T, Bits>(count);
  const Tensor x = Tensor::from_vector<T>(values, {static_cast<int64_t>(count)}, device);
  for (const MathCase& math : kCases) {
    const std::vector<T> got = math.op(x).template to_vector<T>();
    double worst = 0;
    T worst_at = 0;
    for (size_t index = 0; index < count; ++index) {
      double error = ulp_error(got[index], math.reference(values[index]));
      if (flushes && sizeof(T) == 4) {
        const long double as_flushed = math.reference(flushed(values[index]));
        for (long double want :
             {as_flushed,
              static_cast<long double>(flushed(static_cast<T>(math.reference(values[index]))))}) {
          error = std::min(error, ulp_error(got[index], want));
        }
        if (got[index] == 0 && flushed(static_cast<T>(as_flushed)) == 0) error = 0;
      }
      if (error > worst) worst = error, worst_at = values[index];
    }
    INFO(device << " " << math.name << (sizeof(T) == 4 ? " float32" : " float64") << ": " << worst
                << " ulp at " << static_cast<double>(worst_at));
    CHECK(worst <= math.ulps);
  }
  // The functions of two: each value against the same values reversed (every pairing of
  // magnitudes, signs and specials).
  const std::vector<T> others(values.rbegin(), values.rend());
  const Tensor y = Tensor::from_vector<T>(others, {static_cast<int64_t>(count)}, device);
  for (const BinaryMathCase& math : kBinaryCases) {
    const std::vector<T> got = math.op(x, y).template to_vector<T>();
    double worst = 0;
    size_t worst_at = 0;
    for (size_t index = 0; index < count; ++index) {
      double error = ulp_error(got[index], math.reference(values[index], others[index]));
      if (flushes && sizeof(T) == 4)
        error = std::min(error, ulp_error(got[index], math.reference(flushed(values[index]),
                                                                     flushed(others[index]))));
      if (error > worst) worst = error, worst_at = index;
    }
    INFO(device << " " << math.name << (sizeof(T) == 4 ? " float32" : " float64") << ": " << worst
                << " ulp at (" << static_cast<double>(values[worst_at]) << ", "
                << static_cast<double>(others[worst_at]) << ")");
    CHECK(worst <= math.ulps);
  }
}

}  // namespace

TEST_CASE("math functions keep their ulp bounds over many inputs on every device", "[math]") {
  for (const std::string& device : kiln::devices()) {
    const bool flushes = conformance::device_flushes_subnormals(device);
    sweep<float, uint32_t>(device, 1 << 17, flushes);
    sweep<double, uint64_t>(device, 1 << 15, flushes);
  }
}

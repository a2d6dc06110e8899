// The draws of kiln/random.h: each turns the generator's Threefry words (runtime/random.cpp)
// into numbers of one distribution, with tensor ops that fuse with the draw's consumers.

#include <kiln/random.h>
#include <kiln/sort.h>

#include <cmath>
#include <limits>
#include <numbers>
#include <string>
#include <utility>
#include <vector>

#include "core/const_fold.h"
#include "runtime/random_internal.h"
#include "runtime/tensor_internal.h"

namespace kiln::random {
namespace {

std::string in_op(const char* op) {
  return std::string("[") + op + "] ";
}

void check_float_dtype(DType dtype, const char* op, const std::string& what) {
  if (!dtype.is_float())
    throw DTypeError(in_op(op) + what + " must be a float dtype (float16, bfloat16, float32, " +
                         "float64), got " + dtype.name(),
                     dtype);
}

}  // namespace

// Uniform in [0, 1) on the grid k * 2^-bits, bits the mantissa of `dtype` (float32 for the half
// types is exact: their grid is coarser), in float64 for float64 and float32 otherwise.
Tensor unit_interval(const RandomWords& words, DType dtype) {
  if (dtype == dtypes::float64) {
    const Tensor high = (words.first >> 5).cast(dtypes::float64);
    const Tensor low = (words.second >> 6).cast(dtypes::float64);
    return (high * 67108864.0 + low) * std::ldexp(1.0, -53);
  }
  const int bits = dtype == dtypes::float16 ? 11 : dtype == dtypes::bfloat16 ? 8 : 24;
  return (words.first >> (32 - bits)).cast(dtypes::float32) * std::ldexp(1.0, -bits);
}

namespace {

// `value` as a tensor of `dtype` holds it.
double stored(double value, DType dtype) {
  return round_to_stored_dtype(round_to_float_dtype(value, dtype), dtype);
}

// The largest value of `dtype` below `bound` (a finite float).
double largest_below(double bound, DType dtype) {
  const double rounded = stored(bound, dtype);
  if (rounded < bound) return rounded;
  // Step down by a growing amount until rounding leaves `rounded`: the first such step lands on
  // its neighbour below, since each step at most doubles.
  for (double step = std::numeric_limits<double>::denorm_min();; step *= 2) {
    const double below = stored(rounded - step, dtype);
    if (below < rounded) return below;
  }
}

// The integer range of `dtype`, as long double (exact for every integer dtype's bounds).
std::pair<long double, long double> integer_range(DType dtype) {
  const int bits = dtype.itemsize() * 8;
  if (dtype.is_unsigned()) return {0.0L, std::ldexp(1.0L, bits) - 1.0L};
  return {-std::ldexp(1.0L, bits - 1), std::ldexp(1.0L, bits - 1) - 1.0L};
}

Tensor word_constant(uint32_t value, const std::string& device) {
  return Tensor::full({}, static_cast<double>(value), dtypes::uint32, device);
}

// The high word of the 64-bit product word * factor (factor < 2^32), in 16-bit pieces so that
// no device needs 64-bit integers.
Tensor multiply_high(const Tensor& word, uint64_t factor, const std::string& device) {
  const Tensor mask = word_constant(0xffffu, device);
  const double factor_low = static_cast<double>(factor & 0xffffu);
  const double factor_high = static_cast<double>(factor >> 16);
  const Tensor word_low = word & mask, word_high = word >> 16;
  const Tensor low_low = word_low * factor_low, high_low = word_high * factor_low;
  const Tensor low_high = word_low * factor_high, high_high = word_high * factor_high;
  const Tensor cross = (low_low >> 16) + (high_low & mask) + low_high;
  return (high_low >> 16) + (cross >> 16) + high_high;
}

// A ValueError naming the first element of `invalid` (bool, x's shape, x realized) that is true,
// with x's value there; `rule` says what valid is.
void reject_first(const Tensor& invalid, const Tensor& x, const char* op, const std::string& rule) {
  const Tensor any = invalid.any();
  if (!any.item<bool>()) return;
  const int64_t at = invalid.reshape({x.numel()}).cast(dtypes::int32).argmax(0).item<int64_t>();
  const float value = x.reshape({x.numel()})
                          .shrink(std::vector<std::pair<int64_t, int64_t>>{{at, at + 1}})
                          .cast(dtypes::float32)
                          .item<float>();
  throw ValueError(in_op(op) + describe(x) + " holds " + std::to_string(value) +
                   " at flat position " + std::to_string(at) + "; " + rule);
}

}  // namespace

Tensor uniform(Generator& generator, const DimShape& shape, double low, double high, DType dtype) {
  const char* op = "uniform";
  check_float_dtype(dtype, op, "dtype");
  if (!(low < high) || !std::isfinite(stored(low, dtype)) || !std::isfinite(stored(high, dtype)) ||
      !std::isfinite(round_to_float_dtype(high - low, dtype)))
    throw ValueError(in_op(op) + "needs finite bounds low < high whose difference is finite in " +
                     dtype.name() + ", got low " + std::to_string(low) + " and high " +
                     std::to_string(high));
  const Tensor unit = unit_interval(draw_words(generator, shape, op), dtype);
  if (low == 0.0 && high == 1.0) return unit.cast(dtype);
  // Rounding may carry low + (high - low) * u up to high: the clamp keeps the interval open.
  const Tensor scaled = (unit * (high - low) + low).cast(dtype);
  return minimum(scaled, Tensor::full({}, largest_below(high, dtype), dtype, generator.device()));
}

Tensor normal(Generator& generator, const DimShape& shape, double mean, double stddev,
              DType dtype) {
  const char* op = "normal";
  check_float_dtype(dtype, op, "dtype");
  if (!std::isfinite(mean) || !std::isfinite(stddev) || stddev < 0.0)
    throw ValueError(in_op(op) + "needs a finite mean and a finite stddev >= 0, got mean " +
                     std::to_string(mean) + " and stddev " + std::to_string(stddev));
  const RandomWords words = draw_words(generator, shape, op);
  Tensor radius_unit, angle_unit;  // in (0, 1] (log's argument) and [0, 1)
  if (dtype == dtypes::float64) {
    radius_unit = (words.first.cast(dtypes::float64) + 1.0) * std::ldexp(1.0, -32);
    angle_unit = words.second.cast(dtypes::float64) * std::ldexp(1.0, -32);
  } else {
    radius_unit = ((words.first >> 8).cast(dtypes::float32) + 1.0) * std::ldexp(1.0, -24);
    angle_unit = (words.second >> 8).cast(dtypes::float32) * std::ldexp(1.0, -24);
  }
  const Tensor standard =
      (radius_unit.log() * -2.0).sqrt() * (angle_unit * (2.0 * std::numbers::pi)).cos();
  return (standard * stddev + mean).cast(dtype);
}

Tensor randint(Generator& generator, int64_t low, int64_t high, const DimShape& shape,
               DType dtype) {
  const char* op = "randint";
  if (!dtype.is_int())
    throw DTypeError(in_op(op) + "dtype must be an integer dtype, got " + dtype.name(), dtype);
  const auto [smallest, largest] = integer_range(dtype);
  if (low >= high || static_cast<long double>(low) < smallest ||
      static_cast<long double>(high) - 1.0L > largest)
    throw ValueError(in_op(op) + "needs low < high with [low, high) inside " + dtype.name() +
                     "'s range, got low " + std::to_string(low) + " and high " +
                     std::to_string(high));
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  if (range > (uint64_t{1} << 32))
    throw ValueError(in_op(op) + "draws from at most 2^32 values, and [" + std::to_string(low) +
                     ", " + std::to_string(high) + ") holds " + std::to_string(range));
  const std::string& device = generator.device();
  const RandomWords words = draw_words(generator, shape, op);
  const Tensor offset =
      range == (uint64_t{1} << 32) ? words.first : multiply_high(words.first, range, device);
  if (dtype.itemsize() == 8) {
    const Tensor base = dtype.is_unsigned()
                            ? Tensor::from_vector(std::vector<uint64_t>{static_cast<uint64_t>(low)},
                                                  Shape{}, device)
                            : Tensor::from_vector(std::vector<int64_t>{low}, Shape{}, device);
    return offset.cast(dtype) + base;
  }
  // low + offset fits the dtype; in 32-bit words it wraps to the same bits.
  return (offset + word_constant(static_cast<uint32_t>(low), device)).cast(dtype);
}

Tensor bernoulli(Generator& generator, const Tensor& probabilities) {
  const char* op = "bernoulli";
  check_defined(probabilities, op);
  check_float_dtype(probabilities.dtype(), op, "the probabilities' dtype");
  check_generator_device(generator, probabilities, op);
  // Realized once, for the check and the draw both.
  probabilities.realize();
  reject_first((probabilities < 0.0) | (probabilities > 1.0) | probabilities.isnan(), probabilities,
               op, "every probability must be in [0, 1]");
  const Tensor unit =
      unit_interval(draw_words(generator, probabilities.dims(), op),
                    probabilities.dtype() == dtypes::float64 ? dtypes::float64 : dtypes::float32);
  return (unit < probabilities).cast(probabilities.dtype());
}

Tensor bernoulli(Generator& generator, const DimShape& shape, double p, DType dtype) {
  const char* op = "bernoulli";
  check_float_dtype(dtype, op, "dtype");
  if (!(p >= 0.0 && p <= 1.0))
    throw ValueError(in_op(op) + "p must be in [0, 1], got " + std::to_string(p));
  const Tensor unit = unit_interval(draw_words(generator, shape, op),
                                    dtype == dtypes::float64 ? dtypes::float64 : dtypes::float32);
  return (unit < p).cast(dtype);
}

Tensor dropout(Generator& generator, const Tensor& x, double p, bool training) {
  const char* op = "dropout";
  check_defined(x, op);
  check_float_dtype(x.dtype(), op, "x's dtype");
  check_generator_device(generator, x, op);
  if (!(p >= 0.0 && p <= 1.0))
    throw ValueError(in_op(op) + "p must be in [0, 1], got " + std::to_string(p));
  if (!training || p == 0.0) return x;
  // A multiply, as PyTorch's: NaN and inf stay NaN where dropped.
  if (p == 1.0) return x * 0.0;
  const Tensor unit =
      unit_interval(draw_words(generator, x.dims(), op),
                    x.dtype() == dtypes::float64 ? dtypes::float64 : dtypes::float32);
  return x * (unit >= p).cast(x.dtype()) * (1.0 / (1.0 - p));
}

Tensor randperm(Generator& generator, int64_t n, DType dtype) {
  const char* op = "randperm";
  if (!dtype.is_int())
    throw DTypeError(in_op(op) + "dtype must be an integer dtype, got " + dtype.name(), dtype);
  if (n < 0 || n > (int64_t{1} << 32) ||
      (n > 0 && static_cast<long double>(n - 1) > integer_range(dtype).second))
    throw ValueError(in_op(op) + "needs 0 <= n <= 2^32 with n - 1 in " + dtype.name() +
                     ", got n = " + std::to_string(n));
  if (n == 0) return Tensor::zeros(Shape{0}, dtype, generator.device());
  const RandomWords words = draw_words(generator, {Dim(n)}, op);
  const Tensor keys = (words.first.cast(dtypes::uint64) << 32) | words.second.cast(dtypes::uint64);
  return argsort(keys).cast(dtype);
}

Tensor multinomial(Generator& generator, const Tensor& probabilities, int64_t samples,
                   bool replacement) {
  const char* op = "multinomial";
  check_defined(probabilities, op);
  check_float_dtype(probabilities.dtype(), op, "the weights' dtype");
  check_generator_device(generator, probabilities, op);
  const int64_t ndim = probabilities.ndim();
  if (ndim != 1 && ndim != 2)
    throw ShapeError(in_op(op) + "weights must be [categories] or [rows, categories], got " +
                     describe(probabilities));
  const Shape& shape = probabilities.shape();
  const int64_t categories = shape.back();
  if (categories == 0)
    throw ShapeError(in_op(op) + describe(probabilities) + " has no categories to draw from");
  if (samples <= 0 || (!replacement && samples > categories))
    throw ValueError(in_op(op) + "samples must be in [1, " +
                     (replacement ? std::string("inf") : std::to_string(categories)) + "] (" +
                     (replacement ? "with" : "without") + " replacement), got " +
                     std::to_string(samples));
  const DType compute =
      probabilities.dtype() == dtypes::float64 ? dtypes::float64 : dtypes::float32;
  probabilities.realize();  // once, for the checks and the draw
  const Tensor weights =
      ndim == 1 ? probabilities.reshape({int64_t{1}, categories}) : probabilities;
  const int64_t rows = weights.shape()[0];
  reject_first((weights < 0.0) | ~weights.isfinite(), weights, op,
               "weights must be finite and >= 0");
  if (rows > 0) {
    const Tensor row_sum = weights.cast(compute).sum(1).min();
    const Tensor nonzero = (weights > 0.0).cast(dtypes::int32).sum(1).min();
    realize({row_sum, nonzero});
    const double smallest_sum = compute == dtypes::float64
                                    ? row_sum.item<double>()
                                    : static_cast<double>(row_sum.item<float>());
    if (!(smallest_sum > 0.0))
      throw ValueError(in_op(op) + "every row of " + describe(probabilities) +
                       " needs a positive sum of weights; a row sums to " +
                       std::to_string(smallest_sum));
    if (!replacement && nonzero.item<int32_t>() < samples)
      throw ValueError(in_op(op) + "without replacement, " + std::to_string(samples) +
                       " samples need as many nonzero weights in every row, and a row of " +
                       describe(probabilities) + " has " + std::to_string(nonzero.item<int32_t>()));
  }
  // Gumbel noise -log(-log(u)) with u strictly inside (0, 1): odd multiples of 2^-24 (2^-33),
  // which float32 (float64) holds exactly.
  auto gumbel = [&](const DimShape& noise_shape) {
    const RandomWords words = draw_words(generator, noise_shape, op);
    const Tensor unit =
        compute == dtypes::float64
            ? (words.first.cast(dtypes::float64) * 2.0 + 1.0) * std::ldexp(1.0, -33)
            : ((words.first >> 9).cast(dtypes::float32) * 2.0 + 1.0) * std::ldexp(1.0, -24);
    return -((-unit.log()).log());
  };
  const Tensor log_weights = weights.cast(compute).log();
  Tensor drawn;
  if (replacement) {
    const Tensor keys = log_weights.reshape({rows, int64_t{1}, categories}) +
                        gumbel({Dim(rows), Dim(samples), Dim(categories)});
    drawn = keys.argmax(2);
  } else {
    drawn = topk(log_weights + gumbel({Dim(rows), Dim(categories)}), samples, 1).second;
  }
  drawn = drawn.cast(dtypes::int64);
  return ndim == 1 ? drawn.reshape({samples}) : drawn;
}

}  // namespace kiln::random

namespace kiln {

// Uniform float32 from a generator of `seed` at offset 0: random::uniform's numbers, without a
// Generator to advance.
Tensor Tensor::rand(Shape shape, uint64_t seed, const std::string& device) {
  check_numel(shape, "rand");
  const Tensor state = generator_state(seed, 0, resolve_device(device));
  const DimShape dims(shape.begin(), shape.end());
  return random::unit_interval(threefry_words(state, dims, "rand", 0), dtypes::float32);
}

}  // namespace kiln

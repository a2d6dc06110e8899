#include "tools/conformance/host.h"

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

namespace kiln::conformance {
namespace {

constexpr double kTwo63 = 9223372036854775808.0;
constexpr double kTwo64 = 18446744073709551616.0;

// Rounds to a binary format with `precision` significant bits, minimum normal exponent `emin` and
// largest finite value `max_finite`: ties to even, subnormals kept, overflow to infinity.
double round_format(double value, int precision, int emin, double max_finite) {
  if (!std::isfinite(value) || value == 0) return value;
  int exponent = std::ilogb(value);
  if (exponent < emin) exponent = emin;
  const double quantum = std::ldexp(1.0, exponent - (precision - 1));
  const double rounded = std::nearbyint(value / quantum) * quantum;  // both steps exact
  if (std::fabs(rounded) > max_finite) return std::copysign(INFINITY, value);
  return rounded;
}

uint16_t half_bits(double exact) {
  const uint16_t sign = std::signbit(exact) ? 0x8000 : 0;
  if (std::isnan(exact)) return 0x7e00;
  const double magnitude = std::fabs(exact);
  if (std::isinf(magnitude)) return sign | 0x7c00;
  if (magnitude < std::ldexp(1.0, -14))
    return sign | static_cast<uint16_t>(magnitude / std::ldexp(1.0, -24));
  const int exponent = std::ilogb(magnitude);
  const auto mantissa = static_cast<uint16_t>(magnitude / std::ldexp(1.0, exponent - 10) - 1024);
  return sign | static_cast<uint16_t>((exponent + 15) << 10) | mantissa;
}

double half_value(uint16_t bits) {
  const double sign = (bits & 0x8000) ? -1.0 : 1.0;
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  if (exponent == 0) return sign * mantissa * std::ldexp(1.0, -24);
  if (exponent == 31) return mantissa ? std::numeric_limits<double>::quiet_NaN() : sign * INFINITY;
  return sign * (1024 + mantissa) * std::ldexp(1.0, exponent - 25);
}

int64_t ordinal(uint64_t bits, int width) {
  const uint64_t sign_bit = uint64_t{1} << (width - 1);
  const auto magnitude = static_cast<int64_t>(bits & (sign_bit - 1));
  return (bits & sign_bit) ? -magnitude : magnitude;
}

}  // namespace

HostTensor::HostTensor(DType dtype_, Shape shape_)
    : dtype(dtype_), shape(std::move(shape_)), data(static_cast<size_t>(numel_of(shape))) {}

int64_t numel_of(const Shape& shape) {
  int64_t total = 1;
  for (int64_t size : shape) total *= size;
  return total;
}

std::string shape_text(const Shape& shape) {
  if (shape.empty()) return "scalar";
  std::string text;
  for (size_t dim = 0; dim < shape.size(); ++dim)
    text += (dim ? "x" : "") + std::to_string(shape[dim]);
  return text;
}

std::vector<int64_t> strides_of(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t dim = shape.size(); dim-- > 1;) strides[dim - 1] = strides[dim] * shape[dim];
  return strides;
}

double round_to(DType dtype, double value) {
  switch (dtype.type()) {
    case ScalarType::Float64:
      return value;
    case ScalarType::Float32:
      return static_cast<double>(static_cast<float>(value));
    case ScalarType::Float16:
      return round_format(value, 11, -14, 65504.0);
    case ScalarType::BFloat16:
      return round_format(value, 8, -126, max_finite_of(dtype));
    default:
      return value;
  }
}

uint64_t float_bits(DType dtype, double exact) {
  switch (dtype.type()) {
    case ScalarType::Float64: {
      uint64_t bits;
      std::memcpy(&bits, &exact, 8);
      return bits;
    }
    case ScalarType::Float32: {
      const auto single = static_cast<float>(exact);
      uint32_t bits;
      std::memcpy(&bits, &single, 4);
      return bits;
    }
    case ScalarType::Float16:
      return half_bits(exact);
    case ScalarType::BFloat16: {
      if (std::isnan(exact)) return 0x7fc0;
      const auto single = static_cast<float>(exact);
      uint32_t bits;
      std::memcpy(&bits, &single, 4);
      return bits >> 16;
    }
    default:
      return 0;
  }
}

double float_from_bits(DType dtype, uint64_t bits) {
  switch (dtype.type()) {
    case ScalarType::Float64: {
      double value;
      std::memcpy(&value, &bits, 8);
      return value;
    }
    case ScalarType::Float32: {
      const auto narrow = static_cast<uint32_t>(bits);
      float value;
      std::memcpy(&value, &narrow, 4);
      return value;
    }
    case ScalarType::Float16:
      return half_value(static_cast<uint16_t>(bits));
    case ScalarType::BFloat16: {
      const uint32_t wide = static_cast<uint32_t>(bits & 0xffff) << 16;
      float value;
      std::memcpy(&value, &wide, 4);
      return value;
    }
    default:
      return 0;
  }
}

double ulp_distance(DType dtype, double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : 1e300;
  const int width = dtype.itemsize() * 8;
  const int64_t first = ordinal(float_bits(dtype, round_to(dtype, a)), width);
  const int64_t second = ordinal(float_bits(dtype, round_to(dtype, b)), width);
  // In 128 bits: the ordinals of float64 values do not fit a double exactly, and their difference
  // can exceed int64.
  const __int128 difference = static_cast<__int128>(first) - static_cast<__int128>(second);
  return static_cast<double>(difference < 0 ? -difference : difference);
}

double epsilon_of(DType dtype) {
  switch (dtype.type()) {
    case ScalarType::Float16:
      return std::ldexp(1.0, -10);
    case ScalarType::BFloat16:
      return std::ldexp(1.0, -7);
    case ScalarType::Float32:
      return std::ldexp(1.0, -23);
    default:
      return std::ldexp(1.0, -52);
  }
}

double min_normal_of(DType dtype) {
  switch (dtype.type()) {
    case ScalarType::Float16:
      return std::ldexp(1.0, -14);
    case ScalarType::BFloat16:
    case ScalarType::Float32:
      return std::ldexp(1.0, -126);
    default:
      return std::ldexp(1.0, -1022);
  }
}

double min_subnormal_of(DType dtype) {
  switch (dtype.type()) {
    case ScalarType::Float16:
      return std::ldexp(1.0, -24);
    case ScalarType::BFloat16:
      return std::ldexp(1.0, -133);
    case ScalarType::Float32:
      return std::ldexp(1.0, -149);
    default:
      return std::ldexp(1.0, -1074);
  }
}

double max_finite_of(DType dtype) {
  switch (dtype.type()) {
    case ScalarType::Float16:
      return 65504.0;
    case ScalarType::BFloat16:
      return (2.0 - std::ldexp(1.0, -7)) * std::ldexp(1.0, 127);
    case ScalarType::Float32:
      return FLT_MAX;
    default:
      return DBL_MAX;
  }
}

int bits_of(DType dtype) {
  return dtype.is_bool() ? 1 : dtype.itemsize() * 8;
}

int64_t wrap(DType dtype, uint64_t value) {
  if (dtype.is_bool()) return value != 0;
  const int width = bits_of(dtype);
  if (width == 64) return static_cast<int64_t>(value);
  const uint64_t mask = (uint64_t{1} << width) - 1;
  if (dtype.is_unsigned()) return static_cast<int64_t>(value & mask);
  const int shift = 64 - width;
  return static_cast<int64_t>(value << shift) >> shift;
}

int64_t int_min_of(DType dtype) {
  if (!dtype.is_signed_int()) return 0;
  return wrap(dtype, uint64_t{1} << (bits_of(dtype) - 1));
}

int64_t int_max_of(DType dtype) {
  if (dtype.is_bool()) return 1;
  if (dtype.is_unsigned()) return wrap(dtype, ~uint64_t{0});
  return wrap(dtype, (uint64_t{1} << (bits_of(dtype) - 1)) - 1);
}

double int_as_double(DType dtype, int64_t stored) {
  if (dtype.is_unsigned()) return static_cast<double>(static_cast<uint64_t>(stored));
  return static_cast<double>(stored);
}

Scalar make_scalar(DType dtype, double value) {
  Scalar scalar;
  if (dtype.is_float()) {
    scalar.f = round_to(dtype, value);
  } else if (dtype.is_bool()) {
    scalar.i = value != 0;
  } else if (std::isfinite(value)) {
    // The value modulo 2^64, as two's complement (what a wrapping conversion gives).
    double whole = std::trunc(value);
    uint64_t bits;
    if (whole >= -kTwo63 && whole < kTwo63) {
      bits = static_cast<uint64_t>(static_cast<int64_t>(whole));
    } else {
      whole = std::fmod(whole, kTwo64);
      if (whole < 0) whole += kTwo64;
      bits = whole >= kTwo63 ? static_cast<uint64_t>(whole - kTwo63) + (uint64_t{1} << 63)
                             : static_cast<uint64_t>(whole);
    }
    scalar.i = wrap(dtype, bits);
  }
  return scalar;
}

double to_double(DType dtype, const Scalar& value) {
  if (dtype.is_float()) return value.f;
  return int_as_double(dtype, value.i);
}

Scalar convert(DType from, DType to, const Scalar& value) {
  Scalar result;
  if (to.is_bool()) {
    result.i = from.is_float() ? (value.f != 0) : (value.i != 0);  // NaN != 0 is true
    return result;
  }
  if (to.is_float()) {
    // Every integer converts to double exactly or (64-bit) with a rounding that cannot change the
    // final rounding into a narrower format (53 >= 2 * 24 + 2 bits).
    result.f = round_to(to, to_double(from, value));
    return result;
  }
  if (!from.is_float()) {
    result.i = wrap(to, static_cast<uint64_t>(value.i));
    return result;
  }
  // Float to integer: truncate toward zero, saturate at the target's range, NaN gives 0.
  const double whole = std::trunc(value.f);
  if (std::isnan(whole)) return result;
  if (to.is_unsigned()) {
    const double limit = to == dtypes::uint64 ? kTwo64 : int_as_double(to, int_max_of(to)) + 1;
    if (whole <= 0) return result;
    result.i = whole >= limit ? int_max_of(to) : wrap(to, static_cast<uint64_t>(whole));
    return result;
  }
  const double low = -std::ldexp(1.0, bits_of(to) - 1), high = std::ldexp(1.0, bits_of(to) - 1);
  if (whole < low) {
    result.i = int_min_of(to);
  } else if (whole >= high) {
    result.i = int_max_of(to);
  } else {
    result.i = static_cast<int64_t>(whole);
  }
  return result;
}

HostTensor cast(const HostTensor& tensor, DType to) {
  HostTensor result(to, tensor.shape);
  for (size_t index = 0; index < tensor.data.size(); ++index)
    result.data[index] = convert(tensor.dtype, to, tensor.data[index]);
  return result;
}

DType promote(DType a, DType b) {
  if (a == b) return a;
  if (a.is_bool()) return b;
  if (b.is_bool()) return a;
  if (a.is_float() || b.is_float()) {
    if (!b.is_float()) return a;
    if (!a.is_float()) return b;
    if (a.is_half() && b.is_half()) return dtypes::float32;
    return a.itemsize() >= b.itemsize() ? a : b;
  }
  if (a.is_unsigned() == b.is_unsigned()) return a.itemsize() >= b.itemsize() ? a : b;
  const DType signed_type = a.is_unsigned() ? b : a;
  const DType unsigned_type = a.is_unsigned() ? a : b;
  const int width = std::max(bits_of(signed_type), std::min(64, 2 * bits_of(unsigned_type)));
  switch (width) {
    case 16:
      return dtypes::int16;
    case 32:
      return dtypes::int32;
    case 64:
      return dtypes::int64;
    default:
      return dtypes::int8;
  }
}

DType float_for(DType dtype) {
  return dtype.is_float() ? dtype : dtypes::float32;
}

DType pow_dtype_for(DType dtype) {
  return dtype.is_bool() ? dtypes::int32 : dtype;
}

DType scalar_op_dtype(DType tensor, double scalar, bool arithmetic) {
  const bool integral = std::isfinite(scalar) && std::trunc(scalar) == scalar;
  if (!tensor.is_float() && !integral) return dtypes::float32;
  if (tensor.is_bool() && arithmetic) return dtypes::int32;
  return tensor;
}

std::vector<uint8_t> encode(const HostTensor& tensor) {
  const int size = tensor.dtype.itemsize();
  std::vector<uint8_t> bytes(tensor.data.size() * size);
  for (size_t index = 0; index < tensor.data.size(); ++index) {
    uint64_t bits = tensor.dtype.is_float() ? float_bits(tensor.dtype, tensor.data[index].f)
                                            : static_cast<uint64_t>(tensor.data[index].i);
    std::memcpy(bytes.data() + index * size, &bits, size);  // little-endian host
  }
  return bytes;
}

HostTensor decode(DType dtype, const Shape& shape, const uint8_t* bytes) {
  HostTensor tensor(dtype, shape);
  const int size = dtype.itemsize();
  for (size_t index = 0; index < tensor.data.size(); ++index) {
    uint64_t bits = 0;
    std::memcpy(&bits, bytes + index * size, size);
    if (dtype.is_float()) {
      tensor.data[index].f = float_from_bits(dtype, bits);
    } else if (dtype.is_bool()) {
      tensor.data[index].i = static_cast<int64_t>(bits & 0xff);  // anything but 0 / 1 is wrong
    } else {
      tensor.data[index].i = wrap(dtype, bits);
    }
  }
  return tensor;
}

namespace {

template <typename T>
Tensor upload_as(const HostTensor& tensor, const std::string& device) {
  std::vector<T> values(tensor.data.size());
  const std::vector<uint8_t> bytes = encode(tensor);
  if (!bytes.empty()) std::memcpy(static_cast<void*>(values.data()), bytes.data(), bytes.size());
  return Tensor::from_vector<T>(values, tensor.shape, device);
}

}  // namespace

Tensor upload(const HostTensor& tensor, const std::string& device) {
  switch (tensor.dtype.type()) {
    case ScalarType::Bool: {
      std::vector<bool> values(tensor.data.size());
      for (size_t index = 0; index < values.size(); ++index)
        values[index] = tensor.data[index].i != 0;
      return Tensor::from_vector<bool>(values, tensor.shape, device);
    }
    case ScalarType::Int8:
      return upload_as<int8_t>(tensor, device);
    case ScalarType::Int16:
      return upload_as<int16_t>(tensor, device);
    case ScalarType::Int32:
      return upload_as<int32_t>(tensor, device);
    case ScalarType::Int64:
      return upload_as<int64_t>(tensor, device);
    case ScalarType::UInt8:
      return upload_as<uint8_t>(tensor, device);
    case ScalarType::UInt16:
      return upload_as<uint16_t>(tensor, device);
    case ScalarType::UInt32:
      return upload_as<uint32_t>(tensor, device);
    case ScalarType::UInt64:
      return upload_as<uint64_t>(tensor, device);
    case ScalarType::Float16:
      return upload_as<half>(tensor, device);
    case ScalarType::BFloat16:
      return upload_as<bfloat16>(tensor, device);
    case ScalarType::Float32:
      return upload_as<float>(tensor, device);
    case ScalarType::Float64:
      return upload_as<double>(tensor, device);
  }
  return upload_as<float>(tensor, device);
}

std::string format_value(DType dtype, const Scalar& value) {
  char text[96];
  if (dtype.is_bool())
    return value.i == 0   ? "false"
           : value.i == 1 ? "true"
                          : "invalid bool " + std::to_string(value.i);
  if (dtype.is_unsigned()) return std::to_string(static_cast<uint64_t>(value.i));
  if (dtype.is_int()) return std::to_string(value.i);
  const double number = value.f;
  if (std::isnan(number)) return "nan";
  if (std::isinf(number)) return number < 0 ? "-inf" : "inf";
  if (number == 0) return std::signbit(number) ? "-0" : "0";
  const int digits = dtype == dtypes::float64 ? 17 : dtype == dtypes::float32 ? 9 : 5;
  std::snprintf(text, sizeof(text), "%.*g", digits, number);
  return text;
}

}  // namespace kiln::conformance

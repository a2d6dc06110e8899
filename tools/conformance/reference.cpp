#include "tools/conformance/reference.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace kiln::conformance::ref {
namespace {

Scalar float_scalar(double value) {
  Scalar scalar;
  scalar.f = value;
  return scalar;
}

Scalar int_scalar(DType dtype, uint64_t value) {
  Scalar scalar;
  scalar.i = wrap(dtype, value);
  return scalar;
}

Scalar bool_scalar(bool value) {
  Scalar scalar;
  scalar.i = value ? 1 : 0;
  return scalar;
}

}  // namespace

int normalize_axis(int64_t axis, size_t ndim) {
  const int64_t normalized = axis < 0 ? axis + static_cast<int64_t>(ndim) : axis;
  if (normalized < 0 || normalized >= static_cast<int64_t>(std::max<size_t>(ndim, 1))) {
    throw std::invalid_argument("reference: axis out of range");
  }
  return static_cast<int>(normalized);
}

int64_t ravel(const std::vector<int64_t>& coords, const Shape& shape) {
  int64_t flat = 0;
  for (size_t dim = 0; dim < shape.size(); ++dim) flat = flat * shape[dim] + coords[dim];
  return flat;
}

// Calls `line(offsets)` for each line along `axis`: `offsets` are the flat indices of its elements.
void for_each_line(const Shape& shape, int axis,
                   const std::function<void(const std::vector<int64_t>&, int64_t)>& line) {
  const std::vector<int64_t> strides = strides_of(shape);
  const int64_t size = shape.empty() ? 1 : shape[axis];
  const int64_t stride = shape.empty() ? 1 : strides[axis];
  const int64_t total = numel_of(shape);
  std::vector<int64_t> offsets(static_cast<size_t>(size));
  int64_t line_index = 0;
  for (int64_t base = 0; base < total; ++base) {
    if (!shape.empty() && (base / stride) % size != 0) continue;  // only the line's first element
    for (int64_t k = 0; k < size; ++k) offsets[k] = base + k * stride;
    line(offsets, line_index++);
  }
}

DType accumulate_dtype(DType dtype) {
  if (dtype.is_bool() || dtype.is_signed_int()) return dtypes::int64;
  if (dtype.is_unsigned()) return dtypes::uint64;
  return dtype;
}

bool int_less(DType dtype, int64_t a, int64_t b) {
  if (dtype.is_unsigned()) return static_cast<uint64_t>(a) < static_cast<uint64_t>(b);
  return a < b;
}

// ---------------------------------------------------------------------------------------------
// elementwise

DType unary_dtype(Unary op, DType input) {
  switch (op) {
    case Unary::Neg:
    case Unary::Abs:
    case Unary::Sign:
    case Unary::Relu:
    case Unary::Floor:
    case Unary::Ceil:
    case Unary::Round:
    case Unary::Trunc:
      return input;
    case Unary::Square:
      return input.is_bool() ? dtypes::int32 : input;
    case Unary::LogicalNot:
    case Unary::IsNan:
    case Unary::IsInf:
    case Unary::IsFinite:
      return dtypes::bool_;
    default:
      return float_for(input);
  }
}

bool is_comparison(Binary op) {
  return op == Binary::Lt || op == Binary::Le || op == Binary::Gt || op == Binary::Ge ||
         op == Binary::Eq || op == Binary::Ne;
}

DType binary_dtype(Binary op, DType compute) {
  return is_comparison(op) ? dtypes::bool_ : compute;
}

Scalar unary_value(Unary op, DType dtype, const Scalar& in) {
  if (std::optional<Scalar> value = math_unary_value(op, dtype, in)) return *value;
  if (op == Unary::LogicalNot) return bool_scalar(dtype.is_float() ? in.f == 0 : in.i == 0);
  if (op == Unary::IsNan) return bool_scalar(dtype.is_float() && std::isnan(in.f));
  if (op == Unary::IsInf) return bool_scalar(dtype.is_float() && std::isinf(in.f));
  if (op == Unary::IsFinite) return bool_scalar(!dtype.is_float() || std::isfinite(in.f));
  if (!dtype.is_float()) {
    const int64_t x = in.i;
    const bool is_signed = dtype.is_signed_int();
    switch (op) {
      case Unary::Neg:
        return int_scalar(dtype, 0 - static_cast<uint64_t>(x));
      case Unary::Abs:
        return int_scalar(
            dtype, is_signed && x < 0 ? 0 - static_cast<uint64_t>(x) : static_cast<uint64_t>(x));
      case Unary::Sign:
        if (dtype.is_bool()) return in;
        return int_scalar(dtype, is_signed ? static_cast<uint64_t>((x > 0) - (x < 0))
                                           : static_cast<uint64_t>(x != 0));
      case Unary::Relu:
        return is_signed && x < 0 ? int_scalar(dtype, 0) : in;
      default:
        return in;  // floor, ceil, round, trunc keep integers
    }
  }
  const double x = in.f;
  switch (op) {
    case Unary::Neg:
      return float_scalar(-x);
    case Unary::Abs:
      return float_scalar(std::fabs(x));
    case Unary::Sign:
      return float_scalar(x > 0 ? 1.0 : x < 0 ? -1.0 : x * 0.0);
    case Unary::Relu:
      return float_scalar(std::isnan(x) ? x : x > 0 ? x : 0.0);
    case Unary::Reciprocal:
      return float_scalar(1.0 / x);
    case Unary::Exp:
      return float_scalar(std::exp(x));
    case Unary::Log:
      return float_scalar(std::log(x));
    case Unary::Exp2:
      return float_scalar(std::exp2(x));
    case Unary::Log2:
      return float_scalar(std::log2(x));
    case Unary::Sqrt:
      return float_scalar(std::sqrt(x));
    case Unary::Rsqrt:
      return float_scalar(1.0 / std::sqrt(x));
    case Unary::Sin:
      return float_scalar(std::sin(x));
    case Unary::Cos:
      return float_scalar(std::cos(x));
    case Unary::Tan:
      return float_scalar(std::tan(x));
    case Unary::Tanh:
      return float_scalar(std::tanh(x));
    case Unary::Sigmoid:
      return float_scalar(1.0 / (1.0 + std::exp(-x)));
    case Unary::Gelu:
      return float_scalar(0.5 * x * std::erfc(-x / std::sqrt(2.0)));
    case Unary::Silu:
      return float_scalar(x / (1.0 + std::exp(-x)));
    case Unary::Erf:
      return float_scalar(std::erf(x));
    case Unary::Floor:
      return float_scalar(std::floor(x));
    case Unary::Ceil:
      return float_scalar(std::ceil(x));
    case Unary::Round:
      return float_scalar(std::nearbyint(x));  // default mode: half to even
    case Unary::Trunc:
      return float_scalar(std::trunc(x));
    default:
      return in;
  }
}

Scalar binary_value(Binary op, DType dtype, const Scalar& left, const Scalar& right) {
  if (std::optional<Scalar> value = math_binary_value(op, dtype, left, right)) return *value;
  if (dtype.is_float()) {
    const double a = left.f, b = right.f;
    switch (op) {
      case Binary::Add:
        return float_scalar(a + b);
      case Binary::Sub:
        return float_scalar(a - b);
      case Binary::Mul:
        return float_scalar(a * b);
      case Binary::Div:
        return float_scalar(a / b);
      case Binary::Mod:
        return float_scalar(std::fmod(a, b));
      case Binary::Max:
        return float_scalar(std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b));
      case Binary::Min:
        return float_scalar(std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b));
      case Binary::Pow:
        return float_scalar(std::pow(a, b));
      case Binary::Lt:
        return bool_scalar(a < b);
      case Binary::Le:
        return bool_scalar(a <= b);
      case Binary::Gt:
        return bool_scalar(a > b);
      case Binary::Ge:
        return bool_scalar(a >= b);
      case Binary::Eq:
        return bool_scalar(a == b);
      case Binary::Ne:
        return bool_scalar(a != b);
      default:
        throw std::invalid_argument("reference: integer op on floats");
    }
  }
  const int64_t a = left.i, b = right.i;
  const auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  const bool is_signed = dtype.is_signed_int();
  if (dtype.is_bool()) {
    switch (op) {
      case Binary::Add:
      case Binary::Max:
      case Binary::Or:
        return bool_scalar(a | b);
      case Binary::Mul:
      case Binary::Min:
      case Binary::And:
        return bool_scalar(a & b);
      case Binary::Xor:
        return bool_scalar(a ^ b);
      case Binary::Div:
        return bool_scalar(b == 0 ? 0 : a / b);
      case Binary::Mod:
        return bool_scalar(0);
      default:
        break;
    }
  }
  switch (op) {
    case Binary::Add:
      return int_scalar(dtype, ua + ub);
    case Binary::Sub:
      return int_scalar(dtype, ua - ub);
    case Binary::Mul:
      return int_scalar(dtype, ua * ub);
    case Binary::Div:
      if (b == 0) return int_scalar(dtype, 0);
      if (!is_signed) return int_scalar(dtype, ua / ub);
      if (b == -1) return int_scalar(dtype, 0 - ua);  // INT_MIN / -1 wraps to INT_MIN
      return int_scalar(dtype, static_cast<uint64_t>(a / b));
    case Binary::Mod:
      if (b == 0) return int_scalar(dtype, 0);
      if (!is_signed) return int_scalar(dtype, ua % ub);
      if (b == -1) return int_scalar(dtype, 0);
      return int_scalar(dtype, static_cast<uint64_t>(a % b));
    case Binary::Max:
      return int_less(dtype, a, b) ? right : left;
    case Binary::Min:
      return int_less(dtype, b, a) ? right : left;
    case Binary::Lt:
      return bool_scalar(int_less(dtype, a, b));
    case Binary::Le:
      return bool_scalar(!int_less(dtype, b, a));
    case Binary::Gt:
      return bool_scalar(int_less(dtype, b, a));
    case Binary::Ge:
      return bool_scalar(!int_less(dtype, a, b));
    case Binary::Eq:
      return bool_scalar(a == b);
    case Binary::Ne:
      return bool_scalar(a != b);
    case Binary::And:
      return int_scalar(dtype, ua & ub);
    case Binary::Or:
      return int_scalar(dtype, ua | ub);
    case Binary::Xor:
      return int_scalar(dtype, ua ^ ub);
    case Binary::Pow: {
      // Exact, modulo 2^bits (int_scalar wraps the 64-bit product); a negative exponent gives
      // 1 / a^-b truncated toward zero (0 for a base of 0, as integer division by zero).
      if (is_signed && b < 0) {
        if (a == 1) return int_scalar(dtype, 1);
        if (a == -1) return int_scalar(dtype, (ub & 1) ? ~uint64_t{0} : 1);
        return int_scalar(dtype, 0);
      }
      uint64_t product = 1, base = ua;
      for (uint64_t left = ub; left != 0; left >>= 1) {
        if (left & 1) product *= base;
        base *= base;
      }
      return int_scalar(dtype, product);
    }
    default:
      break;  // the float-only functions
  }
  throw std::invalid_argument("reference: unknown integer op");
}

Shape broadcast_shape(const Shape& a, const Shape& b) {
  const size_t ndim = std::max(a.size(), b.size());
  Shape result(ndim);
  for (size_t dim = 0; dim < ndim; ++dim) {
    const int64_t x = dim + a.size() >= ndim ? a[dim + a.size() - ndim] : 1;
    const int64_t y = dim + b.size() >= ndim ? b[dim + b.size() - ndim] : 1;
    if (x != y && x != 1 && y != 1)
      throw std::invalid_argument("reference: shapes do not broadcast");
    result[dim] = x == 1 ? y : x;
  }
  return result;
}

HostTensor broadcast_to(const HostTensor& tensor, const Shape& shape) {
  if (tensor.shape == shape) return tensor;
  HostTensor result(tensor.dtype, shape);
  const size_t lead = shape.size() - tensor.shape.size();
  const std::vector<int64_t> source_strides = strides_of(tensor.shape);
  for (int64_t index = 0; index < result.numel(); ++index) {
    const std::vector<int64_t> coords = unravel(index, shape);
    int64_t source = 0;
    for (size_t dim = 0; dim < tensor.shape.size(); ++dim) {
      if (tensor.shape[dim] != 1) source += coords[dim + lead] * source_strides[dim];
    }
    result.data[index] = tensor.data[source];
  }
  return result;
}

Expected unary(Unary op, const HostTensor& x) {
  const DType out = unary_dtype(op, x.dtype);
  // Tests of the value look at it in its own dtype.
  const DType compute = out.is_bool() ? x.dtype : out;
  const HostTensor input = cast(x, compute);
  HostTensor result(out, x.shape);
  for (size_t index = 0; index < input.data.size(); ++index)
    result.data[index] = unary_value(op, compute, input.data[index]);
  return result;
}

namespace {

Expected binary_in(Binary op, DType compute, const HostTensor& a, const HostTensor& b) {
  const Shape shape = broadcast_shape(a.shape, b.shape);
  const HostTensor left = broadcast_to(cast(a, compute), shape);
  const HostTensor right = broadcast_to(cast(b, compute), shape);
  HostTensor result(binary_dtype(op, compute), shape);
  for (size_t index = 0; index < result.data.size(); ++index) {
    result.data[index] = binary_value(op, compute, left.data[index], right.data[index]);
  }
  return result;
}

}  // namespace

Expected binary(Binary op, const HostTensor& a, const HostTensor& b) {
  return binary_in(op, binary_compute_dtype(op, a.dtype, b.dtype), a, b);
}

Expected binary_scalar(Binary op, const HostTensor& a, double scalar, bool scalar_first) {
  const bool arithmetic = op == Binary::Add || op == Binary::Sub || op == Binary::Mul ||
                          op == Binary::Div || op == Binary::Mod;
  DType compute = scalar_op_dtype(a.dtype, scalar, arithmetic);
  if (op == Binary::Pow) compute = pow_dtype_for(compute);
  HostTensor constant(compute, {});
  // A float constant is used at the precision kernels compute in (float32 for the half types).
  constant.data[0] =
      compute.is_half() ? make_scalar(dtypes::float32, scalar) : make_scalar(compute, scalar);
  return scalar_first ? binary_in(op, compute, constant, a) : binary_in(op, compute, a, constant);
}

Expected where(const HostTensor& condition, const HostTensor& a, const HostTensor& b) {
  const DType dtype = promote(a.dtype, b.dtype);
  const Shape shape = broadcast_shape(broadcast_shape(condition.shape, a.shape), b.shape);
  const HostTensor c = broadcast_to(condition, shape);
  const HostTensor left = broadcast_to(cast(a, dtype), shape);
  const HostTensor right = broadcast_to(cast(b, dtype), shape);
  HostTensor result(dtype, shape);
  for (size_t index = 0; index < result.data.size(); ++index) {
    result.data[index] = c.data[index].i ? left.data[index] : right.data[index];
  }
  return result;
}

Expected clamp(const HostTensor& x, double low, double high) {
  auto whole = [](double bound) { return std::isinf(bound) || bound == std::floor(bound); };
  const DType out = x.dtype.is_float() || (whole(low) && whole(high)) ? x.dtype : dtypes::float32;
  HostTensor result(out, x.shape);
  for (size_t index = 0; index < x.data.size(); ++index) {
    // long double holds every int64 and uint64 exactly (x86's 64-bit mantissa).
    const Scalar& item = x.data[index];
    const long double value = x.dtype.is_float() ? static_cast<long double>(item.f)
                              : x.dtype.is_unsigned()
                                  ? static_cast<long double>(static_cast<uint64_t>(item.i))
                                  : static_cast<long double>(item.i);
    if (std::isnan(value) || std::isnan(low) || std::isnan(high)) {
      result.data[index] = make_scalar(out, std::nan(""));
      continue;
    }
    const long double clamped = std::min<long double>(std::max<long double>(value, low), high);
    result.data[index] =
        clamped == value && out == x.dtype ? item : make_scalar(out, static_cast<double>(clamped));
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// movement

HostTensor reshape(const HostTensor& x, const Shape& shape) {
  HostTensor result = x;
  result.shape = shape;
  if (numel_of(shape) != x.numel())
    throw std::invalid_argument("reference: reshape changes the element count");
  return result;
}

HostTensor permute(const HostTensor& x, const std::vector<int64_t>& axes) {
  Shape shape;
  for (int64_t axis : axes) shape.push_back(x.shape[normalize_axis(axis, x.shape.size())]);
  HostTensor result(x.dtype, shape);
  const std::vector<int64_t> strides = strides_of(x.shape);
  for (int64_t index = 0; index < result.numel(); ++index) {
    const std::vector<int64_t> coords = unravel(index, shape);
    int64_t source = 0;
    for (size_t dim = 0; dim < axes.size(); ++dim)
      source += coords[dim] * strides[normalize_axis(axes[dim], x.shape.size())];
    result.data[index] = x.data[source];
  }
  return result;
}

HostTensor pad(const HostTensor& x, const std::vector<std::pair<int64_t, int64_t>>& before_after,
               double value) {
  Shape shape = x.shape;
  for (size_t dim = 0; dim < shape.size(); ++dim)
    shape[dim] += before_after[dim].first + before_after[dim].second;
  HostTensor result(x.dtype, shape);
  const Scalar fill = x.dtype.is_half() ? make_scalar(x.dtype, value) : make_scalar(x.dtype, value);
  for (int64_t index = 0; index < result.numel(); ++index) {
    std::vector<int64_t> coords = unravel(index, shape);
    bool inside = true;
    for (size_t dim = 0; dim < shape.size(); ++dim) {
      coords[dim] -= before_after[dim].first;
      inside &= coords[dim] >= 0 && coords[dim] < x.shape[dim];
    }
    result.data[index] = inside ? x.data[ravel(coords, x.shape)] : fill;
  }
  return result;
}

HostTensor shrink(const HostTensor& x, const std::vector<std::pair<int64_t, int64_t>>& start_end) {
  Shape shape;
  for (const auto& [start, end] : start_end) shape.push_back(end - start);
  HostTensor result(x.dtype, shape);
  for (int64_t index = 0; index < result.numel(); ++index) {
    std::vector<int64_t> coords = unravel(index, shape);
    for (size_t dim = 0; dim < shape.size(); ++dim) coords[dim] += start_end[dim].first;
    result.data[index] = x.data[ravel(coords, x.shape)];
  }
  return result;
}

HostTensor flip(const HostTensor& x, const std::vector<int64_t>& axes) {
  std::vector<bool> flipped(x.shape.size(), false);
  for (int64_t axis : axes) flipped[normalize_axis(axis, x.shape.size())] = true;
  HostTensor result(x.dtype, x.shape);
  for (int64_t index = 0; index < result.numel(); ++index) {
    std::vector<int64_t> coords = unravel(index, x.shape);
    for (size_t dim = 0; dim < coords.size(); ++dim) {
      if (flipped[dim]) coords[dim] = x.shape[dim] - 1 - coords[dim];
    }
    result.data[index] = x.data[ravel(coords, x.shape)];
  }
  return result;
}

HostTensor strided(const HostTensor& x, int64_t axis, int64_t first, int64_t step, int64_t count) {
  const int dim = normalize_axis(axis, x.shape.size());
  Shape shape = x.shape;
  shape[static_cast<size_t>(dim)] = count;
  HostTensor result(x.dtype, shape);
  for (int64_t index = 0; index < result.numel(); ++index) {
    std::vector<int64_t> coords = unravel(index, shape);
    coords[static_cast<size_t>(dim)] = first + coords[static_cast<size_t>(dim)] * step;
    result.data[static_cast<size_t>(index)] = x.data[static_cast<size_t>(ravel(coords, x.shape))];
  }
  return result;
}

HostTensor cat(const std::vector<HostTensor>& xs, int64_t axis) {
  DType dtype = xs.at(0).dtype;
  for (const HostTensor& x : xs) dtype = promote(dtype, x.dtype);
  const int dim = normalize_axis(axis, xs[0].shape.size());
  Shape shape = xs[0].shape;
  shape[dim] = 0;
  for (const HostTensor& x : xs) shape[dim] += x.shape[dim];
  HostTensor result(dtype, shape);
  int64_t offset = 0;
  for (const HostTensor& x : xs) {
    const HostTensor converted = cast(x, dtype);
    for (int64_t index = 0; index < x.numel(); ++index) {
      std::vector<int64_t> coords = unravel(index, x.shape);
      coords[dim] += offset;
      result.data[ravel(coords, shape)] = converted.data[index];
    }
    offset += x.shape[dim];
  }
  return result;
}

HostTensor stack(const std::vector<HostTensor>& xs, int64_t axis) {
  std::vector<HostTensor> expanded;
  const int dim = normalize_axis(axis, xs.at(0).shape.size() + 1);
  for (const HostTensor& x : xs) {
    Shape shape = x.shape;
    shape.insert(shape.begin() + dim, 1);
    expanded.push_back(reshape(x, shape));
  }
  return cat(expanded, dim);
}

std::vector<int64_t> unravel(int64_t index, const Shape& shape) {
  std::vector<int64_t> coords(shape.size());
  for (size_t dim = shape.size(); dim-- > 0;) {
    coords[dim] = shape[dim] ? index % shape[dim] : 0;
    index = shape[dim] ? index / shape[dim] : 0;
  }
  return coords;
}

std::string coordinates_text(int64_t index, const Shape& shape) {
  const std::vector<int64_t> coords = unravel(index, shape);
  std::string text = "(";
  for (size_t dim = 0; dim < coords.size(); ++dim)
    text += (dim ? ", " : "") + std::to_string(coords[dim]);
  return text + ")";
}

}  // namespace kiln::conformance::ref

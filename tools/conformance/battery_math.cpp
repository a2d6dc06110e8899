// Elementwise math built from other ops (kiln/tensor.h): lerp, isclose, shifts by a host amount
// and bitwise not, and bitcast, against references written from their definitions.

#include <cmath>

#include "tools/conformance/battery.h"

namespace kiln::conformance::detail {
namespace {

const Shape kMain = {7, 13};

// PyTorch's lerp in double, and |a| + |b| as the scale of its rounding error.
Expected lerp_reference(const HostTensor& a, const HostTensor& b, const HostTensor& weight) {
  const DType dtype = float_for(promote(promote(a.dtype, b.dtype), weight.dtype));
  const HostTensor start = cast(a, dtype), end = cast(b, dtype), w = cast(weight, dtype);
  HostTensor result(dtype, a.shape);
  std::vector<double> scale;
  for (size_t index = 0; index < result.data.size(); ++index) {
    const double x = start.data[index].f, y = end.data[index].f;
    const double t = w.data[w.data.size() == 1 ? 0 : index].f;
    const double value = std::fabs(t) < 0.5 ? x + t * (y - x) : y - (y - x) * (1 - t);
    result.data[index] = make_scalar(dtype, value);
    scale.push_back(std::fabs(x) + std::fabs(y));
  }
  return Expected(result, scale);
}

Expected isclose_reference(const HostTensor& a, const HostTensor& b, double rtol, double atol,
                           bool equal_nan) {
  const DType dtype = float_for(promote(a.dtype, b.dtype));
  const HostTensor x = cast(a, dtype), y = cast(b, dtype);
  // Integers that are equal are close, however large.
  const DType exact = promote(a.dtype, b.dtype);
  const HostTensor exact_a = cast(a, exact), exact_b = cast(b, exact);
  HostTensor result(dtypes::bool_, a.shape);
  for (size_t index = 0; index < result.data.size(); ++index) {
    const double p = x.data[index].f, q = y.data[index].f;
    bool close = std::isfinite(p) && std::isfinite(q)
                     ? std::fabs(p - q) <= atol + rtol * std::fabs(q)
                     : p == q;
    if (equal_nan && std::isnan(p) && std::isnan(q)) close = true;
    if (!exact.is_float()) close |= exact_a.data[index].i == exact_b.data[index].i;
    result.data[index].i = close;
  }
  return result;
}

void add_lerp(BatteryBuilder& builder) {
  for (DType dtype : kAllDtypes) {
    const DType out = float_for(dtype);
    Tolerance tolerance = tolerance_for(out, 2, 4);
    builder.add(make_case(
        "binary.math", "lerp",
        {input(dtype, kMain, Values::Small), input(dtype, kMain, Values::Small, 1),
         input(dtype, kMain, Values::Unit, 2)},
        [](const std::vector<Tensor>& in) { return lerp(in[0], in[1], in[2]); },
        [](const std::vector<HostTensor>& in) { return lerp_reference(in[0], in[1], in[2]); },
        "lerp(a, b, w)", tolerance));
    builder.add(make_case(
        "binary.math", "lerp(0.75)",
        {input(dtype, kMain, Values::Small), input(dtype, kMain, Values::Small, 1)},
        [](const std::vector<Tensor>& in) { return lerp(in[0], in[1], 0.75); },
        [](const std::vector<HostTensor>& in) {
          HostTensor weight(float_for(promote(in[0].dtype, in[1].dtype)), {});
          weight.data[0].f = 0.75;
          return lerp_reference(in[0], in[1], weight);
        },
        "lerp(a, b, 0.75)", tolerance));
  }
}

void add_isclose(BatteryBuilder& builder) {
  for (DType dtype : kAllDtypes) {
    builder.add(make_case(
        "binary.math", "isclose", {input(dtype, kMain), input(dtype, kMain, Values::General, 1)},
        [](const std::vector<Tensor>& in) { return isclose(in[0], in[1]); },
        [](const std::vector<HostTensor>& in) {
          return isclose_reference(in[0], in[1], 1e-5, 1e-8, false);
        },
        "isclose(a, b)", exact_tolerance()));
    builder.add(make_case(
        "binary.math", "isclose(0.25,0.5,nan)",
        {input(dtype, kMain, Values::Small), input(dtype, kMain, Values::Small, 1)},
        [](const std::vector<Tensor>& in) { return isclose(in[0], in[1], 0.25, 0.5, true); },
        [](const std::vector<HostTensor>& in) {
          return isclose_reference(in[0], in[1], 0.25, 0.5, true);
        },
        "isclose(a, b, 0.25, 0.5, true)", exact_tolerance()));
  }
}

// a << amount and a >> amount for a host amount, in range and past the width; ~a.
void add_bit_ops(BatteryBuilder& builder) {
  for (DType dtype : kAllDtypes) {
    if (dtype.is_float()) continue;
    builder.add(make_case(
        "bitwise", "bitwise_not", {input(dtype, kMain)},
        [](const std::vector<Tensor>& in) { return ~in[0]; },
        [](const std::vector<HostTensor>& in) {
          HostTensor result(in[0].dtype, in[0].shape);
          for (size_t index = 0; index < result.data.size(); ++index) {
            const int64_t x = in[0].data[index].i;
            result.data[index].i =
                in[0].dtype.is_bool() ? !x : wrap(in[0].dtype, ~static_cast<uint64_t>(x));
          }
          return Expected(result);
        },
        "~a", exact_tolerance()));
    if (dtype.is_bool()) continue;
    for (const int64_t amount : {3, 8, 15, 31, 32, 63, 64, 70}) {
      for (const bool left : {true, false}) {
        const std::string code =
            std::string("a ") + (left ? "<<" : ">>") + " " + std::to_string(amount);
        builder.add(make_case(
            "bitwise", left ? "shift_left_by" : "shift_right_by", {input(dtype, kMain)},
            [amount, left](const std::vector<Tensor>& in) {
              return left ? in[0] << amount : in[0] >> amount;
            },
            [amount, left](const std::vector<HostTensor>& in) {
              HostTensor count(in[0].dtype, {});
              count.data[0].i = wrap(in[0].dtype, static_cast<uint64_t>(amount));
              return ref::binary(left ? ref::Binary::ShiftLeft : ref::Binary::ShiftRight, in[0],
                                 count);
            },
            code, exact_tolerance(), std::to_string(amount)));
      }
    }
  }
}

// x's bits (a float's as the dtype holds it, an integer's two's complement) read as `to`.
Expected bitcast_reference(const HostTensor& x, DType to) {
  HostTensor result(to, x.shape);
  for (size_t index = 0; index < x.data.size(); ++index) {
    const Scalar& value = x.data[index];
    const uint64_t bits =
        x.dtype.is_float() ? float_bits(x.dtype, value.f) : static_cast<uint64_t>(value.i);
    if (to.is_float())
      result.data[index].f = float_from_bits(to, bits);
    else
      result.data[index].i = wrap(to, bits);
  }
  return Expected(result);
}

void add_bitcasts(BatteryBuilder& builder) {
  const std::vector<std::vector<DType>> sizes = {
      {dtypes::int8, dtypes::uint8},
      {dtypes::float16, dtypes::bfloat16, dtypes::int16, dtypes::uint16},
      {dtypes::float32, dtypes::int32, dtypes::uint32},
      {dtypes::float64, dtypes::int64, dtypes::uint64}};
  for (const std::vector<DType>& group : sizes)
    for (DType from : group)
      for (DType to : group) {
        if (from == to) continue;
        builder.add(make_case(
            "cast", std::string("bitcast:") + to.name(), {input(from, kMain)},
            [to](const std::vector<Tensor>& in) { return in[0].bitcast(to); },
            [to](const std::vector<HostTensor>& in) { return bitcast_reference(in[0], to); },
            std::string("a.bitcast(dtypes::") + to.name() + ")", exact_tolerance(true)));
      }
}

}  // namespace

void add_math_composite_cases(BatteryBuilder& builder) {
  add_lerp(builder);
  add_isclose(builder);
  add_bit_ops(builder);
  add_bitcasts(builder);
}

}  // namespace kiln::conformance::detail

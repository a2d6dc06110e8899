// Shape cases: the ops whose kernels change most with the shape (elementwise, full and partial
// reductions, casts) on a scalar, one element, empty tensors, odd and prime sizes that no vector
// width or workgroup divides, 4-D, and sizes large enough for many workgroups / threads and for
// kiln's two-stage reductions.

#include <cmath>

#include "tools/conformance/battery.h"

namespace kiln::conformance::detail {
namespace {

const Shape kShapes[] = {
    {},                  // scalar
    {1},                 // one element
    {0},                 // empty
    {3, 0, 5},           // empty in the middle
    {1, 1, 1},           // all ones
    {1031},              // prime
    {2, 3, 5, 7},        // 4-D, odd
    {2, 1, 3, 1, 2, 3},  // 6-D with size-1 axes
    {64, 48},            // multiples of every vector width
    {262147},            // large, odd: many threads
    {262144},            // large, a power of two: kiln splits the reduction
    {515, 513},          // large 2-D, odd
};

bool is_large(const Shape& shape) {
  return numel_of(shape) > 100000;
}

// Every dtype for the shapes that stress each dtype's loads and stores; a few for the rest.
bool every_dtype(const Shape& shape) {
  return shape.empty() || shape == Shape{1} || shape == Shape{0} || shape == Shape{1031} ||
         shape == Shape{262147};
}

const std::vector<DType> kShapeDtypes = {dtypes::bool_,   dtypes::int32,   dtypes::uint8,
                                         dtypes::float16, dtypes::float32, dtypes::int64};

}  // namespace

void add_shape_cases(BatteryBuilder& builder) {
  for (const Shape& shape : kShapes) {
    const bool empty = numel_of(shape) == 0;
    for (DType dtype : every_dtype(shape) ? kAllDtypes : kShapeDtypes) {
      builder.add(make_case(
          "shapes", "add", {input(dtype, shape), input(dtype, shape, Values::General, 1)},
          [](const std::vector<Tensor>& in) { return in[0] + in[1]; },
          [](const std::vector<HostTensor>& in) {
            return ref::binary(ref::Binary::Add, in[0], in[1]);
          },
          "a + b", exact_tolerance(false)));
      // Small integers: float sums of them are exact, so large sums are checked tightly too.
      const Values values = dtype.is_float() ? Values::SmallInt : Values::General;
      const int64_t count = numel_of(shape);
      builder.add(make_case(
          "shapes", "sum", {input(dtype, shape, values)},
          [](const std::vector<Tensor>& in) { return in[0].sum(); },
          [](const std::vector<HostTensor>& in) {
            return ref::reduce(ref::Reduce::Sum, in[0], {}, false);
          },
          "a.sum()",
          tolerance_for(dtype, 2, 4 + 2 * std::sqrt(static_cast<double>(count)), 0, true),
          "axes=all"));
      if (!empty && shape.size() >= 2 &&
          (dtype == dtypes::float32 || dtype == dtypes::int32 || dtype == dtypes::float16 ||
           dtype == dtypes::bool_ || dtype == dtypes::uint8)) {
        for (int64_t axis : {int64_t{0}, static_cast<int64_t>(shape.size()) - 1}) {
          builder.add(make_case(
              "shapes", "sum", {input(dtype, shape, values)},
              [=](const std::vector<Tensor>& in) { return in[0].sum({axis}); },
              [=](const std::vector<HostTensor>& in) {
                return ref::reduce(ref::Reduce::Sum, in[0], {axis}, false);
              },
              "a.sum({" + std::to_string(axis) + "})",
              tolerance_for(dtype, 2, 4 + 2 * std::sqrt(static_cast<double>(shape[axis])), 0, true),
              "axes=" + std::to_string(axis)));
        }
      }
    }
    for (DType dtype :
         {dtypes::float32, dtypes::float16, dtypes::float64, dtypes::bfloat16, dtypes::int32}) {
      builder.add(make_case(
          "shapes", "exp", {input(dtype, shape)},
          [](const std::vector<Tensor>& in) { return in[0].exp(); },
          [](const std::vector<HostTensor>& in) { return ref::unary(ref::Unary::Exp, in[0]); },
          "a.exp()", tolerance_for(float_for(dtype), 3)));
    }
    for (DType dtype : {dtypes::float32, dtypes::int64, dtypes::float16}) {
      if (!empty) {
        builder.add(make_case(
            "shapes", "max", {input(dtype, shape)},
            [](const std::vector<Tensor>& in) { return in[0].max(); },
            [](const std::vector<HostTensor>& in) {
              return ref::reduce(ref::Reduce::Max, in[0], {}, false);
            },
            "a.max()", exact_tolerance(false), "axes=all"));
      }
      if (!is_large(shape)) {
        builder.add(make_case(
            "shapes", "mean", {input(dtype, shape, Values::Small)},
            [](const std::vector<Tensor>& in) { return in[0].mean(); },
            [](const std::vector<HostTensor>& in) {
              return ref::reduce(ref::Reduce::Mean, in[0], {}, false);
            },
            "a.mean()",
            tolerance_for(float_for(dtype), 2,
                          4 + 2 * std::sqrt(static_cast<double>(numel_of(shape))), 0, true),
            "axes=all"));
      }
    }
    for (DType to : {dtypes::int32, dtypes::float16, dtypes::uint8}) {
      builder.add(make_case(
          "shapes", std::string("cast:") + to.name(), {input(dtypes::float32, shape)},
          [to](const std::vector<Tensor>& in) { return in[0].cast(to); },
          [to](const std::vector<HostTensor>& in) { return Expected(cast(in[0], to)); },
          std::string("a.cast(dtypes::") + to.name() + ")", exact_tolerance(false)));
    }
    if (shape.size() >= 1 && !empty) {
      for (DType dtype : {dtypes::float32, dtypes::int32}) {
        builder.add(make_case(
            "shapes", "where",
            {input(dtypes::bool_, shape), input(dtype, shape),
             input(dtype, shape, Values::General, 1)},
            [](const std::vector<Tensor>& in) { return where(in[0], in[1], in[2]); },
            [](const std::vector<HostTensor>& in) { return ref::where(in[0], in[1], in[2]); },
            "where(a, b, c)", exact_tolerance(false), dtype.name()));
      }
    }
  }
}

namespace {

using ref::Binary;

// |x| in float64, for error scales.
HostTensor absolute(const HostTensor& tensor) {
  HostTensor result = cast(tensor, dtypes::float64);
  for (Scalar& item : result.data) item.f = std::fabs(item.f);
  return result;
}

// `values` with the error scale `scale` (a float64 tensor of the same shape).
Expected scaled(Expected values, const HostTensor& scale) {
  for (const Scalar& item : scale.data) values.scale.push_back(item.f);
  return values;
}

Expected add(const HostTensor& a, const HostTensor& b) {
  return ref::binary(Binary::Add, a, b);
}
Expected mul(const HostTensor& a, const HostTensor& b) {
  return ref::binary(Binary::Mul, a, b);
}

// Graphs whose shape, not their ops, is the test: a realized tensor used again, one value read by
// several consumers through different Views, a tensor combined with a View of itself, reductions
// of reductions, a reduction broadcast back over its input.
void add_graph_cases(BatteryBuilder& builder) {
  // Wraparound that a compiler must not assume away: signed overflow is undefined in C and OpenCL
  // C, so a kernel that computes a + b or a * b in a signed type may be "optimized" as if it did
  // not overflow (widened before a cast, an abs dropped, (a + b) < a folded to b < 0).
  for (DType dtype : {dtypes::int32, dtypes::int64, dtypes::int16}) {
    builder.add(make_case(
        "graph", "overflow_then_widen",
        {input(dtype, {7, 13}), input(dtype, {7, 13}, Values::General, 1)},
        [](const std::vector<Tensor>& in) { return (in[0] * in[1]).cast(dtypes::float64); },
        [](const std::vector<HostTensor>& in) {
          return Expected(cast(mul(in[0], in[1]).values, dtypes::float64));
        },
        "(a * b).cast(dtypes::float64)", exact_tolerance(false)));
    builder.add(make_case(
        "graph", "overflow_then_abs", {input(dtype, {7, 13})},
        [](const std::vector<Tensor>& in) { return (in[0] * in[0]).abs(); },
        [](const std::vector<HostTensor>& in) {
          return ref::unary(ref::Unary::Abs, mul(in[0], in[0]).values);
        },
        "(a * a).abs()", exact_tolerance(false)));
    builder.add(make_case(
        "graph", "overflow_then_compare",
        {input(dtype, {7, 13}), input(dtype, {7, 13}, Values::General, 1)},
        [](const std::vector<Tensor>& in) { return (in[0] + in[1]) < in[0]; },
        [](const std::vector<HostTensor>& in) {
          return ref::binary(Binary::Lt, add(in[0], in[1]).values, in[0]);
        },
        "(a + b) < a", exact_tolerance(false)));
  }
  for (DType dtype : {dtypes::float32, dtypes::int32, dtypes::float16}) {
    const Values values = dtype.is_float() ? Values::Small : Values::General;
    const Tolerance close = tolerance_for(dtype, 2, 16, 0, true);
    builder.add(make_case(
        "graph", "realized_then_used",
        {input(dtype, {7, 13}, values), input(dtype, {7, 13}, values, 1)},
        [](const std::vector<Tensor>& in) {
          const Tensor x = in[0] + in[1];
          x.realize();
          return x.flip({0}) * 2.0 + x;
        },
        [](const std::vector<HostTensor>& in) {
          const HostTensor x = add(in[0], in[1]).values;
          const HostTensor mx = add(absolute(in[0]), absolute(in[1])).values;
          const HostTensor scale =
              add(ref::binary_scalar(Binary::Mul, ref::flip(mx, {0}), 2.0, false).values, mx)
                  .values;
          return scaled(
              add(ref::binary_scalar(Binary::Mul, ref::flip(x, {0}), 2.0, false).values, x), scale);
        },
        "x = a + b; x.realize(); out = x.flip({0}) * 2 + x", close));
    builder.add(make_case(
        "graph", "shared_value", {input(dtype, {7, 13}, values), input(dtype, {7, 13}, values, 1)},
        [](const std::vector<Tensor>& in) {
          const Tensor x = in[0] * in[1];
          return x * x + x.sum({1}, true);
        },
        [](const std::vector<HostTensor>& in) {
          const HostTensor x = mul(in[0], in[1]).values;
          const HostTensor total = ref::reduce(ref::Reduce::Sum, x, {1}, true).values;
          const HostTensor mx = mul(absolute(in[0]), absolute(in[1])).values;
          const HostTensor scale =
              add(mul(mx, mx).values, ref::reduce(ref::Reduce::Sum, mx, {1}, true).values).values;
          return scaled(add(mul(x, x).values, total), scale);
        },
        "x = a * b; out = x * x + x.sum({1}, true)", tolerance_for(dtype, 2, 64, 0, true)));
    builder.add(make_case(
        "graph", "self_transposed", {input(dtype, {13, 13}, values)},
        [](const std::vector<Tensor>& in) { return in[0] + in[0].transpose() - in[0].flip({1}); },
        [](const std::vector<HostTensor>& in) {
          const HostTensor sum = add(in[0], ref::permute(in[0], {1, 0})).values;
          const HostTensor m = absolute(in[0]);
          const HostTensor scale =
              add(add(m, ref::permute(m, {1, 0})).values, ref::flip(m, {1})).values;
          return scaled(ref::binary(Binary::Sub, sum, ref::flip(in[0], {1})), scale);
        },
        "a + a.transpose() - a.flip({1})", close));
    builder.add(make_case(
        "graph", "reduce_of_reduce", {input(dtype, {4, 7, 13}, values)},
        [](const std::vector<Tensor>& in) { return in[0].max({2}).sum({0}); },
        [](const std::vector<HostTensor>& in) {
          const HostTensor m = absolute(in[0]);
          const HostTensor scale =
              ref::reduce(ref::Reduce::Sum, ref::reduce(ref::Reduce::Max, m, {2}, false).values,
                          {0}, false)
                  .values;
          return scaled(
              ref::reduce(ref::Reduce::Sum, ref::reduce(ref::Reduce::Max, in[0], {2}, false).values,
                          {0}, false),
              scale);
        },
        "a.max({2}).sum({0})", close));
    builder.add(make_case(
        "graph", "centered", {input(dtype, {7, 13}, values)},
        [](const std::vector<Tensor>& in) { return in[0] - in[0].max({1}, true) + in[0].min({0}); },
        [](const std::vector<HostTensor>& in) {
          const HostTensor peak = ref::reduce(ref::Reduce::Max, in[0], {1}, true).values;
          const HostTensor low = ref::reduce(ref::Reduce::Min, in[0], {0}, false).values;
          const HostTensor m = absolute(in[0]);
          const HostTensor scale =
              add(add(m, ref::reduce(ref::Reduce::Max, m, {1}, true).values).values,
                  ref::reduce(ref::Reduce::Max, m, {0}, false).values)
                  .values;
          return scaled(add(ref::binary(Binary::Sub, in[0], peak).values, low), scale);
        },
        "a - a.max({1}, true) + a.min({0})", close));
  }
}

}  // namespace

void add_graph_cases_to(BatteryBuilder& builder) {
  add_graph_cases(builder);
}

}  // namespace kiln::conformance::detail

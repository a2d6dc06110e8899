// Cases for defects an independent check once found (issue 12): each failed on the head it was
// found on. They sit in the battery so that every device, present and future, is held to them.

#include <cmath>
#include <limits>

#include "tools/conformance/battery.h"

namespace kiln::conformance::detail {
namespace {

using ref::Binary;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Case regression_case(const std::string& op, DType dtype, Shape shape,
                     std::function<Tensor(const std::string&)> create, HostFn reference,
                     std::string code, Tolerance tolerance) {
  return make_created_case("regression", op, dtype, std::move(shape), std::move(create),
                           std::move(reference), std::move(code), tolerance);
}

HostTensor host_values(DType dtype, const std::vector<double>& values) {
  HostTensor tensor(dtype, {static_cast<int64_t>(values.size())});
  for (size_t index = 0; index < values.size(); ++index)
    tensor.data[index] = make_scalar(dtype, values[index]);
  return tensor;
}

Tensor device_values(DType dtype, const std::vector<double>& values, const std::string& device) {
  return upload(host_values(dtype, values), device);
}

// A masked load never reads outside its buffer: a computed tensor padded by 2^24 elements in
// front (the pad's index there lies far before the buffer) once crashed the process.
void add_far_pad_cases(BatteryBuilder& builder) {
  static constexpr int64_t kFar = int64_t{1} << 24;
  builder.add(regression_case(
      "far_pad_of_computed", dtypes::int32, {1024},
      [](const std::string& device) {
        return Tensor::from_vector(std::vector<int32_t>(1024, 1), {1024}, device)
            .cast(dtypes::float32)
            .pad({{kFar, 0}})
            .sum();
      },
      [](const std::vector<HostTensor>&) {
        HostTensor total(dtypes::float32, {});
        total.data[0] = make_scalar(dtypes::float32, 1024);
        return Expected(total);
      },
      "Tensor::from_vector(std::vector<int32_t>(1024, 1), {1024}).cast(dtypes::float32)"
      ".pad({{1 << 24, 0}}).sum()",
      exact_tolerance()));
  builder.add(regression_case(
      "far_pad_both_sides", dtypes::float32, {3},
      [](const std::string& device) {
        const Tensor x = Tensor::from_vector<float>({1, 2, 3}, {3}, device).exp();
        return x.pad({{kFar, kFar}}, -1).shrink({{kFar - 1, kFar + 4}});
      },
      [](const std::vector<HostTensor>&) {
        return Expected(
            host_values(dtypes::float32, {-1, std::exp(1.0), std::exp(2.0), std::exp(3.0), -1}));
      },
      "Tensor::from_vector<float>({1, 2, 3}, {3}).exp().pad({{1 << 24, 1 << 24}}, -1)"
      ".shrink({{(1 << 24) - 1, (1 << 24) + 4}})",
      tolerance_for(dtypes::float32, 3)));
}

// argmax of a computed half tensor: the stored (rounded) peak must match the computed value.
void add_computed_arg_extreme_cases(BatteryBuilder& builder) {
  for (DType dtype : {dtypes::float16, dtypes::bfloat16, dtypes::float32}) {
    for (bool is_max : {true, false}) {
      for (int64_t axis : {0, 1}) {
        const std::string op = std::string(is_max ? "argmax" : "argmin") + "(a*1.1)";
        builder.add(make_case(
            "regression", op, {input(dtype, {5, 7})},
            [is_max, axis](const std::vector<Tensor>& in) {
              const Tensor scaled = in[0] * 1.1;
              return is_max ? scaled.argmax(axis) : scaled.argmin(axis);
            },
            [is_max, axis](const std::vector<HostTensor>& in) {
              // The product as kiln stores it: computed at the dtype's precision, then rounded.
              HostTensor product = ref::binary_scalar(Binary::Mul, in[0], 1.1, false).values;
              for (Scalar& item : product.data)
                item.f = round_to(in[0].dtype, round_to(dtypes::float32, item.f));
              product.dtype = in[0].dtype;
              return ref::arg_extreme(is_max, product, axis, false);
            },
            std::string("(a * 1.1).") + (is_max ? "argmax(" : "argmin(") + std::to_string(axis) +
                ")",
            exact_tolerance(), "axis=" + std::to_string(axis)));
      }
    }
  }
}

// Host scalars beyond float32's range become +-inf in the tensor's dtype (they once rendered as
// `inff`, which no compiler knows).
void add_huge_scalar_cases(BatteryBuilder& builder) {
  for (DType dtype : {dtypes::float32, dtypes::float16, dtypes::bfloat16}) {
    builder.add(make_case(
        "regression", "a*1e39", {input(dtype, {4, 5})},
        [](const std::vector<Tensor>& in) { return in[0] * 1e39; },
        [](const std::vector<HostTensor>& in) {
          return ref::binary_scalar(Binary::Mul, in[0], 1e39, false);
        },
        "a * 1e39", exact_tolerance(true)));
    builder.add(make_case(
        "regression", "a<1e39", {input(dtype, {4, 5})},
        [](const std::vector<Tensor>& in) { return in[0] < 1e39; },
        [](const std::vector<HostTensor>& in) {
          return ref::binary_scalar(Binary::Lt, in[0], 1e39, false);
        },
        "a < 1e39", exact_tolerance()));
    builder.add(make_case(
        "regression", "pad(-1e300)", {input(dtype, {4, 5})},
        [](const std::vector<Tensor>& in) {
          return (in[0] * 2).pad({{1, 0}, {0, 2}}, -1e300);
        },
        [](const std::vector<HostTensor>& in) {
          HostTensor doubled = ref::binary_scalar(Binary::Mul, in[0], 2, false).values;
          for (Scalar& item : doubled.data)
            item.f = round_to(in[0].dtype, round_to(dtypes::float32, item.f));
          doubled.dtype = in[0].dtype;
          return Expected(ref::pad(doubled, {{1, 0}, {0, 2}}, -kInf));
        },
        "(a * 2).pad({{1, 0}, {0, 2}}, -1e300)", exact_tolerance(true)));
    builder.add(make_case(
        "regression", "where(a>0,a,1e39)", {input(dtype, {4, 5})},
        [](const std::vector<Tensor>& in) { return where(in[0] > 0, in[0], 1e39); },
        [](const std::vector<HostTensor>& in) {
          HostTensor result = in[0];
          for (Scalar& item : result.data) item.f = item.f > 0 ? item.f : kInf;
          return Expected(result);
        },
        "where(a > 0, a, 1e39)", exact_tolerance(true)));
  }
}

// Expressions of constants only: kiln folds them, so no device compiler decides their value (PoCL
// once dropped the store of `pow(1.0f, NAN)`).
void add_constant_only_cases(BatteryBuilder& builder) {
  for (DType dtype : {dtypes::float32, dtypes::float64, dtypes::float16, dtypes::bfloat16}) {
    builder.add(regression_case(
        "full(1).pow(nan)", dtype, {4},
        [dtype](const std::string& device) {
          return Tensor::full({4}, 1.0, dtype, device).pow(NAN);
        },
        [dtype](const std::vector<HostTensor>&) {
          return Expected(host_values(dtype, {1, 1, 1, 1}));
        },
        "Tensor::full({4}, 1.0, dtype).pow(NAN)", exact_tolerance(true)));
    builder.add(regression_case(
        "constant_math", dtype, {5},
        [dtype](const std::string& device) {
          const Tensor zero = Tensor::full({5}, 0.0, dtype, device);
          const Tensor minus_zero = Tensor::full({5}, -0.0, dtype, device);
          const Tensor index = Tensor::arange(0, 5, 1, device).cast(dtype);
          // log(0) = -inf, sqrt(-0) = -0, x / inf = 0 and 0 * nan = nan at the folded lanes.
          return where(index == 0, zero.log(),
                       where(index == 1, minus_zero.sqrt(),
                             where(index == 2, Tensor::full({5}, 3.0, dtype, device) / INFINITY,
                                   where(index == 3, zero * NAN,
                                         Tensor::full({5}, 2.0, dtype, device).pow(10.0)))));
        },
        [dtype](const std::vector<HostTensor>&) {
          return Expected(host_values(dtype, {-kInf, -0.0, 0.0, kNaN, 1024}));
        },
        "[log(0), sqrt(-0), 3 / inf, 0 * nan, pow(2, 10)] from constants", exact_tolerance(true)));
  }
  builder.add(regression_case(
      "constant_int_division", dtypes::int32, {4},
      [](const std::string& device) {
        const Tensor index = Tensor::arange(0, 4, 1, device);
        const Tensor minimum = Tensor::full({4}, -2147483648.0, dtypes::int32, device);
        return where(index == 0, minimum / -1,
                     where(index == 1, minimum % -1,
                           where(index == 2, Tensor::full({4}, 7, dtypes::int32, device) / 0,
                                 Tensor::full({4}, -7, dtypes::int32, device) % 3)));
      },
      [](const std::vector<HostTensor>&) {
        return Expected(host_values(dtypes::int32, {-2147483648.0, 0, 0, -1}));
      },
      "[INT_MIN / -1, INT_MIN % -1, 7 / 0, -7 % 3] from constants", exact_tolerance()));
}

// tanh is exactly +-1 at +-inf and wherever the rounded result is 1, on every device.
void add_tanh_saturation_cases(BatteryBuilder& builder) {
  for (DType dtype : kFloatDtypes) {
    const std::vector<double> inputs = {kInf, -kInf, 30, -30, 100, 1e30};
    builder.add(regression_case(
        "tanh_saturates", dtype, {6},
        [dtype, inputs](const std::string& device) {
          return device_values(dtype, inputs, device).tanh();
        },
        [dtype](const std::vector<HostTensor>&) {
          return Expected(host_values(dtype, {1, -1, 1, -1, 1, 1}));
        },
        "Tensor::from_vector({inf, -inf, 30, -30, 100, 1e30}).tanh()", exact_tolerance(true)));
    builder.add(regression_case(
        "tanh_inf_to_int", dtype, {2},
        [dtype](const std::string& device) {
          return device_values(dtype, {kInf, -kInf}, device).tanh().cast(dtypes::int32);
        },
        [](const std::vector<HostTensor>&) {
          return Expected(host_values(dtypes::int32, {1, -1}));
        },
        "Tensor::from_vector({inf, -inf}).tanh().cast(dtypes::int32)", exact_tolerance()));
  }
}

// float -> int -> float has no -0: an integer has none (gcc folded the pair into trunc).
void add_cast_round_trip_cases(BatteryBuilder& builder) {
  for (DType dtype : kFloatDtypes) {
    for (DType through : {dtypes::int8, dtypes::int32, dtypes::int64, dtypes::uint8}) {
      const std::vector<double> inputs = {-0.5, -0.9, 0.5, -1.5, -0.0, 0.25, 2.75, -3.5};
      builder.add(regression_case(
          std::string("cast_round_trip:") + through.name(), dtype, {8},
          [dtype, through, inputs](const std::string& device) {
            return device_values(dtype, inputs, device).cast(through).cast(dtype);
          },
          [dtype, through, inputs](const std::vector<HostTensor>&) {
            return Expected(cast(cast(host_values(dtype, inputs), through), dtype));
          },
          std::string("a.cast(dtypes::") + through.name() + ").cast(a.dtype())",
          exact_tolerance(true)));
    }
  }
}

// pad(-0.0) fills -0.0 (a `value == 0` shortcut once filled +0.0).
void add_signed_zero_pad_cases(BatteryBuilder& builder) {
  for (DType dtype : kFloatDtypes) {
    builder.add(make_case(
        "regression", "pad(-0.0)", {input(dtype, {3, 4})},
        [](const std::vector<Tensor>& in) {
          return in[0].pad({{1, 1}, {0, 2}}, -0.0);
        },
        [](const std::vector<HostTensor>& in) {
          return Expected(ref::pad(in[0], {{1, 1}, {0, 2}}, -0.0));
        },
        "a.pad({{1, 1}, {0, 2}}, -0.0)", exact_tolerance(true)));
  }
}

// Long rows: a float sum's error must grow like sqrt(n), not n (a row of 2^20 times 0.1f once
// summed to 104748.95 instead of 104857.6).
void add_long_sum_cases(BatteryBuilder& builder) {
  for (int64_t length : {int64_t{1} << 20, int64_t{1000003}}) {
    const double n = static_cast<double>(length);
    builder.add(regression_case(
        "long_row_sum", dtypes::float32, {2, length},
        [length](const std::string& device) {
          return Tensor::full({2, length}, 0.1, dtypes::float32, device).contiguous().sum({1});
        },
        [n](const std::vector<HostTensor>&) {
          const double term = static_cast<double>(0.1f);
          return Expected(host_values(dtypes::float32, {term * n, term * n}), {term * n, term * n});
        },
        "Tensor::full({2, " + std::to_string(length) + "}, 0.1).contiguous().sum({1})",
        tolerance_for(dtypes::float32, 0, 4 + 2 * std::sqrt(n))));
  }
}

// Reductions longer than a device lets one work item loop (lavapipe stops after 65535 iterations
// in all, silently) are split by the scheduler: every reduce op, a length that divides nothing,
// several reduced axes, a reduce axis that is not the last, and a NaN that must survive the split.
void add_long_reduce_cases(BatteryBuilder& builder) {
  constexpr int64_t kRows = 70001;
  auto add = [&](const std::string& op, DType dtype, Shape shape,
                 std::function<Tensor(const std::string&)> create, std::vector<double> expected,
                 std::string code) {
    builder.add(regression_case(
        op, dtype, std::move(shape), std::move(create),
        [dtype, expected](const std::vector<HostTensor>&) {
          return Expected(host_values(dtype, expected));
        },
        std::move(code), exact_tolerance()));
  };
  add(
      "long_column_max", dtypes::int32, {kRows, 3},
      [](const std::string& device) {
        return Tensor::arange(0, kRows * 3, 1, dtypes::int32, device).reshape({kRows, 3}).max({0});
      },
      {kRows * 3 - 3, kRows * 3 - 2, kRows * 3 - 1},
      "Tensor::arange(0, 70001 * 3, 1, dtypes::int32).reshape({70001, 3}).max({0})");
  add(
      "long_column_min", dtypes::float32, {kRows, 3},
      [](const std::string& device) {
        return (-Tensor::arange(0, kRows * 3, 1, dtypes::float32, device))
            .reshape({kRows, 3})
            .min({0});
      },
      {-(kRows * 3 - 3.0), -(kRows * 3 - 2.0), -(kRows * 3 - 1.0)},
      "(-Tensor::arange(0, 70001 * 3, 1, dtypes::float32)).reshape({70001, 3}).min({0})");
  // 23334 factors of -1 (every third index): the product is +1.
  add(
      "long_prod", dtypes::int64, {kRows},
      [](const std::string& device) {
        const Tensor index = Tensor::arange(0, kRows, 1, dtypes::int64, device);
        return where(index % 3 == 0, Tensor::full({kRows}, -1, dtypes::int64, device),
                     Tensor::full({kRows}, 1, dtypes::int64, device))
            .prod()
            .reshape({1});
      },
      {1}, "where(arange(70001) % 3 == 0, -1, 1).prod() (int64)");
  add(
      "long_two_axis_sum", dtypes::int64, {300, 3, 301},
      [](const std::string& device) {
        return Tensor::full({300, 3, 301}, 1, dtypes::int64, device).contiguous().sum({0, 2});
      },
      {90300, 90300, 90300},
      "Tensor::full({300, 3, 301}, 1, dtypes::int64).contiguous().sum({0, 2})");
  add(
      "long_max_keeps_nan", dtypes::float32, {kRows},
      [](const std::string& device) {
        const Tensor index = Tensor::arange(0, kRows, 1, dtypes::float32, device);
        return where(index == 5000.0f, Tensor::full({kRows}, kNaN, dtypes::float32, device), index)
            .max()
            .reshape({1});
      },
      {kNaN}, "where(arange(70001) == 5000, NaN, arange(70001)).max()");
}

}  // namespace

void add_regression_cases(BatteryBuilder& builder) {
  add_far_pad_cases(builder);
  add_computed_arg_extreme_cases(builder);
  add_huge_scalar_cases(builder);
  add_constant_only_cases(builder);
  add_tanh_saturation_cases(builder);
  add_cast_round_trip_cases(builder);
  add_signed_zero_pad_cases(builder);
  add_long_sum_cases(builder);
  add_long_reduce_cases(builder);
  add_limit_regression_cases(builder);
  add_value_regression_cases(builder);
}

}  // namespace kiln::conformance::detail

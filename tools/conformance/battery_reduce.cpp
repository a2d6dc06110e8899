// Reduction cases: sum, prod, max, min, mean, var, std over axes and keepdim, argmax / argmin,
// softmax / log_softmax / logsumexp, cumsum and matmul, over every dtype.

#include <cmath>

#include "tools/conformance/battery.h"

namespace kiln::conformance::detail {
namespace {

using ref::Reduce;

using ReduceBuild = Tensor (*)(const Tensor&, const std::vector<int64_t>&, bool);

struct ReduceSpec {
  const char* name;
  Reduce op;
  ReduceBuild build;
  Values float_values;
  Values int_values;
};

const ReduceSpec kReduce[] = {
    {"sum", Reduce::Sum,
     [](const Tensor& a, const std::vector<int64_t>& axes, bool keep) { return a.sum(axes, keep); },
     Values::Small, Values::General},
    {"prod", Reduce::Prod,
     [](const Tensor& a, const std::vector<int64_t>& axes, bool keep) {
       return a.prod(axes, keep);
     },
     Values::NearOne, Values::General},
    {"max", Reduce::Max,
     [](const Tensor& a, const std::vector<int64_t>& axes, bool keep) { return a.max(axes, keep); },
     Values::General, Values::General},
    {"min", Reduce::Min,
     [](const Tensor& a, const std::vector<int64_t>& axes, bool keep) { return a.min(axes, keep); },
     Values::General, Values::General},
    {"mean", Reduce::Mean,
     [](const Tensor& a, const std::vector<int64_t>& axes, bool keep) {
       return a.mean(axes, keep);
     },
     Values::Small, Values::Small},
    {"var", Reduce::Var,
     [](const Tensor& a, const std::vector<int64_t>& axes, bool keep) { return a.var(axes, keep); },
     Values::Small, Values::Small},
    {"std", Reduce::Std,
     [](const Tensor& a, const std::vector<int64_t>& axes, bool keep) { return a.std(axes, keep); },
     Values::Small, Values::Small},
};

std::string axes_code(const std::vector<int64_t>& axes) {
  std::string text = "{";
  for (size_t index = 0; index < axes.size(); ++index)
    text += (index ? ", " : "") + std::to_string(axes[index]);
  return text + "}";
}

int64_t reduced_count(const Shape& shape, const std::vector<int64_t>& axes) {
  if (axes.empty()) return numel_of(shape);
  int64_t count = 1;
  for (int64_t axis : axes)
    count *= shape[axis < 0 ? axis + static_cast<int64_t>(shape.size()) : axis];
  return count;
}

// The float tolerance of a reduction over n elements (see tolerance_notes()).
Tolerance reduce_tolerance(Reduce op, DType out, int64_t n) {
  const double walk = 4 + 2 * std::sqrt(static_cast<double>(n));
  switch (op) {
    case Reduce::Max:
    case Reduce::Min:
      return exact_tolerance(false);
    case Reduce::Prod:
      return tolerance_for(out, 2, 4.0 * static_cast<double>(n), 0, true);
    default:
      return tolerance_for(out, 2, walk, 0, true);
  }
}

struct Axes {
  std::vector<int64_t> axes;
  bool keepdim;
  Shape shape;
};

void add_reduce(BatteryBuilder& builder) {
  const std::vector<DType> some = {dtypes::float32, dtypes::float16, dtypes::int32, dtypes::bool_,
                                   dtypes::uint64};
  const Axes main{{1}, false, {7, 13}};
  const Axes others[] = {{{}, false, {7, 13}},     {{0}, true, {7, 13}},
                         {{-1, 0}, true, {7, 13}}, {{0, 2}, false, {3, 4, 5}},
                         {{1}, false, {16, 64}},   {{0}, false, {64, 16}}};
  for (const ReduceSpec& spec : kReduce) {
    for (DType dtype : kAllDtypes) {
      const bool float_math =
          spec.op == Reduce::Mean || spec.op == Reduce::Var || spec.op == Reduce::Std;
      const DType out = float_math ? float_for(dtype) : dtype;
      auto add = [&](const Axes& config, Values values, const std::string& variant) {
        const Reduce op = spec.op;
        const ReduceBuild build = spec.build;
        const std::vector<int64_t> axes = config.axes;
        const bool keep = config.keepdim;
        const std::string code =
            std::string("a.") + spec.name + "(" + axes_code(axes) + (keep ? ", true" : "") + ")";
        std::string axes_text = "axes=";
        for (size_t index = 0; index < axes.size(); ++index)
          axes_text += (index ? "," : "") + std::to_string(axes[index]);
        if (axes.empty()) axes_text += "all";
        if (keep) axes_text += ",keepdim";
        builder.add(make_case(
            "reduce", spec.name, {input(dtype, config.shape, values)},
            [=](const std::vector<Tensor>& in) { return build(in[0], axes, keep); },
            [=](const std::vector<HostTensor>& in) { return ref::reduce(op, in[0], axes, keep); },
            code, reduce_tolerance(spec.op, out, reduced_count(config.shape, axes)),
            axes_text + (variant.empty() ? "" : "," + variant)));
      };
      const Values values = dtype.is_float() ? spec.float_values : spec.int_values;
      add(main, values, "");
      if (std::find(some.begin(), some.end(), dtype) == some.end()) continue;
      for (const Axes& config : others) add(config, values, "");
      // NaN and inf must propagate through float sums and means. (Not prod, var, std: with such
      // values float32 intermediates overflow where the double reference does not.)
      const bool edges = spec.op == Reduce::Sum || spec.op == Reduce::Mean;
      if (dtype.is_float() && edges) add(main, Values::General, "edges");
    }
  }
  // var / std with correction 0, and over a single element (n - correction == 0 gives NaN).
  for (DType dtype : {dtypes::float32, dtypes::float16, dtypes::int32}) {
    for (int64_t correction : {0, 2}) {
      builder.add(make_case(
          "reduce", "var", {input(dtype, {7, 13}, Values::Small)},
          [=](const std::vector<Tensor>& in) { return in[0].var({1}, false, correction); },
          [=](const std::vector<HostTensor>& in) {
            return ref::reduce(Reduce::Var, in[0], {1}, false, correction);
          },
          "a.var({1}, false, " + std::to_string(correction) + ")",
          reduce_tolerance(Reduce::Var, float_for(dtype), 13),
          "axes=1,correction=" + std::to_string(correction)));
    }
    builder.add(make_case(
        "reduce", "std", {input(dtype, {7, 1}, Values::Small)},
        [](const std::vector<Tensor>& in) { return in[0].std({1}); },
        [](const std::vector<HostTensor>& in) {
          return ref::reduce(Reduce::Std, in[0], {1}, false);
        },
        "a.std({1})", reduce_tolerance(Reduce::Std, float_for(dtype), 1), "axes=1"));
  }
}

// any / all: every dtype along one axis; all axes, keepdim and an empty axis for a few.
void add_any_all(BatteryBuilder& builder) {
  struct Config {
    std::vector<int64_t> axes;
    bool keepdim;
    Shape shape;
    const char* variant;
  };
  const Config main{{1}, false, {7, 13}, "axes=1"};
  const Config others[] = {{{}, false, {7, 13}, "axes=all"},
                           {{0}, true, {7, 13}, "axes=0,keepdim"},
                           {{1}, false, {4, 0}, "axes=1,empty"}};
  for (bool is_any : {true, false}) {
    const std::string name = is_any ? "any" : "all";
    for (DType dtype : kAllDtypes) {
      auto add = [&](const Config& config, Values values, const std::string& extra) {
        const std::vector<int64_t> axes = config.axes;
        const bool keep = config.keepdim;
        builder.add(make_case(
            "reduce", name, {input(dtype, config.shape, values)},
            [=](const std::vector<Tensor>& in) {
              return is_any ? in[0].any(axes, keep) : in[0].all(axes, keep);
            },
            [=](const std::vector<HostTensor>& in) {
              return ref::any_all(is_any, in[0], axes, keep);
            },
            "a." + name + "(" + axes_code(axes) + (keep ? ", true" : "") + ")", exact_tolerance(),
            config.variant + extra));
      };
      // General values hold zeros and NaN; Bool values make whole rows true or false likelier.
      add(main, Values::General, "");
      add(main, Values::Bool, ",bools");
      if (dtype != dtypes::float32 && dtype != dtypes::int8 && dtype != dtypes::bool_) continue;
      for (const Config& config : others) add(config, Values::General, "");
    }
  }
}

void add_argreduce(BatteryBuilder& builder) {
  for (DType dtype : kAllDtypes) {
    for (bool is_max : {true, false}) {
      const std::string name = is_max ? "argmax" : "argmin";
      builder.add(make_case(
          "argreduce", name, {input(dtype, {7, 13})},
          [=](const std::vector<Tensor>& in) { return is_max ? in[0].argmax(1) : in[0].argmin(1); },
          [=](const std::vector<HostTensor>& in) {
            return ref::arg_extreme(is_max, in[0], 1, false);
          },
          "a." + name + "(1)", exact_tolerance(false), "axis=1"));
      if (dtype != dtypes::float32 && dtype != dtypes::int32 && dtype != dtypes::bool_ &&
          dtype != dtypes::uint64)
        continue;
      builder.add(make_case(
          "argreduce", name, {input(dtype, {7, 13})},
          [=](const std::vector<Tensor>& in) {
            return is_max ? in[0].argmax(0, true) : in[0].argmin(0, true);
          },
          [=](const std::vector<HostTensor>& in) {
            return ref::arg_extreme(is_max, in[0], 0, true);
          },
          "a." + name + "(0, true)", exact_tolerance(false), "axis=0,keepdim"));
      builder.add(make_case(
          "argreduce", name, {input(dtype, {3, 4, 5})},
          [=](const std::vector<Tensor>& in) {
            return is_max ? in[0].argmax(-1) : in[0].argmin(-1);
          },
          [=](const std::vector<HostTensor>& in) {
            return ref::arg_extreme(is_max, in[0], -1, false);
          },
          "a." + name + "(-1)", exact_tolerance(false), "axis=-1"));
    }
  }
}

void add_softmax(BatteryBuilder& builder) {
  using ref::Softmax;
  struct Spec {
    const char* name;
    Softmax kind;
    Tensor (*build)(const Tensor&, int64_t);
  };
  const Spec specs[] = {
      {"softmax", Softmax::Softmax, [](const Tensor& a, int64_t axis) { return a.softmax(axis); }},
      {"log_softmax", Softmax::LogSoftmax,
       [](const Tensor& a, int64_t axis) { return a.log_softmax(axis); }},
      {"logsumexp", Softmax::LogSumExp,
       [](const Tensor& a, int64_t axis) { return a.logsumexp(axis); }},
  };
  for (const Spec& spec : specs) {
    for (DType dtype : kAllDtypes) {
      const Tolerance tolerance = tolerance_for(float_for(dtype), 4, 8, 1, true);
      auto add = [&](int64_t axis, Values values, const std::string& variant) {
        const Spec copy = spec;
        builder.add(make_case(
            "softmax", spec.name, {input(dtype, {7, 13}, values)},
            [=](const std::vector<Tensor>& in) { return copy.build(in[0], axis); },
            [=](const std::vector<HostTensor>& in) { return ref::softmax(copy.kind, in[0], axis); },
            "a." + std::string(spec.name) + "(" + std::to_string(axis) + ")", tolerance,
            "axis=" + std::to_string(axis) + (variant.empty() ? "" : "," + variant)));
      };
      add(-1, Values::Small, "");
      if (dtype == dtypes::float32 || dtype == dtypes::float16 || dtype == dtypes::float64) {
        add(0, Values::Small, "");
        add(-1, Values::General, "edges");
      }
    }
  }
}

void add_cumsum(BatteryBuilder& builder) {
  for (DType dtype : kAllDtypes) {
    const DType out = dtype.is_float()      ? dtype
                      : dtype.is_unsigned() ? dtypes::uint64
                                            : dtypes::int64;
    const Values values = dtype.is_float() ? Values::Small : Values::General;
    for (int64_t axis : {1, 0}) {
      if (axis == 0 && dtype != dtypes::float32 && dtype != dtypes::int32 && dtype != dtypes::bool_)
        continue;
      builder.add(make_case(
          "cumsum", "cumsum", {input(dtype, {7, 13}, values)},
          [=](const std::vector<Tensor>& in) { return in[0].cumsum(axis); },
          [=](const std::vector<HostTensor>& in) { return ref::cumsum(in[0], axis); },
          "a.cumsum(" + std::to_string(axis) + ")",
          tolerance_for(out, 2, 4 + 2 * std::sqrt(13.0), 0, true), "axis=" + std::to_string(axis)));
    }
  }
}

void add_matmul(BatteryBuilder& builder) {
  struct Pair {
    Shape a, b;
  };
  auto add = [&](DType dtype, const Pair& pair) {
    const int64_t inner = pair.a.back();
    const Values values = dtype.is_float() ? Values::Small : Values::General;
    builder.add(make_case(
        "matmul", "matmul", {input(dtype, pair.a, values), input(dtype, pair.b, values, 1)},
        [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); },
        [](const std::vector<HostTensor>& in) { return ref::matmul(in[0], in[1]); }, "matmul(a, b)",
        tolerance_for(dtype, 2, 4 + 2 * std::sqrt(static_cast<double>(inner)), 0, true),
        "with_" + shape_text(pair.b)));
  };
  for (DType dtype : kAllDtypes) add(dtype, {{7, 5}, {5, 3}});
  builder.add(make_case(
      "matmul", "a.matmul(b)",
      {input(dtypes::float32, {7, 5}, Values::Small),
       input(dtypes::float32, {5, 3}, Values::Small, 1)},
      [](const std::vector<Tensor>& in) { return in[0].matmul(in[1]); },
      [](const std::vector<HostTensor>& in) { return ref::matmul(in[0], in[1]); }, "a.matmul(b)",
      tolerance_for(dtypes::float32, 2, 4 + 2 * std::sqrt(5.0), 0, true)));
  const Pair shapes[] = {{{5}, {5, 3}},
                         {{7, 5}, {5}},
                         {{5}, {5}},
                         {{2, 3, 4}, {4, 5}},
                         {{2, 1, 3, 4}, {3, 4, 2}},
                         {{3, 0}, {0, 4}},
                         {{17, 33}, {33, 9}},
                         {{16, 64}, {64, 32}},
                         {{1, 1}, {1, 1}}};
  for (DType dtype : {dtypes::float32, dtypes::int32, dtypes::float16}) {
    for (const Pair& pair : shapes) add(dtype, pair);
  }
  // Whole 16x16 tiles of halves, which the matrix units take (TC: on a GPU that has them, and
  // emulated under --opts gpu or random elsewhere): plain, batched, and through a permuted and a
  // flipped operand.
  for (DType dtype : {dtypes::bfloat16, dtypes::float16}) {
    add(dtype, {{64, 96}, {96, 128}});
    add(dtype, {{2, 32, 48}, {48, 64}});
    builder.add(make_case(
        "matmul", "matmul",
        {input(dtype, {64, 32}, Values::Small, 0, "permuted"),
         input(dtype, {32, 48}, Values::Small, 1, "flipped")},
        [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); },
        [](const std::vector<HostTensor>& in) { return ref::matmul(in[0], in[1]); }, "matmul(a, b)",
        tolerance_for(dtype, 2, 4 + 2 * std::sqrt(32.0), 0, true), "with_32x48_flipped"));
  }
  // A transposed operand: the reduction walks a strided View.
  for (DType dtype : {dtypes::float32, dtypes::int64}) {
    const Values values = dtype.is_float() ? Values::Small : Values::General;
    builder.add(make_case(
        "matmul", "matmul",
        {input(dtype, {9, 6}, values, 0, "permuted"), input(dtype, {6, 4}, values, 1, "flipped")},
        [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); },
        [](const std::vector<HostTensor>& in) { return ref::matmul(in[0], in[1]); }, "matmul(a, b)",
        tolerance_for(dtype, 2, 4 + 2 * std::sqrt(6.0), 0, true), "with_6x4_flipped"));
  }
}

}  // namespace

void add_reduce_cases(BatteryBuilder& builder) {
  add_reduce(builder);
  add_any_all(builder);
  add_argreduce(builder);
  add_softmax(builder);
  add_cumsum(builder);
  add_matmul(builder);
}

}  // namespace kiln::conformance::detail

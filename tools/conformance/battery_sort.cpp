// Sorting and scans (kiln/sort.h) against loops over each line of the axis: std::stable_sort
// with NaN as the largest value, and running products, extremes and log-sum-exps in double.

#include <kiln/sort.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "tools/conformance/battery.h"

namespace kiln::conformance::detail {
namespace {

// The flat offsets of each line of `shape` along `axis`, in order.
std::vector<std::vector<int64_t>> lines_along(const Shape& shape, int64_t axis) {
  int64_t inner = 1, outer = 1;
  for (size_t at = static_cast<size_t>(axis) + 1; at < shape.size(); ++at) inner *= shape[at];
  for (size_t at = 0; at < static_cast<size_t>(axis); ++at) outer *= shape[at];
  const int64_t length = shape[static_cast<size_t>(axis)];
  std::vector<std::vector<int64_t>> lines;
  for (int64_t high = 0; high < outer; ++high)
    for (int64_t low = 0; low < inner; ++low) {
      std::vector<int64_t> line;
      for (int64_t at = 0; at < length; ++at) line.push_back((high * length + at) * inner + low);
      lines.push_back(line);
    }
  return lines;
}

// a < b in the sort's order of values: NaN the largest; integers compared in their own
// signedness.
bool value_less(DType dtype, const Scalar& a, const Scalar& b) {
  if (dtype.is_float()) {
    if (std::isnan(a.f)) return false;
    if (std::isnan(b.f)) return true;
    return a.f < b.f;
  }
  if (dtype.is_unsigned()) return static_cast<uint64_t>(a.i) < static_cast<uint64_t>(b.i);
  return a.i < b.i;
}

// (values, positions) of a stable sort along `axis`; `want_positions` picks which is returned,
// the first `keep` of each line.
Expected sort_reference(const HostTensor& x, int64_t axis, bool descending, bool want_positions,
                        int64_t keep) {
  Shape shape = x.shape;
  shape[static_cast<size_t>(axis)] = keep;
  HostTensor result(want_positions ? dtypes::int64 : x.dtype, shape);
  const auto in_lines = lines_along(x.shape, axis), out_lines = lines_along(shape, axis);
  for (size_t line = 0; line < in_lines.size(); ++line) {
    std::vector<int64_t> order(in_lines[line].size());
    for (size_t at = 0; at < order.size(); ++at) order[at] = static_cast<int64_t>(at);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      const Scalar& va = x.data[in_lines[line][a]];
      const Scalar& vb = x.data[in_lines[line][b]];
      return descending ? value_less(x.dtype, vb, va) : value_less(x.dtype, va, vb);
    });
    for (int64_t at = 0; at < keep; ++at) {
      Scalar& out = result.data[out_lines[line][at]];
      if (want_positions)
        out = make_scalar(dtypes::int64, static_cast<double>(order[at]));
      else
        out = x.data[in_lines[line][order[at]]];
    }
  }
  return Expected(result);
}

// PyTorch's running extreme: a value that ties or beats it (>=, or <= for the minimum) takes
// its place, and once a NaN is met only a later NaN does.
Expected extreme_reference(const HostTensor& x, int64_t axis, bool maximum, bool want_positions) {
  HostTensor result(want_positions ? dtypes::int64 : x.dtype, x.shape);
  for (const auto& line : lines_along(x.shape, axis)) {
    size_t best = 0;
    for (size_t at = 0; at < line.size(); ++at) {
      const Scalar& value = x.data[line[at]];
      const Scalar& held = x.data[line[best]];
      const bool nan_value = x.dtype.is_float() && std::isnan(value.f);
      const bool nan_held = x.dtype.is_float() && std::isnan(held.f);
      const bool beats = maximum ? !value_less(x.dtype, value, held) || nan_value
                                 : !value_less(x.dtype, held, value) || nan_value;
      if (at == 0 || nan_value || (!nan_held && beats)) best = at;
      result.data[line[at]] = want_positions ? make_scalar(dtypes::int64, static_cast<double>(best))
                                             : x.data[line[best]];
    }
  }
  return Expected(result);
}

Expected cumprod_reference(const HostTensor& x, int64_t axis) {
  const DType out = x.dtype.is_float()      ? x.dtype
                    : x.dtype.is_unsigned() ? dtypes::uint64
                                            : dtypes::int64;
  HostTensor result(out, x.shape);
  std::vector<double> scale(x.data.size());
  for (const auto& line : lines_along(x.shape, axis)) {
    double product = 1;
    uint64_t wrapped = 1;  // integer products wrap modulo 2^64
    for (int64_t at : line) {
      if (out.is_float()) {
        product *= x.data[at].f;
        result.data[at].f = product;
        scale[at] = std::fabs(product);
      } else {
        wrapped *= static_cast<uint64_t>(x.data[at].i);
        result.data[at].i = static_cast<int64_t>(wrapped);
      }
    }
  }
  if (!out.is_float()) return Expected(result);
  for (size_t at = 0; at < result.data.size(); ++at)
    result.data[at] = make_scalar(out, result.data[at].f);
  return Expected(result, scale);
}

Expected logcumsumexp_reference(const HostTensor& x, int64_t axis) {
  HostTensor result(x.dtype, x.shape);
  std::vector<double> scale(x.data.size());
  for (const auto& line : lines_along(x.shape, axis)) {
    double peak = -std::numeric_limits<double>::infinity(), total = 0, spread = 0;
    bool nan = false;
    for (size_t at = 0; at < line.size(); ++at) {
      const double value = x.data[line[at]].f;
      // The running sum of exp(x - peak), rescaled to each new peak; -inf adds nothing, a value
      // equal to the peak (an infinite one too) adds exactly 1, and a NaN stays.
      nan = nan || std::isnan(value);
      if (nan || value == -std::numeric_limits<double>::infinity()) {
      } else if (value == peak) {
        total += 1;
      } else if (value > peak) {
        total = total * std::exp(peak - value) + 1;
        peak = value;
      } else {
        total += std::exp(value - peak);
      }
      if (std::isfinite(value) && std::isfinite(peak)) spread = std::max(spread, peak - value);
      const double result_value = nan ? std::nan("") : std::log(total) + peak;
      result.data[line[at]] = make_scalar(x.dtype, result_value);
      // The error of log-sum-exp in the dtype: its terms' spread and the length's logarithm.
      scale[line[at]] = spread + std::log2(static_cast<double>(at + 1)) + 4 +
                        (std::isfinite(result_value) ? std::fabs(result_value) : 0);
    }
  }
  return Expected(result, scale);
}

void add_sorts(BatteryBuilder& builder) {
  struct Spec {
    Shape shape;
    int64_t axis;
    const char* layout;
  };
  for (DType dtype : kAllDtypes)
    for (const Spec& spec : {Spec{{3, 37}, 1, "contiguous"}, Spec{{13, 4}, 0, "permuted"}}) {
      // float32 and int32 take every variant; the rest one direction each way.
      const bool all = dtype == dtypes::float32 || dtype == dtypes::int32;
      if (spec.axis == 0 && !all) continue;
      for (bool descending : {false, true}) {
        const std::string direction = descending ? "descending" : "ascending";
        const std::string axis = std::to_string(spec.axis);
        const int64_t length = spec.shape[static_cast<size_t>(spec.axis)];
        builder.add(make_case(
            "sort", "sort", {input(dtype, spec.shape, Values::General, 0, spec.layout)},
            [=](const std::vector<Tensor>& in) { return sort(in[0], spec.axis, descending).first; },
            [=](const std::vector<HostTensor>& in) {
              return sort_reference(in[0], spec.axis, descending, false, length);
            },
            "kiln::sort(x, " + axis + ", " + (descending ? "true" : "false") + ").first",
            exact_tolerance(true), direction + " axis=" + axis));
        builder.add(make_case(
            "sort", "argsort", {input(dtype, spec.shape, Values::General, 0, spec.layout)},
            [=](const std::vector<Tensor>& in) { return argsort(in[0], spec.axis, descending); },
            [=](const std::vector<HostTensor>& in) {
              return sort_reference(in[0], spec.axis, descending, true, length);
            },
            "kiln::argsort(x, " + axis + ", " + (descending ? "true" : "false") + ")",
            exact_tolerance(), direction + " axis=" + axis));
        if (!all && descending) continue;
        for (bool positions : {false, true}) {
          const int64_t k = std::min<int64_t>(length, 5);
          builder.add(make_case(
              "sort", positions ? "topk_positions" : "topk",
              {input(dtype, spec.shape, Values::General, 0, spec.layout)},
              [=](const std::vector<Tensor>& in) {
                const auto pair = topk(in[0], k, spec.axis, !descending);
                return positions ? pair.second : pair.first;
              },
              [=](const std::vector<HostTensor>& in) {
                return sort_reference(in[0], spec.axis, !descending, positions, k);
              },
              "kiln::topk(x, " + std::to_string(k) + ", " + axis + ", " +
                  (descending ? "false" : "true") + ")." + (positions ? "second" : "first"),
              exact_tolerance(true),
              (descending ? "smallest" : "largest") + std::string(" axis=") + axis));
        }
      }
    }
  // A line longer than a power of two, and one of a single element.
  for (const Shape& shape : {Shape{2, 1025}, Shape{4, 1}})
    builder.add(make_case(
        "sort", "sort", {input(dtypes::float32, shape, Values::General)},
        [](const std::vector<Tensor>& in) { return sort(in[0]).first; },
        [shape](const std::vector<HostTensor>& in) {
          return sort_reference(in[0], 1, false, false, shape[1]);
        },
        "kiln::sort(x).first", exact_tolerance(true), "long"));
}

void add_scans(BatteryBuilder& builder) {
  for (DType dtype : kAllDtypes)
    for (int64_t axis : {1, 0}) {
      const bool all = dtype == dtypes::float32 || dtype == dtypes::int32;
      if (axis == 0 && !all) continue;
      const std::string at = std::to_string(axis);
      const Shape shape = {7, 13};
      const DType out = dtype.is_float()      ? dtype
                        : dtype.is_unsigned() ? dtypes::uint64
                                              : dtypes::int64;
      builder.add(make_case(
          "sort", "cumprod",
          {input(dtype, shape, dtype.is_float() ? Values::NearOne : Values::General)},
          [=](const std::vector<Tensor>& in) { return cumprod(in[0], axis); },
          [=](const std::vector<HostTensor>& in) { return cumprod_reference(in[0], axis); },
          "kiln::cumprod(x, " + at + ")", tolerance_for(out, 1, 4 * 13, 0, true), "axis=" + at));
      for (bool maximum : {true, false})
        for (bool positions : {false, true}) {
          const std::string op =
              std::string(maximum ? "cummax" : "cummin") + (positions ? "_positions" : "");
          builder.add(make_case(
              "sort", op,
              {input(dtype, shape, Values::General, 0, axis == 0 ? "flipped" : "contiguous")},
              [=](const std::vector<Tensor>& in) {
                const auto pair = maximum ? cummax(in[0], axis) : cummin(in[0], axis);
                return positions ? pair.second : pair.first;
              },
              [=](const std::vector<HostTensor>& in) {
                return extreme_reference(in[0], axis, maximum, positions);
              },
              std::string("kiln::") + (maximum ? "cummax" : "cummin") + "(x, " + at + ")." +
                  (positions ? "second" : "first"),
              exact_tolerance(true), "axis=" + at));
        }
      if (!dtype.is_float()) continue;
      // Small values, and for float32 every edge value (NaN, +-inf, extremes) too.
      for (Values values : {Values::Small, Values::General}) {
        if (values == Values::General && dtype != dtypes::float32) continue;
        builder.add(make_case(
            "sort", "logcumsumexp", {input(dtype, shape, values)},
            [=](const std::vector<Tensor>& in) { return logcumsumexp(in[0], axis); },
            [=](const std::vector<HostTensor>& in) { return logcumsumexp_reference(in[0], axis); },
            "kiln::logcumsumexp(x, " + at + ")", tolerance_for(dtype, 4, 8, 0, true),
            "axis=" + at + (values == Values::General ? " edges" : "")));
      }
    }
}

}  // namespace

void add_sort_cases(BatteryBuilder& builder) {
  add_sorts(builder);
  add_scans(builder);
}

}  // namespace kiln::conformance::detail

// Scatter cases: scatter, scatter_reduce (sum, prod, mean, amax, amin, with and without the
// destination's values) and index_put (by a tensor of rows, with and without accumulation, and by
// strided slices) over every dtype, with indices from the start and from the end, repeated (more
// writes than the axis has elements), of every integer dtype, into destinations and from values
// read through views. An index outside its axis raises IndexError (tests/test_scatter.cpp checks
// that on every device): the cases keep theirs inside, unsigned ones modulo the axis.

#include <cmath>

#include "tools/conformance/battery.h"

namespace kiln::conformance::detail {

namespace {

constexpr int64_t kAxis = kIndexAxis;

struct Reduction {
  const char* name;
  std::optional<ref::Binary> combine;
};

const Reduction kReductions[] = {{"sum", ref::Binary::Add},
                                 {"prod", ref::Binary::Mul},
                                 {"amax", ref::Binary::Max},
                                 {"amin", ref::Binary::Min}};

// scatter_reduce's mean: the sum over the values counted (plus one for the destination's own),
// an integer quotient rounded down; an element nothing is written to keeps its value.
HostTensor reference_mean(const HostTensor& x, int64_t axis, const HostTensor& index,
                          const HostTensor& src, bool include_self) {
  const HostTensor sum = ref::scatter(x, axis, index, src, ref::Binary::Add, include_self);
  HostTensor ones(dtypes::float64, index.shape), start(dtypes::float64, x.shape);
  for (Scalar& value : ones.data) value.f = 1;
  for (Scalar& value : start.data) value.f = include_self ? 1 : 0;
  const HostTensor count = ref::scatter(start, axis, index, ones, ref::Binary::Add, true);
  HostTensor mean = sum;
  for (size_t at = 0; at < mean.data.size(); ++at) {
    const double divisor = count.data[at].f == 0 ? 1 : count.data[at].f;
    if (x.dtype.is_float()) {
      mean.data[at].f = sum.data[at].f / divisor;
    } else {
      mean.data[at].i =
          static_cast<int64_t>(std::floor(static_cast<double>(sum.data[at].i) / divisor));
    }
  }
  return mean;
}

}  // namespace

void add_scatter_cases(BatteryBuilder& builder) {
  const Shape destination = {kAxis, kAxis};
  for (DType dtype : kAllDtypes) {
    // Replacing writes: more writes than the axis has elements along axis 0, a narrower index
    // than the destination along axis 1 (its other lines keep their values).
    for (int64_t axis : {0, 1}) {
      const Shape index_shape = axis == 0 ? Shape{12, 9} : Shape{7, 5};
      builder.add(make_case(
          "scatter", "scatter",
          {input(dtype, destination), input(dtypes::int32, index_shape, Values::SmallInt, 1),
           input(dtype, {12, 9}, Values::General, 2)},
          [axis](const std::vector<Tensor>& in) { return in[0].scatter(axis, in[1], in[2]); },
          [axis](const std::vector<HostTensor>& in) {
            return Expected(ref::scatter(in[0], axis, in[1], in[2], std::nullopt, true));
          },
          "a.scatter(" + std::to_string(axis) + ", b, c)", exact_tolerance(true),
          "axis=" + std::to_string(axis)));
    }
    // Reductions: small integers keep float sums exact; products round per step where the
    // reference rounds once.
    for (const Reduction& reduction : kReductions) {
      const bool arithmetic =
          reduction.combine == ref::Binary::Add || reduction.combine == ref::Binary::Mul;
      if (dtype == dtypes::bool_ && arithmetic) continue;
      const Tolerance tolerance = reduction.combine == ref::Binary::Mul
                                      ? tolerance_for(dtype, 4, 0, 0, true)
                                      : exact_tolerance();
      for (bool include_self : {true, false}) {
        const std::string name = reduction.name;
        builder.add(make_case(
            "scatter", "scatter_reduce",
            {input(dtype, destination, Values::SmallInt),
             input(dtypes::int64, {12, 9}, Values::SmallInt, 1),
             input(dtype, {12, 9}, Values::SmallInt, 2)},
            [name, include_self](const std::vector<Tensor>& in) {
              return in[0].scatter_reduce(0, in[1], in[2], name, include_self);
            },
            [reduction, include_self](const std::vector<HostTensor>& in) {
              return Expected(
                  ref::scatter(in[0], 0, in[1], in[2], reduction.combine, include_self));
            },
            "a.scatter_reduce(0, b, c, \"" + name + "\", " + (include_self ? "true" : "false") +
                ")",
            tolerance, name + (include_self ? "" : ",exclude_self")));
      }
    }
    if (dtype != dtypes::bool_) {
      for (bool include_self : {true, false}) {
        builder.add(make_case(
            "scatter", "scatter_reduce",
            {input(dtype, destination, Values::SmallInt),
             input(dtypes::int16, {5, 4}, Values::SmallInt, 1),
             input(dtype, {5, 4}, Values::SmallInt, 2)},
            [include_self](const std::vector<Tensor>& in) {
              return in[0].scatter_reduce(1, in[1], in[2], "mean", include_self);
            },
            [include_self](const std::vector<HostTensor>& in) {
              return Expected(reference_mean(in[0], 1, in[1], in[2], include_self));
            },
            std::string("a.scatter_reduce(1, b, c, \"mean\", ") +
                (include_self ? "true" : "false") + ")",
            tolerance_for(dtype, 1, 0, 0, true),
            std::string("mean") + (include_self ? "" : ",exclude_self")));
      }
    }
    // index_put: rows by a tensor (repeated: accumulate adds them up, a write takes the last),
    // values broadcast along the rows.
    for (bool accumulate : {false, true}) {
      if (dtype == dtypes::bool_ && accumulate) continue;
      builder.add(make_case(
          "scatter", "index_put",
          {input(dtype, {kAxis, 7}, Values::SmallInt),
           input(dtypes::int64, {11}, Values::SmallInt, 1),
           input(dtype, {11, 1}, Values::SmallInt, 2)},
          [accumulate](const std::vector<Tensor>& in) {
            return in[0].index_put({in[1]}, in[2], accumulate);
          },
          [accumulate](const std::vector<HostTensor>& in) {
            HostTensor index(in[1].dtype, {11, 7}), values(in[2].dtype, {11, 7});
            for (int64_t flat = 0; flat < index.numel(); ++flat) {
              index.data[static_cast<size_t>(flat)] = in[1].data[static_cast<size_t>(flat / 7)];
              values.data[static_cast<size_t>(flat)] = in[2].data[static_cast<size_t>(flat / 7)];
            }
            return Expected(ref::scatter(
                in[0], 0, index, values,
                accumulate ? std::optional<ref::Binary>(ref::Binary::Add) : std::nullopt, true));
          },
          std::string("a.index_put({b}, c, ") + (accumulate ? "true" : "false") + ")",
          exact_tolerance(true), accumulate ? "accumulate" : "rows"));
    }
    // x[::-2, 1::3] = c: rows 8, 6, 4, 2, 0 and columns 1, 4, 7, one elementwise kernel.
    builder.add(make_case(
        "scatter", "index_put",
        {input(dtype, destination), input(dtype, {5, 3}, Values::General, 1)},
        [](const std::vector<Tensor>& in) {
          using indexing::Slice;
          return in[0].index_put(
              {Slice(indexing::None, indexing::None, -2), Slice(1, indexing::None, 3)}, in[1]);
        },
        [](const std::vector<HostTensor>& in) {
          HostTensor result = in[0];
          for (int64_t row = 0; row < 5; ++row) {
            for (int64_t column = 0; column < 3; ++column)
              result.data[static_cast<size_t>((8 - 2 * row) * kAxis + 1 + 3 * column)] =
                  in[1].data[static_cast<size_t>(row * 3 + column)];
          }
          return Expected(result);
        },
        "a.index_put({Slice(None, None, -2), Slice(1, None, 3)}, b)", exact_tolerance(true),
        "steps"));
  }
  // Other index dtypes (unsigned ones taken modulo the axis).
  for (DType index_dtype :
       {dtypes::uint8, dtypes::int8, dtypes::uint64, dtypes::uint16, dtypes::uint32}) {
    builder.add(make_case(
        "scatter", "scatter_reduce",
        {input(dtypes::float32, destination, Values::SmallInt),
         input(index_dtype, {6, 9}, Values::SmallInt, 1),
         input(dtypes::float32, {6, 9}, Values::SmallInt, 2)},
        [](const std::vector<Tensor>& in) {
          return in[0].scatter_reduce(0, in_axis(in[1]), in[2], "sum");
        },
        [](const std::vector<HostTensor>& in) {
          return Expected(ref::scatter(in[0], 0, in_axis(in[1]), in[2], ref::Binary::Add, true));
        },
        "a.scatter_reduce(0, b, c, \"sum\")", exact_tolerance(),
        std::string("index=") + index_dtype.name()));
  }
  // Destinations and values read through views: transposed and flipped, and padded.
  for (const char* layout : {"permuted+flipped", "padded"}) {
    builder.add(make_case(
        "scatter", "scatter",
        {input(dtypes::int32, {kAxis, 7}, Values::General, 0, layout),
         input(dtypes::int32, {6, 7}, Values::SmallInt, 1),
         input(dtypes::int32, {6, 7}, Values::General, 2, layout)},
        [](const std::vector<Tensor>& in) { return in[0].scatter(0, in[1], in[2]); },
        [](const std::vector<HostTensor>& in) {
          return Expected(ref::scatter(in[0], 0, in[1], in[2], std::nullopt, true));
        },
        "a.scatter(0, b, c)", exact_tolerance(), "axis=0"));
  }
}

}  // namespace kiln::conformance::detail

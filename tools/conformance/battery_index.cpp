// Indexing cases: gather and index_select over every dtype, with indices that fall outside the
// axis (negative, past its end, and uint8 wrapped around), which give 0.

#include "tools/conformance/battery.h"

namespace kiln::conformance::detail {

void add_index_cases(BatteryBuilder& builder) {
  // Indices in [-8, 8]: along the 7 rows some are past the end; along the 9 columns every one is
  // reached; negative ones are outside both.
  const Shape source = {7, 9};
  for (DType dtype : kAllDtypes) {
    for (int64_t axis : {0, 1}) {
      const Shape index_shape = axis == 0 ? Shape{5, 9} : Shape{7, 13};
      builder.add(make_case(
          "index", "gather",
          {input(dtype, source), input(dtypes::int32, index_shape, Values::SmallInt, 1)},
          [axis](const std::vector<Tensor>& in) { return in[0].gather(axis, in[1]); },
          [axis](const std::vector<HostTensor>& in) {
            return Expected(ref::gather(in[0], axis, in[1]));
          },
          "a.gather(" + std::to_string(axis) + ", b)", exact_tolerance(true),
          "axis=" + std::to_string(axis)));
    }
    builder.add(make_case(
        "index", "index_select",
        {input(dtype, source), input(dtypes::int64, {9}, Values::SmallInt, 1)},
        [](const std::vector<Tensor>& in) { return in[0].index_select(1, in[1]); },
        [](const std::vector<HostTensor>& in) {
          return Expected(ref::index_select(in[0], 1, in[1]));
        },
        "a.index_select(1, b)", exact_tolerance(true), "axis=1"));
  }
  // Other index dtypes, a smaller index than the source, and a transposed source.
  for (DType index_dtype : {dtypes::uint8, dtypes::int8, dtypes::uint64, dtypes::int16}) {
    builder.add(make_case(
        "index", "gather",
        {input(dtypes::float32, source), input(index_dtype, {3, 5}, Values::SmallInt, 1)},
        [](const std::vector<Tensor>& in) { return in[0].gather(0, in[1]); },
        [](const std::vector<HostTensor>& in) { return Expected(ref::gather(in[0], 0, in[1])); },
        "a.gather(0, b)", exact_tolerance(true), std::string("index=") + index_dtype.name()));
  }
  builder.add(make_case(
      "index", "index_select",
      {input(dtypes::int32, {9, 7}, Values::General, 0, "permuted+flipped"),
       input(dtypes::int32, {6}, Values::SmallInt, 1)},
      [](const std::vector<Tensor>& in) { return in[0].index_select(0, in[1]); },
      [](const std::vector<HostTensor>& in) {
        return Expected(ref::index_select(in[0], 0, in[1]));
      },
      "a.index_select(0, b)", exact_tolerance(), "axis=0"));
}

}  // namespace kiln::conformance::detail

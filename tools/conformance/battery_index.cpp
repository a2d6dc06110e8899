// Indexing cases: gather, take_along_axis, index_select, embedding and strided slices over every
// dtype, with indices counted from the start and from the end (negative), repeated, of every
// integer dtype, into contiguous, transposed, flipped and padded sources. An index outside its axis
// raises IndexError (tests/test_gather.cpp checks that on every device): the cases keep theirs
// inside, unsigned ones by taking them modulo the axis.

#include "tools/conformance/battery.h"

namespace kiln::conformance::detail {

namespace {

constexpr int64_t kAxis = kIndexAxis;

}  // namespace

Tensor in_axis(const Tensor& index) {
  return index.dtype().is_signed_int() ? index : index % static_cast<double>(kIndexAxis);
}

HostTensor in_axis(HostTensor index) {
  if (index.dtype.is_signed_int()) return index;
  for (Scalar& value : index.data)
    value.i = static_cast<int64_t>(static_cast<uint64_t>(value.i) % kIndexAxis);
  return index;
}

void add_index_cases(BatteryBuilder& builder) {
  const Shape source = {kAxis, kAxis};
  for (DType dtype : kAllDtypes) {
    for (int64_t axis : {0, 1}) {
      const Shape index_shape = axis == 0 ? Shape{5, 9} : Shape{9, 13};
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
    builder.add(make_case(
        "index", "embedding",
        {input(dtype, {kAxis, 7}), input(dtypes::int32, {2, 5}, Values::SmallInt, 1)},
        [](const std::vector<Tensor>& in) { return embedding(in[1], in[0]); },
        [](const std::vector<HostTensor>& in) {
          // Row r of the table for each index: index_select of the flattened indices.
          HostTensor rows = ref::index_select(in[0], 0, ref::reshape(in[1], {10}));
          return Expected(ref::reshape(rows, {2, 5, 7}));
        },
        "embedding(b, a)", exact_tolerance(true), "rows=9"));
    // x[::-2, 1::3] of (9, 9): rows 8, 6, 4, 2, 0 and columns 1, 4, 7, as views.
    builder.add(make_case(
        "index", "slice", {input(dtype, source)},
        [](const std::vector<Tensor>& in) {
          using indexing::Slice;
          return in[0].index(
              {Slice(indexing::None, indexing::None, -2), Slice(1, indexing::None, 3)});
        },
        [](const std::vector<HostTensor>& in) {
          return Expected(ref::strided(ref::strided(in[0], 0, 8, -2, 5), 1, 1, 3, 3));
        },
        "a.index({Slice(None, None, -2), Slice(1, None, 3)})", exact_tolerance(true), "steps"));
  }
  // Other index dtypes, a smaller index than the source, and take_along_axis broadcasting.
  for (DType index_dtype : {dtypes::uint8, dtypes::int8, dtypes::uint64, dtypes::int16,
                            dtypes::uint32, dtypes::int64}) {
    builder.add(make_case(
        "index", "gather",
        {input(dtypes::float32, source), input(index_dtype, {3, 5}, Values::SmallInt, 1)},
        [](const std::vector<Tensor>& in) { return in[0].gather(0, in_axis(in[1])); },
        [](const std::vector<HostTensor>& in) {
          return Expected(ref::gather(in[0], 0, in_axis(in[1])));
        },
        "a.gather(0, b)", exact_tolerance(true), std::string("index=") + index_dtype.name()));
  }
  builder.add(make_case(
      "index", "take_along_axis",
      {input(dtypes::float32, {1, kAxis}), input(dtypes::int64, {6, 4}, Values::SmallInt, 1)},
      [](const std::vector<Tensor>& in) { return in[0].take_along_axis(in[1], 1); },
      [](const std::vector<HostTensor>& in) {
        HostTensor rows(in[0].dtype, {6, kAxis});
        for (int64_t flat = 0; flat < rows.numel(); ++flat)
          rows.data[static_cast<size_t>(flat)] = in[0].data[static_cast<size_t>(flat % kAxis)];
        return Expected(ref::gather(rows, 1, in[1]));
      },
      "a.take_along_axis(b, 1)", exact_tolerance(), "broadcast"));
  // Sources read through views: transposed and flipped, and padded (its pad read as zeros).
  for (const char* layout : {"permuted+flipped", "padded"}) {
    builder.add(make_case(
        "index", "index_select",
        {input(dtypes::int32, {kAxis, 7}, Values::General, 0, layout),
         input(dtypes::int32, {6}, Values::SmallInt, 1)},
        [](const std::vector<Tensor>& in) { return in[0].index_select(0, in[1]); },
        [](const std::vector<HostTensor>& in) {
          return Expected(ref::index_select(in[0], 0, in[1]));
        },
        "a.index_select(0, b)", exact_tolerance(), "axis=0"));
  }
}

}  // namespace kiln::conformance::detail

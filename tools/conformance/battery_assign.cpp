// In-place write cases (Tensor::assign, index_put_) over every dtype: a value that reads the
// tensor element by element (computed in place), one that reads it elsewhere (computed beside it
// first), a value broadcast along rows, a read built before the write that must keep the old
// contents (a snapshot), and index_put_ by a tensor of rows (a Scatter straight into the tensor's
// memory; repeated rows, with and without accumulation), by strided slices and at a Variable's
// position. Each case writes a copy of its first input, never the input itself.

#include "tools/conformance/battery.h"

namespace kiln::conformance::detail {

namespace {

// A tensor of its own holding `input`'s values, to be written.
Tensor own_copy(const Tensor& input) {
  Tensor copy = Tensor::zeros(input.dims(), input.dtype(), input.device());
  copy.realize();
  copy.assign(input);
  return copy;
}

}  // namespace

void add_assign_cases(BatteryBuilder& builder) {
  const Shape shape = {kIndexAxis, 7};
  for (DType dtype : kAllDtypes) {
    // The tensor read at the element written: one kernel, in place (the sign of max(-0, 0) is
    // either zero's).
    builder.add(make_case(
        "assign", "assign", {input(dtype, shape), input(dtype, shape, Values::General, 1)},
        [](const std::vector<Tensor>& in) {
          Tensor x = own_copy(in[0]);
          Tensor value = maximum(x, in[1]);
          x.assign(std::move(value));
          return x;
        },
        [](const std::vector<HostTensor>& in) {
          return ref::binary(ref::Binary::Max, in[0], in[1]);
        },
        "x.assign(maximum(x, b))", exact_tolerance(), "elementwise"));
    // The tensor read at other elements: computed beside it, then written.
    builder.add(make_case(
        "assign", "assign", {input(dtype, shape)},
        [](const std::vector<Tensor>& in) {
          Tensor x = own_copy(in[0]);
          x.assign(x.flip({0, 1}));
          return x;
        },
        [](const std::vector<HostTensor>& in) {
          return Expected(ref::flip(in[0], {0, 1}));
        },
        "x.assign(x.flip({0, 1}))", exact_tolerance(true), "reversed"));
    // A row broadcast down the tensor, read through a transposed view.
    builder.add(make_case(
        "assign", "assign",
        {input(dtype, shape), input(dtype, {7, 1}, Values::General, 1, "permuted+flipped")},
        [](const std::vector<Tensor>& in) {
          Tensor x = own_copy(in[0]);
          x.assign(in[1].permute({1, 0}));
          return x;
        },
        [](const std::vector<HostTensor>& in) {
          return Expected(ref::broadcast_to(ref::permute(in[1], {1, 0}), {kIndexAxis, 7}));
        },
        "x.assign(b.permute({1, 0}))", exact_tolerance(true), "broadcast"));
    // A view of the tensor built before the write keeps the old contents.
    builder.add(make_case(
        "assign", "assign", {input(dtype, shape), input(dtype, shape, Values::General, 1)},
        [](const std::vector<Tensor>& in) {
          Tensor x = own_copy(in[0]);
          const Tensor before = x.flip({1});
          x.assign(in[1]);
          return cat({before, x}, 0);
        },
        [](const std::vector<HostTensor>& in) {
          return Expected(ref::cat({ref::flip(in[0], {1}), in[1]}, 0));
        },
        "before = x.flip({1}); x.assign(b); cat({before, x})", exact_tolerance(true), "kept"));
    // Rows by a tensor, repeated (accumulate adds them up, a write takes the last).
    for (bool accumulate : {false, true}) {
      if (dtype == dtypes::bool_ && accumulate) continue;
      builder.add(make_case(
          "assign", "index_put_",
          {input(dtype, {kIndexAxis, 7}, Values::SmallInt),
           input(dtypes::int64, {11}, Values::SmallInt, 1),
           input(dtype, {11, 7}, Values::SmallInt, 2)},
          [accumulate](const std::vector<Tensor>& in) {
            Tensor x = own_copy(in[0]);
            x.index_put_({in[1]}, in[2], accumulate);
            return x;
          },
          [accumulate](const std::vector<HostTensor>& in) {
            HostTensor index(in[1].dtype, {11, 7});
            for (int64_t flat = 0; flat < index.numel(); ++flat)
              index.data[static_cast<size_t>(flat)] = in[1].data[static_cast<size_t>(flat / 7)];
            return Expected(ref::scatter(
                in[0], 0, index, in[2],
                accumulate ? std::optional<ref::Binary>(ref::Binary::Add) : std::nullopt, true));
          },
          std::string("x.index_put_({b}, c, ") + (accumulate ? "true" : "false") + ")",
          exact_tolerance(true), accumulate ? "accumulate" : "rows"));
    }
    // x[::-2, 1::3] = c.
    builder.add(make_case(
        "assign", "index_put_",
        {input(dtype, {kIndexAxis, kIndexAxis}), input(dtype, {5, 3}, Values::General, 1)},
        [](const std::vector<Tensor>& in) {
          using indexing::Slice;
          Tensor x = own_copy(in[0]);
          x.index_put_({Slice(indexing::None, indexing::None, -2), Slice(1, indexing::None, 3)},
                       in[1]);
          return x;
        },
        [](const std::vector<HostTensor>& in) {
          HostTensor result = in[0];
          for (int64_t row = 0; row < 5; ++row) {
            for (int64_t column = 0; column < 3; ++column)
              result.data[static_cast<size_t>((8 - 2 * row) * kIndexAxis + 1 + 3 * column)] =
                  in[1].data[static_cast<size_t>(row * 3 + column)];
          }
          return Expected(result);
        },
        "x.index_put_({Slice(None, None, -2), Slice(1, None, 3)}, b)", exact_tolerance(true),
        "steps"));
    // A column at a Variable's position (one kernel for every position), then another read so.
    builder.add(make_case(
        "assign", "index_put_",
        {input(dtype, {kIndexAxis, 7}), input(dtype, {kIndexAxis}, Values::General, 1)},
        [](const std::vector<Tensor>& in) {
          using indexing::Slice;
          const Variable position("position", 0, 6);
          Tensor x = own_copy(in[0]);
          x.index_put_({Slice(), position.bind(3)}, in[1]);
          return cat({x, x.index({Slice(), position.bind(2)}).reshape({kIndexAxis, 1})}, 1);
        },
        [](const std::vector<HostTensor>& in) {
          HostTensor result(in[0].dtype, {kIndexAxis, 8});
          for (int64_t row = 0; row < kIndexAxis; ++row) {
            for (int64_t column = 0; column < 7; ++column)
              result.data[static_cast<size_t>(row * 8 + column)] =
                  column == 3 ? in[1].data[static_cast<size_t>(row)]
                              : in[0].data[static_cast<size_t>(row * 7 + column)];
            result.data[static_cast<size_t>(row * 8 + 7)] =
                in[0].data[static_cast<size_t>(row * 7 + 2)];
          }
          return Expected(result);
        },
        "x.index_put_({Slice(), pos.bind(3)}, b); cat({x, x[:, pos.bind(2)]}, 1)",
        exact_tolerance(true), "variable"));
  }
}

}  // namespace kiln::conformance::detail

// Movement cases: every movement op of the Tensor API on every dtype, and the layout sweep: the
// same ops reading inputs that arrive permuted, expanded, padded, shrunk, flipped or through
// chains of those (including a chain that needs a second View).

#include <kiln/shape_ops.h>

#include <cmath>

#include "tools/conformance/battery.h"

namespace kiln::conformance::detail {
namespace {

using Pairs = std::vector<std::pair<int64_t, int64_t>>;

struct MovementSpec {
  const char* name;
  Shape shape;  // the input's
  Tensor (*build)(const Tensor&);
  HostTensor (*reference)(const HostTensor&);
  const char* code;
};

const MovementSpec kMovement[] = {
    {"reshape",
     {3, 4, 5},
     [](const Tensor& a) {
       return a.reshape({4, 15});
     },
     [](const HostTensor& a) {
       return ref::reshape(a, {4, 15});
     },
     "a.reshape({4, 15})"},
    {"reshape(-1)",
     {3, 4, 5},
     [](const Tensor& a) {
       return a.reshape({-1, 5});
     },
     [](const HostTensor& a) {
       return ref::reshape(a, {12, 5});
     },
     "a.reshape({-1, 5})"},
    {"permute",
     {3, 4, 5},
     [](const Tensor& a) {
       return a.permute({2, 0, 1});
     },
     [](const HostTensor& a) {
       return ref::permute(a, {2, 0, 1});
     },
     "a.permute({2, 0, 1})"},
    {"transpose",
     {3, 4, 5},
     [](const Tensor& a) { return a.transpose(0, 2); },
     [](const HostTensor& a) {
       return ref::permute(a, {2, 1, 0});
     },
     "a.transpose(0, 2)"},
    {"transpose()",
     {7, 13},
     [](const Tensor& a) { return a.transpose(); },
     [](const HostTensor& a) {
       return ref::permute(a, {1, 0});
     },
     "a.transpose()"},
    {"expand",
     {3, 1, 5},
     [](const Tensor& a) {
       return a.expand({2, 3, 4, 5});
     },
     [](const HostTensor& a) {
       return ref::broadcast_to(a, {2, 3, 4, 5});
     },
     "a.expand({2, 3, 4, 5})"},
    {"expand(-1)",
     {3, 1, 5},
     [](const Tensor& a) {
       return a.expand({-1, 4, -1});
     },
     [](const HostTensor& a) {
       return ref::broadcast_to(a, {3, 4, 5});
     },
     "a.expand({-1, 4, -1})"},
    {"pad",
     {3, 4, 5},
     [](const Tensor& a) {
       return a.pad({{1, 2}, {0, 1}, {2, 0}});
     },
     [](const HostTensor& a) {
       return ref::pad(a, {{1, 2}, {0, 1}, {2, 0}}, 0);
     },
     "a.pad({{1, 2}, {0, 1}, {2, 0}})"},
    {"pad(3)",
     {3, 4, 5},
     [](const Tensor& a) {
       return a.pad({{0, 1}, {3, 0}, {1, 1}}, 3);
     },
     [](const HostTensor& a) {
       return ref::pad(a, {{0, 1}, {3, 0}, {1, 1}}, 3);
     },
     "a.pad({{0, 1}, {3, 0}, {1, 1}}, 3)"},
    {"shrink",
     {3, 4, 5},
     [](const Tensor& a) {
       return a.shrink({{1, 3}, {0, 4}, {2, 5}});
     },
     [](const HostTensor& a) {
       return ref::shrink(a, {{1, 3}, {0, 4}, {2, 5}});
     },
     "a.shrink({{1, 3}, {0, 4}, {2, 5}})"},
    {"shrink(empty)",
     {3, 4, 5},
     [](const Tensor& a) {
       return a.shrink({{1, 1}, {0, 4}, {2, 5}});
     },
     [](const HostTensor& a) {
       return ref::shrink(a, {{1, 1}, {0, 4}, {2, 5}});
     },
     "a.shrink({{1, 1}, {0, 4}, {2, 5}})"},
    {"flip",
     {3, 4, 5},
     [](const Tensor& a) {
       return a.flip({0, 2});
     },
     [](const HostTensor& a) {
       return ref::flip(a, {0, 2});
     },
     "a.flip({0, 2})"},
    {"squeeze",
     {3, 1, 5},
     [](const Tensor& a) { return a.squeeze(); },
     [](const HostTensor& a) {
       return ref::reshape(a, {3, 5});
     },
     "a.squeeze()"},
    {"squeeze(1)",
     {3, 1, 5},
     [](const Tensor& a) { return a.squeeze(1); },
     [](const HostTensor& a) {
       return ref::reshape(a, {3, 5});
     },
     "a.squeeze(1)"},
    {"unsqueeze",
     {3, 4, 5},
     [](const Tensor& a) { return a.unsqueeze(-1); },
     [](const HostTensor& a) {
       return ref::reshape(a, {3, 4, 5, 1});
     },
     "a.unsqueeze(-1)"},
    {"flatten",
     {3, 4, 5},
     [](const Tensor& a) { return a.flatten(1, 2); },
     [](const HostTensor& a) {
       return ref::reshape(a, {3, 20});
     },
     "a.flatten(1, 2)"},
    {"flatten()",
     {3, 4, 5},
     [](const Tensor& a) { return a.flatten(); },
     [](const HostTensor& a) { return ref::reshape(a, {60}); },
     "a.flatten()"},
    {"contiguous",
     {3, 4, 5},
     [](const Tensor& a) { return a.contiguous(); },
     [](const HostTensor& a) { return a; },
     "a.contiguous()"},
    {"permute+pad+flip",
     {3, 4, 5},
     [](const Tensor& a) {
       return a.permute({1, 2, 0}).pad({{1, 0}, {0, 2}, {1, 1}}).flip({1});
     },
     [](const HostTensor& a) {
       return ref::flip(ref::pad(ref::permute(a, {1, 2, 0}), {{1, 0}, {0, 2}, {1, 1}}, 0), {1});
     },
     "a.permute({1, 2, 0}).pad({{1, 0}, {0, 2}, {1, 1}}).flip({1})"},
    {"shrink+expand+reshape",
     {3, 1, 5},
     [](const Tensor& a) {
       return a.shrink({{1, 3}, {0, 1}, {0, 4}}).expand({2, 6, 4}).reshape({12, 4});
     },
     [](const HostTensor& a) {
       return ref::reshape(ref::broadcast_to(ref::shrink(a, {{1, 3}, {0, 1}, {0, 4}}), {2, 6, 4}),
                           {12, 4});
     },
     "a.shrink({{1, 3}, {0, 1}, {0, 4}}).expand({2, 6, 4}).reshape({12, 4})"},
    // Shape helpers (kiln/shape_ops.h).
    {"split",
     {3, 7, 5},
     [](const Tensor& a) {
       return split(a, {2, 4, 1}, 1)[1];
     },
     [](const HostTensor& a) {
       return ref::shrink(a, {{0, 3}, {2, 6}, {0, 5}});
     },
     "split(a, {2, 4, 1}, 1)[1]"},
    {"split(size)",
     {3, 7, 5},
     [](const Tensor& a) { return split(a, 3, -2)[2]; },
     [](const HostTensor& a) {
       return ref::shrink(a, {{0, 3}, {6, 7}, {0, 5}});
     },
     "split(a, 3, -2)[2]"},
    {"chunk",
     {3, 7, 5},
     [](const Tensor& a) { return chunk(a, 3, 1)[1]; },
     [](const HostTensor& a) {
       return ref::shrink(a, {{0, 3}, {3, 6}, {0, 5}});
     },
     "chunk(a, 3, 1)[1]"},
    {"unflatten",
     {3, 12, 5},
     [](const Tensor& a) {
       return unflatten(a, 1, {2, -1, 3});
     },
     [](const HostTensor& a) {
       return ref::reshape(a, {3, 2, 2, 3, 5});
     },
     "unflatten(a, 1, {2, -1, 3})"},
    {"repeat",
     {3, 1, 5},
     [](const Tensor& a) {
       return repeat(a, {2, 1, 3, 2});
     },
     [](const HostTensor& a) {
       return ref::repeat(a, {2, 1, 3, 2});
     },
     "repeat(a, {2, 1, 3, 2})"},
    {"repeat_interleave",
     {3, 4, 5},
     [](const Tensor& a) { return repeat_interleave(a, 3, 1); },
     [](const HostTensor& a) { return ref::repeat_interleave(a, 3, 1); },
     "repeat_interleave(a, 3, 1)"},
    {"roll",
     {3, 4, 5},
     [](const Tensor& a) {
       return roll(a, {-7, 2}, {2, 0});
     },
     [](const HostTensor& a) {
       return ref::roll(a, {-7, 2}, {2, 0});
     },
     "roll(a, {-7, 2}, {2, 0})"},
    {"tril",
     {3, 4, 5},
     [](const Tensor& a) { return tril(a, -1); },
     [](const HostTensor& a) { return ref::triangle(a, -1, true); },
     "tril(a, -1)"},
    {"triu",
     {3, 4, 5},
     [](const Tensor& a) { return triu(a, 2); },
     [](const HostTensor& a) { return ref::triangle(a, 2, false); },
     "triu(a, 2)"},
    {"tril+permuted",
     {3, 4, 5},
     [](const Tensor& a) {
       return tril(a.permute({2, 0, 1}));
     },
     [](const HostTensor& a) {
       return ref::triangle(ref::permute(a, {2, 0, 1}), 0, true);
     },
     "tril(a.permute({2, 0, 1}))"},
    {"diagonal",
     {3, 4, 5},
     [](const Tensor& a) { return diagonal(a, 1, 2, 0); },
     [](const HostTensor& a) { return ref::diagonal(a, 1, 2, 0); },
     "diagonal(a, 1, 2, 0)"},
    {"diagonal(-2)",
     {3, 4, 5},
     [](const Tensor& a) { return diagonal(a, -2, -1, 1); },
     [](const HostTensor& a) { return ref::diagonal(a, -2, -1, 1); },
     "diagonal(a, -2, -1, 1)"},
    {"diag(vector)",
     {7},
     [](const Tensor& a) { return diag(a, -2); },
     [](const HostTensor& a) { return ref::diag_matrix(a, -2); },
     "diag(a, -2)"},
    {"diag(matrix)",
     {6, 4},
     [](const Tensor& a) { return diag(a, 1); },
     [](const HostTensor& a) { return ref::diagonal(a, 1, 0, 1); },
     "diag(a, 1)"},
};

void add_movement_ops(BatteryBuilder& builder) {
  for (const MovementSpec& spec : kMovement) {
    for (DType dtype : kAllDtypes) {
      const MovementSpec copy = spec;
      builder.add(make_case(
          "movement", spec.name, {input(dtype, spec.shape)},
          [copy](const std::vector<Tensor>& in) { return copy.build(in[0]); },
          [copy](const std::vector<HostTensor>& in) { return Expected(copy.reference(in[0])); },
          spec.code, exact_tolerance(true)));
    }
  }
  // Padding with NaN and -inf (the fill of max pooling) on the float dtypes.
  for (DType dtype : kFloatDtypes) {
    for (double value : {static_cast<double>(NAN), -static_cast<double>(INFINITY)}) {
      const bool nan = std::isnan(value);
      builder.add(make_case(
          "movement", nan ? "pad(nan)" : "pad(-inf)", {input(dtype, {3, 4, 5})},
          [value](const std::vector<Tensor>& in) {
            return in[0].pad({{1, 0}, {0, 2}, {1, 1}}, value);
          },
          [value](const std::vector<HostTensor>& in) {
            return Expected(ref::pad(in[0], {{1, 0}, {0, 2}, {1, 1}}, value));
          },
          nan ? "a.pad({{1, 0}, {0, 2}, {1, 1}}, NAN)"
              : "a.pad({{1, 0}, {0, 2}, {1, 1}}, -INFINITY)",
          exact_tolerance(true)));
    }
  }
  for (DType dtype : kAllDtypes) {
    builder.add(make_case(
        "movement", "cat",
        {input(dtype, {3, 4, 5}), input(dtype, {3, 2, 5}, Values::General, 1),
         input(dtype, {3, 1, 5})},
        [](const std::vector<Tensor>& in) {
          return cat({in[0], in[1], in[2]}, 1);
        },
        [](const std::vector<HostTensor>& in) {
          return Expected(ref::cat({in[0], in[1], in[2]}, 1));
        },
        "cat({a, b, c}, 1)", exact_tolerance(true)));
    builder.add(make_case(
        "movement", "stack", {input(dtype, {3, 5}), input(dtype, {3, 5}, Values::General, 1)},
        [](const std::vector<Tensor>& in) {
          return stack({in[0], in[1]}, 1);
        },
        [](const std::vector<HostTensor>& in) {
          return Expected(ref::stack({in[0], in[1]}, 1));
        },
        "stack({a, b}, 1)", exact_tolerance(true)));
  }
  // cat promotes its operands' dtypes.
  for (DType other : {dtypes::float16, dtypes::int64, dtypes::bool_, dtypes::uint8}) {
    builder.add(make_case(
        "movement", std::string("cat:") + other.name(),
        {input(dtypes::int32, {2, 5}), input(other, {3, 5}, Values::General, 1)},
        [](const std::vector<Tensor>& in) {
          return cat({in[0], in[1]}, 0);
        },
        [](const std::vector<HostTensor>& in) {
          return Expected(ref::cat({in[0], in[1]}, 0));
        },
        "cat({a, b}, 0)", exact_tolerance(true)));
  }
}

// Ops that read their inputs through each layout.
void add_layout_sweep(BatteryBuilder& builder) {
  for (const std::string& layout : layout_names()) {
    for (const Shape& shape : {Shape{7, 13}, Shape{3, 4, 5}}) {
      if (!make_layout(layout, shape)) continue;
      const bool main_shape = shape.size() == 2;
      // Index math does not depend on the dtype, loads and stores do: one dtype per representation.
      for (DType dtype :
           {dtypes::bool_, dtypes::int8, dtypes::int16, dtypes::int32, dtypes::int64, dtypes::uint8,
            dtypes::float16, dtypes::bfloat16, dtypes::float32, dtypes::float64}) {
        if (!main_shape && dtype != dtypes::float32 && dtype != dtypes::int8) continue;
        builder.add(make_case(
            "layout", "copy", {input(dtype, shape, Values::General, 0, layout)},
            [](const std::vector<Tensor>& in) { return in[0].contiguous(); },
            [](const std::vector<HostTensor>& in) { return Expected(in[0]); }, "a.contiguous()",
            exact_tolerance(true)));
      }
      if (!main_shape) continue;
      for (DType dtype : {dtypes::float32, dtypes::int32, dtypes::float16}) {
        builder.add(make_case(
            "layout", "add",
            {input(dtype, shape, Values::General, 0, layout),
             input(dtype, shape, Values::General, 1, layout)},
            [](const std::vector<Tensor>& in) { return in[0] + in[1]; },
            [](const std::vector<HostTensor>& in) {
              return ref::binary(ref::Binary::Add, in[0], in[1]);
            },
            "a + b", exact_tolerance(false)));
        builder.add(make_case(
            "layout", "add_contiguous",
            {input(dtype, shape, Values::General, 0, layout),
             input(dtype, shape, Values::General, 1)},
            [](const std::vector<Tensor>& in) { return in[0] + in[1]; },
            [](const std::vector<HostTensor>& in) {
              return ref::binary(ref::Binary::Add, in[0], in[1]);
            },
            "a + b", exact_tolerance(false)));
        const Values sum_values = dtype.is_float() ? Values::Small : Values::General;
        builder.add(make_case(
            "layout", "sum", {input(dtype, shape, sum_values, 0, layout)},
            [](const std::vector<Tensor>& in) { return in[0].sum({1}); },
            [](const std::vector<HostTensor>& in) {
              return ref::reduce(ref::Reduce::Sum, in[0], {1}, false);
            },
            "a.sum({1})", tolerance_for(dtype, 2, 4 + 2 * std::sqrt(13.0), 0, true), "axes=1"));
        builder.add(make_case(
            "layout", "max", {input(dtype, shape, Values::General, 0, layout)},
            [](const std::vector<Tensor>& in) { return in[0].max({0}); },
            [](const std::vector<HostTensor>& in) {
              return ref::reduce(ref::Reduce::Max, in[0], {0}, false);
            },
            "a.max({0})", exact_tolerance(false), "axes=0"));
      }
      builder.add(make_case(
          "layout", "exp", {input(dtypes::float32, shape, Values::General, 0, layout)},
          [](const std::vector<Tensor>& in) { return in[0].exp(); },
          [](const std::vector<HostTensor>& in) { return ref::unary(ref::Unary::Exp, in[0]); },
          "a.exp()", tolerance_for(dtypes::float32, 3)));
      builder.add(make_case(
          "layout", "cast", {input(dtypes::float32, shape, Values::General, 0, layout)},
          [](const std::vector<Tensor>& in) { return in[0].cast(dtypes::int16); },
          [](const std::vector<HostTensor>& in) { return Expected(cast(in[0], dtypes::int16)); },
          "a.cast(dtypes::int16)", exact_tolerance(false)));
    }
  }
}

}  // namespace

void add_movement_cases(BatteryBuilder& builder) {
  add_movement_ops(builder);
  add_layout_sweep(builder);
}

}  // namespace kiln::conformance::detail

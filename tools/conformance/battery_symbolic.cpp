// The symbolic tier: ops whose inputs' leading size is a variable (include/kiln/variable.h), each
// run at several bound sizes (see Case::bound_sizes). A case passes when every size matches the
// reference and no size after the first builds a kernel: one compile serves every value.

#include <cmath>

#include "tools/conformance/battery.h"

namespace kiln::conformance::detail {
namespace {

using ref::Binary;
using ref::Reduce;
using ref::Softmax;
using ref::Unary;

constexpr int64_t kRows = 9;  // the nominal leading size: the case's name and its first run
constexpr int64_t kWidth = 13;
const std::vector<int64_t> kSizes = {kRows, 1, 40, 17};
const std::vector<int64_t> kSizesWithZero = {kRows, 0, 3, 40};
const char* const kBinds[] = {"reshape", "prefix"};

struct SymbolicOp {
  std::string name;
  std::vector<InputSpec> inputs;
  KilnFn build;
  HostFn reference;
  std::string code;
  Tolerance tolerance;
  bool empty_ok = false;  // also run with no rows
};

// Sums of up to 40 terms (any ordering): the bound the battery's reduce family uses.
Tolerance sum_tolerance(DType out) {
  return tolerance_for(out, 2, 4 + 2 * std::sqrt(40.0), 0, true);
}

std::vector<SymbolicOp> symbolic_ops() {
  const DType f32 = dtypes::float32, i32 = dtypes::int32;
  const Shape rows{kRows, kWidth};
  std::vector<SymbolicOp> ops;
  auto add = [&](SymbolicOp op) { ops.push_back(std::move(op)); };
  // Elementwise, with and without a broadcast operand.
  add({"exp",
       {input(f32, rows, Values::Small)},
       [](const std::vector<Tensor>& in) { return in[0].exp(); },
       [](const std::vector<HostTensor>& in) { return ref::unary(Unary::Exp, in[0]); },
       "a.exp()",
       tolerance_for(f32, 3),
       true});
  add({"neg",
       {input(i32, rows)},
       [](const std::vector<Tensor>& in) { return -in[0]; },
       [](const std::vector<HostTensor>& in) { return ref::unary(Unary::Neg, in[0]); },
       "-a",
       exact_tolerance(),
       true});
  for (DType dtype : {f32, i32}) {
    add({"add_row",
         {input(dtype, rows), input(dtype, {kWidth}, Values::General, 1)},
         [](const std::vector<Tensor>& in) { return in[0] + in[1]; },
         [](const std::vector<HostTensor>& in) { return ref::binary(Binary::Add, in[0], in[1]); },
         "a + b",
         exact_tolerance(true),
         true});
    add({"mul",
         {input(dtype, rows), input(dtype, rows, Values::General, 1)},
         [](const std::vector<Tensor>& in) { return in[0] * in[1]; },
         [](const std::vector<HostTensor>& in) { return ref::binary(Binary::Mul, in[0], in[1]); },
         "a * b",
         exact_tolerance(true),
         true});
  }
  add({"where",
       {input(f32, rows), input(f32, rows, Values::General, 1)},
       [](const std::vector<Tensor>& in) { return where(in[0] > 0.0, in[0], in[1]); },
       [](const std::vector<HostTensor>& in) {
         HostTensor positive = ref::binary_scalar(Binary::Gt, in[0], 0.0, false).values;
         return ref::where(positive, in[0], in[1]);
       },
       "where(a > 0, a, b)",
       exact_tolerance(true),
       true});
  add({"cast",
       {input(f32, rows)},
       [](const std::vector<Tensor>& in) { return in[0].cast(dtypes::float16); },
       [](const std::vector<HostTensor>& in) { return Expected(cast(in[0], dtypes::float16)); },
       "a.cast(dtypes::float16)",
       exact_tolerance(true),
       true});
  // Reductions over the other axis, over the variable's axis, and over everything.
  for (DType dtype : {f32, i32}) {
    const DType sum_out = dtype.is_float() ? dtype : dtypes::int64;
    const Values values = dtype.is_float() ? Values::Small : Values::General;
    add({"sum(1)",
         {input(dtype, rows, values)},
         [](const std::vector<Tensor>& in) { return in[0].sum({1}); },
         [](const std::vector<HostTensor>& in) {
           return ref::reduce(Reduce::Sum, in[0], {1}, false);
         },
         "a.sum({1})",
         sum_tolerance(sum_out),
         true});
    add({"sum(0)",
         {input(dtype, rows, values)},
         [](const std::vector<Tensor>& in) { return in[0].sum({0}); },
         [](const std::vector<HostTensor>& in) {
           return ref::reduce(Reduce::Sum, in[0], {0}, false);
         },
         "a.sum({0})",
         sum_tolerance(sum_out),
         true});
    add({"sum",
         {input(dtype, rows, values)},
         [](const std::vector<Tensor>& in) { return in[0].sum(); },
         [](const std::vector<HostTensor>& in) {
           return ref::reduce(Reduce::Sum, in[0], {}, false);
         },
         "a.sum()",
         sum_tolerance(sum_out),
         true});
  }
  add({"max(1)",
       {input(f32, rows)},
       [](const std::vector<Tensor>& in) { return in[0].max({1}); },
       [](const std::vector<HostTensor>& in) {
         return ref::reduce(Reduce::Max, in[0], {1}, false);
       },
       "a.max({1})",
       exact_tolerance(),
       true});
  add({"max(0)",
       {input(f32, rows)},
       [](const std::vector<Tensor>& in) { return in[0].max({0}); },
       [](const std::vector<HostTensor>& in) {
         return ref::reduce(Reduce::Max, in[0], {0}, false);
       },
       "a.max({0})",
       exact_tolerance()});
  add({"min(0)",
       {input(i32, rows)},
       [](const std::vector<Tensor>& in) { return in[0].min({0}); },
       [](const std::vector<HostTensor>& in) {
         return ref::reduce(Reduce::Min, in[0], {0}, false);
       },
       "a.min({0})",
       exact_tolerance()});
  add({"mean(1)",
       {input(f32, rows, Values::Small)},
       [](const std::vector<Tensor>& in) { return in[0].mean({1}); },
       [](const std::vector<HostTensor>& in) {
         return ref::reduce(Reduce::Mean, in[0], {1}, false);
       },
       "a.mean({1})",
       sum_tolerance(f32),
       true});
  // Ops that count or index along the variable's axis: the count and the indices are computed
  // in the kernel, not written into it.
  add({"mean(0)",
       {input(f32, rows, Values::Small)},
       [](const std::vector<Tensor>& in) { return in[0].mean({0}); },
       [](const std::vector<HostTensor>& in) {
         return ref::reduce(Reduce::Mean, in[0], {0}, false);
       },
       "a.mean({0})",
       sum_tolerance(f32)});
  add({"var(0)",
       {input(f32, rows, Values::Small)},
       [](const std::vector<Tensor>& in) { return in[0].var({0}); },
       [](const std::vector<HostTensor>& in) {
         return ref::reduce(Reduce::Var, in[0], {0}, false, 1);
       },
       "a.var({0})",
       tolerance_for(f32, 4, 8 + 4 * std::sqrt(40.0), 1, true)});
  add({"argmax(0)",
       {input(f32, rows)},
       [](const std::vector<Tensor>& in) { return in[0].argmax(0); },
       [](const std::vector<HostTensor>& in) { return ref::arg_extreme(true, in[0], 0, false); },
       "a.argmax(0)",
       exact_tolerance()});
  add({"argmin(0)",
       {input(i32, rows)},
       [](const std::vector<Tensor>& in) { return in[0].argmin(0); },
       [](const std::vector<HostTensor>& in) { return ref::arg_extreme(false, in[0], 0, false); },
       "a.argmin(0)",
       exact_tolerance()});
  add({"cumsum(0)",
       {input(f32, rows, Values::Small)},
       [](const std::vector<Tensor>& in) { return in[0].cumsum(0); },
       [](const std::vector<HostTensor>& in) { return ref::cumsum(in[0], 0); },
       "a.cumsum(0)",
       sum_tolerance(f32),
       true});
  add({"reshape(-1)",
       {input(i32, rows)},
       [](const std::vector<Tensor>& in) { return in[0].reshape({-1}) + 1; },
       [](const std::vector<HostTensor>& in) {
         return ref::binary_scalar(Binary::Add, ref::reshape(in[0], {in[0].numel()}), 1.0, false);
       },
       "a.reshape({-1}) + 1",
       exact_tolerance(),
       true});
  // Softmax along each axis, and a matmul with the variable as an output and as the reduction.
  const Tolerance softmax_tolerance = tolerance_for(f32, 4, 8, 1, true);
  add({"softmax(-1)",
       {input(f32, rows, Values::Small)},
       [](const std::vector<Tensor>& in) { return in[0].softmax(-1); },
       [](const std::vector<HostTensor>& in) { return ref::softmax(Softmax::Softmax, in[0], -1); },
       "a.softmax(-1)",
       softmax_tolerance,
       true});
  add({"softmax(0)",
       {input(f32, rows, Values::Small)},
       [](const std::vector<Tensor>& in) { return in[0].softmax(0); },
       [](const std::vector<HostTensor>& in) { return ref::softmax(Softmax::Softmax, in[0], 0); },
       "a.softmax(0)",
       softmax_tolerance});
  add({"log_softmax(-1)",
       {input(f32, rows, Values::Small)},
       [](const std::vector<Tensor>& in) { return in[0].log_softmax(-1); },
       [](const std::vector<HostTensor>& in) {
         return ref::softmax(Softmax::LogSoftmax, in[0], -1);
       },
       "a.log_softmax(-1)",
       softmax_tolerance,
       true});
  add({"matmul",
       {input(f32, rows, Values::Small), input(f32, {kWidth, 5}, Values::Small, 1)},
       [](const std::vector<Tensor>& in) { return in[0].matmul(in[1]); },
       [](const std::vector<HostTensor>& in) { return ref::matmul(in[0], in[1]); },
       "a.matmul(b)",
       sum_tolerance(f32),
       true});
  add({"gram",
       {input(f32, rows, Values::Small)},
       [](const std::vector<Tensor>& in) { return in[0].transpose(0, 1).matmul(in[0]); },
       [](const std::vector<HostTensor>& in) {
         return ref::matmul(ref::permute(in[0], {1, 0}), in[0]);
       },
       "a.transpose(0, 1).matmul(a)",
       sum_tolerance(f32),
       true});
  // Movement over the variable's axis.
  add({"transpose",
       {input(f32, rows)},
       [](const std::vector<Tensor>& in) { return in[0].transpose(0, 1) * 2.0; },
       [](const std::vector<HostTensor>& in) {
         return ref::binary_scalar(Binary::Mul, ref::permute(in[0], {1, 0}), 2.0, false);
       },
       "a.transpose(0, 1) * 2",
       exact_tolerance(true),
       true});
  add({"flip",
       {input(i32, rows)},
       [](const std::vector<Tensor>& in) {
         return in[0].flip({0, 1});
       },
       [](const std::vector<HostTensor>& in) {
         return Expected(ref::flip(in[0], {0, 1}));
       },
       "a.flip({0, 1})",
       exact_tolerance(),
       true});
  add({"pad",
       {input(f32, rows)},
       [](const std::vector<Tensor>& in) {
         return in[0].pad({{1, 2}, {0, 1}}, -1.5);
       },
       [](const std::vector<HostTensor>& in) {
         return Expected(ref::pad(in[0], {{1, 2}, {0, 1}}, -1.5));
       },
       "a.pad({{1, 2}, {0, 1}}, -1.5)",
       exact_tolerance(true),
       true});
  add({"shrink",
       {input(f32, rows)},
       [](const std::vector<Tensor>& in) {
         return in[0].shrink({{Dim(0), in[0].dims()[0]}, {Dim(2), Dim(9)}});
       },
       [](const std::vector<HostTensor>& in) {
         return Expected(ref::shrink(in[0], {{0, in[0].shape[0]}, {2, 9}}));
       },
       "a.shrink({{0, n}, {2, 9}})",
       exact_tolerance(true),
       true});
  add({"flatten",
       {input(f32, rows)},
       [](const std::vector<Tensor>& in) { return in[0].flatten() + 1.0; },
       [](const std::vector<HostTensor>& in) {
         return ref::binary_scalar(Binary::Add, ref::reshape(in[0], {in[0].numel()}), 1.0, false);
       },
       "a.flatten() + 1",
       exact_tolerance(true),
       true});
  // Sizes computed from the variable: concatenation and padding along its axis, and an arange
  // of its length.
  add({"cat(0)",
       {input(f32, rows), input(f32, {2, kWidth}, Values::General, 1)},
       [](const std::vector<Tensor>& in) {
         return cat({in[0], in[1], in[0]}, 0);
       },
       [](const std::vector<HostTensor>& in) {
         return Expected(ref::cat({in[0], in[1], in[0]}, 0));
       },
       "cat({a, b, a}, 0)",
       exact_tolerance(true),
       true});
  add({"cat(1)",
       {input(i32, rows), input(i32, {kRows, 4}, Values::General, 1)},
       [](const std::vector<Tensor>& in) {
         return cat({in[0], in[1]}, 1);
       },
       [](const std::vector<HostTensor>& in) {
         return Expected(ref::cat({in[0], in[1]}, 1));
       },
       "cat({a, b}, 1)",
       exact_tolerance(),
       true});
  add({"pad(n)",
       {input(f32, rows)},
       [](const std::vector<Tensor>& in) {
         return in[0].pad({{Dim(1), in[0].dims()[0]}, {Dim(0), Dim(2)}}, 0.5);
       },
       [](const std::vector<HostTensor>& in) {
         return Expected(ref::pad(in[0], {{1, in[0].shape[0]}, {0, 2}}, 0.5));
       },
       "a.pad({{1, n}, {0, 2}}, 0.5)",
       exact_tolerance(true),
       true});
  add({"arange",
       {input(i32, rows)},
       [](const std::vector<Tensor>& in) {
         const Dim n = in[0].dims()[0];
         return in[0] + Tensor::arange(n, dtypes::int32, in[0].device()).reshape({n, Dim(1)});
       },
       [](const std::vector<HostTensor>& in) {
         HostTensor rows_index(dtypes::int32, in[0].shape);
         for (int64_t index = 0; index < rows_index.numel(); ++index)
           rows_index.data[static_cast<size_t>(index)] =
               make_scalar(dtypes::int32, static_cast<double>(index / kWidth));
         return ref::binary(Binary::Add, in[0], rows_index);
       },
       "a + Tensor::arange(n, dtypes::int32).reshape({n, 1})",
       exact_tolerance(),
       true});
  add({"cumsum(1)",
       {input(f32, rows, Values::Small)},
       [](const std::vector<Tensor>& in) { return in[0].cumsum(1); },
       [](const std::vector<HostTensor>& in) { return ref::cumsum(in[0], 1); },
       "a.cumsum(1)",
       sum_tolerance(f32),
       true});
  return ops;
}

}  // namespace

void add_symbolic_cases(BatteryBuilder& builder) {
  for (const SymbolicOp& op : symbolic_ops()) {
    for (const char* bind : kBinds) {
      Case item = make_case("symbolic", op.name, op.inputs, op.build, op.reference, op.code,
                            op.tolerance, std::string("bind=") + bind);
      item.bound_sizes = op.empty_ok ? kSizesWithZero : kSizes;
      item.bind = bind;
      builder.add(std::move(item));
    }
  }
}

}  // namespace kiln::conformance::detail

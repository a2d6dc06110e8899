// Elementwise cases: unary ops, binary ops, comparisons, bitwise ops, tensor-scalar ops, where,
// broadcasting, dtype promotion and casts, each over every dtype it accepts.

#include <kiln/activations.h>

#include <cmath>

#include "tools/conformance/battery.h"

namespace kiln::conformance::detail {
namespace {

using ref::Binary;
using ref::Unary;

const Shape kMain = {7, 13};  // odd in both dimensions: no vector width or group size divides it

struct UnarySpec {
  const char* name;
  Unary op;
  const char* family;
  double ulps;          // float32 / float64 bound
  double rel;           // times eps * scale
  double atol_normals;  // times the smallest normal
  bool signed_zero;
  Tensor (*build)(const Tensor&);
  const char* code;
  Values values = Values::General;
};

const UnarySpec kUnary[] = {
    {"neg", Unary::Neg, "unary.exact", 0, 0, 0, true, [](const Tensor& a) { return -a; }, "-a"},
    {"abs", Unary::Abs, "unary.exact", 0, 0, 0, true, [](const Tensor& a) { return a.abs(); },
     "a.abs()"},
    {"sign", Unary::Sign, "unary.exact", 0, 0, 0, false, [](const Tensor& a) { return a.sign(); },
     "a.sign()"},
    {"relu", Unary::Relu, "unary.exact", 0, 0, 0, false, [](const Tensor& a) { return a.relu(); },
     "a.relu()"},
    {"floor", Unary::Floor, "unary.exact", 0, 0, 0, true, [](const Tensor& a) { return a.floor(); },
     "a.floor()"},
    {"ceil", Unary::Ceil, "unary.exact", 0, 0, 0, true, [](const Tensor& a) { return a.ceil(); },
     "a.ceil()"},
    {"round", Unary::Round, "unary.exact", 0, 0, 0, true, [](const Tensor& a) { return a.round(); },
     "a.round()"},
    {"trunc", Unary::Trunc, "unary.exact", 0, 0, 0, true, [](const Tensor& a) { return a.trunc(); },
     "a.trunc()"},
    {"logical_not", Unary::LogicalNot, "unary.exact", 0, 0, 0, false,
     [](const Tensor& a) { return a.logical_not(); }, "a.logical_not()"},
    {"isnan", Unary::IsNan, "unary.exact", 0, 0, 0, false,
     [](const Tensor& a) { return a.isnan(); }, "a.isnan()"},
    {"isinf", Unary::IsInf, "unary.exact", 0, 0, 0, false,
     [](const Tensor& a) { return a.isinf(); }, "a.isinf()"},
    {"isfinite", Unary::IsFinite, "unary.exact", 0, 0, 0, false,
     [](const Tensor& a) { return a.isfinite(); }, "a.isfinite()"},
    {"reciprocal", Unary::Reciprocal, "unary.math", 1, 0, 0, false,
     [](const Tensor& a) { return a.reciprocal(); }, "a.reciprocal()"},
    {"sqrt", Unary::Sqrt, "unary.math", 1, 0, 0, false, [](const Tensor& a) { return a.sqrt(); },
     "a.sqrt()"},
    {"rsqrt", Unary::Rsqrt, "unary.math", 2, 0, 0, false, [](const Tensor& a) { return a.rsqrt(); },
     "a.rsqrt()"},
    {"exp", Unary::Exp, "unary.math", 3, 0, 0, false, [](const Tensor& a) { return a.exp(); },
     "a.exp()"},
    {"exp2", Unary::Exp2, "unary.math", 3, 0, 0, false, [](const Tensor& a) { return a.exp2(); },
     "a.exp2()"},
    {"log", Unary::Log, "unary.math", 3, 0, 0, false, [](const Tensor& a) { return a.log(); },
     "a.log()"},
    {"log2", Unary::Log2, "unary.math", 3, 0, 0, false, [](const Tensor& a) { return a.log2(); },
     "a.log2()"},
    {"sin", Unary::Sin, "unary.math", 4, 0, 0, false, [](const Tensor& a) { return a.sin(); },
     "a.sin()"},
    {"cos", Unary::Cos, "unary.math", 4, 0, 0, false, [](const Tensor& a) { return a.cos(); },
     "a.cos()"},
    {"tan", Unary::Tan, "unary.math", 5, 0, 0, false, [](const Tensor& a) { return a.tan(); },
     "a.tan()"},
    {"tanh", Unary::Tanh, "unary.math", 5, 0, 0, false, [](const Tensor& a) { return a.tanh(); },
     "a.tanh()"},
    {"erf", Unary::Erf, "unary.math", 16, 0, 0, false, [](const Tensor& a) { return a.erf(); },
     "a.erf()"},
    {"asin", Unary::Asin, "unary.math", 4, 0, 0, true, [](const Tensor& a) { return a.asin(); },
     "a.asin()", Values::Unit},
    {"acos", Unary::Acos, "unary.math", 4, 0, 0, false, [](const Tensor& a) { return a.acos(); },
     "a.acos()", Values::Unit},
    {"atan", Unary::Atan, "unary.math", 5, 0, 0, true, [](const Tensor& a) { return a.atan(); },
     "a.atan()"},
    {"sinh", Unary::Sinh, "unary.math", 4, 0, 0, true, [](const Tensor& a) { return a.sinh(); },
     "a.sinh()"},
    {"cosh", Unary::Cosh, "unary.math", 4, 0, 0, false, [](const Tensor& a) { return a.cosh(); },
     "a.cosh()"},
    {"asinh", Unary::Asinh, "unary.math", 4, 0, 0, true, [](const Tensor& a) { return a.asinh(); },
     "a.asinh()"},
    {"acosh", Unary::Acosh, "unary.math", 4, 0, 0, false, [](const Tensor& a) { return a.acosh(); },
     "a.acosh()"},
    {"atanh", Unary::Atanh, "unary.math", 5, 0, 0, true, [](const Tensor& a) { return a.atanh(); },
     "a.atanh()", Values::Unit},
    {"log10", Unary::Log10, "unary.math", 3, 0, 0, false, [](const Tensor& a) { return a.log10(); },
     "a.log10()"},
    {"log1p", Unary::Log1p, "unary.math", 3, 0, 0, true, [](const Tensor& a) { return a.log1p(); },
     "a.log1p()"},
    {"expm1", Unary::Expm1, "unary.math", 3, 0, 0, true, [](const Tensor& a) { return a.expm1(); },
     "a.expm1()"},
    {"square", Unary::Square, "unary.exact", 0, 0, 0, false,
     [](const Tensor& a) { return a.square(); }, "a.square()"},
    {"sigmoid", Unary::Sigmoid, "activation", 4, 0, 1, false,
     [](const Tensor& a) { return a.sigmoid(); }, "a.sigmoid()"},
    {"silu", Unary::Silu, "activation", 5, 0, 1, false, [](const Tensor& a) { return a.silu(); },
     "a.silu()"},
    {"gelu", Unary::Gelu, "activation", 4, 8, 1, false, [](const Tensor& a) { return a.gelu(); },
     "a.gelu()"},
    {"gelu_tanh", Unary::GeluTanh, "activation", 4, 8, 1, false,
     [](const Tensor& a) { return nn::gelu_tanh(a); }, "nn::gelu_tanh(a)"},
    {"leaky_relu", Unary::LeakyRelu, "activation", 2, 0, 1, false,
     [](const Tensor& a) { return nn::leaky_relu(a); }, "nn::leaky_relu(a)"},
    {"elu", Unary::Elu, "activation", 4, 0, 1, false, [](const Tensor& a) { return nn::elu(a); },
     "nn::elu(a)"},
    {"selu", Unary::Selu, "activation", 5, 0, 1, false, [](const Tensor& a) { return nn::selu(a); },
     "nn::selu(a)"},
    {"celu", Unary::Celu, "activation", 4, 0, 1, false,
     [](const Tensor& a) { return nn::celu(a, 2.0); }, "nn::celu(a, 2)"},
    {"softplus", Unary::Softplus, "activation", 4, 0, 1, false,
     [](const Tensor& a) { return nn::softplus(a); }, "nn::softplus(a)"},
    {"softsign", Unary::Softsign, "activation", 2, 0, 1, false,
     [](const Tensor& a) { return nn::softsign(a); }, "nn::softsign(a)"},
    {"mish", Unary::Mish, "activation", 8, 0, 1, false, [](const Tensor& a) { return nn::mish(a); },
     "nn::mish(a)"},
    {"hardswish", Unary::Hardswish, "activation", 3, 0, 1, false,
     [](const Tensor& a) { return nn::hardswish(a); }, "nn::hardswish(a)"},
    {"hardsigmoid", Unary::Hardsigmoid, "activation", 2, 0, 1, false,
     [](const Tensor& a) { return nn::hardsigmoid(a); }, "nn::hardsigmoid(a)"},
    {"hardtanh", Unary::Hardtanh, "activation", 0, 0, 0, false,
     [](const Tensor& a) { return nn::hardtanh(a); }, "nn::hardtanh(a)"},
    {"relu6", Unary::Relu6, "activation", 0, 0, 0, false,
     [](const Tensor& a) { return nn::relu6(a); }, "nn::relu6(a)"},
    {"logsigmoid", Unary::LogSigmoid, "activation", 4, 0, 1, false,
     [](const Tensor& a) { return nn::logsigmoid(a); }, "nn::logsigmoid(a)"},
};

struct BinarySpec {
  const char* name;
  Binary op;
  const char* family;
  double ulps;
  Values right;
  Tensor (*build)(const Tensor&, const Tensor&);
  const char* code;
};

const BinarySpec kBinary[] = {
    {"add", Binary::Add, "binary", 0, Values::General,
     [](const Tensor& a, const Tensor& b) { return a + b; }, "a + b"},
    {"sub", Binary::Sub, "binary", 0, Values::General,
     [](const Tensor& a, const Tensor& b) { return a - b; }, "a - b"},
    {"mul", Binary::Mul, "binary", 0, Values::General,
     [](const Tensor& a, const Tensor& b) { return a * b; }, "a * b"},
    {"div", Binary::Div, "binary", 1, Values::Divisor,
     [](const Tensor& a, const Tensor& b) { return a / b; }, "a / b"},
    {"mod", Binary::Mod, "binary", 0, Values::Divisor,
     [](const Tensor& a, const Tensor& b) { return a % b; }, "a % b"},
    {"maximum", Binary::Max, "binary", 0, Values::General,
     [](const Tensor& a, const Tensor& b) { return maximum(a, b); }, "maximum(a, b)"},
    {"minimum", Binary::Min, "binary", 0, Values::General,
     [](const Tensor& a, const Tensor& b) { return minimum(a, b); }, "minimum(a, b)"},
    {"pow", Binary::Pow, "pow", 16, Values::General,
     [](const Tensor& a, const Tensor& b) { return pow(a, b); }, "pow(a, b)"},
    {"pow_small", Binary::Pow, "pow", 16, Values::Exponent,
     [](const Tensor& a, const Tensor& b) { return a.pow(b); }, "a.pow(b)"},
    {"lt", Binary::Lt, "compare", 0, Values::General,
     [](const Tensor& a, const Tensor& b) { return a < b; }, "a < b"},
    {"le", Binary::Le, "compare", 0, Values::General,
     [](const Tensor& a, const Tensor& b) { return a <= b; }, "a <= b"},
    {"gt", Binary::Gt, "compare", 0, Values::General,
     [](const Tensor& a, const Tensor& b) { return a > b; }, "a > b"},
    {"ge", Binary::Ge, "compare", 0, Values::General,
     [](const Tensor& a, const Tensor& b) { return a >= b; }, "a >= b"},
    {"eq", Binary::Eq, "compare", 0, Values::General,
     [](const Tensor& a, const Tensor& b) { return a == b; }, "a == b"},
    {"ne", Binary::Ne, "compare", 0, Values::General,
     [](const Tensor& a, const Tensor& b) { return a != b; }, "a != b"},
    {"and", Binary::And, "bitwise", 0, Values::General,
     [](const Tensor& a, const Tensor& b) { return a & b; }, "a & b"},
    {"or", Binary::Or, "bitwise", 0, Values::General,
     [](const Tensor& a, const Tensor& b) { return a | b; }, "a | b"},
    {"xor", Binary::Xor, "bitwise", 0, Values::General,
     [](const Tensor& a, const Tensor& b) { return a ^ b; }, "a ^ b"},
    {"shift_left", Binary::ShiftLeft, "bitwise", 0, Values::SmallInt,
     [](const Tensor& a, const Tensor& b) { return a << b; }, "a << b"},
    {"shift_right", Binary::ShiftRight, "bitwise", 0, Values::SmallInt,
     [](const Tensor& a, const Tensor& b) { return a >> b; }, "a >> b"},
    {"atan2", Binary::Atan2, "binary.math", 6, Values::General,
     [](const Tensor& a, const Tensor& b) { return atan2(a, b); }, "atan2(a, b)"},
    {"hypot", Binary::Hypot, "binary.math", 4, Values::General,
     [](const Tensor& a, const Tensor& b) { return hypot(a, b); }, "hypot(a, b)"},
    {"copysign", Binary::Copysign, "binary.math", 0, Values::General,
     [](const Tensor& a, const Tensor& b) { return copysign(a, b); }, "copysign(a, b)"},
    {"floor_divide", Binary::FloorDivide, "binary.math", 1, Values::Divisor,
     [](const Tensor& a, const Tensor& b) { return floor_divide(a, b); }, "floor_divide(a, b)"},
    {"remainder", Binary::Remainder, "binary.math", 0, Values::Divisor,
     [](const Tensor& a, const Tensor& b) { return remainder(a, b); }, "remainder(a, b)"},
};

struct ScalarSpec {
  const char* name;
  Binary op;
  double scalar;
  bool scalar_first;
  double ulps;
  Tensor (*build)(const Tensor&);
  const char* code;
  bool all_dtypes;
};

const ScalarSpec kScalar[] = {
    {"add_scalar", Binary::Add, 3, false, 0, [](const Tensor& a) { return a + 3.0; }, "a + 3",
     true},
    {"radd_scalar", Binary::Add, 3, true, 0, [](const Tensor& a) { return 3.0 + a; }, "3 + a",
     false},
    {"sub_scalar", Binary::Sub, 3, false, 0, [](const Tensor& a) { return a - 3.0; }, "a - 3",
     true},
    {"rsub_scalar", Binary::Sub, 3, true, 0, [](const Tensor& a) { return 3.0 - a; }, "3 - a",
     true},
    {"mul_scalar", Binary::Mul, -3, false, 0, [](const Tensor& a) { return a * -3.0; }, "a * -3",
     true},
    {"rmul_scalar", Binary::Mul, 2, true, 0, [](const Tensor& a) { return 2.0 * a; }, "2 * a",
     false},
    {"div_scalar", Binary::Div, -2, false, 1, [](const Tensor& a) { return a / -2.0; }, "a / -2",
     true},
    {"rdiv_scalar", Binary::Div, 6, true, 1, [](const Tensor& a) { return 6.0 / a; }, "6 / a",
     true},
    {"mod_scalar", Binary::Mod, -3, false, 0, [](const Tensor& a) { return a % -3.0; }, "a % -3",
     true},
    {"mod_scalar_pos", Binary::Mod, 4, false, 0, [](const Tensor& a) { return a % 4.0; }, "a % 4",
     true},
    {"div_fraction", Binary::Div, 2.5, false, 1, [](const Tensor& a) { return a / 2.5; }, "a / 2.5",
     true},
    {"add_fraction", Binary::Add, 0.5, false, 0, [](const Tensor& a) { return a + 0.5; }, "a + 0.5",
     true},
    {"lt_scalar", Binary::Lt, 2, false, 0, [](const Tensor& a) { return a < 2.0; }, "a < 2", true},
    {"le_scalar", Binary::Le, -1, false, 0, [](const Tensor& a) { return a <= -1.0; }, "a <= -1",
     false},
    {"gt_scalar", Binary::Gt, 0, false, 0, [](const Tensor& a) { return a > 0.0; }, "a > 0", false},
    {"ge_scalar", Binary::Ge, 0.5, false, 0, [](const Tensor& a) { return a >= 0.5; }, "a >= 0.5",
     true},
    {"eq_scalar", Binary::Eq, 0, false, 0, [](const Tensor& a) { return a == 0.0; }, "a == 0",
     true},
    {"ne_scalar", Binary::Ne, 1, false, 0, [](const Tensor& a) { return a != 1.0; }, "a != 1",
     false},
    {"pow_2", Binary::Pow, 2, false, 16, [](const Tensor& a) { return a.pow(2.0); }, "a.pow(2)",
     true},
    {"pow_0.5", Binary::Pow, 0.5, false, 16, [](const Tensor& a) { return a.pow(0.5); },
     "a.pow(0.5)", true},
    {"pow_-1", Binary::Pow, -1, false, 16, [](const Tensor& a) { return a.pow(-1.0); }, "a.pow(-1)",
     false},
};

const std::vector<DType> kSomeDtypes = {dtypes::float32, dtypes::float16, dtypes::int32,
                                        dtypes::uint8, dtypes::bool_};

void add_unary(BatteryBuilder& builder) {
  for (const UnarySpec& spec : kUnary) {
    for (DType dtype : kAllDtypes) {
      if (spec.op == Unary::Neg && dtype.is_bool())
        continue;  // kiln rejects -bool: use logical_not
      const DType out = ref::unary_dtype(spec.op, dtype);
      Tolerance tolerance = spec.ulps == 0
                                ? exact_tolerance(spec.signed_zero)
                                : tolerance_for(out, spec.ulps, spec.rel, spec.atol_normals);
      const Unary op = spec.op;
      HostFn reference = [op](const std::vector<HostTensor>& in) { return ref::unary(op, in[0]); };
      if (op == Unary::Silu) {
        // x / (1 + exp(-x)) underflows to 0 once exp(-x) overflows, while x * sigmoid(x) is still
        // a normal number: allow the smallest normal times |x| (see tolerance_notes()).
        tolerance.rtol = min_normal_of(out);
        reference = [](const std::vector<HostTensor>& in) {
          Expected expected = ref::unary(Unary::Silu, in[0]);
          const HostTensor x = cast(in[0], float_for(in[0].dtype));
          for (const Scalar& item : x.data) expected.scale.push_back(std::fabs(item.f));
          return expected;
        };
      }
      if (op == Unary::Gelu || op == Unary::GeluTanh) {
        // x * (erf(x / sqrt 2) + 1) / 2 cancels for negative x: the error scales with |x|.
        reference = [op](const std::vector<HostTensor>& in) {
          Expected expected = ref::unary(op, in[0]);
          const HostTensor x = cast(in[0], float_for(in[0].dtype));
          for (const Scalar& item : x.data) expected.scale.push_back(std::fabs(item.f));
          return expected;
        };
      }
      auto build = spec.build;
      builder.add(make_case(
          spec.family, spec.name, {input(dtype, kMain, spec.values)},
          [build](const std::vector<Tensor>& in) { return build(in[0]); }, reference, spec.code,
          tolerance));
    }
  }
}

void add_binary(BatteryBuilder& builder) {
  for (const BinarySpec& spec : kBinary) {
    for (DType dtype : kAllDtypes) {
      if (spec.op == Binary::Sub && dtype.is_bool()) continue;  // kiln rejects bool - bool: use ^
      const bool bitwise =
          spec.op == Binary::And || spec.op == Binary::Or || spec.op == Binary::Xor;
      if (bitwise && dtype.is_float()) continue;
      const bool shift = spec.op == Binary::ShiftLeft || spec.op == Binary::ShiftRight;
      if (shift && (dtype.is_float() || dtype.is_bool())) continue;  // integers only
      const DType compute = ref::binary_compute_dtype(spec.op, dtype, dtype);
      const DType out = ref::binary_dtype(spec.op, compute);
      // The sign of a zero is copysign's and remainder's result (the divisor's sign).
      const bool signed_zero = spec.op == Binary::Copysign || spec.op == Binary::Remainder;
      const Tolerance tolerance =
          spec.ulps == 0 ? exact_tolerance(signed_zero) : tolerance_for(out, spec.ulps);
      const Binary op = spec.op;
      auto build = spec.build;
      builder.add(make_case(
          spec.family, spec.name, {input(dtype, kMain), input(dtype, kMain, spec.right, 1)},
          [build](const std::vector<Tensor>& in) { return build(in[0], in[1]); },
          [op](const std::vector<HostTensor>& in) { return ref::binary(op, in[0], in[1]); },
          spec.code, tolerance));
    }
  }
}

void add_scalar(BatteryBuilder& builder) {
  for (const ScalarSpec& spec : kScalar) {
    for (DType dtype : spec.all_dtypes ? kAllDtypes : kSomeDtypes) {
      const bool arithmetic = spec.op == Binary::Add || spec.op == Binary::Sub ||
                              spec.op == Binary::Mul || spec.op == Binary::Div ||
                              spec.op == Binary::Mod;
      DType compute = scalar_op_dtype(dtype, spec.scalar, arithmetic);
      if (spec.op == Binary::Pow) compute = pow_dtype_for(compute);
      const DType out = ref::binary_dtype(spec.op, compute);
      const Tolerance tolerance =
          spec.ulps == 0 ? exact_tolerance(false) : tolerance_for(out, spec.ulps);
      const ScalarSpec copy = spec;
      builder.add(make_case(
          "scalar", spec.name, {input(dtype, kMain)},
          [copy](const std::vector<Tensor>& in) { return copy.build(in[0]); },
          [copy](const std::vector<HostTensor>& in) {
            return ref::binary_scalar(copy.op, in[0], copy.scalar, copy.scalar_first);
          },
          spec.code, tolerance));
    }
  }
}

// clamp: whole bounds (an integer tensor keeps its dtype), fractional ones (it becomes float32),
// crossed bounds (everything is `high`) and an open side.
void add_clamp(BatteryBuilder& builder) {
  struct Bounds {
    double low, high;
    const char* name;
  };
  // Past every dtype's range on both sides (open for integers), and a NaN bound.
  const Bounds bounds[] = {{-2, 3, "clamp(-2,3)"},
                           {0.5, 2.5, "clamp(0.5,2.5)"},
                           {3, -2, "clamp(3,-2)"},
                           {-INFINITY, 1, "clamp(-inf,1)"},
                           {-1e300, 1e300, "clamp(-1e300,1e300)"},
                           {NAN, 1, "clamp(nan,1)"}};
  for (const Bounds& bound : bounds) {
    for (DType dtype : kAllDtypes) {
      if (dtype.is_bool()) continue;  // a DTypeError: clamp takes numbers
      // high below an unsigned range has no value to give: a DTypeError.
      if (dtype.is_unsigned() && bound.high < 0) continue;
      const double low = bound.low, high = bound.high;
      char code[64];
      std::snprintf(code, sizeof code, "a.clamp(%g, %g)", low, high);
      builder.add(make_case(
          "scalar", bound.name, {input(dtype, kMain)},
          [low, high](const std::vector<Tensor>& in) { return in[0].clamp(low, high); },
          [low, high](const std::vector<HostTensor>& in) { return ref::clamp(in[0], low, high); },
          code, exact_tolerance(true)));
    }
  }
}

HostTensor constant(DType dtype, double value) {
  HostTensor tensor(dtype, {});
  tensor.data[0] = make_scalar(dtype, value);
  return tensor;
}

// A case whose table column is `dtype` (not its first input's, a bool condition).
Case column(Case item, DType dtype) {
  item.dtype = dtype;
  item.variant.clear();
  return item;
}

void add_where(BatteryBuilder& builder) {
  for (DType dtype : kAllDtypes) {
    builder.add(column(
        make_case(
            "where", "where",
            {input(dtypes::bool_, kMain), input(dtype, kMain),
             input(dtype, kMain, Values::General, 1)},
            [](const std::vector<Tensor>& in) { return where(in[0], in[1], in[2]); },
            [](const std::vector<HostTensor>& in) { return ref::where(in[0], in[1], in[2]); },
            "where(a, b, c)", exact_tolerance(true)),
        dtype));
  }
  // A host scalar keeps the tensor's dtype when it is integral; a non-integral one with an
  // integer or bool tensor gives float32 (include/kiln/dtype.h).
  for (DType dtype : {dtypes::float32, dtypes::float16, dtypes::int32, dtypes::uint8, dtypes::bool_,
                      dtypes::int64}) {
    builder.add(
        column(make_case(
                   "where", "where(c,3,b)", {input(dtypes::bool_, kMain), input(dtype, kMain)},
                   [](const std::vector<Tensor>& in) { return where(in[0], 3.0, in[1]); },
                   [](const std::vector<HostTensor>& in) {
                     const DType dtype = scalar_op_dtype(in[1].dtype, 3.0, false);
                     return ref::where(in[0], constant(dtype, 3.0), cast(in[1], dtype));
                   },
                   "where(a, 3, b)", exact_tolerance(true)),
               dtype));
    builder.add(
        column(make_case(
                   "where", "where(c,a,-1)", {input(dtypes::bool_, kMain), input(dtype, kMain)},
                   [](const std::vector<Tensor>& in) { return where(in[0], in[1], -1.0); },
                   [](const std::vector<HostTensor>& in) {
                     const DType dtype = scalar_op_dtype(in[1].dtype, -1.0, false);
                     return ref::where(in[0], cast(in[1], dtype), constant(dtype, -1.0));
                   },
                   "where(a, b, -1)", exact_tolerance(true)),
               dtype));
    builder.add(
        column(make_case(
                   "where", "where(c,2.5,b)", {input(dtypes::bool_, kMain), input(dtype, kMain)},
                   [](const std::vector<Tensor>& in) { return where(in[0], 2.5, in[1]); },
                   [](const std::vector<HostTensor>& in) {
                     const DType dtype = scalar_op_dtype(in[1].dtype, 2.5, false);
                     return ref::where(in[0], constant(dtype, 2.5), cast(in[1], dtype));
                   },
                   "where(a, 2.5, b)", exact_tolerance(true)),
               dtype));
  }
}

void add_broadcast(BatteryBuilder& builder) {
  struct Pair {
    Shape a, b;
  };
  const Pair pairs[] = {{{7, 1}, {1, 13}}, {{13}, {7, 13}},       {{}, {7, 13}},
                        {{7, 13}, {}},     {{2, 1, 5}, {3, 1}},   {{0, 13}, {1, 13}},
                        {{1}, {1}},        {{5, 1, 1}, {1, 1, 3}}};
  for (DType dtype :
       {dtypes::float32, dtypes::int32, dtypes::float16, dtypes::bool_, dtypes::int8}) {
    for (const Pair& pair : pairs) {
      builder.add(make_case(
          "broadcast", "mul", {input(dtype, pair.a), input(dtype, pair.b, Values::General, 1)},
          [](const std::vector<Tensor>& in) { return in[0] * in[1]; },
          [](const std::vector<HostTensor>& in) { return ref::binary(Binary::Mul, in[0], in[1]); },
          "a * b", exact_tolerance(false), "with_" + shape_text(pair.b)));
    }
    builder.add(column(
        make_case(
            "broadcast", "where",
            {input(dtypes::bool_, {7, 1}), input(dtype, {13}),
             input(dtype, {}, Values::General, 1)},
            [](const std::vector<Tensor>& in) { return where(in[0], in[1], in[2]); },
            [](const std::vector<HostTensor>& in) { return ref::where(in[0], in[1], in[2]); },
            "where(a, b, c)", exact_tolerance(false)),
        dtype));
  }
}

void add_promotion(BatteryBuilder& builder) {
  for (DType left : kAllDtypes) {
    for (DType right : kAllDtypes) {
      if (left == right) continue;
      builder.add(make_case(
          "promotion", std::string("add:") + right.name(),
          {input(left, kMain), input(right, kMain, Values::General, 1)},
          [](const std::vector<Tensor>& in) { return in[0] + in[1]; },
          [](const std::vector<HostTensor>& in) { return ref::binary(Binary::Add, in[0], in[1]); },
          "a + b", exact_tolerance(false)));
    }
  }
}

// Comparisons promote their operands too (and give bool).
void add_compare_promotion(BatteryBuilder& builder) {
  const std::pair<DType, DType> pairs[] = {
      {dtypes::int32, dtypes::float32},   {dtypes::uint8, dtypes::int8},
      {dtypes::int64, dtypes::float16},   {dtypes::uint64, dtypes::int64},
      {dtypes::bool_, dtypes::int8},      {dtypes::uint32, dtypes::int32},
      {dtypes::float16, dtypes::bfloat16}};
  for (const auto& [left, right] : pairs) {
    builder.add(make_case(
        "promotion", std::string("lt:") + right.name(),
        {input(left, kMain), input(right, kMain, Values::General, 1)},
        [](const std::vector<Tensor>& in) { return in[0] < in[1]; },
        [](const std::vector<HostTensor>& in) { return ref::binary(Binary::Lt, in[0], in[1]); },
        "a < b", exact_tolerance(false)));
  }
}

void add_casts(BatteryBuilder& builder) {
  for (DType from : kAllDtypes) {
    for (DType to : kAllDtypes) {
      // Into the 16-bit floats kiln converts through float32: a value may round twice.
      const bool twice =
          to.is_half() && (from == dtypes::float64 || (from.is_int() && from.itemsize() >= 4));
      Tolerance tolerance =
          twice ? tolerance_for(to, 1) : exact_tolerance(to.is_float() && from.is_float());
      builder.add(make_case(
          "cast", std::string("to:") + to.name(), {input(from, kMain)},
          [to](const std::vector<Tensor>& in) { return in[0].cast(to); },
          [to](const std::vector<HostTensor>& in) { return Expected(cast(in[0], to)); },
          std::string("a.cast(dtypes::") + (to.is_bool() ? "bool_" : to.name()) + ")", tolerance));
    }
  }
}

}  // namespace

void add_elementwise_cases(BatteryBuilder& builder) {
  add_unary(builder);
  add_binary(builder);
  add_math_composite_cases(builder);
  add_scalar(builder);
  add_clamp(builder);
  add_where(builder);
  add_broadcast(builder);
  add_promotion(builder);
  add_compare_promotion(builder);
  add_casts(builder);
}

}  // namespace kiln::conformance::detail

// The battery's assembly: shared helpers, creation and transfer cases, the family order and the
// tolerance rules. The op cases live in battery_elementwise.cpp, battery_reduce.cpp,
// battery_movement.cpp and battery_shapes.cpp.

#include "tools/conformance/battery.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "tools/conformance/values.h"

namespace kiln::conformance {

std::string Tolerance::text() const {
  if (ulps == 0 && rtol == 0 && atol == 0) return signed_zero ? "exact (signed zeros)" : "exact";
  char buffer[128];
  std::string text = ulps > 0 ? "<= " + std::to_string(static_cast<int>(ulps)) + " ulp" : "";
  if (rtol > 0 || atol > 0) {
    std::snprintf(buffer, sizeof(buffer), "%s|err| <= %.3g*scale + %.3g",
                  text.empty() ? "" : " or ", rtol, atol);
    text += buffer;
  }
  return text;
}

const char* status_name(Status status) {
  switch (status) {
    case Status::Pass:
      return "pass";
    case Status::Fail:
      return "fail";
    case Status::Unsupported:
      return "unsupported";
    case Status::Error:
      return "error";
  }
  return "?";
}

namespace detail {

const std::vector<DType> kAllDtypes(std::begin(dtypes::all), std::end(dtypes::all));
const std::vector<DType> kFloatDtypes = {dtypes::float16, dtypes::bfloat16, dtypes::float32,
                                         dtypes::float64};
const std::vector<DType> kIntDtypes = {dtypes::bool_,  dtypes::int8,   dtypes::int16,
                                       dtypes::int32,  dtypes::int64,  dtypes::uint8,
                                       dtypes::uint16, dtypes::uint32, dtypes::uint64};

void BatteryBuilder::add(Case item) {
  item.name = item.family + "/" + item.op + "/" + item.dtype.name() + "/" + shape_text(item.shape) +
              "/" + item.layout + (item.variant.empty() ? "" : "/" + item.variant);
  if (!names.insert(item.name).second)
    throw std::logic_error("conformance: duplicate case name " + item.name);
  item.seed = hash_text(item.name);
  cases.push_back(std::move(item));
}

InputSpec input(DType dtype, Shape shape, Values values, int role, std::string layout) {
  InputSpec spec;
  spec.dtype = dtype;
  spec.shape = std::move(shape);
  spec.values = dtype.is_bool() && values != Values::Positive && values != Values::NearOne
                    ? Values::Bool
                    : values;
  spec.role = role;
  spec.layout = std::move(layout);
  return spec;
}

Tolerance exact_tolerance(bool signed_zero) {
  Tolerance tolerance;
  tolerance.signed_zero = signed_zero;
  return tolerance;
}

Tolerance tolerance_for(DType out, double ulps, double rel, double atol_normals, bool half_multi) {
  Tolerance tolerance;
  if (!out.is_float()) return tolerance;
  tolerance.ulps = out.is_half() && ulps > 0 ? (half_multi ? 2 : 1) : ulps;
  tolerance.rtol = rel * epsilon_of(out);
  tolerance.atol = atol_normals * min_normal_of(out);
  return tolerance;
}

Case make_case(const std::string& family, const std::string& op, std::vector<InputSpec> inputs,
               KilnFn build, HostFn reference, std::string code, Tolerance tolerance,
               const std::string& variant) {
  Case item;
  item.family = family;
  item.op = op;
  item.dtype = inputs.at(0).dtype;
  item.shape = inputs[0].shape;
  item.layout = inputs[0].layout;
  item.variant = variant;
  item.inputs = std::move(inputs);
  item.build = std::move(build);
  item.reference = std::move(reference);
  item.code = std::move(code);
  item.tolerance = tolerance;
  return item;
}

Case make_created_case(const std::string& family, const std::string& op, DType dtype, Shape shape,
                       std::function<Tensor(const std::string&)> create, HostFn reference,
                       std::string code, Tolerance tolerance) {
  Case item;
  item.family = family;
  item.op = op;
  item.dtype = dtype;
  item.shape = std::move(shape);
  item.layout = "contiguous";
  item.create = std::move(create);
  item.reference = std::move(reference);
  item.code = std::move(code);
  item.tolerance = tolerance;
  return item;
}

namespace {

Case creation_case(const std::string& op, DType dtype, Shape shape,
                   std::function<Tensor(const std::string&)> create, HostFn reference,
                   std::string code) {
  return make_created_case("creation", op, dtype, std::move(shape), std::move(create),
                           std::move(reference), std::move(code), exact_tolerance(true));
}

HostTensor filled(DType dtype, const Shape& shape, double value) {
  HostTensor tensor(dtype, shape);
  for (Scalar& item : tensor.data) item = make_scalar(dtype, value);
  return tensor;
}

std::string number_text(double value) {
  if (std::isnan(value)) return "NAN";
  char text[64];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

void add_creation_cases(BatteryBuilder& builder) {
  for (DType dtype : kAllDtypes) {
    std::vector<double> values = {3, -1};
    if (dtype.is_float()) values.push_back(NAN);
    if (dtype.is_half()) values.push_back(1e10);       // overflows to inf in 16 bits
    if (dtype == dtypes::int8) values.push_back(300);  // wraps to 44
    for (double value : values) {
      const std::string op = "full(" + number_text(value) + ")";
      builder.add(creation_case(
          op, dtype, {7, 13},
          [=](const std::string& device) {
            return Tensor::full({7, 13}, value, dtype, device);
          },
          [=](const std::vector<HostTensor>&) {
            return Expected(filled(dtype, {7, 13}, value));
          },
          "Tensor::full({7, 13}, " + number_text(value) + ", dtypes::" + dtype.name() + ")"));
    }
    builder.add(creation_case(
        "zeros", dtype, {3, 5},
        [=](const std::string& device) {
          return Tensor::zeros({3, 5}, dtype, device);
        },
        [=](const std::vector<HostTensor>&) {
          return Expected(filled(dtype, {3, 5}, 0));
        },
        std::string("Tensor::zeros({3, 5}, dtypes::") + dtype.name() + ")"));
    builder.add(creation_case(
        "ones", dtype, {3, 5},
        [=](const std::string& device) {
          return Tensor::ones({3, 5}, dtype, device);
        },
        [=](const std::vector<HostTensor>&) {
          return Expected(filled(dtype, {3, 5}, 1));
        },
        std::string("Tensor::ones({3, 5}, dtypes::") + dtype.name() + ")"));
    builder.add(creation_case(
        "eye", dtype, {5, 5},
        [=](const std::string& device) { return Tensor::eye(5, dtype, device); },
        [=](const std::vector<HostTensor>&) {
          HostTensor eye = filled(dtype, {5, 5}, 0);
          for (int i = 0; i < 5; ++i) eye.data[i * 6] = make_scalar(dtype, 1);
          return Expected(eye);
        },
        std::string("Tensor::eye(5, dtypes::") + dtype.name() + ")"));
  }
  struct Range {
    int64_t start, stop, step;
  };
  for (const Range& range :
       {Range{0, 10, 1}, Range{-5, 20, 3}, Range{10, -10, -3}, Range{0, 0, 1}, Range{3, 1000, 7}}) {
    const int64_t count = std::max<int64_t>(
        0, (range.stop - range.start + range.step + (range.step > 0 ? -1 : 1)) / range.step);
    const std::string args = std::to_string(range.start) + ", " + std::to_string(range.stop) +
                             ", " + std::to_string(range.step);
    builder.add(creation_case(
        "arange(" + args + ")", dtypes::int32, {count},
        [=](const std::string& device) {
          return Tensor::arange(range.start, range.stop, range.step, device);
        },
        [=](const std::vector<HostTensor>&) {
          HostTensor values(dtypes::int32, {count});
          for (int64_t i = 0; i < count; ++i) values.data[i].i = range.start + i * range.step;
          return Expected(values);
        },
        "Tensor::arange(" + args + ")"));
  }
  // rand: its properties here; the random family checks its generator's numbers exactly.
  Case rand = creation_case(
      "rand", dtypes::float32, {4099},
      [](const std::string& device) { return Tensor::rand({4099}, 1234, device); }, nullptr,
      "Tensor::rand({4099}, 1234)");
  rand.property = [](const HostTensor& got) -> std::string {
    if (got.dtype != dtypes::float32) return "rand must be float32";
    double sum = 0;
    for (const Scalar& item : got.data) {
      if (!(item.f >= 0 && item.f < 1))
        return "value " + format_value(got.dtype, item) + " outside [0, 1)";
      if (std::ldexp(item.f, 24) != std::floor(std::ldexp(item.f, 24)))
        return "value not a multiple of 2^-24";
      sum += item.f;
    }
    const double mean = sum / static_cast<double>(got.numel());
    if (std::fabs(mean - 0.5) > 0.03) return "mean " + std::to_string(mean) + " is far from 0.5";
    return "";
  };
  builder.add(std::move(rand));
}

void add_transfer_cases(BatteryBuilder& builder) {
  for (DType dtype :
       {dtypes::float32, dtypes::int64, dtypes::float16, dtypes::bool_, dtypes::uint8}) {
    builder.add(make_case(
        "transfer", "to(CPU)", {input(dtype, {7, 13})},
        [](const std::vector<Tensor>& in) { return in[0].to("CPU").to(in[0].device()); },
        [](const std::vector<HostTensor>& in) { return Expected(in[0]); },
        "a.to(\"CPU\").to(device)", exact_tolerance(true)));
  }
}

// The host data API: to_vector<T> (which converts on the device when T is another type) and
// item<T>, each read back into a tensor so the runner can check it like any other result.
using Trip = Tensor (*)(const Tensor&);

template <typename T>
struct VectorTrip {
  static Tensor run(const Tensor& tensor) {
    return Tensor::from_vector<T>(tensor.to_vector<T>(), tensor.shape(), tensor.device());
  }
};

template <typename T>
struct ItemTrip {
  static Tensor run(const Tensor& tensor) {
    return Tensor::from_vector<T>(std::vector<T>{tensor.item<T>()}, {}, tensor.device());
  }
};

// The round trip through host type `dtype`, by `Kind` (VectorTrip or ItemTrip).
template <template <typename> class Kind>
Trip trip_for(DType dtype) {
  switch (dtype.type()) {
    case ScalarType::Bool:
      return &Kind<bool>::run;
    case ScalarType::Int8:
      return &Kind<int8_t>::run;
    case ScalarType::Int16:
      return &Kind<int16_t>::run;
    case ScalarType::Int32:
      return &Kind<int32_t>::run;
    case ScalarType::Int64:
      return &Kind<int64_t>::run;
    case ScalarType::UInt8:
      return &Kind<uint8_t>::run;
    case ScalarType::UInt16:
      return &Kind<uint16_t>::run;
    case ScalarType::UInt32:
      return &Kind<uint32_t>::run;
    case ScalarType::UInt64:
      return &Kind<uint64_t>::run;
    case ScalarType::Float16:
      return &Kind<half>::run;
    case ScalarType::BFloat16:
      return &Kind<bfloat16>::run;
    case ScalarType::Float32:
      return &Kind<float>::run;
    case ScalarType::Float64:
      return &Kind<double>::run;
  }
  return &Kind<float>::run;
}

std::string host_type(DType dtype) {
  if (dtype.is_bool()) return "bool";
  if (dtype == dtypes::float16) return "half";
  if (dtype == dtypes::bfloat16) return "bfloat16";
  if (dtype == dtypes::float32) return "float";
  if (dtype == dtypes::float64) return "double";
  return std::string(dtype.name()) + "_t";
}

void add_host_cases(BatteryBuilder& builder) {
  for (DType dtype : kAllDtypes) {
    std::vector<DType> targets = {dtype};
    for (DType extra : {dtypes::float64, dtypes::int32}) {
      if (extra != dtype) targets.push_back(extra);
    }
    for (DType to : targets) {
      const Trip trip = trip_for<VectorTrip>(to);
      builder.add(make_case(
          "host", "to_vector<" + host_type(to) + ">", {input(dtype, {7, 13})},
          [trip](const std::vector<Tensor>& in) { return trip(in[0]); },
          [to](const std::vector<HostTensor>& in) { return Expected(cast(in[0], to)); },
          "Tensor::from_vector(a.to_vector<" + host_type(to) + ">(), a.shape())",
          exact_tolerance(to.is_float() && dtype.is_float())));
    }
    for (const Shape& shape : {Shape{}, Shape{1}}) {
      const Trip trip = trip_for<ItemTrip>(dtype);
      builder.add(make_case(
          "host", "item<" + host_type(dtype) + ">", {input(dtype, shape)},
          [trip](const std::vector<Tensor>& in) { return trip(in[0]); },
          [](const std::vector<HostTensor>& in) { return Expected(ref::reshape(in[0], {})); },
          "Tensor::from_vector(std::vector{a.item<" + host_type(dtype) + ">()}, {})",
          exact_tolerance(true)));
    }
  }
}

}  // namespace
}  // namespace detail

const std::vector<Case>& battery() {
  static const std::vector<Case> cases = [] {
    detail::BatteryBuilder builder;
    detail::add_elementwise_cases(builder);
    detail::add_reduce_cases(builder);
    detail::add_nn_layer_cases(builder);
    detail::add_nn_loss_cases(builder);
    detail::add_conv_cases(builder);
    detail::add_sort_cases(builder);
    detail::add_random_cases(builder);
    detail::add_einsum_cases(builder);
    detail::add_movement_cases(builder);
    detail::add_index_cases(builder);
    detail::add_scatter_cases(builder);
    detail::add_assign_cases(builder);
    detail::add_shape_cases(builder);
    detail::add_graph_cases_to(builder);
    detail::add_creation_cases(builder);
    detail::add_transfer_cases(builder);
    detail::add_host_cases(builder);
    detail::add_symbolic_cases(builder);
    detail::add_regression_cases(builder);
    detail::add_gradient_cases(builder);
    return builder.cases;
  }();
  return cases;
}

const std::vector<std::string>& families() {
  static const std::vector<std::string> names = {
      "unary.exact", "unary.math", "activation", "binary",    "pow",       "binary.math", "compare",
      "bitwise",     "scalar",     "where",      "broadcast", "promotion", "cast",        "reduce",
      "argreduce",   "softmax",    "cumsum",     "sort",      "random",    "matmul",      "nn",
      "conv",        "movement",   "index",      "scatter",   "assign",    "layout",      "shapes",
      "graph",       "creation",   "transfer",   "host",      "symbolic",  "regression",
      "grad"};
  return names;
}

std::vector<std::string> tolerance_notes() {
  return {
      "integers, bool, comparisons, where, max/min, clamp, any/all, movement, gather, "
      "index_select, scatter, index_put, creation: exact (a scatter's float sums of small "
      "integers too)",
      "float + - * %, neg, abs, floor, ceil, round, trunc, casts: exact (correctly rounded), "
      "signed zeros "
      "checked where IEEE fixes them",
      "float / reciprocal sqrt <= 1 ulp; rsqrt <= 2; exp exp2 log log2 <= 3; sin cos <= 4; tan "
      "tanh <= 5; "
      "erf pow <= 16 (the OpenCL full-profile bounds)",
      "asin acos sinh cosh asinh acosh hypot <= 4 ulp; atan atanh <= 5; log10 log1p expm1 <= 3; "
      "atan2 <= 6; floor_divide <= 1 (its quotient rounds once in the dtype); copysign, "
      "remainder, shifts: exact (the OpenCL full-profile bounds where OpenCL has the function)",
      "activations (or |err| <= smallest normal): leaky_relu softsign hardsigmoid <= 2 ulp; "
      "hardswish <= 3; elu celu softplus logsigmoid <= 4; selu <= 5; mish <= 8; gelu_tanh as "
      "gelu; hardtanh relu6 exact",
      "nn (linear, norms, attention, losses): <= 1 ulp or 64 eps times the sum of the magnitudes "
      "that round (|x w| terms, |w| (|y| + 1) + |b|, |v| over the keys, |loss terms|)",
      "conv (convolution, average and adaptive pooling, interpolation): <= 1 ulp or 64 eps (8 for "
      "the 16-bit floats) times the sum of |terms|; max pooling, its indices and the padding "
      "modes exact",
      "random (against Threefry-2x32-20 run on the host): uniform, randint, randperm, bernoulli "
      "exact; uniform's other bounds <= 2 ulp or 2 eps (|low| + |high - low|); dropout <= 2 ulp; "
      "normal <= 2 ulp or 16 eps (2 |radius| "
      "+ 1); multinomial by its properties",
      "sort (sort, argsort, topk, cummax, cummin): exact; cumprod: 4 n eps |prod|; logcumsumexp: "
      "<= 4 ulp or 8 eps (the terms' spread + log2(n) + 4 + |result|)",
      "float16 / bfloat16 compute in float32 and round once: 1 ulp where float32 allows any error, "
      "2 where "
      "16-bit intermediates are stored (softmax, var, ...)",
      "casts into float16 / bfloat16 from float64 or 32/64-bit integers: <= 1 ulp (kiln converts "
      "through "
      "float32, so a value may round twice)",
      "sigmoid: <= 4 ulp or |err| <= smallest normal; silu: <= 5 ulp or |err| <= smallest normal "
      "(|x| + 1); "
      "gelu: <= 4 ulp or 8 eps |x| + smallest normal",
      "sum, mean, cumsum, matmul: |err| <= (4 + 2 sqrt(n)) eps sum|terms|; prod: 4 n eps |prod|; "
      "var / std: "
      "(4 + 2 sqrt(n)) eps sum(x^2) / (n - correction)",
      "softmax, log_softmax, logsumexp: <= 4 ulp or 8 eps (|x - max| + log2(n) + 4), relative for "
      "softmax",
      "grad (the gradient tier: d sum(op * w) / d each float input, float32 and float64, inputs "
      "drawn where the op is smooth): |err| <= rtol (|g| + 0.01 max |g|) against central "
      "differences of the double-precision reference; rtol 2e-4 for float32, 1e-6 for float64",
      "an element of float output is compared after rounding the double-precision reference into "
      "the "
      "output dtype; NaN matches any NaN",
  };
}

}  // namespace kiln::conformance

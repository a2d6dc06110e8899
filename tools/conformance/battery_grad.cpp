// The gradient tier: for every differentiable case of the other families (float32 and float64,
// contiguous and one other layout), kiln's reverse-mode gradient of sum(op(inputs) * w), for a
// fixed weight w, with respect to each float input, against central differences of the case's
// own double-precision reference. The inputs are drawn away from the points where an op is not
// differentiable (kinks, ties, poles), so the difference quotient is the derivative. Integer
// inputs (indices, targets) are passed through and take no gradient.

#include <kiln/autograd.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "tools/conformance/battery.h"

namespace kiln::conformance::detail {
namespace {

// Families whose outputs are not differentiable in their float inputs (comparisons, casts,
// integers, random draws) or that test something other than an op (host copies, creation,
// regressions of specific bugs, symbolic sizes).
const std::set<std::string> kSkippedFamilies = {
    "compare",  "bitwise", "cast",     "promotion",  "argreduce", "random", "creation",
    "transfer", "host",    "symbolic", "regression", "graph",     "assign"};

// Ops that are piecewise constant (zero gradient almost everywhere, a jump the difference
// quotient straddles), return positions or booleans, or have no gradient rule in kiln yet
// (scatter_reduce's prod, amax and amin: a ValueError says so).
bool skipped_op(const std::string& family, const std::string& op, const std::string& variant) {
  static const std::set<std::string> ops = {
      "floor", "ceil", "round", "trunc", "sign", "isfinite", "isinf", "isnan", "logical_not", "mod",
      "floor_divide", "remainder", "copysign", "argsort", "cummax_positions", "cummin_positions",
      "topk_positions", "all", "any", "argmax", "argmin", "one_hot", "eq_scalar", "ne_scalar",
      "lt_scalar", "le_scalar", "gt_scalar", "ge_scalar", "mod_scalar", "mod_scalar_pos",
      "bitcast:int32", "bitcast:uint32",
      // A NaN bound makes every element NaN: the result depends on no input.
      "clamp(nan,1)"};
  if (ops.count(op) || op.rfind("isclose", 0) == 0 || op.rfind("cast", 0) == 0) return true;
  if (op.find("with_indices") != std::string::npos) return true;
  // A scatter that writes (not adds) several values to one place keeps one of them, but its
  // gradient, as PyTorch's (the output's gradient gathered back), reaches every one: the
  // difference quotient of the kept value alone is another convention. tests/test_autograd.cpp
  // checks scatter's gradient with distinct positions.
  if (family == "scatter" && (op == "scatter" || op == "index_put")) return true;
  for (const char* reduction : {"prod", "amax", "amin"}) {
    if (op == "scatter_reduce" && variant.find(reduction) != std::string::npos) return true;
  }
  return false;
}

// Values where the op is smooth, in the domain the original case meant.
Values smooth_values(const std::string& op, const InputSpec& spec) {
  static const std::set<std::string> positive = {"log",   "log2",  "log10",  "sqrt",
                                                 "rsqrt", "log1p", "pow_0.5"};
  if (op == "acosh") return Values::AboveOne;
  if (op == "tan") return Values::Interior;  // its poles at +-pi/2
  if (op == "reciprocal" || op == "rdiv_scalar") return Values::Positive;
  // Probabilities |x| / 4 away from 1, where float32's 1 - p has lost its digits.
  if (op.rfind("binary_cross_entropy", 0) == 0 && spec.role == 0) return Values::Interior;
  if (spec.values == Values::Unit) return Values::Interior;
  if (positive.count(op)) return Values::Positive;
  // pow's base positive (its gradient in the exponent is log(base)), its exponent small.
  if (op == "pow" || op == "pow_small") return spec.role == 0 ? Values::Positive : Values::Small;
  switch (spec.values) {
    case Values::Divisor:
    case Values::Positive:
    case Values::NearOne:
      return Values::Positive;
    case Values::Bool:
    case Values::Exponent:
      return spec.values;
    default:
      return Values::Small;
  }
}

// The weight of output element j: varied in sign and size so that no gradient is a plain sum.
double weight_of(int64_t index, DType dtype) {
  return round_to(dtype, std::sin(1.3 * static_cast<double>(index) + 0.4) + 0.2);
}

Tensor weights_for(const Tensor& output) {
  const int64_t count = output.numel();
  std::vector<double> values(static_cast<size_t>(count));
  for (int64_t index = 0; index < count; ++index)
    values[static_cast<size_t>(index)] = weight_of(index, output.dtype());
  return Tensor::from_vector(values, output.shape(), output.device()).cast(output.dtype());
}

// `reference64`: the case's own, or for a float32 case its float64 twin's (the same op on the
// same shapes), which does not round its result into float32: rounding by 6e-8 over a step of
// 1e-5 would be an error of 1e-2 in the difference quotient.
Case gradient_case(const Case& base, const std::vector<size_t>& wrt, const HostFn& reference64) {
  Case item = base;
  item.family = "grad";
  item.variant = base.family + (base.variant.empty() ? "" : "/" + base.variant);
  for (size_t index : wrt) item.inputs[index].values = smooth_values(base.op, base.inputs[index]);
  const DType dtype = base.inputs[wrt.front()].dtype;

  item.build = [build = base.build, wrt](const std::vector<Tensor>& in) {
    std::vector<Tensor> leaves = in;
    std::vector<Tensor> inputs;
    for (size_t index : wrt) {
      leaves[index] = in[index].detach();
      leaves[index].requires_grad_();
      inputs.push_back(leaves[index]);
    }
    const Tensor output = build(leaves);
    const Tensor loss = (output * weights_for(output)).sum();
    std::vector<Tensor> flat;
    for (const Tensor& gradient : grad({loss}, inputs)) flat.push_back(gradient.reshape({-1}));
    return cat(flat, 0);
  };

  item.reference = [reference = reference64, wrt, dtype](const std::vector<HostTensor>& in) {
    // Elements that are not finite at the inputs themselves (a pad with NaN or -inf) are
    // constants of the op: left out, as their gradient is 0.
    const HostTensor center = reference(in).values;
    auto element_of = [](const HostTensor& tensor, size_t at) {
      return tensor.dtype.is_float() ? tensor.data[at].f : static_cast<double>(tensor.data[at].i);
    };
    // sum((op(above) - op(below)) * w) / (2 step): the differences first, so that the elements
    // a step does not change add exactly nothing (a sum of the two losses would leave their
    // rounding, eps |loss| / step, in the quotient).
    auto quotient = [&](const std::vector<HostTensor>& above, const std::vector<HostTensor>& below,
                        double step) {
      const HostTensor high = reference(above).values, low = reference(below).values;
      double total = 0;
      for (size_t at = 0; at < center.data.size(); ++at) {
        if (!std::isfinite(element_of(center, at))) continue;
        total += (element_of(high, at) - element_of(low, at)) *
                 weight_of(static_cast<int64_t>(at), dtype);
      }
      return total / (2 * step);
    };
    std::vector<double> gradients;
    std::vector<HostTensor> above = in;
    for (size_t input : wrt) above[input].dtype = dtypes::float64;
    std::vector<HostTensor> below = above;
    for (size_t input : wrt) {
      for (size_t element = 0; element < in[input].data.size(); ++element) {
        const double value = in[input].data[element].f;
        // A step of 1e-6 relative: the quotient's truncation (h^2 f''' / 6) is 1e-13, its
        // rounding in double about 1e-10 |op|, and the step crosses a kink or a tie (relu, max,
        // sort) about never. Near the edge of the op's domain (a probability of 1 - 1e-7) a step
        // that leaves it is made smaller.
        double step = 1e-6 * std::max(1.0, std::fabs(value));
        double result = 0;
        for (int attempt = 0; attempt < 4; ++attempt, step /= 100) {
          above[input].data[element].f = value + step;
          below[input].data[element].f = value - step;
          result = quotient(above, below, step);
          if (std::isfinite(result)) break;
        }
        above[input].data[element].f = value;
        below[input].data[element].f = value;
        gradients.push_back(result);
      }
    }
    HostTensor values(dtype, {static_cast<int64_t>(gradients.size())});
    double largest = 0;
    for (double gradient : gradients) largest = std::max(largest, std::fabs(gradient));
    std::vector<double> scale;
    for (size_t index = 0; index < gradients.size(); ++index) {
      values.data[index].f = gradients[index];
      // Relative to the gradient's own size, and to the largest one's: a small element that is
      // a difference of large terms is as uncertain as they are.
      scale.push_back(std::fabs(gradients[index]) + 0.01 * largest);
    }
    return Expected(std::move(values), std::move(scale));
  };
  item.code = "kiln::grad({(" + base.code + " * w).sum()}, {float inputs})";
  // float32's gradient goes through several kernels, each rounding; the difference quotient is
  // good to about 1e-8 relative, which bounds float64's.
  item.tolerance = Tolerance{};
  item.tolerance.rtol = dtype == dtypes::float64 ? 1e-6 : 2e-4;
  item.tolerance.atol = dtype == dtypes::float64 ? 1e-10 : 1e-7;
  return item;
}

}  // namespace

void add_gradient_cases(BatteryBuilder& builder) {
  // The cases so far, copied: adding to the builder moves its vector.
  const std::vector<Case> bases = builder.cases;
  auto twin_key = [](const Case& item) {
    return item.family + "|" + item.op + "|" + item.variant + "|" + shape_text(item.shape) + "|" +
           item.layout;
  };
  std::set<std::string> noncontiguous_f64;  // ops with a float64 case in another layout
  for (const Case& base : bases) {
    if (base.dtype == dtypes::float64 && base.layout != "contiguous")
      noncontiguous_f64.insert(base.family + "/" + base.op + "/" + base.variant);
  }
  std::map<std::string, HostFn> float64_references;
  for (const Case& base : bases) {
    if (base.dtype == dtypes::float64 && base.reference)
      float64_references.emplace(twin_key(base), base.reference);
  }
  std::map<std::string, std::set<bool>> taken;  // op/variant/dtype -> contiguous taken, other
  for (const Case& base : bases) {
    if (kSkippedFamilies.count(base.family) || skipped_op(base.family, base.op, base.variant))
      continue;
    if (!base.build || base.create || base.property || !base.bound_sizes.empty()) continue;
    if (base.dtype != dtypes::float32 && base.dtype != dtypes::float64) continue;
    std::vector<size_t> wrt;
    int64_t elements = 0;
    bool mixed = false;
    for (size_t index = 0; index < base.inputs.size(); ++index) {
      const InputSpec& spec = base.inputs[index];
      if (!spec.dtype.is_float()) continue;
      if (spec.dtype != base.dtype) mixed = true;
      wrt.push_back(index);
      elements += numel_of(spec.shape);
    }
    // Every float input of the case's dtype, few enough elements for the host's differences.
    if (wrt.empty() || mixed || elements > 256) continue;
    // One case per op and dtype: float32's contiguous, float64's in another layout where the
    // family has one (a view's gradient goes back through it), so both are covered in half the
    // time.
    const bool contiguous = base.layout == "contiguous";
    const std::string key = base.family + "/" + base.op + "/" + base.variant;
    if (base.dtype == dtypes::float32 && !contiguous) continue;
    if (base.dtype == dtypes::float64 && contiguous && noncontiguous_f64.count(key)) continue;
    auto& seen = taken[key + "/" + base.dtype.name()];
    if (!seen.insert(true).second) continue;
    auto twin = float64_references.find(twin_key(base));
    builder.add(
        gradient_case(base, wrt, twin != float64_references.end() ? twin->second : base.reference));
  }
}

}  // namespace kiln::conformance::detail

#pragma once
// The conformance battery: every case, defined once as data, run on any device.

#include <set>
#include <string>
#include <vector>

#include "tools/conformance/case.h"
#include "tools/conformance/reference.h"

namespace kiln::conformance {

// Every case, in a stable order (built once).
const std::vector<Case>& battery();
// The op families (rows of the summary table), in table order.
const std::vector<std::string>& families();
// The tolerance rules, one line per rule, for the report.
std::vector<std::string> tolerance_notes();

namespace detail {

struct BatteryBuilder {
  std::vector<Case> cases;
  std::set<std::string> names;
  void add(Case item);  // names must be unique; the seed comes from the name
};

InputSpec input(DType dtype, Shape shape, Values values = Values::General, int role = 0,
                std::string layout = "contiguous");

// Integers and bool: exact. Floats: `ulps` (for float32 / float64; float16 and bfloat16 compute in
// float32 and round once, so they get 1 ulp where float32 gets any, 2 where the op stores half
// intermediates), or |error| <= rel * eps(dtype) * scale + atol_normals * smallest normal.
Tolerance tolerance_for(DType out, double ulps, double rel = 0, double atol_normals = 0,
                        bool half_multi = false);
Tolerance exact_tolerance(bool signed_zero = false);

// A case: its name is family/op/dtype/shape/layout (of the first input) plus `variant`.
Case make_case(const std::string& family, const std::string& op, std::vector<InputSpec> inputs,
               KilnFn build, HostFn reference, std::string code, Tolerance tolerance,
               const std::string& variant = "");

// A case with no inputs: `create` builds the tensor on the device under test.
Case make_created_case(const std::string& family, const std::string& op, DType dtype, Shape shape,
                       std::function<Tensor(const std::string&)> create, HostFn reference,
                       std::string code, Tolerance tolerance);

extern const std::vector<DType> kAllDtypes;
extern const std::vector<DType> kFloatDtypes;
extern const std::vector<DType> kIntDtypes;  // integers and bool

void add_elementwise_cases(BatteryBuilder& builder);
// lerp, isclose, shifts by a host amount, bitwise not (battery_math.cpp).
void add_math_composite_cases(BatteryBuilder& builder);
void add_reduce_cases(BatteryBuilder& builder);
// kiln/nn.h: layers, normalizations and attention; losses and one_hot.
void add_nn_layer_cases(BatteryBuilder& builder);
void add_nn_loss_cases(BatteryBuilder& builder);
// kiln/conv.h: convolution, pooling, interpolation and padding modes (battery_conv.cpp).
void add_conv_cases(BatteryBuilder& builder);
// kiln/sort.h: sort, argsort, topk and the scans (battery_sort.cpp).
void add_sort_cases(BatteryBuilder& builder);
// kiln/random.h: every draw against the generator run on the host (battery_random.cpp).
void add_random_cases(BatteryBuilder& builder);
// einsum, in the matmul family (battery_einsum.cpp).
void add_einsum_cases(BatteryBuilder& builder);
void add_movement_cases(BatteryBuilder& builder);
// gather and index_select (battery_index.cpp).
// The indexing families' axis: signed indices in [-8, 8] (Values::SmallInt) fit it either way;
// unsigned ones (-1 wrapped to 255, ...) are taken modulo it by in_axis, on both sides.
constexpr int64_t kIndexAxis = 9;
Tensor in_axis(const Tensor& index);
HostTensor in_axis(HostTensor index);

void add_index_cases(BatteryBuilder& builder);
void add_scatter_cases(BatteryBuilder& builder);
// In-place writes: assign and index_put_ (battery_assign.cpp).
void add_assign_cases(BatteryBuilder& builder);
void add_shape_cases(BatteryBuilder& builder);
void add_graph_cases_to(BatteryBuilder& builder);
// Ops over a variable leading size, run at several values (battery_symbolic.cpp).
void add_symbolic_cases(BatteryBuilder& builder);
// Cases for defects found once (battery_regressions.cpp), and those at a device's loop and index
// limits (battery_regressions_limits.cpp).
void add_regression_cases(BatteryBuilder& builder);
// The gradient tier: gradients of the differentiable cases above against central differences of
// their double-precision references (battery_grad.cpp). Runs after every other family is added.
void add_gradient_cases(BatteryBuilder& builder);
void add_limit_regression_cases(BatteryBuilder& builder);
// Half-type constants and integer powers (battery_regressions_values.cpp).
void add_value_regression_cases(BatteryBuilder& builder);

}  // namespace detail
}  // namespace kiln::conformance

#pragma once
// The conformance battery's data model: a Case is one op on inputs of given dtypes, shapes and
// layouts, with a host reference and a tolerance; a CaseResult is what running it on a device
// found. See battery.cpp for the cases and runner.cpp for how one runs.

#include <kiln/tensor.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tools/conformance/host.h"

namespace kiln::conformance {

// How input values are drawn (values.cpp). Every kind begins with the edge values that matter for
// its role (NaN, +-inf, -0.0, subnormals, extremes, INT_MIN / -1 pairs, ...) and then fills the
// rest from a seeded generator.
enum class Values {
  General,   // everything, edges first
  Divisor,   // like General, as the right operand of / and %: zeros, -1, negatives
  Small,     // finite, |x| <= 4 (floats) or [-8, 8] (ints): sums stay exact / well conditioned
  SmallInt,  // integers in [-8, 8] in any dtype: float sums of them are exact
  Positive,  // finite, in [0.25, 4] (floats) or [1, 8] (ints)
  NearOne,   // in [0.5, 2] with many +-1: products stay finite
  Exponent,  // small exponents for pow: integers and halves in [-3, 3]
  Bool,      // true / false
  Unit,      // in [-1, 1] with both ends, +-0, tiny values, NaN, +-inf and a little beyond: the
             // domain of asin, acos and atanh
  Interior,  // in [-0.9, 0.9], no edges: asin, acos and atanh away from their poles (gradients)
  AboveOne,  // in [1.25, 4], no edges: acosh away from its pole (gradients)
};

struct InputSpec {
  DType dtype;
  Shape shape;  // the shape the op sees (after the layout)
  std::string layout = "contiguous";
  Values values = Values::General;
  int role = 0;  // 0: left / only operand, 1: right operand (edge lists differ)
};

// One movement step, applied the same way to a kiln Tensor and to a HostTensor.
struct LayoutStep {
  enum class Kind { Reshape, Permute, Expand, Pad, Shrink, Flip } kind;
  std::vector<int64_t> values;                     // shape, axes or permutation
  std::vector<std::pair<int64_t, int64_t>> pairs;  // pad (before, after) or shrink (start, end)
  double pad_value = 0;
};

struct Layout {
  std::string name;
  Shape source;                   // the shape uploaded
  std::vector<LayoutStep> steps;  // source -> the op's input shape
};

// The layouts the battery knows: contiguous, permuted, expanded, padded, padded(value), shrunk,
// flipped, and chains. nullopt where the layout cannot produce `target` (e.g. permuted 1-D).
std::optional<Layout> make_layout(const std::string& name, const Shape& target);
const std::vector<std::string>& layout_names();
Tensor apply_layout(const Layout& layout, Tensor tensor);
HostTensor apply_layout(const Layout& layout, const HostTensor& tensor);
// The layout as kiln C++ ("x.permute({1, 0}).flip({0})"), for reproductions.
std::string layout_code(const Layout& layout);

// When two values count as equal. Integers and bool are always compared exactly.
struct Tolerance {
  double ulps = 0;           // in units in the last place of the output dtype
  double rtol = 0;           // ... or |got - expected| <= rtol * scale + atol, where scale is
  double atol = 0;           //     the reference's error scale for that element (or |expected|)
  bool signed_zero = false;  // -0.0 and 0.0 differ
  std::string text() const;  // "exact", "<= 4 ulp", "<= 2 ulp or 1e-05*scale + 1e-38"
};

// What a reference returns: the exact expected values (floats unrounded, in double) and, for
// tolerances that depend on more than the result (sums, products, matmul), an error scale per
// element such as the sum of |terms|. An empty scale means |expected|.
struct Expected {
  HostTensor values;
  std::vector<double> scale;
  Expected() = default;
  Expected(HostTensor values_) : values(std::move(values_)) {}  // NOLINT: implicit on purpose
  Expected(HostTensor values_, std::vector<double> scale_)
      : values(std::move(values_)), scale(std::move(scale_)) {}
};

using KilnFn = std::function<Tensor(const std::vector<Tensor>&)>;
using HostFn = std::function<Expected(const std::vector<HostTensor>&)>;

struct Case {
  std::string name;    // unique: family/op/dtype/shape/layout
  std::string family;  // row of the summary table
  std::string op;
  DType dtype;  // column of the summary table (the first input's dtype)
  Shape shape;  // the first input's shape
  std::string layout;
  std::string variant;  // distinguishes cases that share the above
  std::vector<InputSpec> inputs;
  KilnFn build;  // the kiln expression on the laid-out inputs
  std::function<Tensor(const std::string& device)> create;  // instead of build, for no inputs
  HostFn reference;  // the same on the host, in double precision; may set `scale`
  std::string code;  // the op as kiln C++ on inputs a, b, c ("a.sum({1})")
  Tolerance tolerance;
  uint64_t seed = 0;
  // A property check in place of a reference (e.g. rand); returns "" or what is wrong.
  std::function<std::string(const HostTensor& got)> property;
  // The symbolic tier: the leading size of every input whose leading size is the case's is a
  // variable n, bound in turn to each of these sizes (its bounds are their smallest and largest).
  // `bind` says how an input gets the bound shape: "reshape" (its buffer takes it) or "prefix"
  // (the first n rows of a buffer of the largest size). The case passes when every size matches
  // the reference and no size after the first builds a kernel.
  std::vector<int64_t> bound_sizes;
  std::string bind;
};

enum class Status { Pass, Fail, Unsupported, Error };
const char* status_name(Status status);

struct CaseResult {
  Status status = Status::Error;
  std::string detail;        // why it failed / errored / is unsupported
  int64_t worst_index = -1;  // flat index of the worst element (fail)
  std::string worst_at;      // that index as coordinates "(3, 4)"
  std::string expected, got;
  double worst_ulps = 0;
  double seconds = 0;
  bool guards_checked = false;
  // The device can run nothing more in this process (DeviceLostError): a worker process then
  // makes way for a new one (parallel.h).
  bool device_lost = false;
};

}  // namespace kiln::conformance

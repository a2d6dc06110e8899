// einsum (kiln/shape_ops.h) against a loop over every assignment of the equation's letters: the
// product of the operands' elements added into the output element the letters name. Axes of
// size 1 broadcast (read at index 0), as torch.einsum's.

#include <kiln/shape_ops.h>

#include <cmath>
#include <functional>
#include <map>

#include "tools/conformance/battery.h"

namespace kiln::conformance::detail {
namespace {

// A letters-only equation "ij,jk->ik" evaluated in double (integers wrapped into `out`).
Expected einsum_reference(const std::string& equation, const std::vector<HostTensor>& in,
                          DType out) {
  const size_t arrow = equation.find("->");
  std::vector<std::string> subscripts;
  size_t start = 0;
  const std::string inputs = equation.substr(0, arrow);
  while (true) {
    const size_t comma = inputs.find(',', start);
    subscripts.push_back(inputs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  const std::string output = equation.substr(arrow + 2);
  std::map<char, int64_t> sizes;
  for (size_t at = 0; at < in.size(); ++at)
    for (size_t axis = 0; axis < subscripts[at].size(); ++axis)
      sizes[subscripts[at][axis]] = std::max(sizes[subscripts[at][axis]], in[at].shape[axis]);
  std::vector<char> letters;
  for (const auto& [letter, size] : sizes) letters.push_back(letter);
  Shape out_shape;
  for (char letter : output) out_shape.push_back(sizes[letter]);
  std::vector<double> total(static_cast<size_t>(numel_of(out_shape)), 0.0), scale(total.size());
  std::vector<uint64_t> wrapped(total.size(), 0);
  std::map<char, int64_t> value;
  std::function<void(size_t)> visit = [&](size_t depth) {
    if (depth < letters.size()) {
      for (int64_t at = 0; at < sizes[letters[depth]]; ++at) {
        value[letters[depth]] = at;
        visit(depth + 1);
      }
      return;
    }
    double term = 1;
    uint64_t integer = 1;
    for (size_t at = 0; at < in.size(); ++at) {
      int64_t offset = 0;
      for (size_t axis = 0; axis < subscripts[at].size(); ++axis) {
        const int64_t size = in[at].shape[axis];
        offset = offset * size + (size == 1 ? 0 : value[subscripts[at][axis]]);
      }
      term *= to_double(in[at].dtype, in[at].data[static_cast<size_t>(offset)]);
      integer *= static_cast<uint64_t>(in[at].data[static_cast<size_t>(offset)].i);
    }
    int64_t target = 0;
    for (char letter : output) target = target * sizes[letter] + value[letter];
    total[static_cast<size_t>(target)] += term;
    scale[static_cast<size_t>(target)] += std::fabs(term);
    wrapped[static_cast<size_t>(target)] += integer;
  };
  visit(0);
  HostTensor result(out, out_shape);
  for (size_t at = 0; at < total.size(); ++at) {
    if (out.is_float()) {
      result.data[at] = make_scalar(out, total[at]);
    } else {
      // The sum wrapped modulo 2^64, then into the dtype as a cast does.
      HostTensor wide(dtypes::int64, {});
      wide.data[0].i = static_cast<int64_t>(wrapped[at]);
      result.data[at] = cast(wide, out).data[0];
    }
  }
  return Expected(result, scale);
}

}  // namespace

void add_einsum_cases(BatteryBuilder& builder) {
  struct Spec {
    std::string equation;  // kiln's
    std::string letters;   // the same with "..." spelled out, for the reference
    std::vector<Shape> shapes;
    std::string layout;
  };
  const std::vector<Spec> specs = {
      {"ij,jk->ik", "ij,jk->ik", {{5, 7}, {7, 3}}, "contiguous"},
      {"bij,bjk->bik", "bij,bjk->bik", {{2, 4, 5}, {2, 5, 3}}, "permuted"},
      {"...ij,...jk->...ik", "abij,bjk->abik", {{3, 1, 2, 4}, {5, 4, 2}}, "contiguous"},
      {"ii->i", "ii->i", {{6, 6}}, "flipped"},
      {"ii", "ii->", {{6, 6}}, "contiguous"},
      {"ij->", "ij->", {{4, 9}}, "contiguous"},
      {"i,j->ij", "i,j->ij", {{4}, {5}}, "contiguous"},
      {"ijk->kji", "ijk->kji", {{2, 3, 4}}, "permuted"},
      {"ij,jk,kl->il", "ij,jk,kl->il", {{3, 4}, {4, 5}, {5, 2}}, "contiguous"},
      {"ba,ca", "ba,ca->bc", {{3, 6}, {4, 6}}, "contiguous"},
  };
  for (DType dtype : {dtypes::float32, dtypes::float64, dtypes::float16, dtypes::int32})
    for (const Spec& spec : specs) {
      std::vector<InputSpec> inputs;
      for (size_t at = 0; at < spec.shapes.size(); ++at)
        inputs.push_back(input(dtype, spec.shapes[at],
                               dtype.is_float() ? Values::Small : Values::General,
                               static_cast<int>(at), at == 0 ? spec.layout : "contiguous"));
      const size_t terms = spec.shapes.size();
      builder.add(make_case(
          "matmul", "einsum", inputs,
          [equation = spec.equation](const std::vector<Tensor>& in) {
            return einsum(equation, in);
          },
          [letters = spec.letters, dtype](const std::vector<HostTensor>& in) {
            return einsum_reference(letters, in, dtype);
          },
          "kiln::einsum(\"" + spec.equation + "\", {...})",
          // A product of three rounds twice per term.
          tolerance_for(dtype, 2, 4 + 2.0 * static_cast<double>(terms), 0, true), spec.equation));
    }
}

}  // namespace kiln::conformance::detail

// Random graphs. Each graph has one element type family: float32, float64 or int32 (int64 after
// integer sums). Float graphs are compared with a tolerance scaled by an error magnitude that is
// propagated through the graph beside the values (|a| + |b| for a sum, |a| |b| for a product, ...);
// integer graphs must match exactly (wraparound included).

#include "tools/conformance/fuzz.h"

#include <kiln/error.h>

#include <cmath>
#include <numeric>
#include <sstream>

#include "tools/conformance/fuzz_graph.h"
#include "tools/conformance/reference.h"
#include "tools/conformance/runner.h"
#include "tools/conformance/values.h"

namespace kiln::conformance {
namespace {

using namespace fuzz;

HostTensor magnitude(const FNode& node, const std::vector<HostTensor>& in,
                     const HostTensor& value) {
  auto absolute = [](HostTensor tensor) {
    for (Scalar& item : tensor.data) item.f = std::fabs(item.f);
    return tensor;
  };
  switch (node.op) {
    case FOp::Input:
      return absolute(value);
    case FOp::Unary: {
      HostTensor result = cast(in[0], value.dtype);
      if (node.unary == Unary::Tanh || node.unary == Unary::Sigmoid || node.unary == Unary::Sin) {
        for (Scalar& item : result.data) item.f += 1;
      }
      return result;
    }
    case FOp::Binary:
      if (node.binary == Binary::Mul) return ref::binary(Binary::Mul, in[0], in[1]).values;
      if (node.binary == Binary::Max || node.binary == Binary::Min)
        return ref::binary(Binary::Max, in[0], in[1]).values;
      return ref::binary(Binary::Add, in[0], in[1]).values;
    case FOp::Reduce:
      return ref::reduce(node.reduce == Reduce::Max ? Reduce::Max : node.reduce, in[0], node.values,
                         node.keepdim)
          .values;
    case FOp::Pad:
      return absolute(ref::pad(in[0], node.pairs, node.pad_value));
    default:
      return evaluate_node(node, in);
  }
}

Tensor build_node(const FNode& node, const std::vector<Tensor>& in, const std::string& device) {
  switch (node.op) {
    case FOp::Input: {
      Tensor input = upload(node.data, device);
      if (!node.bound) return input;
      DimShape dims{fuzz_variable().bind(node.shape[0])};
      dims.insert(dims.end(), node.shape.begin() + 1, node.shape.end());
      return input.reshape(dims);
    }
    case FOp::Unary:
      switch (node.unary) {
        case Unary::Neg:
          return -in[0];
        case Unary::Abs:
          return in[0].abs();
        case Unary::Relu:
          return in[0].relu();
        case Unary::Tanh:
          return in[0].tanh();
        case Unary::Sigmoid:
          return in[0].sigmoid();
        default:
          return in[0].sin();
      }
    case FOp::Binary:
      switch (node.binary) {
        case Binary::Add:
          return in[0] + in[1];
        case Binary::Sub:
          return in[0] - in[1];
        case Binary::Mul:
          return in[0] * in[1];
        case Binary::Max:
          return maximum(in[0], in[1]);
        case Binary::Min:
          return minimum(in[0], in[1]);
        case Binary::And:
          return in[0] & in[1];
        default:
          return in[0] ^ in[1];
      }
    case FOp::Reduce:
      if (node.reduce == Reduce::Sum) return in[0].sum(node.values, node.keepdim);
      if (node.reduce == Reduce::Max) return in[0].max(node.values, node.keepdim);
      return in[0].mean(node.values, node.keepdim);
    case FOp::Permute:
      return in[0].permute(node.values);
    case FOp::Flip:
      return in[0].flip(node.values);
    case FOp::Shrink:
      return in[0].shrink(node.pairs);
    case FOp::Pad:
      return in[0].pad(node.pairs, node.pad_value);
    case FOp::Expand:
      return in[0].expand(node.values);
    case FOp::Reshape:
      return in[0].reshape(node.values);
  }
  return in[0];
}

std::vector<int> cone(const Graph& graph, int root) {
  std::vector<bool> needed(graph.nodes.size(), false);
  needed[root] = true;
  for (int index = root; index >= 0; --index) {
    if (!needed[index]) continue;
    for (int src : graph.nodes[index].srcs) needed[src] = true;
  }
  std::vector<int> nodes;
  for (int index = 0; index <= root; ++index) {
    if (needed[index]) nodes.push_back(index);
  }
  return nodes;
}

// Evaluates the sub-graph ending at `root` on the device and on the host; the comparison result.
CaseResult check(const Graph& graph, int root, const std::string& device) {
  const std::vector<int> nodes = cone(graph, root);
  std::vector<HostTensor> values(graph.nodes.size()), magnitudes(graph.nodes.size());
  std::vector<Tensor> tensors;
  std::vector<int> slot(graph.nodes.size(), -1);
  try {
    for (int index : nodes) {
      const FNode& node = graph.nodes[index];
      std::vector<HostTensor> in, in_magnitude;
      std::vector<Tensor> in_tensors;
      for (int src : node.srcs) {
        in.push_back(values[src]);
        in_magnitude.push_back(magnitudes[src]);
        in_tensors.push_back(tensors[slot[src]]);
      }
      values[index] = evaluate_node(node, in);
      if (node.dtype.is_float()) magnitudes[index] = magnitude(node, in_magnitude, values[index]);
      slot[index] = static_cast<int>(tensors.size());
      tensors.push_back(build_node(node, in_tensors, device));
    }
    const Tensor& out = tensors[slot[root]];
    const DType dtype = graph.nodes[root].dtype;
    HostTensor got(dtype, out.shape());
    if (dtype == dtypes::float32) {
      const std::vector<float> data = out.to_vector<float>();
      for (size_t index = 0; index < data.size(); ++index) got.data[index].f = data[index];
    } else if (dtype.is_float()) {
      const std::vector<double> data = out.to_vector<double>();
      for (size_t index = 0; index < data.size(); ++index) got.data[index].f = data[index];
    } else {
      const std::vector<int64_t> data = out.cast(dtypes::int64).to_vector<int64_t>();
      for (size_t index = 0; index < data.size(); ++index)
        got.data[index].i = wrap(dtype, static_cast<uint64_t>(data[index]));
    }
    got.dtype = out.dtype();
    Expected expected(values[root]);
    Tolerance tolerance;
    if (dtype.is_float()) {
      for (const Scalar& item : magnitudes[root].data) expected.scale.push_back(item.f);
      tolerance.ulps = 2;
      tolerance.rtol = 8.0 * static_cast<double>(nodes.size() + 1) * epsilon_of(dtype);
      tolerance.atol = min_normal_of(dtype) * static_cast<double>(nodes.size());
    }
    return compare(expected, got, tolerance);
  } catch (const std::exception& error) {
    CaseResult result;
    result.status = Status::Error;
    result.detail = error.what();
    result.detail = result.detail.substr(0, result.detail.find('\n'));
    return result;
  }
}

}  // namespace

std::string fuzz_one(const std::string& device, uint64_t seed) {
  const Graph graph = generate_graph(seed);
  const int root = static_cast<int>(graph.nodes.size()) - 1;
  const CaseResult result = check(graph, root, device);
  if (result.status == Status::Pass) return "";
  // The smallest failing sub-graph: try every node as the output, keep the one with fewest nodes.
  int smallest = root;
  CaseResult smallest_result = result;
  for (int index = 0; index < root; ++index) {
    if (graph.nodes[index].op == FOp::Input ||
        cone(graph, index).size() >= cone(graph, smallest).size())
      continue;
    const CaseResult attempt = check(graph, index, device);
    if (attempt.status != Status::Pass) {
      smallest = index;
      smallest_result = attempt;
    }
  }
  std::ostringstream report;
  report << "FAIL fuzz seed " << seed << " on " << device << " (" << graph.nodes.size()
         << " nodes): " << result.detail << "\n  smallest failing sub-graph ("
         << cone(graph, smallest).size() << " nodes): " << smallest_result.detail
         << "\n  reproduction (kiln conformance --device " << device << " --fuzz 1 --seed " << seed
         << "):\n"
         << "  #include <kiln/kiln.h>\n  using namespace kiln;\n  const std::string device = \""
         << device << "\";\n  const Variable n(\"n\", 1, 64);\n";
  for (int index : cone(graph, smallest)) report << node_code(graph.nodes[index], index) << "\n";
  report << "  // t" << smallest << " differs from the reference\n";
  return report.str();
}

std::string fuzz_code(uint64_t seed) {
  const Graph graph = generate_graph(seed);
  std::string code;
  for (size_t index = 0; index < graph.nodes.size(); ++index)
    code += node_code(graph.nodes[index], static_cast<int>(index)) + "\n";
  return code;
}

int64_t run_fuzz(const std::string& device, int64_t count, uint64_t seed, FILE* out, bool verbose) {
  int64_t failures = 0;
  for (int64_t index = 0; index < count; ++index) {
    if (verbose)
      std::fprintf(out, "seed %llu:\n%s", static_cast<unsigned long long>(seed + index),
                   fuzz_code(seed + index).c_str());
    const std::string report = fuzz_one(device, seed + static_cast<uint64_t>(index));
    if (report.empty()) continue;
    ++failures;
    std::fprintf(out, "%s\n", report.c_str());
  }
  std::fprintf(out, "%s: fuzz: %lld graph(s) from seed %llu: %lld passed, %lld failed\n",
               device.c_str(), static_cast<long long>(count), static_cast<unsigned long long>(seed),
               static_cast<long long>(count - failures), static_cast<long long>(failures));
  return failures;
}

}  // namespace kiln::conformance

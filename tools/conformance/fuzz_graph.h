#pragma once
// The fuzzer's random graphs: nodes, the generator, and how a node evaluates on the host and reads
// as kiln C++ (see fuzz.cpp for running and checking them).

#include <string>
#include <vector>

#include "tools/conformance/case.h"
#include "tools/conformance/reference.h"

namespace kiln::conformance::fuzz {

using ref::Binary;
using ref::Reduce;
using ref::Unary;

enum class FOp { Input, Unary, Binary, Reduce, Permute, Flip, Shrink, Pad, Expand, Reshape };

struct FNode {
  FOp op = FOp::Input;
  std::vector<int> srcs;
  Unary unary = Unary::Neg;
  Binary binary = Binary::Add;
  Reduce reduce = Reduce::Sum;
  std::vector<int64_t> values;  // axes, permutation or shape
  std::vector<std::pair<int64_t, int64_t>> pairs;
  bool keepdim = false;
  double pad_value = 0;
  HostTensor data;  // inputs
  // Inputs: the leading size is the variable n (kFuzzVariable) bound to it, so that symbolic
  // kernels meet every op the fuzzer makes.
  bool bound = false;
  Shape shape;
  DType dtype;
};

// The variable bound inputs use ("n" in [1, 64]).
const Variable& fuzz_variable();

struct Graph {
  uint64_t seed = 0;
  std::vector<FNode> nodes;
};

// The graph for a seed: one to three inputs and two to eight ops; the last node is the output.
Graph generate_graph(uint64_t seed);
// A node's value from its sources' values, by the reference.
HostTensor evaluate_node(const FNode& node, const std::vector<HostTensor>& in);
// "  Tensor t3 = t1.sum({0}, true);"
std::string node_code(const FNode& node, int index);

}  // namespace kiln::conformance::fuzz

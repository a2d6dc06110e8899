// Random graphs for the fuzzer: elementwise, reduction and movement ops mixed, on float32, float64
// or int32 inputs with shapes that broadcast.

#include "tools/conformance/fuzz_graph.h"

#include <numeric>

#include "tools/conformance/values.h"

namespace kiln::conformance::fuzz {

const Variable& fuzz_variable() {
  static const Variable variable("n", 1, 64);
  return variable;
}

namespace {

std::string list_text(const std::vector<int64_t>& values) {
  std::string text = "{";
  for (size_t index = 0; index < values.size(); ++index)
    text += (index ? ", " : "") + std::to_string(values[index]);
  return text + "}";
}

std::string pairs_text(const std::vector<std::pair<int64_t, int64_t>>& pairs) {
  std::string text = "{";
  for (size_t index = 0; index < pairs.size(); ++index) {
    text += (index ? ", {" : "{") + std::to_string(pairs[index].first) + ", " +
            std::to_string(pairs[index].second) + "}";
  }
  return text + "}";
}

class Generator {
 public:
  explicit Generator(uint64_t seed) : random_{seed * 0x9e3779b97f4a7c15ull + 7} {
    graph_.seed = seed;
  }

  Graph run() {
    const uint64_t pick = random_.next() % 10;
    dtype_ = pick < 6 ? dtypes::float32 : pick < 8 ? dtypes::int32 : dtypes::float64;
    add_input(random_shape());
    const int64_t ops = random_.range(2, 8);
    for (int64_t step = 0; step < ops; ++step) add_op();
    return graph_;
  }

 private:
  Shape random_shape() {
    Shape shape(static_cast<size_t>(random_.range(1, 3)));
    for (int64_t& size : shape) size = random_.next() % 4 == 0 ? 1 : random_.range(2, 6);
    return shape;
  }

  int add_input(const Shape& shape) {
    FNode node;
    node.op = FOp::Input;
    node.shape = shape;
    // A third of the inputs, chosen without drawing from the generator (graphs stay as before).
    node.bound = !shape.empty() && shape[0] >= 2 && (graph_.seed + graph_.nodes.size()) % 3 == 0;
    node.dtype = dtype_;
    node.data = HostTensor(dtype_, shape);
    for (Scalar& item : node.data.data) {
      if (dtype_.is_float()) {
        item.f = random_.next() % 2 ? static_cast<double>(random_.range(-16, 16)) / 4
                                    : round_to(dtype_, random_.uniform() * 8 - 4);
      } else {
        // Mostly small values, some extremes and full-range values: products overflow and
        // wrap, and sums widen the wrapped values to int64.
        const uint64_t kind = random_.next() % 16;
        item.i = kind == 0   ? 2147483647
                 : kind == 1 ? -2147483647 - 1
                 : kind < 6  ? static_cast<int32_t>(static_cast<uint32_t>(random_.next()))
                             : random_.range(-50, 50);
      }
    }
    return push(std::move(node));
  }

  int push(FNode node) {
    graph_.nodes.push_back(std::move(node));
    return static_cast<int>(graph_.nodes.size()) - 1;
  }

  int pick_node() {
    const int last = static_cast<int>(graph_.nodes.size()) - 1;
    return random_.next() % 10 < 6 ? last : static_cast<int>(random_.next() % graph_.nodes.size());
  }

  bool broadcastable(const Shape& a, const Shape& b) {
    try {
      const Shape shape = ref::broadcast_shape(a, b);
      return numel_of(shape) <= 512;
    } catch (const std::exception&) {
      return false;
    }
  }

  void add_op() {
    const int x = pick_node();
    const FNode& source = graph_.nodes[x];
    const Shape shape = source.shape;
    const bool is_float = source.dtype.is_float();
    FNode node;
    node.srcs = {x};
    const uint64_t kind = random_.next() % 10;
    if (kind < 2) {
      node.op = FOp::Unary;
      const Unary float_ops[] = {Unary::Neg,  Unary::Abs,     Unary::Relu,
                                 Unary::Tanh, Unary::Sigmoid, Unary::Sin};
      const Unary int_ops[] = {Unary::Neg, Unary::Abs, Unary::Relu};
      node.unary = is_float ? float_ops[random_.next() % 6] : int_ops[random_.next() % 3];
    } else if (kind < 5) {
      node.op = FOp::Binary;
      const Binary float_ops[] = {Binary::Add, Binary::Sub, Binary::Mul, Binary::Max, Binary::Min};
      const Binary int_ops[] = {Binary::Add, Binary::Sub, Binary::Mul, Binary::Max,
                                Binary::Min, Binary::And, Binary::Xor};
      node.binary = is_float ? float_ops[random_.next() % 5] : int_ops[random_.next() % 7];
      std::vector<int> partners;
      for (int other = 0; other < static_cast<int>(graph_.nodes.size()); ++other) {
        if (graph_.nodes[other].dtype.is_float() == is_float &&
            broadcastable(shape, graph_.nodes[other].shape)) {
          partners.push_back(other);
        }
      }
      int partner;
      if (partners.empty() || random_.next() % 3 == 0) {
        Shape other = shape;
        for (int64_t& size : other) size = random_.next() % 3 == 0 ? 1 : size;
        if (!other.empty() && random_.next() % 4 == 0) other.erase(other.begin());
        partner = add_input(other);
      } else {
        partner = partners[random_.next() % partners.size()];
      }
      node.srcs = random_.next() % 2 ? std::vector<int>{x, partner} : std::vector<int>{partner, x};
    } else if (kind < 7 && !shape.empty()) {
      node.op = FOp::Reduce;
      const Reduce float_ops[] = {Reduce::Sum, Reduce::Max, Reduce::Mean};
      node.reduce = is_float ? float_ops[random_.next() % 3]
                             : (random_.next() % 2 ? Reduce::Sum : Reduce::Max);
      for (size_t dim = 0; dim < shape.size(); ++dim) {
        if (random_.next() % 2) node.values.push_back(static_cast<int64_t>(dim));
      }
      if (node.values.empty())
        node.values.push_back(static_cast<int64_t>(random_.next() % shape.size()));
      node.keepdim = random_.next() % 2;
    } else {
      movement(node, shape);
    }
    finish(std::move(node));
  }

  void movement(FNode& node, const Shape& shape) {
    const size_t ndim = shape.size();
    switch (ndim == 0 ? 5 : random_.next() % 6) {
      case 0:
        if (ndim >= 2) {
          node.op = FOp::Permute;
          node.values.resize(ndim);
          std::iota(node.values.begin(), node.values.end(), 0);
          for (size_t index = ndim - 1; index > 0; --index)
            std::swap(node.values[index], node.values[random_.next() % (index + 1)]);
          return;
        }
        [[fallthrough]];
      case 1:
        node.op = FOp::Flip;
        for (size_t dim = 0; dim < ndim; ++dim) {
          if (random_.next() % 2) node.values.push_back(static_cast<int64_t>(dim));
        }
        if (node.values.empty()) node.values.push_back(0);
        return;
      case 2:
        node.op = FOp::Shrink;
        for (int64_t size : shape) {
          const int64_t start = random_.range(0, size - 1);
          node.pairs.emplace_back(start, random_.range(start + 1, size));
        }
        return;
      case 3:
        node.op = FOp::Pad;
        for (size_t dim = 0; dim < ndim; ++dim)
          node.pairs.emplace_back(random_.range(0, 2), random_.range(0, 2));
        node.pad_value = random_.next() % 2 ? 0.0 : 2.0;
        if (numel_of(shape) * 20 > 512 * 4) node.pairs.assign(ndim, {0, 1});
        return;
      case 4: {
        node.op = FOp::Expand;
        Shape target = shape;
        for (int64_t& size : target) size = size == 1 ? random_.range(2, 4) : size;
        if (target == shape || random_.next() % 3 == 0)
          target.insert(target.begin(), random_.range(2, 3));
        if (numel_of(target) > 512) target = shape;
        node.values = target;
        return;
      }
      default: {
        node.op = FOp::Reshape;
        const int64_t total = numel_of(shape);
        std::vector<int64_t> divisors;
        for (int64_t d = 1; d <= total; ++d) {
          if (total % d == 0) divisors.push_back(d);
        }
        const int64_t first = divisors[random_.next() % divisors.size()];
        node.values = random_.next() % 3 == 0 ? Shape{total} : Shape{first, total / first};
        return;
      }
    }
  }

  void finish(FNode node) {
    std::vector<HostTensor> empties;
    for (int src : node.srcs)
      empties.emplace_back(graph_.nodes[src].dtype, graph_.nodes[src].shape);
    // The output shape and dtype come from evaluating the reference on zeros.
    const HostTensor sample = evaluate_node(node, empties);
    node.shape = sample.shape;
    node.dtype = sample.dtype;
    push(std::move(node));
  }

 private:
  Random random_;
  Graph graph_;
  DType dtype_;
};

}  // namespace

HostTensor evaluate_node(const FNode& node, const std::vector<HostTensor>& in) {
  switch (node.op) {
    case FOp::Input:
      return node.data;
    case FOp::Unary:
      return ref::unary(node.unary, in[0]).values;
    case FOp::Binary:
      return ref::binary(node.binary, in[0], in[1]).values;
    case FOp::Reduce:
      return ref::reduce(node.reduce, in[0], node.values, node.keepdim).values;
    case FOp::Permute:
      return ref::permute(in[0], node.values);
    case FOp::Flip:
      return ref::flip(in[0], node.values);
    case FOp::Shrink:
      return ref::shrink(in[0], node.pairs);
    case FOp::Pad:
      return ref::pad(in[0], node.pairs, node.pad_value);
    case FOp::Expand:
      return ref::broadcast_to(in[0], node.values);
    case FOp::Reshape:
      return ref::reshape(in[0], node.values);
  }
  return in[0];
}

Graph generate_graph(uint64_t seed) {
  return Generator(seed).run();
}

std::string node_code(const FNode& node, int index) {
  const std::string a = node.srcs.empty() ? "" : "t" + std::to_string(node.srcs[0]);
  const std::string b = node.srcs.size() > 1 ? "t" + std::to_string(node.srcs[1]) : "";
  std::string value;
  switch (node.op) {
    case FOp::Input: {
      const char* type = node.dtype == dtypes::float32   ? "float"
                         : node.dtype == dtypes::float64 ? "double"
                                                         : "int32_t";
      value = std::string("Tensor::from_vector<") + type + ">({";
      for (size_t item = 0; item < node.data.data.size(); ++item) {
        value += (item ? ", " : "") + format_value(node.dtype, node.data.data[item]);
      }
      value += "}, " + list_text(node.shape) + ", device)";
      if (node.bound) {
        value += ".reshape({n.bind(" + std::to_string(node.shape[0]) + ")";
        for (size_t dim = 1; dim < node.shape.size(); ++dim)
          value += ", " + std::to_string(node.shape[dim]);
        value += "})";
      }
      break;
    }
    case FOp::Unary: {
      switch (node.unary) {
        case Unary::Neg:
          value = "-" + a;
          break;
        case Unary::Abs:
          value = a + ".abs()";
          break;
        case Unary::Relu:
          value = a + ".relu()";
          break;
        case Unary::Tanh:
          value = a + ".tanh()";
          break;
        case Unary::Sigmoid:
          value = a + ".sigmoid()";
          break;
        default:
          value = a + ".sin()";
          break;
      }
      break;
    }
    case FOp::Binary:
      switch (node.binary) {
        case Binary::Add:
          value = a + " + " + b;
          break;
        case Binary::Sub:
          value = a + " - " + b;
          break;
        case Binary::Mul:
          value = a + " * " + b;
          break;
        case Binary::Max:
          value = "maximum(" + a + ", " + b + ")";
          break;
        case Binary::Min:
          value = "minimum(" + a + ", " + b + ")";
          break;
        case Binary::And:
          value = a + " & " + b;
          break;
        default:
          value = a + " ^ " + b;
          break;
      }
      break;
    case FOp::Reduce: {
      const char* name = node.reduce == Reduce::Sum   ? "sum"
                         : node.reduce == Reduce::Max ? "max"
                                                      : "mean";
      value = a + "." + name + "(" + list_text(node.values) + (node.keepdim ? ", true" : "") + ")";
      break;
    }
    case FOp::Permute:
      value = a + ".permute(" + list_text(node.values) + ")";
      break;
    case FOp::Flip:
      value = a + ".flip(" + list_text(node.values) + ")";
      break;
    case FOp::Shrink:
      value = a + ".shrink(" + pairs_text(node.pairs) + ")";
      break;
    case FOp::Pad:
      value = a + ".pad(" + pairs_text(node.pairs) + (node.pad_value != 0 ? ", 2" : "") + ")";
      break;
    case FOp::Expand:
      value = a + ".expand(" + list_text(node.values) + ")";
      break;
    case FOp::Reshape:
      value = a + ".reshape(" + list_text(node.values) + ")";
      break;
  }
  return "  Tensor t" + std::to_string(index) + " = " + value + ";";
}

// The nodes the node at `root` depends on (itself included), in graph order.

}  // namespace kiln::conformance::fuzz

// Reverse-mode gradients (include/kiln/autograd.h): every differentiable op's gradient against
// central finite differences of its value in float64, the recording rules (leaves, accumulation,
// freed graphs, NoGradGuard, detach) and the errors, and the same gradients on every device.

#include <catch2/catch.hpp>

#include <kiln/kiln.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

using namespace kiln;

namespace {

using Function = std::function<Tensor(const std::vector<Tensor>&)>;

// Deterministic values in (low, high), distinct enough that no two tie.
std::vector<double> values_between(int64_t count, double low, double high, int salt) {
  std::vector<double> values;
  for (int64_t index = 0; index < count; ++index) {
    const double unit =
        std::fmod(0.6180339887 * static_cast<double>(index * 7 + salt * 13 + 1), 1.0);
    values.push_back(low + (high - low) * (0.05 + 0.9 * unit));
  }
  return values;
}

// f's scalar loss: the elements of f(inputs) weighted by fixed, distinct weights, so that a rule
// that mixes up elements shows.
double weighted_value(const Function& f, const std::vector<Tensor>& inputs) {
  const Tensor value = f(inputs).cast(dtypes::float64);
  const std::vector<double> weights = values_between(value.numel(), 0.5, 1.5, 99);
  const std::vector<double> elements = value.to_vector<double>();
  double total = 0;
  for (size_t index = 0; index < elements.size(); ++index)
    total += weights[index] * elements[index];
  return total;
}

// Checks kiln::grad of f's weighted loss at `inputs` (float64 leaves) against central differences.
void check_gradients(const std::string& name, const Function& f, const std::vector<Shape>& shapes,
                     const std::vector<std::pair<double, double>>& ranges) {
  INFO(name);
  std::vector<std::vector<double>> values;
  std::vector<Tensor> leaves;
  for (size_t at = 0; at < shapes.size(); ++at) {
    int64_t count = 1;
    for (int64_t size : shapes[at]) count *= size;
    const auto [low, high] = at < ranges.size() ? ranges[at] : ranges.back();
    values.push_back(values_between(count, low, high, static_cast<int>(at)));
    leaves.push_back(Tensor::from_vector(values.back(), shapes[at]).requires_grad_());
  }
  const Tensor value = f(leaves);
  REQUIRE(value.requires_grad());
  const std::vector<double> weights = values_between(value.numel(), 0.5, 1.5, 99);
  const Tensor weight = Tensor::from_vector(weights, value.shape()).cast(value.dtype());
  const std::vector<Tensor> gradients = grad({value}, leaves, {weight});
  for (size_t at = 0; at < leaves.size(); ++at) {
    INFO("input " << at);
    REQUIRE(gradients[at].shape() == shapes[at]);
    const std::vector<double> analytic = gradients[at].to_vector<double>();
    for (size_t element = 0; element < values[at].size(); ++element) {
      const double step = 1e-6 * std::max(1.0, std::fabs(values[at][element]));
      auto shifted = [&](double by) {
        std::vector<Tensor> moved;
        for (size_t other = 0; other < leaves.size(); ++other) {
          std::vector<double> copy = values[other];
          if (other == at) copy[element] += by;
          moved.push_back(Tensor::from_vector(copy, shapes[other]));
        }
        return weighted_value(f, moved);
      };
      const double numeric = (shifted(step) - shifted(-step)) / (2 * step);
      INFO("element " << element << ": analytic " << analytic[element] << ", numeric " << numeric);
      CHECK(std::fabs(analytic[element] - numeric) <= 1e-5 * std::max(1.0, std::fabs(numeric)));
    }
  }
}

}  // namespace

TEST_CASE("unary math gradients match central differences", "[autograd]") {
  const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> ops = {
      {"neg", [](const Tensor& x) { return -x; }},
      {"abs", [](const Tensor& x) { return x.abs(); }},
      {"reciprocal", [](const Tensor& x) { return x.reciprocal(); }},
      {"sqrt", [](const Tensor& x) { return x.sqrt(); }},
      {"rsqrt", [](const Tensor& x) { return x.rsqrt(); }},
      {"exp", [](const Tensor& x) { return x.exp(); }},
      {"exp2", [](const Tensor& x) { return x.exp2(); }},
      {"log", [](const Tensor& x) { return x.log(); }},
      {"log2", [](const Tensor& x) { return x.log2(); }},
      {"log10", [](const Tensor& x) { return x.log10(); }},
      {"log1p", [](const Tensor& x) { return x.log1p(); }},
      {"expm1", [](const Tensor& x) { return x.expm1(); }},
      {"sin", [](const Tensor& x) { return x.sin(); }},
      {"cos", [](const Tensor& x) { return x.cos(); }},
      {"tan", [](const Tensor& x) { return x.tan(); }},
      {"tanh", [](const Tensor& x) { return x.tanh(); }},
      {"erf", [](const Tensor& x) { return x.erf(); }},
      {"asin", [](const Tensor& x) { return (x * 0.5).asin(); }},
      {"acos", [](const Tensor& x) { return (x * 0.5).acos(); }},
      {"atan", [](const Tensor& x) { return x.atan(); }},
      {"sinh", [](const Tensor& x) { return x.sinh(); }},
      {"cosh", [](const Tensor& x) { return x.cosh(); }},
      {"asinh", [](const Tensor& x) { return x.asinh(); }},
      {"acosh", [](const Tensor& x) { return (x + 1.5).acosh(); }},
      {"atanh", [](const Tensor& x) { return (x * 0.5).atanh(); }},
      {"sigmoid", [](const Tensor& x) { return x.sigmoid(); }},
      {"gelu", [](const Tensor& x) { return x.gelu(); }},
      {"silu", [](const Tensor& x) { return x.silu(); }},
      {"relu", [](const Tensor& x) { return (x - 1.0).relu(); }},
      {"square", [](const Tensor& x) { return x.square(); }},
      {"clamp", [](const Tensor& x) { return x.clamp(0.5, 1.2); }},
      {"floor", [](const Tensor& x) { return x.floor() + x; }},
  };
  for (const auto& [name, op] : ops) {
    check_gradients(name, [&](const std::vector<Tensor>& x) { return op(x[0]); }, {{3, 5}},
                    {{0.1, 1.9}});
  }
}

TEST_CASE("binary gradients reach both operands through broadcasting", "[autograd]") {
  const std::vector<std::pair<std::string, Function>> ops = {
      {"add", [](const std::vector<Tensor>& x) { return x[0] + x[1]; }},
      {"sub", [](const std::vector<Tensor>& x) { return x[0] - x[1]; }},
      {"mul", [](const std::vector<Tensor>& x) { return x[0] * x[1]; }},
      {"div", [](const std::vector<Tensor>& x) { return x[0] / x[1]; }},
      {"maximum", [](const std::vector<Tensor>& x) { return maximum(x[0], x[1]); }},
      {"minimum", [](const std::vector<Tensor>& x) { return minimum(x[0], x[1]); }},
      {"pow", [](const std::vector<Tensor>& x) { return pow(x[0], x[1]); }},
      {"atan2", [](const std::vector<Tensor>& x) { return atan2(x[0], x[1] - 1.0); }},
      {"hypot", [](const std::vector<Tensor>& x) { return hypot(x[0], x[1]); }},
      {"fmod", [](const std::vector<Tensor>& x) { return (x[0] * 3.0) % x[1]; }},
      {"where", [](const std::vector<Tensor>& x) { return where(x[0] > 1.0, x[0] * 2.0, x[1]); }},
  };
  for (const auto& [name, op] : ops)
    check_gradients(name, op, {{2, 3, 4}, {3, 1}}, {{0.2, 1.8}, {0.3, 1.7}});
}

TEST_CASE("tensor-scalar ops differentiate in either order", "[autograd]") {
  const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> ops = {
      {"x + 2", [](const Tensor& x) { return x + 2.0; }},
      {"2 - x", [](const Tensor& x) { return 2.0 - x; }},
      {"x * 3", [](const Tensor& x) { return x * 3.0; }},
      {"2 / x", [](const Tensor& x) { return 2.0 / x; }},
      {"x / 4", [](const Tensor& x) { return x / 4.0; }},
      {"x ^ 3", [](const Tensor& x) { return x.pow(3.0); }},
      {"x ^ 0.5", [](const Tensor& x) { return x.pow(0.5); }},
      {"x * x", [](const Tensor& x) { return x * x; }},
  };
  for (const auto& [name, op] : ops)
    check_gradients(name, [&](const std::vector<Tensor>& x) { return op(x[0]); }, {{4, 3}},
                    {{0.2, 1.8}});
}

TEST_CASE("movement gradients put each element back where it came from", "[autograd]") {
  const std::vector<std::pair<std::string, Function>> ops = {
      {"reshape",
       [](const std::vector<Tensor>& x) {
         return x[0].reshape({6, 4}) * 1.0;
       }},
      {"permute",
       [](const std::vector<Tensor>& x) {
         return x[0].permute({2, 0, 1});
       }},
      {"transpose", [](const std::vector<Tensor>& x) { return x[0].transpose(0, 2); }},
      {"expand",
       [](const std::vector<Tensor>& x) {
         return x[0].shrink({{0, 2}, {0, 1}, {0, 4}}).expand({5, 2, 3, 4});
       }},
      {"pad",
       [](const std::vector<Tensor>& x) {
         return x[0].pad({{1, 0}, {0, 2}, {1, 1}});
       }},
      {"pad with 1.5",
       [](const std::vector<Tensor>& x) {
         return x[0].pad({{0, 1}, {2, 0}, {0, 0}}, 1.5) * x[0].pad({{0, 1}, {2, 0}, {0, 0}});
       }},
      {"shrink",
       [](const std::vector<Tensor>& x) {
         return x[0].shrink({{1, 2}, {0, 2}, {1, 3}});
       }},
      {"flip",
       [](const std::vector<Tensor>& x) {
         return x[0].flip({0, 2});
       }},
      {"slice with steps",
       [](const std::vector<Tensor>& x) {
         return x[0].slice(2, 3, 0, -2).slice(1, 0, 3, 2) * x[0].slice(1, 0, 3, 2).slice(2, 0, 2);
       }},
      {"squeeze and unsqueeze",
       [](const std::vector<Tensor>& x) {
         return x[0].shrink({{0, 1}}).squeeze(0).unsqueeze(1).flatten(0, -1);
       }},
      {"cat",
       [](const std::vector<Tensor>& x) {
         return cat({x[0], x[0].flip({1}) * 2.0}, 1);
       }},
      {"stack",
       [](const std::vector<Tensor>& x) {
         return stack({x[0], x[0].exp()}, 2);
       }},
  };
  for (const auto& [name, op] : ops) check_gradients(name, op, {{2, 3, 4}}, {{-1.0, 1.0}});
}

TEST_CASE("reduction gradients, ties and zeros included", "[autograd]") {
  const std::vector<std::pair<std::string, Function>> ops = {
      {"sum", [](const std::vector<Tensor>& x) { return x[0].sum({1}); }},
      {"sum keepdim",
       [](const std::vector<Tensor>& x) {
         return x[0].sum({0, 2}, true);
       }},
      {"sum all", [](const std::vector<Tensor>& x) { return x[0].sum(); }},
      {"mean", [](const std::vector<Tensor>& x) { return x[0].mean({2}); }},
      {"max", [](const std::vector<Tensor>& x) { return x[0].max({1}); }},
      {"min",
       [](const std::vector<Tensor>& x) {
         return x[0].min({0, 2});
       }},
      {"prod", [](const std::vector<Tensor>& x) { return x[0].prod({2}); }},
      {"var", [](const std::vector<Tensor>& x) { return x[0].var({1}); }},
      {"std", [](const std::vector<Tensor>& x) { return x[0].std({2}, true); }},
      {"softmax", [](const std::vector<Tensor>& x) { return x[0].softmax(1); }},
      {"log_softmax", [](const std::vector<Tensor>& x) { return x[0].log_softmax(-1); }},
      {"logsumexp", [](const std::vector<Tensor>& x) { return x[0].logsumexp(1); }},
  };
  for (const auto& [name, op] : ops) check_gradients(name, op, {{2, 3, 4}}, {{-1.0, 1.0}});

  // Tied maxima share the gradient; a product with one zero passes the rest's product to it,
  // with two zeros nothing.
  const Tensor tied = Tensor::from_vector(std::vector<double>{1, 3, 3, 2}, {4}).requires_grad_();
  CHECK(grad({tied.max()}, {tied})[0].to_vector<double>() == std::vector<double>{0, 0.5, 0.5, 0});
  const Tensor one_zero =
      Tensor::from_vector(std::vector<double>{2, 0, 3, 5}, {4}).requires_grad_();
  CHECK(grad({one_zero.prod()}, {one_zero})[0].to_vector<double>() ==
        std::vector<double>{0, 30, 0, 0});
  const Tensor two_zeros =
      Tensor::from_vector(std::vector<double>{2, 0, 3, 0}, {4}).requires_grad_();
  CHECK(grad({two_zeros.prod()}, {two_zeros})[0].to_vector<double>() ==
        std::vector<double>{0, 0, 0, 0});
}

TEST_CASE("matmul gradients for every operand rank and broadcast batch", "[autograd]") {
  const Function product = [](const std::vector<Tensor>& x) { return matmul(x[0], x[1]); };
  check_gradients("2-D", product, {{3, 4}, {4, 5}}, {{-1.0, 1.0}});
  check_gradients("batched, broadcast", product, {{2, 3, 4}, {4, 2}}, {{-1.0, 1.0}});
  check_gradients("batch of one", product, {{1, 3, 4}, {2, 4, 2}}, {{-1.0, 1.0}});
  check_gradients("vector @ matrix", product, {{4}, {4, 3}}, {{-1.0, 1.0}});
  check_gradients("matrix @ vector", product, {{3, 4}, {4}}, {{-1.0, 1.0}});
  check_gradients("vector @ vector", product, {{4}, {4}}, {{-1.0, 1.0}});
}

TEST_CASE("gathers send gradients back to the rows they read, repeats added", "[autograd]") {
  const Tensor rows = Tensor::from_vector(std::vector<int32_t>{2, 0, 2, -1}, {4});
  check_gradients("index_select",
                  [&](const std::vector<Tensor>& x) { return x[0].index_select(0, rows); },
                  {{5, 3}}, {{-1.0, 1.0}});
  check_gradients("embedding",
                  [&](const std::vector<Tensor>& x) {
                    return embedding(rows.reshape({2, 2}), x[0]);
                  },
                  {{5, 3}}, {{-1.0, 1.0}});
  const Tensor index = Tensor::from_vector(std::vector<int64_t>{1, 0, 2, 2, 1, 0}, {2, 3});
  check_gradients("gather", [&](const std::vector<Tensor>& x) { return x[0].gather(1, index); },
                  {{2, 4}}, {{-1.0, 1.0}});
}

TEST_CASE("nn layers built from ops differentiate through them", "[autograd]") {
  check_gradients("linear + layer_norm + gelu",
                  [](const std::vector<Tensor>& x) {
                    return nn::layer_norm(nn::linear(x[0], x[1], x[2]), {3}).gelu();
                  },
                  {{2, 4}, {3, 4}, {3}}, {{-1.0, 1.0}});
  const Tensor labels = Tensor::from_vector(std::vector<int64_t>{2, 0, 1}, {3});
  check_gradients("cross_entropy",
                  [&](const std::vector<Tensor>& x) { return nn::cross_entropy(x[0], labels); },
                  {{3, 4}}, {{-2.0, 2.0}});
  check_gradients("mse_loss", [](const std::vector<Tensor>& x) { return nn::mse_loss(x[0], x[1]); },
                  {{3, 4}, {3, 4}}, {{-2.0, 2.0}});
}

TEST_CASE("convolution, pooling and resampling differentiate through their window views",
          "[autograd]") {
  nn::ConvOptions strided;
  strided.stride = {2, 1};
  strided.padding = 1;
  strided.dilation = {1, 2};
  check_gradients(
      "conv2d with bias, stride, padding, dilation",
      [&](const std::vector<Tensor>& x) { return nn::conv2d(x[0], x[1], x[2], strided); },
      {{1, 2, 5, 6}, {3, 2, 3, 2}, {3}}, {{-1.0, 1.0}});
  nn::ConvOptions grouped;
  grouped.groups = 2;
  check_gradients("conv1d in groups",
                  [&](const std::vector<Tensor>& x) { return nn::conv1d(x[0], x[1], {}, grouped); },
                  {{2, 4, 7}, {2, 2, 3}}, {{-1.0, 1.0}});
  nn::ConvTransposeOptions upsampling;
  upsampling.stride = {2};
  check_gradients("conv_transpose1d",
                  [&](const std::vector<Tensor>& x) {
                    return nn::conv_transpose1d(x[0], x[1], {}, upsampling);
                  },
                  {{1, 2, 4}, {2, 3, 3}}, {{-1.0, 1.0}});
  nn::PoolOptions overlapping;
  overlapping.kernel_size = {3};
  overlapping.stride = {2};
  overlapping.padding = {1};
  check_gradients("max_pool2d, overlapping windows",
                  [&](const std::vector<Tensor>& x) { return nn::max_pool2d(x[0], overlapping); },
                  {{1, 2, 5, 5}}, {{-1.0, 1.0}});
  check_gradients("avg_pool2d, overlapping windows",
                  [&](const std::vector<Tensor>& x) { return nn::avg_pool2d(x[0], overlapping); },
                  {{1, 2, 5, 5}}, {{-1.0, 1.0}});
  check_gradients("adaptive_avg_pool1d",
                  [](const std::vector<Tensor>& x) { return nn::adaptive_avg_pool1d(x[0], {3}); },
                  {{1, 2, 7}}, {{-1.0, 1.0}});
  nn::InterpolateOptions bilinear;
  bilinear.size = {5, 3};
  bilinear.mode = nn::InterpolateMode::Linear;
  check_gradients("bilinear interpolation",
                  [&](const std::vector<Tensor>& x) { return nn::interpolate(x[0], bilinear); },
                  {{1, 1, 3, 4}}, {{-1.0, 1.0}});
  check_gradients("reflect padding",
                  [](const std::vector<Tensor>& x) {
                    return nn::pad(x[0], {2, 1}, nn::PadMode::Reflect);
                  },
                  {{1, 2, 4}}, {{-1.0, 1.0}});
}

TEST_CASE("attention's gradient reaches q, k, v and a float mask", "[autograd]") {
  check_gradients("plain",
                  [](const std::vector<Tensor>& x) {
                    return nn::scaled_dot_product_attention(x[0], x[1], x[2]);
                  },
                  {{2, 3, 4}, {2, 5, 4}, {2, 5, 3}}, {{-1.0, 1.0}});
  check_gradients("causal, grouped heads",
                  [](const std::vector<Tensor>& x) {
                    return nn::scaled_dot_product_attention(x[0], x[1], x[2], {}, true);
                  },
                  {{1, 4, 3, 2}, {1, 2, 3, 2}, {1, 2, 3, 3}}, {{-1.0, 1.0}});
  check_gradients("float mask and scale",
                  [](const std::vector<Tensor>& x) {
                    return nn::scaled_dot_product_attention(x[0], x[1], x[2], x[3], false, 0.7);
                  },
                  {{3, 2}, {4, 2}, {4, 2}, {3, 4}}, {{-1.0, 1.0}});
  // A bool mask that drops a whole row: its output, and so its gradients, are 0.
  const Tensor keep =
      Tensor::from_vector(std::vector<uint8_t>{1, 0, 1, 0, 0, 0}, {2, 3}).cast(dtypes::bool_);
  check_gradients("bool mask with a dropped row",
                  [&](const std::vector<Tensor>& x) {
                    return nn::scaled_dot_product_attention(x[0], x[1], x[2], keep);
                  },
                  {{2, 2}, {3, 2}, {3, 2}}, {{-1.0, 1.0}});
}

TEST_CASE("scatter and scatter_add send gradients to the destination and the values",
          "[autograd]") {
  const Tensor index = Tensor::from_vector(std::vector<int64_t>{2, 0, 2, 1, 0, 0}, {2, 3});
  check_gradients("scatter_add",
                  [&](const std::vector<Tensor>& x) { return x[0].scatter_add(1, index, x[1]); },
                  {{2, 4}, {2, 3}}, {{-1.0, 1.0}});
  const Tensor distinct = Tensor::from_vector(std::vector<int64_t>{2, 0, 3, 1, 0, 2}, {2, 3});
  check_gradients("scatter",
                  [&](const std::vector<Tensor>& x) { return x[0].scatter(1, distinct, x[1]); },
                  {{2, 4}, {2, 3}}, {{-1.0, 1.0}});
  const Tensor w = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {4}).requires_grad_();
  const Tensor at = Tensor::from_vector(std::vector<int64_t>{0, 0}, {2});
  const Tensor src = Tensor::from_vector(std::vector<float>{5, 6}, {2});
  CHECK_THROWS_WITH(w.scatter_reduce(0, at, src, "amax").sum().backward(),
                    Catch::Contains("not implemented yet"));
}

TEST_CASE("copies between devices and contiguous copies pass gradients through", "[autograd]") {
  for (const std::string& device : devices()) {
    INFO(device);
    const Tensor w = Tensor::from_vector(std::vector<float>{1, 2, 3}, {3}).requires_grad_();
    const Tensor moved = (w.to(device) * 2.0).contiguous();
    const std::vector<Tensor> gradients = grad({(moved * moved).sum()}, {w});
    CHECK(gradients[0].to_vector<float>() == std::vector<float>{8, 16, 24});
  }
}

TEST_CASE("sorting, scans and the shape helpers differentiate through the ops they are built of",
          "[autograd]") {
  const std::vector<std::pair<std::string, Function>> ops = {
      {"sort", [](const std::vector<Tensor>& x) { return sort(x[0], 1).first; }},
      {"sort descending", [](const std::vector<Tensor>& x) { return sort(x[0], 0, true).first; }},
      {"topk", [](const std::vector<Tensor>& x) { return topk(x[0], 2, -1).first; }},
      {"cumsum", [](const std::vector<Tensor>& x) { return x[0].cumsum(1); }},
      {"cumprod", [](const std::vector<Tensor>& x) { return cumprod(x[0], 1); }},
      {"cummax", [](const std::vector<Tensor>& x) { return cummax(x[0], 1).first; }},
      {"cummin", [](const std::vector<Tensor>& x) { return cummin(x[0], 0).first; }},
      {"logcumsumexp", [](const std::vector<Tensor>& x) { return logcumsumexp(x[0], 1); }},
      {"split and roll",
       [](const std::vector<Tensor>& x) { return split(roll(x[0], 1, 1), 2, 1)[1] * 2.0; }},
      {"repeat_interleave and tril",
       [](const std::vector<Tensor>& x) { return tril(repeat_interleave(x[0], 2, 0)); }},
      {"diagonal", [](const std::vector<Tensor>& x) { return diagonal(x[0], 1); }},
      {"einsum",
       [](const std::vector<Tensor>& x) {
         return einsum("ij,kj->ik", {x[0], x[0]});
       }},
  };
  for (const auto& [name, op] : ops) check_gradients(name, op, {{3, 4}}, {{0.2, 1.8}});
}

TEST_CASE("backward accumulates into leaves and frees the graph it walked", "[autograd]") {
  const Tensor w = Tensor::from_vector(std::vector<double>{1, 2, 3}, {3}).requires_grad_();
  const Tensor c = Tensor::from_vector(std::vector<double>{4, 5, 6}, {3});
  CHECK(w.is_leaf());
  CHECK(!w.grad().defined());
  const Tensor loss = (w * c).sum();
  CHECK(loss.requires_grad());
  CHECK(!loss.is_leaf());
  CHECK(!c.requires_grad());
  loss.backward({}, /*retain_graph=*/true);
  CHECK(w.grad().to_vector<double>() == std::vector<double>{4, 5, 6});
  loss.backward();  // adds
  CHECK(w.grad().to_vector<double>() == std::vector<double>{8, 10, 12});
  CHECK_THROWS_AS(loss.backward(), ValueError);  // freed by the second
  w.set_grad(Tensor());
  CHECK(!w.grad().defined());

  // A realized intermediate keeps its recorded op.
  const Tensor square = w * w;
  square.realize();
  square.sum().backward();
  CHECK(w.grad().to_vector<double>() == std::vector<double>{2, 4, 6});

  // A non-scalar takes a gradient of its shape.
  w.set_grad(Tensor());
  const Tensor doubled = w * 2.0;
  CHECK_THROWS_AS(doubled.backward(), ValueError);
  doubled.backward(Tensor::from_vector(std::vector<double>{1, 0, -1}, {3}));
  CHECK(w.grad().to_vector<double>() == std::vector<double>{2, 0, -2});
}

TEST_CASE("no-gradient scopes, detach and the errors", "[autograd]") {
  const Tensor w = Tensor::from_vector(std::vector<float>{1, 2}, {2}).requires_grad_();
  {
    NoGradGuard outer;
    CHECK(!grad_enabled());
    {
      NoGradGuard inner;
      CHECK(!(w * 2.0).requires_grad());
    }
    CHECK(!grad_enabled());
    CHECK(!(w + w).requires_grad());
  }
  CHECK(grad_enabled());
  CHECK((w + w).requires_grad());

  const Tensor cut = (w * 3.0).detach();
  CHECK(!cut.requires_grad());
  CHECK(cut.is_leaf());
  CHECK((w * cut).sum().requires_grad());
  CHECK(grad({(w * cut).sum()}, {w})[0].to_vector<float>() == std::vector<float>{3, 6});

  // An input no output depends on gets zeros.
  const Tensor unused = Tensor::from_vector(std::vector<float>{5}, {1}).requires_grad_();
  const std::vector<Tensor> both = grad({w.sum()}, {w, unused});
  CHECK(both[1].to_vector<float>() == std::vector<float>{0});

  CHECK_THROWS_AS(Tensor::from_vector(std::vector<int32_t>{1}, {1}).requires_grad_(), DTypeError);
  CHECK_THROWS_AS((w * 2.0).requires_grad_(), ValueError);
  const Tensor plain = Tensor::from_vector(std::vector<float>{1}, {1});
  CHECK_THROWS_WITH(plain.sum().backward(), Catch::Contains("does not require a gradient"));
  CHECK_THROWS_AS(grad({w.sum()}, {plain}), ValueError);
  CHECK_THROWS_AS(w.sum().backward(Tensor::from_vector(std::vector<float>{1, 1}, {2})), ShapeError);
  // A cast to float32 and back passes the gradient through, in each dtype.
  const Tensor wide = Tensor::from_vector(std::vector<double>{0.1, 0.2}, {2}).requires_grad_();
  const Tensor narrowed = (wide.cast(dtypes::float32) * 2.0).cast(dtypes::float64);
  CHECK(grad({narrowed.sum()}, {wide})[0].to_vector<double>() == std::vector<double>{2, 2});
  // Comparisons and integer casts carry no gradient.
  CHECK(!(w > 1.0).requires_grad());
  CHECK(!w.cast(dtypes::int32).requires_grad());
}

TEST_CASE("an MLP's gradients are the CPU's on every device", "[autograd]") {
  const std::vector<float> input = [] {
    std::vector<float> values;
    for (int index = 0; index < 8 * 6; ++index) values.push_back(std::sin(0.37f * index));
    return values;
  }();
  const std::vector<float> first_weights = [] {
    std::vector<float> values;
    for (int index = 0; index < 5 * 6; ++index) values.push_back(0.3f * std::cos(0.71f * index));
    return values;
  }();
  const std::vector<float> second_weights = [] {
    std::vector<float> values;
    for (int index = 0; index < 3 * 5; ++index) values.push_back(0.4f * std::sin(1.3f * index));
    return values;
  }();
  const Tensor labels_cpu = Tensor::from_vector(std::vector<int64_t>{0, 1, 2, 1, 0, 2, 2, 1}, {8});
  auto gradients_on = [&](const std::string& device) {
    const Tensor x = Tensor::from_vector(input, {8, 6}, device);
    const Tensor w1 = Tensor::from_vector(first_weights, {5, 6}, device).requires_grad_();
    const Tensor w2 = Tensor::from_vector(second_weights, {3, 5}, device).requires_grad_();
    const Tensor logits = nn::linear(nn::linear(x, w1).relu(), w2);
    nn::cross_entropy(logits, labels_cpu.to(device)).backward();
    return std::vector<std::vector<float>>{w1.grad().to_vector<float>(),
                                           w2.grad().to_vector<float>()};
  };
  const auto expected = gradients_on("CPU");
  for (const std::string& device : devices()) {
    INFO(device);
    const auto got = gradients_on(device);
    for (size_t which = 0; which < expected.size(); ++which)
      for (size_t index = 0; index < expected[which].size(); ++index)
        CHECK(got[which][index] == Approx(expected[which][index]).margin(1e-6).epsilon(1e-4));
  }
}

TEST_CASE("writes in place while recording are refused, and the documented update runs",
          "[autograd]") {
  Generator generator(/*seed=*/0);
  Tensor w = random::normal(generator, {4, 3}, 0.0, 0.05);
  w.realize().requires_grad_();
  const Tensor x = Tensor::from_vector(std::vector<float>(8, 0.5f), {2, 4});
  const Tensor labels = Tensor::from_vector(std::vector<int64_t>{0, 2}, {2});
  const Tensor loss = nn::cross_entropy(x.matmul(w), labels);
  const std::vector<Tensor> gradients = grad({loss}, {w});
  const std::vector<float> before = w.to_vector<float>();
  CHECK_THROWS_WITH(w.assign(w - gradients[0] * 0.1), Catch::Contains("NoGradGuard"));
  CHECK(w.to_vector<float>() == before);  // nothing written
  Tensor plain = Tensor::from_vector(std::vector<float>(12, 0.0f), {4, 3});
  CHECK_THROWS_AS(plain.assign(w * 2.0), ValueError);
  {
    NoGradGuard updating;
    w.assign(w - gradients[0] * 0.1);
  }
  const std::vector<float> step = gradients[0].to_vector<float>();
  const std::vector<float> after = w.to_vector<float>();
  for (size_t at = 0; at < after.size(); ++at)
    CHECK(after[at] == Approx(before[at] - 0.1f * step[at]).margin(1e-7));
  CHECK(w.is_leaf());
  CHECK(w.requires_grad());
}

TEST_CASE("relu's gradient at 0, freed records and stored gradients", "[autograd]") {
  const Tensor x = Tensor::from_vector(std::vector<float>{-1, 0, 2}, {3}).requires_grad_();
  CHECK(grad({x.relu().sum()}, {x})[0].to_vector<float>() == std::vector<float>{0, 0, 1});
  const Tensor doubled = x * 2.0;
  doubled.sum().backward();
  // Freed by the backward pass: neither a leaf nor markable as one.
  CHECK(!doubled.is_leaf());
  CHECK_THROWS_AS(doubled.requires_grad_(), ValueError);
  CHECK(!x.grad().requires_grad());
  // A gradient given to backward that itself requires one is stored without its record.
  const Tensor y = x * 1.0;
  y.backward(x * 0.0 + 1.0);
  CHECK(!x.grad().requires_grad());
  x.set_grad(x * 3.0);
  CHECK(!x.grad().requires_grad());
}

TEST_CASE("attention's gradient ignores dropped keys' values and runs in half precision",
          "[autograd]") {
  // The last key is masked off and its value is NaN: the gradients stay finite.
  std::vector<float> values = {0.1f, 0.2f, -0.3f, 0.4f, NAN, NAN};
  const Tensor q =
      Tensor::from_vector(std::vector<float>{0.5f, -0.2f, 0.1f, 0.3f}, {2, 2}).requires_grad_();
  const Tensor k =
      Tensor::from_vector(std::vector<float>{0.2f, 0.1f, -0.4f, 0.3f, 0.9f, 0.8f}, {3, 2})
          .requires_grad_();
  const Tensor v = Tensor::from_vector(values, {3, 2}).requires_grad_();
  const Tensor keep =
      Tensor::from_vector(std::vector<uint8_t>{1, 1, 0, 1, 1, 0}, {2, 3}).cast(dtypes::bool_);
  const Tensor out = nn::scaled_dot_product_attention(q, k, v, keep);
  for (const Tensor& gradient : grad({out.sum()}, {q, k}))
    for (float element : gradient.to_vector<float>()) CHECK(std::isfinite(element));
  // float16 operands: the gradients come back in float16, close to float32's.
  const Tensor q16 = q.detach().cast(dtypes::float16).requires_grad_();
  const Tensor k16 = k.detach().cast(dtypes::float16).requires_grad_();
  const Tensor v16 =
      Tensor::from_vector(std::vector<float>{0.1f, 0.2f, -0.3f, 0.4f, 0.5f, 0.6f}, {3, 2})
          .cast(dtypes::float16)
          .requires_grad_();
  const std::vector<Tensor> half =
      grad({nn::scaled_dot_product_attention(q16, k16, v16).sum()}, {q16, k16, v16});
  const Tensor q32 = q16.detach().cast(dtypes::float32).requires_grad_();
  const Tensor k32 = k16.detach().cast(dtypes::float32).requires_grad_();
  const Tensor v32 = v16.detach().cast(dtypes::float32).requires_grad_();
  const std::vector<Tensor> full =
      grad({nn::scaled_dot_product_attention(q32, k32, v32).sum()}, {q32, k32, v32});
  for (size_t which = 0; which < 3; ++which) {
    CHECK(half[which].dtype() == dtypes::float16);
    const std::vector<float> got = half[which].cast(dtypes::float32).to_vector<float>();
    const std::vector<float> want = full[which].to_vector<float>();
    for (size_t at = 0; at < got.size(); ++at) CHECK(got[at] == Approx(want[at]).margin(2e-3));
  }
}

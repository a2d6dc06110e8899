// kiln::realize({a, b, ...}) (include/kiln/tensor.h): several tensors scheduled as one graph, so
// work they share runs once; CapturedStep captures its outputs that way. Values are checked
// against double-precision references computed here.

#include <catch2/catch.hpp>

#include <kiln/kiln.h>

#include <cmath>
#include <vector>

#include "core/uop.h"
#include "tests/test_support.h"

using namespace kiln;
using kiln::testing::contains;

namespace {

std::vector<float> ramp(int64_t count, float start) {
  std::vector<float> values(count);
  for (int64_t i = 0; i < count; ++i) values[i] = start + 0.25f * static_cast<float>(i % 13);
  return values;
}

// Softmax over the rows of a [rows, columns] matrix, in double precision.
std::vector<double> softmax_rows(const std::vector<float>& values, int64_t rows, int64_t columns) {
  std::vector<double> out(values.size());
  for (int64_t row = 0; row < rows; ++row) {
    double largest = -INFINITY, total = 0;
    for (int64_t c = 0; c < columns; ++c)
      largest = std::max<double>(largest, values[row * columns + c]);
    for (int64_t c = 0; c < columns; ++c) total += std::exp(values[row * columns + c] - largest);
    for (int64_t c = 0; c < columns; ++c)
      out[row * columns + c] = std::exp(values[row * columns + c] - largest) / total;
  }
  return out;
}

void check_close(const Tensor& tensor, const std::vector<double>& want) {
  const std::vector<float> got = tensor.to_vector<float>();
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    CHECK(got[i] == Approx(want[i]).epsilon(1e-5).margin(1e-7));
  }
}

bool is_computed(const Tensor& tensor) {
  const auto node = tensor.node();
  return node->op() == Op::Buffer || (node->op() == Op::View && node->src()->op() == Op::Buffer);
}

}  // namespace

TEST_CASE("realize computes several tensors that share work together, on every device",
          "[realize]") {
  for (const std::string& device : devices()) {
    INFO(device);
    const std::vector<float> values = ramp(6 * 40, -2.0f);
    const Tensor x = Tensor::from_vector(values, {6, 40}, device);
    const Tensor probabilities = x.softmax(-1);
    const Tensor doubled = probabilities * 2;
    const Tensor row_sums = probabilities.sum({1});
    realize({probabilities, doubled, row_sums});
    CHECK(is_computed(probabilities));
    CHECK(is_computed(doubled));
    CHECK(is_computed(row_sums));
    const std::vector<double> want = softmax_rows(values, 6, 40);
    check_close(probabilities, want);
    std::vector<double> twice(want.size()), sums(6, 0.0);
    for (size_t i = 0; i < want.size(); ++i) twice[i] = 2 * want[i], sums[i / 40] += want[i];
    check_close(doubled, twice);
    check_close(row_sums, sums);
  }
}

TEST_CASE("realize: empty lists, repeats, computed tensors, devices, empty tensors", "[realize]") {
  realize({});  // nothing to do
  const std::vector<float> values = ramp(33, 1.0f);
  const Tensor x = Tensor::from_vector(values, {33}, "CPU");
  const Tensor y = (x + 1).exp();
  // Listed twice, and beside a tensor computed already (x) and a view of one.
  realize({y, x, y, x.reshape({3, 11})});
  CHECK(is_computed(y));
  std::vector<double> want(values.size());
  for (size_t i = 0; i < values.size(); ++i) want[i] = std::exp(values[i] + 1.0);
  check_close(y, want);
  // Tensors on several devices: each device's group in one realize.
  std::vector<Tensor> across;
  for (const std::string& device : devices()) across.push_back(x.to(device) * 3);
  realize(across);
  for (const Tensor& tensor : across) {
    CHECK(is_computed(tensor));
    std::vector<double> tripled(values.begin(), values.end());
    for (double& value : tripled) value *= 3;
    check_close(tensor, tripled);
  }
  // An empty tensor is refused before anything runs: the other tensor stays uncomputed.
  const Tensor pending = x * 5;
  try {
    realize({pending, Tensor()});
    FAIL("an empty tensor was accepted");
  } catch (const Error& error) {
    CHECK(contains(error.what(), "[realize] tensor 1 of the 2 given is empty"));
  }
  CHECK_FALSE(is_computed(pending));
}

TEST_CASE("a captured step's outputs that share work launch it once per replay",
          "[realize][capture]") {
  CapturedStep step([](const std::vector<Tensor>& in) {
    const Tensor probabilities = in[0].softmax(-1);
    return std::vector<Tensor>{probabilities, probabilities * 2};
  });
  const std::vector<float> values = ramp(4 * 64, -1.0f);
  const Tensor x = Tensor::from_vector(values, {4, 64}, "CPU");
  step({x});
  const std::vector<Tensor> outputs = step({x});
  REQUIRE(step.captured());
  // Softmax's kernels (the max, the sum, the quotient) once, then the doubling: 4, where
  // realizing the outputs one after another would compute the softmax for each (6).
  CHECK(step.kernels() == 4);
  const std::vector<double> want = softmax_rows(values, 4, 64);
  check_close(outputs[0], want);
  std::vector<double> twice(want.size());
  for (size_t i = 0; i < want.size(); ++i) twice[i] = 2 * want[i];
  check_close(outputs[1], twice);
  const Tensor other = Tensor::from_vector(ramp(4 * 64, 0.5f), {4, 64}, "CPU");
  check_close(step({other})[0], softmax_rows(ramp(4 * 64, 0.5f), 4, 64));
}

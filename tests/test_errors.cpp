// Bad input gets a typed error naming the op, the operands and what would be valid; the operands
// stay usable afterwards.

#include <catch2/catch.hpp>

#include <kiln/kiln.h>

#include <string>

#include "tests/test_support.h"

using namespace kiln;
using Catch::Matchers::Contains;
using testing::contains;

namespace {

Tensor matrix(int64_t rows, int64_t columns) {
  std::vector<float> values(static_cast<size_t>(rows * columns));
  for (size_t index = 0; index < values.size(); ++index) values[index] = static_cast<float>(index);
  return Tensor::from_vector(values, {rows, columns});
}

}  // namespace

TEST_CASE("shape errors name the op and the shapes", "[errors]") {
  const Tensor a = matrix(2, 3);
  const Tensor b = matrix(4, 5);
  CHECK_THROWS_MATCHES(
      a + b, ShapeError, Catch::Matchers::Predicate<ShapeError>([](const ShapeError& error) {
        const std::string text = error.what();
        return contains(text, "[add]") && contains(text, "(2, 3)") && contains(text, "(4, 5)");
      }));
  CHECK_THROWS_WITH(a.reshape({4, 2}),
                    Contains("[reshape]") && Contains("6 elements") && Contains("(4, 2)"));
  CHECK_THROWS_AS(a.reshape({-1, -1}), ShapeError);
  CHECK_THROWS_WITH(a.reshape({-1, 4}), Contains("[reshape]") && Contains("-1"));
  CHECK_THROWS_WITH(a.permute({0, 0}), Contains("[permute]") && Contains("repeated"));
  CHECK_THROWS_WITH(a.permute({0}), Contains("[permute]") && Contains("needs 2 axes"));
  CHECK_THROWS_WITH(a.sum({2}), Contains("[sum]") && Contains("axis 2") && Contains("-2 to 1"));
  CHECK_THROWS_WITH(a.sum({0, -2}), Contains("repeated"));
  CHECK_THROWS_WITH(a.expand({4, 3}), Contains("[expand]") && Contains("only size-1"));
  CHECK_THROWS_WITH(a.pad({{1, 1}}), Contains("[pad]") && Contains("per dimension"));
  CHECK_THROWS_WITH(a.pad({{-1, 0}, {0, 0}}), Contains("non-negative"));
  CHECK_THROWS_WITH(a.shrink({{0, 3}, {0, 3}}),
                    Contains("[shrink]") && Contains("0 <= start <= end <= 2"));
  CHECK_THROWS_WITH(matmul(a, a),
                    Contains("[matmul]") && Contains("inner dimensions") && Contains("(2, 3)"));
  CHECK_THROWS_WITH(a.item<float>(), Contains("[item]") && Contains("float32(2, 3)"));
  CHECK_THROWS_WITH(cat({a, b}, 0), Contains("[cat]"));
  CHECK_THROWS_WITH(stack({a, b}), Contains("[stack]"));
  CHECK_THROWS_WITH(Tensor::from_vector<float>({1, 2, 3}, {2, 2}),
                    Contains("[from_vector]") && Contains("(2, 2)"));
  CHECK_THROWS_WITH(Tensor::zeros({2, -1}), Contains("[full]") && Contains("negative"));
  CHECK_THROWS_WITH(Tensor::arange(0, 5, 0), Contains("[arange]") && Contains("step"));
  CHECK_THROWS_WITH(Tensor::zeros({0, 3}).max({0}), Contains("[max]") && Contains("empty"));
}

TEST_CASE("dtype errors name the op and the dtypes", "[errors]") {
  const Tensor flags = Tensor::from_vector<bool>({true, false}, {2});
  const Tensor values = matrix(1, 2).reshape({2});
  CHECK_THROWS_AS(flags - flags, DTypeError);
  CHECK_THROWS_WITH(flags - flags, Contains("[sub]") && Contains("bool"));
  CHECK_THROWS_WITH(-flags, Contains("[neg]"));
  CHECK_THROWS_WITH(values & values, Contains("[bitwise_and]") && Contains("float32"));
  CHECK_THROWS_WITH(where(values, values, values), Contains("[where]") && Contains("must be bool"));
  CHECK_THROWS_AS(dtype_from_name("float8"), DTypeError);
}

TEST_CASE("device errors say what is available", "[errors]") {
  CHECK_THROWS_AS(Tensor::zeros({2}, dtypes::float32, "TPU"), DeviceError);
  CHECK_THROWS_WITH(Tensor::zeros({2}, dtypes::float32, "TPU"),
                    Contains("unknown device 'TPU'") && Contains("CPU"));
  CHECK_THROWS_WITH(Tensor::zeros({2}, dtypes::float32, "CPU:7"), Contains("does not exist"));
  CHECK_THROWS_WITH(Tensor::zeros({2}, dtypes::float32, "CPU:x"), Contains("not a device name"));
}

TEST_CASE("operands stay usable after an error", "[errors]") {
  const Tensor a = matrix(2, 3);
  const Tensor before = a * 2;
  CHECK_THROWS(before.reshape({5}));
  CHECK_THROWS(before + matrix(3, 2));
  CHECK_THROWS(matmul(before, before));
  CHECK(before.shape() == Shape{2, 3});
  CHECK(before.to_vector<float>() == std::vector<float>{0, 2, 4, 6, 8, 10});
}

TEST_CASE("errors of composite ops name the op called and the shapes given", "[errors]") {
  // cat and matmul are built from where, pad and a multiply; index_select from gather. Their
  // errors once carried the inner op's name ([where], [mul], [gather]) and its internal shapes.
  const Variable wide("n", 1, 64), narrow("n", 1, 32);  // one name, two bounds
  const Tensor a = matrix(3, 4).reshape({wide.bind(3), 4});
  const Tensor b = matrix(3, 4).reshape({narrow.bind(3), 4});
  try {
    cat({a, b}, 1);
    FAIL("cat took two variables of one name with different bounds");
  } catch (const ShapeError& error) {
    const std::string text = error.what();
    INFO(text);
    CHECK(text.rfind("[cat] ", 0) == 0);
    CHECK_THAT(text, Contains("[1, 64]") && Contains("[1, 32]") && Contains("(n=3, 4)"));
    CHECK_THAT(text, !Contains("[where]"));
  }
  try {
    matmul(a, b.transpose());
    FAIL("matmul took two variables of one name with different bounds");
  } catch (const ShapeError& error) {
    const std::string text = error.what();
    INFO(text);
    CHECK(text.rfind("[matmul] ", 0) == 0);
    CHECK_THAT(text, Contains("(n=3, 4)") && Contains("(4, n=3)") && !Contains("[mul]"));
  }
  const Tensor table = matrix(10, 128);
  const Tensor float_index = Tensor::from_vector<float>({1, 2, 3, 4}, {4});
  try {
    table.index_select(0, float_index);
    FAIL("index_select took a float index");
  } catch (const DTypeError& error) {
    const std::string text = error.what();
    INFO(text);
    CHECK(text.rfind("[index_select] ", 0) == 0);
    CHECK_THAT(text, Contains("float32(4,)") && Contains("float32(10, 128)"));
    CHECK_THAT(text, !Contains("(4, 128)") && !Contains("[gather]"));
  }
}

TEST_CASE("capture errors print each input once and a replay's bounds", "[errors][capture]") {
  CapturedStep step([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * 2}; });
  const Tensor x = matrix(8, 4);
  step({x});
  step({x});
  REQUIRE(step.captured());
  try {
    step({matrix(4, 8)});
    FAIL("a replay took an input of another shape");
  } catch (const ShapeError& error) {
    const std::string text = error.what();
    INFO(text);
    const std::string device = x.device();  // the default device: KILN_DEVICE may name another
    CHECK_THAT(text, Contains("input 0 (float32(4, 8) on " + device + ")") &&
                         !Contains("on " + device + " on " + device));
  }

  // Captured with a variable of bounds [1, 64]; replayed with one of the same name and value
  // but bounds [1, 32]: the shapes print alike, so the message shows the bounds.
  const Variable wide("rows", 1, 64), narrow("rows", 1, 32);
  CapturedStep symbolic(
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] + 1}; });
  const Tensor rows = matrix(5, 4).reshape({wide.bind(5), 4});
  symbolic({rows});
  symbolic({rows});
  REQUIRE(symbolic.captured());
  try {
    symbolic({matrix(5, 4).reshape({narrow.bind(5), 4})});
    FAIL("a replay took a variable of other bounds");
  } catch (const ShapeError& error) {
    const std::string text = error.what();
    INFO(text);
    CHECK_THAT(text, Contains("rows[1,32]") && Contains("rows[1,64]"));
  }
}

TEST_CASE("an empty (default-constructed) tensor is assigned before use", "[errors][tensor]") {
  Tensor total;  // an accumulator
  CHECK_FALSE(total.defined());
  const Tensor copy = total;
  CHECK_FALSE(copy.defined());
  std::vector<Tensor> parts(2);
  CHECK_FALSE(parts[1].defined());

  const std::string empty = "the tensor is empty (default-constructed); assign it a value first";
  CHECK_THROWS_AS(total.shape(), Error);
  CHECK_THROWS_WITH(total.shape(), Contains(empty));
  CHECK_THROWS_WITH(total.dtype(), Contains(empty));
  CHECK_THROWS_WITH(total.to_vector<float>(), Contains(empty));
  CHECK_THROWS_WITH(total.realize(), Contains(empty));
  CHECK_THROWS_WITH(total.exp(), Contains(empty));
  CHECK_THROWS_WITH(total.sum(), Contains(empty));
  CHECK_THROWS_WITH(total * 2, Contains(empty));
  CHECK_THROWS_WITH(total + matrix(2, 2), Contains("[add] " + empty));
  CHECK_THROWS_WITH(matrix(2, 2) - total, Contains("[sub] " + empty));
  CHECK_THROWS_WITH(matmul(total, matrix(2, 2)), Contains("[matmul] " + empty));
  CHECK_THROWS_WITH(cat({matrix(2, 2), total}, 0), Contains("[cat] " + empty));

  for (int step = 1; step <= 3; ++step) {
    const Tensor term = Tensor::full({2}, step);
    total = total.defined() ? total + term : term;
  }
  CHECK(total.defined());
  CHECK(total.to_vector<float>() == std::vector<float>{6, 6});
}

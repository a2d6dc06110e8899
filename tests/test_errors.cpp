// Bad input gets a typed error naming the op, the operands and what would be valid; the operands
// stay usable afterwards.

#include <catch2/catch.hpp>

#include <kiln/kiln.h>

#include <string>

using namespace kiln;
using Catch::Matchers::Contains;

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
        return text.find("[add]") != std::string::npos &&
               text.find("(2, 3)") != std::string::npos && text.find("(4, 5)") != std::string::npos;
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

// Shape helpers (kiln/shape_ops.h) on the default device (KILN_DEVICE runs them elsewhere): parts,
// new axes, tiling, rolling and triangles against values written out by hand, the edge sizes, and
// the errors. kiln conformance checks them on every dtype against the host reference.

#include <catch2/catch.hpp>

#include <kiln/error.h>
#include <kiln/kiln.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "runtime/device_context.h"
#include "runtime/registry.h"

using namespace kiln;
using Catch::Matchers::Contains;

namespace {

Tensor counting(Shape shape) {
  int64_t count = 1;
  for (int64_t size : shape) count *= size;
  return Tensor::arange(count).cast(dtypes::float32).reshape(shape);
}

}  // namespace

TEST_CASE("split and chunk give views of the parts, in order", "[shape_ops]") {
  const Tensor x = counting({2, 5});
  std::vector<Tensor> parts = split(x, 2, 1);
  REQUIRE(parts.size() == 3);
  CHECK(parts[0].to_vector<float>() == std::vector<float>{0, 1, 5, 6});
  CHECK(parts[2].shape() == Shape{2, 1});
  CHECK(parts[2].to_vector<float>() == std::vector<float>{4, 9});
  parts = split(x, {1, 0, 4}, -1);
  REQUIRE(parts.size() == 3);
  CHECK(parts[1].shape() == Shape{2, 0});
  CHECK(parts[2].to_vector<float>() == std::vector<float>{1, 2, 3, 4, 6, 7, 8, 9});
  // torch.chunk: ceil(5 / 3) = 2 per part; 5 in 4 chunks gives 3 parts of 2, 2, 1.
  CHECK(chunk(x, 3, 1).size() == 3);
  parts = chunk(x, 4, 1);
  REQUIRE(parts.size() == 3);
  CHECK(parts[2].to_vector<float>() == std::vector<float>{4, 9});
  CHECK(chunk(x, 7, 0).size() == 2);  // one row each
  // An empty axis is one empty part.
  CHECK(split(Tensor::zeros({0, 3}), 2, 0).size() == 1);
  CHECK(chunk(Tensor::zeros({0, 3}), 4, 0).size() == 4);  // as torch.chunk
}

TEST_CASE("unflatten, repeat and repeat_interleave", "[shape_ops]") {
  const Tensor x = counting({2, 6});
  CHECK(unflatten(x, -1, {3, -1}).shape() == Shape{2, 3, 2});
  CHECK(unflatten(x, 1, {2, 3}).to_vector<float>() == x.to_vector<float>());
  const Tensor row = counting({3});
  CHECK(repeat(row, {2}).to_vector<float>() == std::vector<float>{0, 1, 2, 0, 1, 2});
  const Tensor tiled = repeat(row, {2, 1, 2});
  CHECK(tiled.shape() == Shape{2, 1, 6});
  CHECK(tiled.to_vector<float>() == std::vector<float>{0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2});
  CHECK(repeat(row, {0}).shape() == Shape{0});
  CHECK(repeat_interleave(row, 2, 0).to_vector<float>() == std::vector<float>{0, 0, 1, 1, 2, 2});
  CHECK(repeat_interleave(counting({2, 2}), 2, 1).to_vector<float>() ==
        std::vector<float>{0, 0, 1, 1, 2, 2, 3, 3});
  CHECK(repeat_interleave(row, 0, 0).shape() == Shape{0});
}

TEST_CASE("roll moves elements past the end back to the start", "[shape_ops]") {
  const Tensor x = counting({5});
  CHECK(roll(x, 2, 0).to_vector<float>() == std::vector<float>{3, 4, 0, 1, 2});
  CHECK(roll(x, -1, 0).to_vector<float>() == std::vector<float>{1, 2, 3, 4, 0});
  CHECK(roll(x, 12, 0).to_vector<float>() == roll(x, 2, 0).to_vector<float>());
  CHECK(roll(x, 0, 0).to_vector<float>() == x.to_vector<float>());
  const Tensor matrix = counting({2, 3});
  CHECK(roll(matrix, {1, 1}, {0, 1}).to_vector<float>() == std::vector<float>{5, 3, 4, 2, 0, 1});
  CHECK(roll(Tensor::zeros({0}), 3, 0).shape() == Shape{0});
  // A roll of a transposed view reads through it.
  CHECK(roll(matrix.transpose(), 1, 0).to_vector<float>() == std::vector<float>{2, 5, 0, 3, 1, 4});
}

TEST_CASE("tril and triu keep a triangle of each matrix and fuse into one kernel", "[shape_ops]") {
  const Tensor x = counting({3, 4}) + 1;
  CHECK(tril(x).to_vector<float>() == std::vector<float>{1, 0, 0, 0, 5, 6, 0, 0, 9, 10, 11, 0});
  CHECK(triu(x, 1).to_vector<float>() == std::vector<float>{0, 2, 3, 4, 0, 0, 7, 8, 0, 0, 0, 12});
  CHECK(tril(x, -5).sum().item<float>() == 0);
  CHECK(triu(x, -5).sum().item<float>() == 78);
  CHECK(tril(x, 1000000000000).sum().item<float>() == 78);
  // Batched, bool, and a causal mask made from ones.
  CHECK(tril(counting({2, 2, 2})).to_vector<float>() == std::vector<float>{0, 0, 2, 3, 4, 0, 6, 7});
  const Tensor mask = tril(Tensor::ones({3, 3}, dtypes::bool_));
  CHECK(mask.dtype() == dtypes::bool_);
  CHECK(mask.to_vector<bool>() ==
        std::vector<bool>{true, false, false, true, true, false, true, true, true});
  // -0.0 and NaN in the kept triangle stay as they are.
  const Tensor special = Tensor::from_vector<float>({-0.0f, NAN, NAN, 2}, {2, 2});
  const std::vector<float> kept = tril(special).to_vector<float>();
  CHECK(std::signbit(kept[0]));
  CHECK(kept[1] == 0);
  CHECK(std::isnan(kept[2]));
  CHECK(kept[3] == 2);
  // A diagonal far past the matrix keeps all or nothing, for any value of a variable axis.
  const Variable side("tril_side", 1, 64);
  for (int64_t value : {3, 40}) {
    const Tensor ones = Tensor::ones({side.bind(value), Dim(5)});
    CHECK(triu(ones, -1000).sum().item<float>() == 5.0f * static_cast<float>(value));
    CHECK(tril(ones, -1000).sum().item<float>() == 0.0f);
    CHECK(tril(ones, 1000).sum().item<float>() == 5.0f * static_cast<float>(value));
  }
  // Lazy like any op: the triangle of a computed tensor is one kernel.
  const Tensor computed = (x * 2).exp();
  computed.realize();
  const std::shared_ptr<DeviceContext> context = open_device(x.device());
  const int64_t before = context->stats().launches;
  tril(computed * 3).realize();
  CHECK(context->stats().launches - before == 1);
}

TEST_CASE("diagonal takes a matrix's diagonal, diag makes one", "[shape_ops]") {
  const Tensor x = counting({3, 4});
  CHECK(diagonal(x).to_vector<float>() == std::vector<float>{0, 5, 10});
  CHECK(diagonal(x, 1).to_vector<float>() == std::vector<float>{1, 6, 11});
  CHECK(diagonal(x, 3).to_vector<float>() == std::vector<float>{3});
  CHECK(diagonal(x, 4).shape() == Shape{0});
  CHECK(diagonal(x, -2).to_vector<float>() == std::vector<float>{8});
  CHECK(diagonal(x, -3).shape() == Shape{0});
  // Batched: the other axes first, in order, the diagonal last.
  const Tensor batched = counting({2, 2, 3});
  CHECK(diagonal(batched, 0, 1, 2).shape() == Shape{2, 2});
  CHECK(diagonal(batched, 0, 1, 2).to_vector<float>() == std::vector<float>{0, 4, 6, 10});
  CHECK(diagonal(batched, 0, 2, 0).to_vector<float>() == std::vector<float>{0, 7, 3, 10});
  // Of a transposed view.
  CHECK(diagonal(x.transpose(), 1).to_vector<float>() == std::vector<float>{4, 9});
  const Tensor vector = Tensor::from_vector<float>({1, 2}, {2});
  CHECK(diag(vector).to_vector<float>() == std::vector<float>{1, 0, 0, 2});
  CHECK(diag(vector, 1).to_vector<float>() == std::vector<float>{0, 1, 0, 0, 0, 2, 0, 0, 0});
  CHECK(diag(vector, -1).to_vector<float>() == std::vector<float>{0, 0, 0, 1, 0, 0, 0, 2, 0});
  CHECK(diag(Tensor::zeros({0})).shape() == Shape{0, 0});
  CHECK(diag(x, -1).to_vector<float>() == std::vector<float>{4, 9});
}

TEST_CASE("shape helpers refuse bad arguments, naming the helper and the rule",
          "[shape_ops][errors]") {
  const Tensor x = counting({2, 6});
  CHECK_THROWS_WITH(split(x, 0, 1), Contains("[split] split size 0") && Contains("at least 1"));
  CHECK_THROWS_WITH(split(x, {2, 3}, 1), Contains("[split] sizes [2, 3]") &&
                                             Contains("add up to 5") &&
                                             Contains("the axis' size 6"));
  CHECK_THROWS_WITH(split(x, {7, -1}, 1), Contains("each size must be >= 0"));
  CHECK_THROWS_AS(split(x, 2, 2), ShapeError);
  CHECK_THROWS_WITH(chunk(x, 0, 0), Contains("[chunk] 0 chunks"));
  CHECK_THROWS_WITH(unflatten(x, 1, {4, -1}),
                    Contains("[unflatten]") && Contains("does not divide"));
  CHECK_THROWS_WITH(unflatten(x, 1, {-1, -1}), Contains("at most one size may be -1"));
  CHECK_THROWS_WITH(unflatten(x, 1, {2, 2}), Contains("must be the axis' size 6"));
  CHECK_THROWS_WITH(repeat(x, {2}), Contains("[repeat]") && Contains("one per axis (2)"));
  CHECK_THROWS_WITH(repeat(x, {2, -1}), Contains("each must be >= 0"));
  CHECK_THROWS_WITH(repeat_interleave(x, -2, 0), Contains("[repeat_interleave] -2 repeats"));
  CHECK_THROWS_WITH(roll(x, {1}, {0, 1}),
                    Contains("[roll] 1 shifts") && Contains("one shift per axis"));
  CHECK_THROWS_WITH(roll(x, std::vector<int64_t>{}, std::vector<int64_t>{}),
                    Contains("[roll] no axes"));
  // An axis named twice rolls by both shifts, as torch.roll does.
  CHECK(roll(x, {1, 1}, {1, -1}).to_vector<float>() == roll(x, 2, 1).to_vector<float>());
  CHECK_THROWS_WITH(split(x, std::vector<int64_t>{}, 0), Contains("[split] no sizes"));
  CHECK_THROWS_WITH(split(Tensor::zeros({0}), {INT64_MAX, INT64_MAX, 2}, 0),
                    Contains("add up to more than the axis' size 0"));
  CHECK_THROWS_WITH(unflatten(Tensor::zeros({0}), 0, {int64_t{1} << 40, int64_t{1} << 40}),
                    Contains("[unflatten]") && Contains("the axis' size 0"));
  CHECK_THROWS_WITH(repeat(x, {int64_t{1} << 62, 1}), Contains("more than 2^60 elements"));
  CHECK_THROWS_WITH(repeat_interleave(x, int64_t{1} << 62, 1), Contains("more than 2^60"));
  CHECK_THROWS_WITH(diagonal(x, 0, 1, -1),
                    Contains("[diagonal] axes 1 and -1") && Contains("the same axis"));
  CHECK_THROWS_WITH(diag(counting({2, 2, 2})), Contains("[diag] takes a vector"));
  CHECK_THROWS_WITH(tril(counting({4})), Contains("[tril] needs a tensor of at least two axes"));
  CHECK_THROWS_WITH(triu(Tensor()), Contains("triu"));
  // An axis of variable size cannot be split: its parts would change with the value.
  const Variable n("shape_ops_n", 1, 16);
  const Tensor symbolic = Tensor::zeros({n.bind(6), Dim(4)});
  CHECK_THROWS_WITH(split(symbolic, 2, 0), Contains("[split] axis 0") && Contains("symbolic size"));
  CHECK(split(symbolic, 2, 1).size() == 2);
  CHECK(tril(symbolic).shape() == Shape{6, 4});
}

TEST_CASE("einsum contracts as torch.einsum, two operands in one kernel", "[shape_ops]") {
  const Tensor a = Tensor::rand({4, 5}, 1, "CPU").realize();
  const Tensor b = Tensor::rand({5, 3}, 2, "CPU").realize();
  const std::shared_ptr<DeviceContext> context = open_device("CPU");
  const int64_t before = context->stats().launches;
  const Tensor product = einsum("ij,jk->ik", {a, b});
  product.realize();
  CHECK(context->stats().launches - before == 1);
  const std::vector<float> got = product.to_vector<float>(), want = a.matmul(b).to_vector<float>();
  for (size_t at = 0; at < got.size(); ++at) CHECK(got[at] == Approx(want[at]));
  // Implicit output: letters named once, alphabetically; a repeated letter is a trace.
  CHECK(einsum("ji", {a}).shape() == Shape{5, 4});
  const Tensor square = counting({3, 3});
  CHECK(einsum("ii", {square}).item<float>() == 12);
  CHECK(einsum(" i i -> i ", {square}).to_vector<float>() == std::vector<float>{0, 4, 8});
}

TEST_CASE("einsum refuses bad equations, naming the rule", "[shape_ops][errors]") {
  const Tensor a = counting({2, 3});
  CHECK_THROWS_WITH(einsum("ij,jk->ik", {a}),
                    Catch::Contains("[einsum]") && Catch::Contains("1 operands"));
  CHECK_THROWS_WITH(einsum("ijk->i", {a}), Catch::Contains("names 3 axes"));
  CHECK_THROWS_WITH(einsum("ij,jk->ik", {a, counting({4, 2})}),
                    Catch::Contains("label 'j' has sizes 3 and 4"));
  CHECK_THROWS_WITH(einsum("ij->iz", {a}), Catch::Contains("'z', which no operand has"));
  CHECK_THROWS_WITH(einsum("ij->ii", {a}), Catch::Contains("twice"));
  CHECK_THROWS_WITH(einsum("i1->i", {a}), Catch::Contains("'1'"));
  CHECK_THROWS_WITH(einsum("ii->i", {a}), Catch::Contains("sizes 2 and 3"));
}

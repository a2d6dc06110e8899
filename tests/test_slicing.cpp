// Slicing (Tensor::slice, select, index, shrink's omitted axes) on every device: values against
// Python's own slicing (the table below was printed by python3:
// list(range(size))[start:stop:step]), and every result a view of its source (no kernel runs until
// a value is read).

#include <catch2/catch.hpp>

#include <kiln/kiln.h>

#include <cstdint>
#include <limits>
#include <optional>

#include "core/uop.h"

using namespace kiln;
using namespace kiln::indexing;
using Catch::Matchers::Contains;

namespace {

struct PythonSlice {
  int64_t size;
  std::optional<int64_t> start, stop;
  int64_t step;
  std::vector<int32_t> positions;  // list(range(size))[start:stop:step]
};

const std::vector<PythonSlice>& python_slices() {
  static const std::vector<PythonSlice> table = {
      {7, -1, -3, 1, {}},
      {7, -1, -6, 9, {}},
      {7, -1, 0, 3, {}},
      {7, -1, 2, -3, {6, 3}},
      {7, -12, -1, -6, {}},
      {7, -12, -3, -3, {}},
      {7, -12, -6, -3, {}},
      {7, -12, 5, -1, {}},
      {7, -12, 5, -3, {}},
      {7, -3, 1, -3, {4}},
      {7, -3, std::nullopt, -3, {4, 1}},
      {7, -3, std::nullopt, 5, {4}},
      {7, -6, 0, 9, {}},
      {7, -7, -3, 2, {0, 2}},
      {7, -7, -7, -2, {}},
      {7, -7, -7, 1, {}},
      {7, -7, 1, -6, {}},
      {7, -7, 5, -6, {}},
      {7, -7, 7, -1, {}},
      {7, 0, -3, 1, {0, 1, 2, 3}},
      {7, 0, -3, 3, {0, 3}},
      {7, 0, 5, 1, {0, 1, 2, 3, 4}},
      {7, 0, std::nullopt, 9, {0}},
      {7, 1, std::nullopt, 3, {1, 4}},
      {7, 12, -6, -6, {6}},
      {7, 12, 0, -3, {6, 3}},
      {7, 12, 0, 3, {}},
      {7, 12, 12, 2, {}},
      {7, 12, 7, 9, {}},
      {7, 2, -3, -6, {}},
      {7, 2, 5, -3, {}},
      {7, 5, -3, -3, {5}},
      {7, 5, -6, 2, {}},
      {7, 5, 6, -3, {}},
      {7, 6, 6, -1, {}},
      {7, 6, std::nullopt, 3, {6}},
      {7, 7, -7, 1, {}},
      {7, std::nullopt, -6, -1, {6, 5, 4, 3, 2}},
      {7, std::nullopt, 1, -1, {6, 5, 4, 3, 2}},
      {7, std::nullopt, 7, -1, {}},
      {1, -12, 5, 9, {0}},
      {1, -3, -7, 2, {}},
      {1, -3, 6, -3, {}},
      {1, -7, -1, -2, {}},
      {1, 0, std::nullopt, -1, {0}},
      {1, 1, -7, 1, {}},
      {1, 6, -7, -2, {0}},
      {1, 7, 2, 2, {}},
      {0, -1, -7, 1, {}},
      {0, -12, -7, 5, {}},
      {0, -3, 1, 5, {}},
      {0, -6, -7, 3, {}},
      {0, -7, std::nullopt, 1, {}},
      {0, 12, 1, -3, {}},
      {0, 6, 12, 5, {}},
      {0, 7, 5, -3, {}},
  };
  return table;
}

// No computation between the result and the source's buffer: views only.
bool is_view_of_buffer(const Tensor& tensor) {
  const UOp* node = tensor.node().get();
  while (node->op() == Op::View) node = node->src().get();
  return node->op() == Op::Buffer;
}

}  // namespace

TEST_CASE("slice takes what Python's slicing takes, as a view", "[slicing]") {
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    for (const PythonSlice& slice : python_slices()) {
      INFO("size " << slice.size << " [" << (slice.start ? std::to_string(*slice.start) : "") << ":"
                   << (slice.stop ? std::to_string(*slice.stop) : "") << ":" << slice.step << "]");
      // Along the middle axis of (2, size, 3): x[i][p][j] = 100 i + 10 p + j.
      std::vector<int32_t> values;
      for (int32_t i = 0; i < 2; ++i) {
        for (int32_t p = 0; p < slice.size; ++p) {
          for (int32_t j = 0; j < 3; ++j) values.push_back(100 * i + 10 * p + j);
        }
      }
      const Tensor x = Tensor::from_vector(values, {2, slice.size, 3}, device);
      x.realize();
      const Tensor taken = x.slice(1, slice.start, slice.stop, slice.step);
      const Tensor indexed = x.index({Slice(), Slice(slice.start, slice.stop, slice.step)});
      const int64_t count = static_cast<int64_t>(slice.positions.size());
      CHECK(taken.shape() == Shape{2, count, 3});
      CHECK(is_view_of_buffer(taken));
      std::vector<int32_t> want;
      for (int32_t i = 0; i < 2; ++i) {
        for (int32_t p : slice.positions) {
          for (int32_t j = 0; j < 3; ++j) want.push_back(100 * i + 10 * p + j);
        }
      }
      CHECK(taken.to_vector<int32_t>() == want);
      CHECK(indexed.to_vector<int32_t>() == want);
    }
  }
}

TEST_CASE("index takes integers, slices, an ellipsis and a tensor", "[slicing]") {
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    // x[a][b][c] = 100 a + 10 b + c, of shape (4, 5, 6).
    std::vector<int32_t> values;
    for (int32_t a = 0; a < 4; ++a) {
      for (int32_t b = 0; b < 5; ++b) {
        for (int32_t c = 0; c < 6; ++c) values.push_back(100 * a + 10 * b + c);
      }
    }
    const Tensor x = Tensor::from_vector(values, {4, 5, 6}, device);
    x.realize();
    // x[1, :, -1] and x[-1] and x[..., 2]
    CHECK(x.index({1, Slice(), -1}).to_vector<int32_t>() ==
          std::vector<int32_t>{105, 115, 125, 135, 145});
    CHECK(x.index({-1}).shape() == Shape{5, 6});
    CHECK(x.index({-1}).to_vector<int32_t>()[7] == 311);
    CHECK(x.index({Ellipsis, 2}).shape() == Shape{4, 5});
    CHECK(x.index({Ellipsis, 2}).to_vector<int32_t>()[6] == 112);
    CHECK(x.select(2, -6).to_vector<int32_t>() == x.index({Ellipsis, 0}).to_vector<int32_t>());
    // x[::-2, 1:4, ::3]: rows 3 and 1, columns 1..3, every third of 6.
    const Tensor strided = x.index({Slice(None, None, -2), Slice(1, 4), Slice(None, None, 3)});
    CHECK(strided.shape() == Shape{2, 3, 2});
    CHECK(is_view_of_buffer(strided));
    CHECK(strided.to_vector<int32_t>() ==
          std::vector<int32_t>{310, 313, 320, 323, 330, 333, 110, 113, 120, 123, 130, 133});
    // A tensor index replaces its axis by its own: x[:, ids] with ids of shape (2, 2).
    const Tensor ids = Tensor::from_vector(std::vector<int64_t>{4, -5, 0, 2}, {2, 2}, device);
    const Tensor picked = x.index({Slice(1, 3), ids, 5});
    CHECK(picked.shape() == Shape{2, 2, 2});
    CHECK(picked.to_vector<int32_t>() ==
          std::vector<int32_t>{145, 105, 105, 125, 245, 205, 205, 225});
    CHECK(x.take(ids, 1).shape() == Shape{4, 2, 2, 6});
    CHECK(x.index({Slice(), Tensor::full(Shape{}, 3, dtypes::int32, device)}).shape() ==
          Shape{4, 6});
    // Sliced views of views: a slice of a transposed, padded tensor.
    const Tensor padded = x.permute({2, 0, 1}).pad({{1, 1}, {0, 0}, {0, 0}}, -1);  // (8, 4, 5)
    const Tensor edge = padded.index({Slice(None, None, 7), 0, -1});
    CHECK(edge.to_vector<int32_t>() == std::vector<int32_t>{-1, -1});
    CHECK(padded.index({Slice(1, 3), 2, 3}).to_vector<int32_t>() == std::vector<int32_t>{230, 231});
    // shrink keeps the axes it is not given whole.
    CHECK(x.shrink({{1, 2}}).shape() == Shape{1, 5, 6});
    CHECK(x.shrink({{1, 2}, {0, 2}}).to_vector<int32_t>() ==
          x.index({Slice(1, 2), Slice(0, 2)}).to_vector<int32_t>());
    // Bad input: named, nothing changed.
    CHECK_THROWS_AS(x.slice(0, 0, 4, 0), ShapeError);
    CHECK_THROWS_AS(x.slice(0, None, None, std::numeric_limits<int64_t>::min()), ShapeError);
    // Steps past the axis take the first position only, as Python does.
    CHECK(x.slice(2, 1, None, std::numeric_limits<int64_t>::max()).shape() == Shape{4, 5, 1});
    CHECK(x.slice(0, None, None, -(int64_t{1} << 62)).to_vector<int32_t>() ==
          x.index({-1}).reshape({1, 5, 6}).to_vector<int32_t>());
    CHECK_THROWS_AS(x.index({0, 0, 0, 0}), ShapeError);
    CHECK_THROWS_AS(x.index({Ellipsis, 0, Ellipsis}), ShapeError);
    CHECK_THROWS_AS(x.index({ids, ids}), ShapeError);
    CHECK_THROWS_AS(x.index({ids.cast(dtypes::float32)}), DTypeError);
    try {
      x.index({4});
      FAIL("x[4] of 4 rows");
    } catch (const IndexError& error) {
      CHECK_THAT(error.what(), Contains("[select] index 4 is out of range for axis 0"));
    }
    CHECK_THROWS_AS(x.shrink({{0, 1}, {0, 1}, {0, 1}, {0, 1}}), ShapeError);
  }
}

TEST_CASE("slicing a variable-size axis keeps it whole or refuses", "[slicing][variables]") {
  const Variable rows("rows", 1, 10);
  const Tensor x = Tensor::arange(12, dtypes::int32).reshape({3, 4}).shrink({{0, rows.bind(2)}});
  CHECK(x.shape_string() == "(rows=2, 4)");
  CHECK(x.index({Slice(), Slice(None, None, -1)}).shape_string() == "(rows=2, 4)");
  CHECK(x.index({Slice(), Slice(None, None, -1)}).to_vector<int32_t>() ==
        std::vector<int32_t>{3, 2, 1, 0, 7, 6, 5, 4});
  CHECK_THROWS_AS(x.slice(0, 1, None), ShapeError);
  CHECK_THROWS_AS(x.select(0, 0), ShapeError);
}

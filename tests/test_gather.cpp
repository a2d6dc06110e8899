// Loads from computed addresses (gather, take_along_axis, index_select, embedding) on every
// device: values against plain C++ references, negative and repeated indices, every integer
// index dtype, sources read through views, and IndexError for an index outside its axis,
// raised before any value computed from it can be read.

#include <catch2/catch.hpp>

#include <kiln/kiln.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "runtime/device.h"
#include "runtime/registry.h"
#include "tests/index_checks.h"
#include "tests/test_support.h"

using namespace kiln;
using Catch::Matchers::Contains;
using kiln::testing::check_index_error;
using kiln::testing::check_same;

namespace {

// A [rows, features] table with every kind of float value in it: NaN, infinities and -0 among
// ordinary numbers.
std::vector<float> table_values(int64_t rows, int64_t features) {
  std::vector<float> values(static_cast<size_t>(rows * features));
  for (size_t at = 0; at < values.size(); ++at)
    values[at] = std::sin(static_cast<float>(at) * 0.37f) * 5.0f;
  if (values.size() > 3) {
    values[1] = std::numeric_limits<float>::quiet_NaN();
    values[2] = std::numeric_limits<float>::infinity();
    values[3] = -0.0f;
  }
  return values;
}

// The rows of `table` at `ids` (negative ones counted from the end), as plain C++ reads them.
std::vector<float> reference_rows(const std::vector<float>& table, int64_t rows, int64_t features,
                                  const std::vector<int64_t>& ids) {
  std::vector<float> out;
  for (int64_t id : ids) {
    const int64_t row = id < 0 ? id + rows : id;
    for (int64_t feature = 0; feature < features; ++feature)
      out.push_back(table[static_cast<size_t>(row * features + feature)]);
  }
  return out;
}

}  // namespace

TEST_CASE("embedding reads the rows its indices name, of every index dtype", "[gather]") {
  constexpr int64_t kRows = 37, kFeatures = 13;  // odd sizes: no vector width divides them
  const std::vector<float> table = table_values(kRows, kFeatures);
  const std::vector<int64_t> ids = {0, 36, -1, -37, 5, 5, 17, 0, 1};
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    const Tensor weight = Tensor::from_vector(table, {kRows, kFeatures}, device);
    const std::vector<float> want = reference_rows(table, kRows, kFeatures, ids);
    for (DType dtype : {dtypes::int8, dtypes::int16, dtypes::int32, dtypes::int64}) {
      INFO(dtype.name());
      if (!open_device(device)->device().supports(dtype)) continue;
      const Tensor indices =
          Tensor::from_vector(ids, {static_cast<int64_t>(ids.size())}, device).cast(dtype);
      const Tensor rows = embedding(indices, weight);
      CHECK(rows.shape() == Shape{static_cast<int64_t>(ids.size()), kFeatures});
      check_same(rows.to_vector<float>(), want);
    }
    // Unsigned indices have no negative values: in range only.
    const std::vector<int64_t> positive = {3, 0, 36, 3};
    for (DType dtype : {dtypes::uint8, dtypes::uint16, dtypes::uint32, dtypes::uint64}) {
      INFO(dtype.name());
      if (!open_device(device)->device().supports(dtype)) continue;
      const Tensor indices = Tensor::from_vector(positive, {4}, device).cast(dtype);
      check_same(embedding(indices, weight).to_vector<float>(),
                 reference_rows(table, kRows, kFeatures, positive));
    }
    // Indices of any shape, a scalar one, and a table read through a view (its transpose).
    const Tensor grid =
        Tensor::from_vector(std::vector<int32_t>{1, -2, 4, 0, 0, 9}, {2, 3}, device);
    const Tensor by_grid = embedding(grid, weight);
    CHECK(by_grid.shape() == Shape{2, 3, kFeatures});
    check_same(by_grid.to_vector<float>(),
               reference_rows(table, kRows, kFeatures, {1, -2, 4, 0, 0, 9}));
    const Tensor one = embedding(Tensor::full(Shape{}, 7, dtypes::int32, device), weight);
    CHECK(one.shape() == Shape{kFeatures});
    check_same(one.to_vector<float>(), reference_rows(table, kRows, kFeatures, {7}));
    const Tensor transposed = weight.permute({1, 0}).contiguous().permute({1, 0});
    check_same(embedding(grid, transposed).to_vector<float>(), by_grid.to_vector<float>());
    // No indices: an empty result.
    const Tensor none = embedding(Tensor::zeros({0}, dtypes::int32, device), weight);
    CHECK(none.shape() == Shape{0, kFeatures});
    CHECK(none.to_vector<float>().empty());
  }
}

TEST_CASE("gather, take_along_axis and index_select read through views", "[gather]") {
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    // x[i][j] = 10 i + j, read flipped along the rows and padded with a column of -1 on each side.
    std::vector<int32_t> values;
    for (int32_t row = 0; row < 4; ++row) {
      for (int32_t column = 0; column < 5; ++column) values.push_back(row * 10 + column);
    }
    const Tensor base = Tensor::from_vector(values, {4, 5}, device);
    const Tensor x = base.flip({0}).pad({{0, 0}, {1, 1}}, -1);  // (4, 7)
    auto at = [&](int64_t row, int64_t column) {
      if (column == 0 || column == 6) return -1;
      return static_cast<int>((3 - row) * 10 + column - 1);
    };
    // Along the columns, each row its own positions (pad included, negative from the end).
    const Tensor columns =
        Tensor::from_vector(std::vector<int64_t>{0, 6, -1, 3, 2, 2, -7, 1}, {4, 2}, device);
    const std::vector<int64_t> wanted = {0, 6, 6, 3, 2, 2, 0, 1};
    std::vector<int32_t> want;
    for (int64_t row = 0; row < 4; ++row) {
      for (int64_t pick = 0; pick < 2; ++pick) want.push_back(at(row, wanted[row * 2 + pick]));
    }
    CHECK(x.gather(1, columns).to_vector<int32_t>() == want);
    // A smaller index than the source along the other axis: the first rows only.
    const Tensor first_rows = Tensor::from_vector(std::vector<int64_t>{3, -3}, {2, 1}, device);
    CHECK(x.gather(0, first_rows.expand({2, 7})).shape() == Shape{2, 7});
    CHECK(x.gather(1, first_rows).to_vector<int32_t>() == std::vector<int32_t>{at(0, 3), at(1, 4)});
    // take_along_axis broadcasts: one row of positions for every row of x.
    const Tensor one_row = Tensor::from_vector(std::vector<int32_t>{5, -6}, {1, 2}, device);
    std::vector<int32_t> broadcast;
    for (int64_t row = 0; row < 4; ++row) {
      broadcast.push_back(at(row, 5));
      broadcast.push_back(at(row, 1));
    }
    CHECK(x.take_along_axis(one_row, 1).to_vector<int32_t>() == broadcast);
    CHECK_THROWS_AS(x.take_along_axis(Tensor::zeros({3, 2}, dtypes::int32, device), 1), ShapeError);
    // index_select: rows repeated and from the end.
    const Tensor rows = Tensor::from_vector(std::vector<int16_t>{-1, 0, 0}, {3}, device);
    std::vector<int32_t> selected;
    for (int64_t row : {3, 0, 0}) {
      for (int64_t column = 0; column < 7; ++column) selected.push_back(at(row, column));
    }
    CHECK(x.index_select(0, rows).to_vector<int32_t>() == selected);
    // Gathered values feed a reduction and elementwise work in the same graph.
    const Tensor summed = (x.index_select(0, rows).cast(dtypes::float32) * 2).sum({1});
    std::vector<float> sums;
    for (int64_t row : {3, 0, 0}) {
      float total = 0;
      for (int64_t column = 0; column < 7; ++column) total += 2.0f * at(row, column);
      sums.push_back(total);
    }
    CHECK(summed.to_vector<float>() == sums);
  }
}

TEST_CASE("an index outside its axis raises IndexError and reads nothing", "[gather][errors]") {
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    const Tensor table = Tensor::from_vector(table_values(6, 4), {6, 4}, device);
    const Tensor past_end = Tensor::from_vector(std::vector<int32_t>{1, 6}, {2}, device);
    check_index_error(
        [&] { embedding(past_end, table).realize(); },
        {"[embedding] index 6 is out of range for axis 0 of size 6", "valid: -6 to 5"});
    const Tensor before_start = Tensor::from_vector(std::vector<int64_t>{-7}, {1}, device);
    check_index_error([&] { table.index_select(0, before_start).to_vector<float>(); },
                      {"[index_select] index -7", "size 6"});
    // A value computed from the lookup raises too, and nothing was kept: reading the failed
    // tensor again raises again.
    const Tensor lookup = embedding(past_end, table);
    check_index_error([&] { (lookup * 2).sum().item<float>(); }, {"index 6"});
    check_index_error([&] { lookup.to_vector<float>(); }, {"index 6"});
    // An unsigned index past 2^63 is named as it is, not as a negative number.
    if (open_device(device)->device().supports(dtypes::uint64)) {
      const Tensor huge =
          Tensor::from_vector(std::vector<uint64_t>{(uint64_t{1} << 63) + 5}, {1}, device);
      check_index_error(
          [&] {
            table.gather(1, huge.reshape({1, 1})).realize();
          },
          {"[gather] index 9223372036854775813", "valid: 0 to 3"});
    }
    // Elements never computed are never checked: a slice that leaves the bad index out.
    const Tensor kept = embedding(past_end, table).shrink({{0, 1}, {0, 4}});
    CHECK(kept.to_vector<float>().size() == 4);
    // An empty axis has no valid index; an empty index is fine.
    const Tensor empty = Tensor::zeros({0, 4}, dtypes::float32, device);
    check_index_error([&] { empty.index_select(0, past_end); }, {"[index_select]", "empty"});
    CHECK(empty.index_select(0, Tensor::zeros({0}, dtypes::int32, device)).numel() == 0);
    // Bad input: a float index, and shapes that do not fit.
    CHECK_THROWS_AS(embedding(past_end.cast(dtypes::float32), table), DTypeError);
    CHECK_THROWS_AS(embedding(past_end, Tensor::zeros({6}, dtypes::float32, device)), ShapeError);
    // After an error, lookups work as before.
    check_same(embedding(Tensor::from_vector(std::vector<int32_t>{5}, {1}, device), table)
                   .to_vector<float>(),
               reference_rows(table_values(6, 4), 6, 4, {5}));
  }
}

TEST_CASE("a captured step's replay checks its indices", "[gather][capture]") {
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    const std::vector<float> values = table_values(50, 8);
    const Tensor table = Tensor::from_vector(values, {50, 8}, device);
    CapturedStep step([&](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{(embedding(in[0], table) * 2).sum({1})};
    });
    auto ids = [&](std::vector<int32_t> list) { return Tensor::from_vector(list, {3}, device); };
    auto want = [&](const std::vector<int64_t>& list) {
      std::vector<float> sums;
      for (int64_t id : list) {
        float total = 0;
        for (int64_t feature = 0; feature < 8; ++feature)
          total += 2.0f * values[static_cast<size_t>((id < 0 ? id + 50 : id) * 8 + feature)];
        sums.push_back(total);
      }
      return sums;
    };
    for (int call = 0; call < 4; ++call) {
      const std::vector<float> got = step({ids({call, 49, -call - 1})})[0].to_vector<float>();
      const std::vector<float> expected = want({call, 49, -call - 1});
      REQUIRE(got.size() == expected.size());
      for (size_t at = 0; at < got.size(); ++at) {
        if (std::isnan(expected[at])) {
          CHECK(std::isnan(got[at]));
        } else {
          CHECK(got[at] == Approx(expected[at]).epsilon(1e-6));
        }
      }
    }
    CHECK(step.captured());
    check_index_error([&] { step({ids({0, 50, 1})}); }, {"[embedding] index 50", "size 50"});
    const std::vector<float> after = step({ids({2, 3, 4})})[0].to_vector<float>();
    CHECK(after[1] == Approx(want({3})[0]).epsilon(1e-6));
  }
}

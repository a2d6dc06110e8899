// Stores to computed addresses (scatter, scatter_add, scatter_reduce, index_put) on every device:
// values against a plain C++ reference that visits the index in row-major order (the order kiln
// documents), repeated, negative and out-of-range indices, destinations and sources read through
// views, float sums in the documented order bit for bit, and typed errors for bad input.

#include <catch2/catch.hpp>

#include <kiln/kiln.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>

#include "tests/index_checks.h"
#include "tests/test_support.h"

using namespace kiln;
using kiln::testing::check_index_error;
using kiln::testing::check_same;
using namespace kiln::indexing;
using Catch::Matchers::Contains;

namespace {

enum class Reduce { Replace, Sum, Prod, Mean, Max, Min };

// A row-major position's coordinates in `shape`.
std::vector<int64_t> coordinates(int64_t flat, const Shape& shape) {
  std::vector<int64_t> at(shape.size());
  for (size_t dim = shape.size(); dim-- > 0;) {
    at[dim] = flat % shape[dim];
    flat /= shape[dim];
  }
  return at;
}

int64_t flat_of(const std::vector<int64_t>& at, const Shape& shape) {
  int64_t flat = 0;
  for (size_t dim = 0; dim < shape.size(); ++dim) flat = flat * shape[dim] + at[dim];
  return flat;
}

// NaN wins, as kiln's maximum and minimum.
template <typename T>
T reduce_pair(Reduce reduce, T a, T b) {
  switch (reduce) {
    case Reduce::Replace:
      return b;
    case Reduce::Sum:
    case Reduce::Mean:
      return a + b;
    case Reduce::Prod:
      return a * b;
    case Reduce::Max:
      if (a != a || b != b) return std::numeric_limits<T>::quiet_NaN();
      return a > b ? a : b;
    case Reduce::Min:
      if (a != a || b != b) return std::numeric_limits<T>::quiet_NaN();
      return a < b ? a : b;
  }
  return b;
}

// PyTorch's scatter_reduce in plain C++, in `T`: the index visited in row-major order (for each
// line along the axis, its positions in ascending order, as kiln documents).
template <typename T>
std::vector<T> reference_scatter(const std::vector<T>& self, const Shape& shape, int axis,
                                 const std::vector<int64_t>& index, const Shape& index_shape,
                                 const std::vector<T>& src, const Shape& src_shape, Reduce reduce,
                                 bool include_self) {
  std::vector<T> out = self;
  std::vector<int64_t> count(self.size(), include_self ? 1 : 0);
  std::vector<bool> touched(self.size(), false);
  for (int64_t position = 0; position < static_cast<int64_t>(index.size()); ++position) {
    std::vector<int64_t> at = coordinates(position, index_shape);
    const T value = src[static_cast<size_t>(flat_of(at, src_shape))];
    int64_t target = index[static_cast<size_t>(position)];
    if (target < 0) target += shape[static_cast<size_t>(axis)];
    at[static_cast<size_t>(axis)] = target;
    const size_t element = static_cast<size_t>(flat_of(at, shape));
    if (reduce != Reduce::Replace && !include_self && !touched[element]) {
      // The element starts from the identity (PyTorch's fill): 0 + -0 is +0.
      out[element] = reduce == Reduce::Sum || reduce == Reduce::Mean ? T(0) + value : value;
    } else {
      out[element] = reduce_pair(reduce, out[element], value);
    }
    touched[element] = true;
    count[element] += 1;
  }
  if (reduce == Reduce::Mean) {
    for (size_t element = 0; element < out.size(); ++element) {
      if (count[element] > 0) out[element] = out[element] / static_cast<T>(count[element]);
    }
  }
  return out;
}

const char* reduce_name(Reduce reduce) {
  switch (reduce) {
    case Reduce::Sum:
      return "sum";
    case Reduce::Prod:
      return "prod";
    case Reduce::Mean:
      return "mean";
    case Reduce::Max:
      return "amax";
    case Reduce::Min:
      return "amin";
    case Reduce::Replace:
      break;
  }
  return "replace";
}

Tensor apply(const Tensor& self, int axis, const Tensor& index, const Tensor& src, Reduce reduce,
             bool include_self) {
  if (reduce == Reduce::Replace) return self.scatter(axis, index, src);
  return self.scatter_reduce(axis, index, src, reduce_name(reduce), include_self);
}

std::vector<int64_t> random_index(size_t count, int64_t size, std::mt19937& random) {
  std::uniform_int_distribution<int64_t> pick(-size, size - 1);
  std::vector<int64_t> index(count);
  for (int64_t& value : index) value = pick(random);
  return index;
}

}  // namespace

TEST_CASE("scatter and scatter_reduce match a plain C++ reference on every axis", "[scatter]") {
  // Small integers: every sum and product is exact, so float results match bit for bit.
  const Shape shape{5, 6, 7};
  const Shape index_shape{4, 5, 3};  // no larger than the destination outside the axis
  std::mt19937 random(7);
  std::uniform_int_distribution<int> small(-3, 3);
  std::vector<double> self(5 * 6 * 7), src(9 * 7 * 8);
  for (double& value : self) value = small(random);
  for (double& value : src) value = small(random);
  const Shape src_shape{6, 7, 8};  // larger than the index: read at the index's positions
  // (9 along the scattered axis: src has room for it)
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    for (int axis = 0; axis < 3; ++axis) {
      Shape axis_index_shape = index_shape;
      axis_index_shape[static_cast<size_t>(axis)] = 9;  // more writes than the axis has elements
      std::vector<int64_t> index = random_index(
          static_cast<size_t>(axis_index_shape[0] * axis_index_shape[1] * axis_index_shape[2]),
          shape[static_cast<size_t>(axis)], random);
      Shape own_src_shape = src_shape;
      own_src_shape[static_cast<size_t>(axis)] = 9;
      const Tensor self_tensor =
          Tensor::from_vector(std::vector<float>(self.begin(), self.end()), shape, device);
      std::vector<double> src_values(
          src.begin(), src.begin() + static_cast<std::ptrdiff_t>(
                                         own_src_shape[0] * own_src_shape[1] * own_src_shape[2]));
      const Tensor src_tensor = Tensor::from_vector(
          std::vector<float>(src_values.begin(), src_values.end()), own_src_shape, device);
      const Tensor index_tensor = Tensor::from_vector(index, axis_index_shape, device);
      for (Reduce reduce :
           {Reduce::Replace, Reduce::Sum, Reduce::Prod, Reduce::Mean, Reduce::Max, Reduce::Min}) {
        for (bool include_self : {true, false}) {
          if (reduce == Reduce::Replace && !include_self) continue;
          INFO("axis " << axis << " " << reduce_name(reduce) << " include_self " << include_self);
          const std::vector<double> want =
              reference_scatter(self, shape, axis, index, axis_index_shape, src_values,
                                own_src_shape, reduce, include_self);
          const std::vector<float> got =
              apply(self_tensor, axis, index_tensor, src_tensor, reduce, include_self)
                  .to_vector<float>();
          REQUIRE(got.size() == want.size());
          for (size_t at = 0; at < want.size(); ++at) {
            INFO("element " << at);
            CHECK(got[at] == Approx(want[at]).margin(1e-6));
          }
        }
      }
    }
  }
}

TEST_CASE("scatter_reduce on integers: wrapping products, mean rounding down", "[scatter]") {
  const Shape shape{3, 4};
  const std::vector<int64_t> self = {7, -7, 100, -100, 1, 2, 3, 4, 0, -1, 5, 9};
  const std::vector<int64_t> index = {0, 0, 0, 0, 2, 1, 0, -1, 0, 1, 1, 2};
  const std::vector<int64_t> src = {-3, 4, -5, 2, 9, -9, 11, 13, 6, 1, -2, 8};
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    for (DType dtype : {dtypes::int32, dtypes::int64, dtypes::int8}) {
      INFO(dtype.name());
      const Tensor x = Tensor::from_vector(self, shape, device).cast(dtype);
      const Tensor ids = Tensor::from_vector(index, shape, device);
      const Tensor values = Tensor::from_vector(src, shape, device).cast(dtype);
      for (bool include_self : {true, false}) {
        // Mean: the sum over the count, rounded down (PyTorch's floor division).
        std::vector<int64_t> sum =
            reference_scatter(self, shape, 0, index, shape, src, shape, Reduce::Sum, include_self);
        std::vector<int64_t> count(self.size(), include_self ? 1 : 0);
        for (size_t position = 0; position < index.size(); ++position) {
          std::vector<int64_t> at = coordinates(static_cast<int64_t>(position), shape);
          at[0] = index[position] < 0 ? index[position] + 3 : index[position];
          count[static_cast<size_t>(flat_of(at, shape))] += 1;
        }
        std::vector<int64_t> mean(self.size());
        for (size_t at = 0; at < mean.size(); ++at) {
          const int64_t divisor = count[at] == 0 ? 1 : count[at];
          const int64_t value = count[at] == 0 ? self[at] : sum[at];
          mean[at] = static_cast<int64_t>(
              std::floor(static_cast<double>(value) / static_cast<double>(divisor)));
        }
        CHECK(x.scatter_reduce(0, ids, values, "mean", include_self)
                  .cast(dtypes::int64)
                  .to_vector<int64_t>() == mean);
        CHECK(x.scatter_reduce(0, ids, values, "amax", include_self)
                  .cast(dtypes::int64)
                  .to_vector<int64_t>() == reference_scatter(self, shape, 0, index, shape, src,
                                                             shape, Reduce::Max, include_self));
        CHECK(x.scatter_reduce(0, ids, values, "amin", include_self)
                  .cast(dtypes::int64)
                  .to_vector<int64_t>() == reference_scatter(self, shape, 0, index, shape, src,
                                                             shape, Reduce::Min, include_self));
        // Products wrap in the dtype, as its multiplies do.
        std::vector<int64_t> product =
            reference_scatter(self, shape, 0, index, shape, src, shape, Reduce::Prod, include_self);
        if (dtype == dtypes::int8) {
          for (int64_t& value : product) value = static_cast<int8_t>(value);
        }
        CHECK(x.scatter_reduce(0, ids, values, "prod", include_self)
                  .cast(dtypes::int64)
                  .to_vector<int64_t>() == product);
      }
    }
  }
}

TEST_CASE("a float scatter_add sums in index order, the same bits on every device and run",
          "[scatter]") {
  // 3 destination rows, 200 values each into one of them: the sum's rounding depends on the
  // order, which kiln fixes (ascending along the axis).
  constexpr int64_t kValues = 200, kColumns = 5;
  std::mt19937 random(11);
  std::uniform_real_distribution<float> uniform(-1000.0f, 1000.0f);
  std::vector<float> src(static_cast<size_t>(kValues * kColumns));
  for (float& value : src) value = uniform(random) * std::pow(10.0f, uniform(random) / 300.0f);
  std::vector<int64_t> index = random_index(src.size(), 3, random);
  const std::vector<float> self(static_cast<size_t>(3 * kColumns), 0.5f);
  for (bool include_self : {true, false}) {
    const std::vector<float> want =
        reference_scatter(self, {3, kColumns}, 0, index, {kValues, kColumns}, src,
                          {kValues, kColumns}, Reduce::Sum, include_self);
    for (const std::string& device : kiln::devices()) {
      INFO(device << " include_self " << include_self);
      const Tensor x = Tensor::from_vector(self, {3, kColumns}, device);
      const Tensor ids = Tensor::from_vector(index, {kValues, kColumns}, device);
      const Tensor values = Tensor::from_vector(src, {kValues, kColumns}, device);
      for (int run = 0; run < 2; ++run) {
        check_same(x.scatter_reduce(0, ids, values, "sum", include_self).to_vector<float>(), want);
      }
    }
  }
}

TEST_CASE("scatter edge values: NaN, infinities, -0, empty and one-element tensors", "[scatter]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    const Tensor x = Tensor::from_vector<float>({1, -2, 3, 2}, {4}, device);
    const Tensor ids = Tensor::from_vector<int32_t>({1, 1, 3, 0}, {4}, device);
    const Tensor values = Tensor::from_vector<float>({nan, 5, -0.0f, -inf}, {4}, device);
    // NaN wins a max and a min; a lone -0 summed without the destination gives +0, as in
    // PyTorch (the element starts from 0).
    check_same(x.scatter_reduce(0, ids, values, "amax").to_vector<float>(), {1, nan, 3, 2});
    check_same(x.scatter_reduce(0, ids, values, "amin").to_vector<float>(), {-inf, nan, 3, -0.0f});
    check_same(x.scatter_reduce(0, ids, values, "sum", false).to_vector<float>(),
               {-inf, nan, 3, 0.0f});
    check_same(x.scatter(0, ids, values).to_vector<float>(), {-inf, 5, 3, -0.0f});
    // An empty index writes nothing; a one-element tensor takes its one value.
    const Tensor none = Tensor::zeros({0}, dtypes::int64, device);
    check_same(x.scatter(0, none, Tensor::zeros({0}, dtypes::float32, device)).to_vector<float>(),
               {1, -2, 3, 2});
    const Tensor one = Tensor::from_vector<float>({9}, {1}, device);
    check_same(
        one.scatter(0, Tensor::from_vector<int64_t>({-1}, {1}, device), 4.0).to_vector<float>(),
        {4});
    // Index dtypes narrower and unsigned.
    for (DType dtype : {dtypes::int8, dtypes::uint8, dtypes::int16, dtypes::uint32}) {
      INFO(dtype.name());
      const Tensor narrow = Tensor::from_vector<int64_t>({2, 0}, {2}, device).cast(dtype);
      check_same(
          x.scatter(0, narrow, Tensor::from_vector<float>({7, 8}, {2}, device)).to_vector<float>(),
          {8, -2, 7, 2});
    }
  }
}

TEST_CASE("scatter reads its destination, index and values through views", "[scatter]") {
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    // Destination: a transposed, flipped view; index: a broadcast row; values: a padded view.
    const std::vector<float> base = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    const Tensor x = Tensor::from_vector(base, {3, 4}, device).permute({1, 0}).flip({0});  // 4x3
    const Tensor ids = Tensor::from_vector<int64_t>({3, -4}, {2, 1}, device).expand({2, 3});
    const Tensor values =
        Tensor::from_vector<float>({1, 2, 3}, {1, 3}, device).pad({{0, 1}, {0, 0}}, 0.0);
    // x as a 4x3 array: row r is column 3 - r of base.
    std::vector<float> dense(12);
    for (int64_t row = 0; row < 4; ++row) {
      for (int64_t column = 0; column < 3; ++column)
        dense[static_cast<size_t>(row * 3 + column)] =
            base[static_cast<size_t>(column * 4 + (3 - row))];
    }
    std::vector<float> want = dense;
    for (int64_t column = 0; column < 3; ++column) {
      want[static_cast<size_t>(3 * 3 + column)] = static_cast<float>(column + 1);
      want[static_cast<size_t>(column)] = 0;  // the padded row's zeros, written at -4 = row 0
    }
    check_same(x.scatter(0, ids, values).to_vector<float>(), want);
    // The result feeds later kernels like any tensor.
    CHECK((x.scatter(0, ids, values) * 2).sum().item<float>() ==
          Approx(2 * std::accumulate(want.begin(), want.end(), 0.0)));
  }
}

TEST_CASE("an index outside its axis raises IndexError and writes nothing", "[scatter][errors]") {
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    const Tensor x = Tensor::zeros({3, 2}, dtypes::float32, device);
    const Tensor values = Tensor::ones({2, 2}, dtypes::float32, device);
    const Tensor bad = Tensor::from_vector<int64_t>({0, 3, 1, -4}, {2, 2}, device);
    check_index_error([&] { x.scatter(0, bad, values).realize(); },
                      {"[scatter]", "out of range for axis 0 of size 3"});
    check_index_error([&] { x.scatter_reduce(0, bad, values, "sum", false).realize(); },
                      {"[scatter_reduce]", "axis 0 of size 3"});
    check_index_error(
        [&] {
          x.index_put({bad.reshape({4})}, Tensor::ones({4, 2}, dtypes::float32, device)).realize();
        },
        {"[index_put]", "axis 0 of size 3"});
    CHECK(x.to_vector<float>() == std::vector<float>(6, 0.0f));
  }
}

TEST_CASE("scatter's bad input gets typed errors naming the op and operands", "[scatter][errors]") {
  const Tensor x = Tensor::zeros({3, 4});
  const Tensor ids = Tensor::zeros({2, 4}, dtypes::int64);
  const Tensor values = Tensor::ones({2, 4});
  CHECK_THROWS_AS(x.scatter(0, values, values), DTypeError);
  CHECK_THROWS_WITH(x.scatter(0, values, values), Contains("[scatter]") && Contains("integer"));
  CHECK_THROWS_AS(x.scatter(0, ids.reshape({8}), values), ShapeError);
  CHECK_THROWS_AS(x.scatter(0, Tensor::zeros({2, 5}, dtypes::int64), Tensor::ones({2, 5})),
                  ShapeError);
  CHECK_THROWS_WITH(x.scatter(0, ids, Tensor::ones({1, 4})),
                    Contains("larger than src") && Contains("(1, 4)"));
  CHECK_THROWS_AS(x.scatter(2, ids, values), ShapeError);
  CHECK_THROWS_AS(x.scatter_reduce(0, ids, values, "median"), ValueError);
  CHECK_THROWS_WITH(x.scatter_add(0, ids, Tensor::ones({1, 4})), Contains("[scatter_add]"));
  CHECK_THROWS_WITH(x.index_put({5}, Tensor::ones({4})), Contains("[index_put]"));
  // Values with leading size-1 axes broadcast as in PyTorch.
  CHECK(x.index_put({1}, Tensor::ones({1, 1, 4})).sum().item<float>() == 4);
  CHECK_THROWS_WITH(x.scatter_reduce(0, ids, values, "median"), Contains("\"amax\""));
  CHECK_THROWS_AS(x.cast(dtypes::bool_).scatter_reduce(0, ids, values, "sum"), DTypeError);
  CHECK_THROWS_AS(x.index_put({ids.reshape({8})}, Tensor::ones({3})), ShapeError);
  CHECK_THROWS_AS(x.index_put({values}, Tensor::ones({4})), DTypeError);
  CHECK_THROWS_AS(x.index_put({Slice(), Slice(), 0}, Tensor::ones({4})), ShapeError);
}

TEST_CASE("index_put writes the selection x.index names", "[scatter][slicing]") {
  // x is 4x5 with distinct values; each case's reference writes through Tensor::index's rules.
  std::vector<float> base(20);
  for (size_t at = 0; at < base.size(); ++at) base[at] = static_cast<float>(at);
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    const Tensor x = Tensor::from_vector(base, {4, 5}, device);
    // Rows by a tensor, repeated (the last value wins; accumulating adds both).
    const Tensor rows = Tensor::from_vector<int64_t>({2, -1, 2}, {3}, device);
    const Tensor row_values =
        Tensor::from_vector<float>({100, 200, 300}, {3, 1}, device);  // broadcast along columns
    std::vector<float> want = base;
    for (int64_t column = 0; column < 5; ++column) {
      want[static_cast<size_t>(2 * 5 + column)] = 300;
      want[static_cast<size_t>(3 * 5 + column)] = 200;
    }
    check_same(x.index_put({rows}, row_values).to_vector<float>(), want);
    want = base;
    for (int64_t column = 0; column < 5; ++column) {
      want[static_cast<size_t>(2 * 5 + column)] += 400;
      want[static_cast<size_t>(3 * 5 + column)] += 200;
    }
    check_same(x.index_put({rows}, row_values, true).to_vector<float>(), want);
    // Columns by a tensor within a slice of rows: x[1::2, cols] = 7.
    const Tensor columns = Tensor::from_vector<int32_t>({4, 0}, {2}, device);
    want = base;
    for (int64_t row : {1, 3}) {
      want[static_cast<size_t>(row * 5 + 4)] = 7;
      want[static_cast<size_t>(row * 5 + 0)] = 7;
    }
    check_same(
        x.index_put({Slice(1, None, 2), columns}, Tensor::full({1}, 7.0, dtypes::float32, device))
            .to_vector<float>(),
        want);
    // Slices and integers alone: x[::-2, 3] = [10, 20]; x[1:3, ::2] += 1.
    want = base;
    want[3 * 5 + 3] = 10;
    want[1 * 5 + 3] = 20;
    check_same(
        x.index_put({Slice(None, None, -2), 3}, Tensor::from_vector<float>({10, 20}, {2}, device))
            .to_vector<float>(),
        want);
    want = base;
    for (int64_t row : {1, 2}) {
      for (int64_t column : {0, 2, 4}) want[static_cast<size_t>(row * 5 + column)] += 1;
    }
    check_same(x.index_put({Slice(1, 3), Slice(None, None, 2)},
                           Tensor::ones({1}, dtypes::float32, device), true)
                   .to_vector<float>(),
               want);
    // An Ellipsis and a tensor of indices of two dimensions: x[..., [[0, 1], [1, 0]]] = v.
    const Tensor pairs = Tensor::from_vector<int64_t>({0, 1, 1, 0}, {2, 2}, device);
    const Tensor pair_values = Tensor::from_vector<float>({-1, -2, -3, -4}, {2, 2}, device);
    want = base;
    for (int64_t row = 0; row < 4; ++row) {
      want[static_cast<size_t>(row * 5 + 0)] = -4;  // written by (0, 0), then (1, 1): last wins
      want[static_cast<size_t>(row * 5 + 1)] = -3;
    }
    check_same(x.index_put({Ellipsis, pairs}, pair_values).to_vector<float>(), want);
  }
}

TEST_CASE("a scatter over many lines and over variable sizes matches the reference",
          "[scatter][variables]") {
  // 64 lines: on a CPU each work item takes several neighbouring ones (an UPCAST).
  constexpr int64_t kRows = 13, kColumns = 64, kWrites = 40;
  std::mt19937 random(5);
  std::uniform_int_distribution<int> small(-4, 4);
  std::vector<float> table(static_cast<size_t>(kRows * kColumns)),
      updates(static_cast<size_t>(kWrites * kColumns));
  for (float& value : table) value = static_cast<float>(small(random));
  for (float& value : updates) value = static_cast<float>(small(random));
  const std::vector<int64_t> rows = random_index(static_cast<size_t>(kWrites), kRows, random);
  std::vector<int64_t> index(updates.size());
  for (size_t at = 0; at < index.size(); ++at) index[at] = rows[at / kColumns];
  const std::vector<float> want =
      reference_scatter(table, {kRows, kColumns}, 0, index, {kWrites, kColumns}, updates,
                        {kWrites, kColumns}, Reduce::Sum, true);
  const Variable writes("writes", 1, 64);
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    const Tensor x = Tensor::from_vector(table, {kRows, kColumns}, device);
    const Tensor ids = Tensor::from_vector(rows, {kWrites}, device);
    const Tensor values = Tensor::from_vector(updates, {kWrites, kColumns}, device);
    check_same(x.index_put({ids}, values, true).to_vector<float>(), want);
    // The same writes with their count a variable: one kernel serves every count.
    const Tensor some_ids = ids.shrink({{Dim(0), writes.bind(kWrites)}});
    const Tensor some_values = values.shrink({{Dim(0), writes.bind(kWrites)}, {0, kColumns}});
    check_same(x.index_put({some_ids}, some_values, true).to_vector<float>(), want);
    const std::vector<int64_t> first_index(index.begin(), index.begin() + 3 * kColumns);
    const std::vector<float> first_three =
        reference_scatter(table, {kRows, kColumns}, 0, first_index, {3, kColumns}, updates,
                          {kWrites, kColumns}, Reduce::Sum, true);
    check_same(x.index_put({ids.shrink({{Dim(0), writes.bind(3)}})},
                           values.shrink({{Dim(0), writes.bind(3)}, {0, kColumns}}), true)
                   .to_vector<float>(),
               first_three);
  }
}

TEST_CASE("a captured step replays its scatters and checks their indices", "[scatter][capture]") {
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    // A gradient step's shape: row gradients added into a table, then used.
    const Tensor table = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {3, 2}, device);
    CapturedStep step([&](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{table.index_put({in[0]}, in[1], true) * 2};
    });
    auto run = [&](std::vector<int64_t> rows, std::vector<float> updates) {
      return step({Tensor::from_vector(rows, {static_cast<int64_t>(rows.size())}, device),
                   Tensor::from_vector(updates, {static_cast<int64_t>(rows.size()), 2}, device)})[0]
          .to_vector<float>();
    };
    for (int call = 0; call < 3; ++call) {
      const float c = static_cast<float>(call);
      // Row 2 twice, row -3 (0) once: the repeat adds both.
      CHECK(run({2, -3, 2}, {c, 1, 10, 20, 100, 200}) ==
            std::vector<float>{22, 44, 6, 8, 2 * (5 + c + 100), 2 * (6 + 1 + 200)});
    }
    CHECK(step.captured());
    check_index_error([&] { run({0, 3, 1}, {0, 0, 0, 0, 0, 0}); }, {"[index_put] index 3"});
    CHECK(run({1, 1, 1}, {1, 1, 1, 1, 1, 1}) == std::vector<float>{2, 4, 12, 14, 10, 12});
  }
}

TEST_CASE("a scatter longer than a device's loop limit runs in parts, in order", "[scatter]") {
  // lavapipe stops a work item's loop at 65535 iterations: 40,000 writes into 7 elements are
  // chained in parts there (elsewhere one kernel); the sums are exact, the order the same.
  constexpr int64_t kWrites = 40000, kBins = 7;
  std::vector<int64_t> bins(static_cast<size_t>(kWrites));
  std::vector<float> values(static_cast<size_t>(kWrites));
  for (int64_t at = 0; at < kWrites; ++at) {
    bins[static_cast<size_t>(at)] = (at * 5) % kBins - (at % 2 ? kBins : 0);
    values[static_cast<size_t>(at)] = static_cast<float>(at % 5) - 2;
  }
  const std::vector<float> start = {1, 2, 3, 4, 5, 6, 7};
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    const Tensor x = Tensor::from_vector(start, {kBins}, device);
    const Tensor ids = Tensor::from_vector(bins, {kWrites}, device);
    const Tensor src = Tensor::from_vector(values, {kWrites}, device);
    for (bool include_self : {true, false}) {
      check_same(x.scatter_reduce(0, ids, src, "sum", include_self).to_vector<float>(),
                 reference_scatter(start, {kBins}, 0, bins, {kWrites}, values, {kWrites},
                                   Reduce::Sum, include_self));
    }
    // The last write wins across the parts too.
    check_same(x.scatter(0, ids, src).to_vector<float>(),
               reference_scatter(start, {kBins}, 0, bins, {kWrites}, values, {kWrites},
                                 Reduce::Replace, true));
  }
}

TEST_CASE("a scatter whose values or index are its own destination reads them unwritten",
          "[scatter]") {
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    const Tensor base = Tensor::from_vector<float>({1, 2, 3, 4}, {4}, device);
    const Tensor ids = Tensor::from_vector<int64_t>({0, 2}, {2}, device);
    // x is a scatter not yet computed; scattering x into itself permuted must read x as it was.
    const Tensor x = base.scatter(0, ids, Tensor::from_vector<float>({10, 30}, {2}, device));
    const Tensor perm = Tensor::from_vector<int64_t>({1, 0, 3, 2}, {4}, device);
    check_same(x.scatter(0, perm, x).to_vector<float>(), {2, 10, 4, 30});
    check_same(x.index_put({perm}, x).to_vector<float>(), {2, 10, 4, 30});
    check_same(x.index_put({perm}, x, true).to_vector<float>(), {12, 12, 34, 34});
    // An integer tensor as its own index: y[x[i]] = x[i] over x = (2, 0, 1, 2).
    const Tensor own = Tensor::from_vector<int32_t>({3, 0, 1, 2}, {4}, device)
                           .scatter(0, Tensor::from_vector<int64_t>({0}, {1}, device), 2.0);
    CHECK(own.scatter(0, own, own).to_vector<int32_t>() == std::vector<int32_t>{0, 1, 2, 2});
  }
}

// kiln/sort.h beyond the conformance battery's values: stability over many ties, long lines,
// empty and 0-d tensors, a variable leading axis, and typed errors.

#include <catch2/catch.hpp>

#include <kiln/kiln.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

using namespace kiln;

TEST_CASE("sort is stable over many ties and sorts long lines", "[sort]") {
  // 3000 values in 7 classes: equal values keep their positions' order, in either direction.
  std::vector<int32_t> values(3000);
  for (size_t at = 0; at < values.size(); ++at) values[at] = static_cast<int32_t>((at * 37) % 7);
  const Tensor x = Tensor::from_vector<int32_t>(values, {3000}, "CPU");
  for (bool descending : {false, true}) {
    std::vector<int64_t> expected(values.size());
    std::iota(expected.begin(), expected.end(), 0);
    std::stable_sort(expected.begin(), expected.end(), [&](int64_t a, int64_t b) {
      return descending ? values[a] > values[b] : values[a] < values[b];
    });
    CHECK(argsort(x, 0, descending).to_vector<int64_t>() == expected);
  }
  const std::vector<float> sorted = sort(Tensor::rand({5000}, 4, "CPU")).first.to_vector<float>();
  CHECK(std::is_sorted(sorted.begin(), sorted.end()));
}

TEST_CASE("sort and scans of empty, single and 0-d tensors", "[sort]") {
  const Tensor empty = Tensor::zeros({3, 0}, dtypes::float32, "CPU");
  CHECK(sort(empty).first.shape() == Shape{3, 0});
  CHECK(topk(empty, 0).second.shape() == Shape{3, 0});
  CHECK(cummax(empty, 1).first.shape() == Shape{3, 0});
  CHECK(cumprod(empty, 1).shape() == Shape{3, 0});
  CHECK(logcumsumexp(empty, 1).to_vector<float>().empty());
  const Tensor scalar = Tensor::full({}, 2.5, dtypes::float32, "CPU");
  CHECK(sort(scalar).first.item<float>() == 2.5f);
  CHECK(argsort(scalar).item<int64_t>() == 0);
  CHECK(topk(scalar, 1).first.item<float>() == 2.5f);
  CHECK(cumprod(Tensor::full({1}, 3, dtypes::int32, "CPU"), 0).to_vector<int64_t>() ==
        std::vector<int64_t>{3});
}

TEST_CASE("sort along the last axis of a variable batch", "[sort]") {
  const Variable rows("sort_rows", 1, 8);
  const Tensor all = Tensor::rand({8, 33}, 5, "CPU").realize();
  const std::vector<float> whole = sort(all, 1, true).first.to_vector<float>();
  for (int64_t count : {2, 8}) {
    const Tensor part = all.shrink({{Dim(0), rows.bind(count)}});
    const std::vector<float> got = sort(part, 1, true).first.to_vector<float>();
    REQUIRE(got.size() == static_cast<size_t>(count * 33));
    CHECK(std::equal(got.begin(), got.end(), whole.begin()));
  }
}

TEST_CASE("sorting and scans refuse bad arguments, naming the function", "[sort][errors]") {
  const Tensor x = Tensor::rand({4, 5}, 1, "CPU");
  CHECK_THROWS_WITH(topk(x, 6), Catch::Contains("[topk]") && Catch::Contains("[0, 5]"));
  CHECK_THROWS_AS(topk(x, -1), ValueError);
  CHECK_THROWS_WITH(sort(x, 2), Catch::Contains("[sort]"));
  CHECK_THROWS_AS(logcumsumexp(x.cast(dtypes::int32), 0), DTypeError);
  CHECK_THROWS_WITH(cummax(Tensor::full({}, 1, dtypes::float32, "CPU"), 0),
                    Catch::Contains("[cummax]"));
  const Variable length("sort_length", 1, 8);
  const Tensor ragged =
      Tensor::rand({2, 8}, 2, "CPU").shrink({{Dim(0), Dim(2)}, {Dim(0), length.bind(3)}});
  CHECK_THROWS_WITH(sort(ragged, 1), Catch::Contains("fixed size"));
  CHECK_THROWS_WITH(sort(Tensor::full({}, 1, dtypes::float32, "CPU"), 3),
                    Catch::Contains("[sort]"));
}

TEST_CASE("scans run over a variable axis in one kernel for every length", "[sort]") {
  const Variable length("scan_length", 1, 9);
  const Tensor all = Tensor::rand({2, 9}, 6, "CPU").realize();
  for (int64_t count : {4, 9}) {
    const Tensor part = all.shrink({{Dim(0), Dim(2)}, {Dim(0), length.bind(count)}});
    const Tensor fixed = all.shrink({{0, 2}, {0, count}});
    const std::vector<float> got = logcumsumexp(part, 1).to_vector<float>();
    const std::vector<float> want = logcumsumexp(fixed, 1).to_vector<float>();
    REQUIRE(got.size() == want.size());
    for (size_t at = 0; at < got.size(); ++at) CHECK(got[at] == Approx(want[at]).epsilon(1e-6));
    CHECK(cummax(part, 1).second.to_vector<int64_t>() ==
          cummax(fixed, 1).second.to_vector<int64_t>());
  }
}

TEST_CASE("sort orders signed zeros, NaN and wide unsigned keys as documented", "[sort]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = Tensor::from_vector<float>({0.0f, nan, -0.0f, 1, nan, -1}, {6}, "CPU");
  // Zeros tie (positions in order); NaN largest, its ties in position order too.
  CHECK(argsort(x).to_vector<int64_t>() == std::vector<int64_t>{5, 0, 2, 3, 1, 4});
  CHECK(argsort(x, 0, true).to_vector<int64_t>() == std::vector<int64_t>{1, 4, 3, 0, 2, 5});
  const std::vector<float> values = sort(x).first.to_vector<float>();
  CHECK(std::signbit(values[1]) == false);
  CHECK(std::signbit(values[2]) == true);
  const Tensor wide =
      Tensor::from_vector<uint64_t>({uint64_t{1} << 63, 5, ~uint64_t{0}, 0}, {4}, "CPU");
  CHECK(sort(wide).first.to_vector<uint64_t>() ==
        std::vector<uint64_t>{0, 5, uint64_t{1} << 63, ~uint64_t{0}});
}

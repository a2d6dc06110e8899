// Tests for core/view.h over symbolic sizes: a chain of movement ops on a ShapeTracker whose shape
// holds a variable n must index, at every value of n, exactly as the same chain built with that
// value as a number (whose indexing test_view.cpp checks against a dense reference). Reshapes that
// group dimensions around n stay one View, and a View that only reshapes the one below indexes it
// without dividing by n.

#include <catch2/catch.hpp>

#include <map>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/view.h"

using namespace kiln;

namespace {

constexpr int64_t kLargest = 5;  // n takes every value in 1..kLargest

// One size of the chain's shape: factor, times n where `has_n`.
struct Size {
  int64_t factor = 1;
  bool has_n = false;
  Sym sym(const Sym& n) const { return has_n ? n * Sym(factor) : Sym(factor); }
  int64_t at(int64_t value) const { return has_n ? factor * value : factor; }
};

// The symbolic tracker and the same chain at each value of n, moved in lockstep.
struct Chain {
  Sym n = Sym::var("n", 1, kLargest);
  std::vector<Size> sizes;
  ShapeTracker symbolic;
  std::vector<ShapeTracker> at_value;  // [value - 1]
  std::string history;

  SymShape sym_shape() const {
    SymShape shape;
    for (const Size& size : sizes) shape.push_back(size.sym(n));
    return shape;
  }
  SymShape shape_at(int64_t value) const {
    SymShape shape;
    for (const Size& size : sizes) shape.push_back(Sym(size.at(value)));
    return shape;
  }
  void reshape(std::vector<Size> new_sizes) {
    sizes = std::move(new_sizes);
    symbolic = symbolic.reshape(sym_shape());
    for (int64_t value = 1; value <= kLargest; ++value)
      at_value[value - 1] = at_value[value - 1].reshape(shape_at(value));
    history += " reshape";
  }
};

std::vector<int64_t> unravel(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t dim = shape.size(); dim-- > 0;) {
    index[dim] = flat % shape[dim];
    flat /= shape[dim];
  }
  return index;
}

// Every position at every value: the symbolic tracker's (index, valid) at n = value against the
// numeric tracker's.
bool indexes_alike(const Chain& chain) {
  for (int64_t value = 1; value <= kLargest; ++value) {
    const ShapeTracker& numeric = chain.at_value[value - 1];
    std::vector<int64_t> shape;
    int64_t count = 1;
    for (const Sym& size : numeric.shape()) {
      shape.push_back(size.const_value());
      count *= shape.back();
    }
    const std::map<std::string, int64_t> values{{"n", value}};
    for (int64_t flat = 0; flat < count; ++flat) {
      std::vector<Sym> index;
      for (int64_t at : unravel(flat, shape)) index.emplace_back(at);
      const auto [sym_index, sym_valid] = chain.symbolic.to_index(index);
      const auto [num_index, num_valid] = numeric.to_index(index);
      const bool valid = num_valid.eval() != 0;
      if (valid != (sym_valid.eval(values) != 0) ||
          (valid && sym_index.eval(values) != num_index.eval())) {
        UNSCOPED_INFO(chain.history << " at n=" << value << ", position " << flat << ": "
                                    << chain.symbolic.to_string());
        return false;
      }
    }
  }
  return true;
}

Chain start(std::mt19937& rng) {
  auto pick = [&](int64_t low, int64_t high) {
    return std::uniform_int_distribution<int64_t>(low, high)(rng);
  };
  Chain chain;
  const int64_t before = pick(1, 3), after = pick(1, 3);
  chain.sizes = {{before, false}, {1, true}, {after, false}};
  if (pick(0, 1) == 0) {
    chain.symbolic = ShapeTracker::contiguous(chain.sym_shape());
    for (int64_t value = 1; value <= kLargest; ++value)
      chain.at_value.push_back(ShapeTracker::contiguous(chain.shape_at(value)));
    chain.history = "contiguous";
  } else {
    // The first n rows of a cache of kLargest + 1: strides that do not follow n.
    const SymShape cache{Sym(before), Sym(kLargest + 1), Sym(after)};
    chain.symbolic = ShapeTracker::contiguous(cache).shrink(
        {{Sym(0), Sym(before)}, {Sym(0), chain.n}, {Sym(0), Sym(after)}});
    for (int64_t value = 1; value <= kLargest; ++value) {
      chain.at_value.push_back(ShapeTracker::contiguous(cache).shrink(
          {{Sym(0), Sym(before)}, {Sym(0), Sym(value)}, {Sym(0), Sym(after)}}));
    }
    chain.history = "shrunk cache";
  }
  return chain;
}

// One random movement op valid for every value of n.
void random_op(std::mt19937& rng, Chain& chain) {
  auto pick = [&](int64_t low, int64_t high) {
    return std::uniform_int_distribution<int64_t>(low, high)(rng);
  };
  const size_t ndim = chain.sizes.size();
  std::vector<Size> sizes = chain.sizes;
  switch (pick(0, 7)) {
    case 0: {  // merge two neighbours (at most one holding n)
      if (ndim < 2) break;
      const size_t dim = pick(0, ndim - 2);
      if (sizes[dim].has_n && sizes[dim + 1].has_n) break;
      sizes[dim] = {sizes[dim].factor * sizes[dim + 1].factor,
                    sizes[dim].has_n || sizes[dim + 1].has_n};
      sizes.erase(sizes.begin() + dim + 1);
      return chain.reshape(sizes);
    }
    case 1: {  // split a size: a divisor of its factor on one side, n (if any) on either
      if (ndim == 0) break;
      const size_t dim = pick(0, ndim - 1);
      std::vector<int64_t> divisors;
      for (int64_t divisor = 1; divisor <= sizes[dim].factor; ++divisor) {
        if (sizes[dim].factor % divisor == 0) divisors.push_back(divisor);
      }
      const int64_t left = divisors[pick(0, divisors.size() - 1)];
      Size first{left, false}, second{sizes[dim].factor / left, false};
      (pick(0, 1) ? first : second).has_n = sizes[dim].has_n;
      sizes[dim] = second;
      sizes.insert(sizes.begin() + dim, first);
      return chain.reshape(sizes);
    }
    case 2: {  // add or drop a size-1 dimension
      for (size_t dim = 0; dim < ndim; ++dim) {
        if (sizes[dim].factor == 1 && !sizes[dim].has_n && pick(0, 1)) {
          sizes.erase(sizes.begin() + dim);
          return chain.reshape(sizes);
        }
      }
      sizes.insert(sizes.begin() + pick(0, ndim), Size{});
      return chain.reshape(sizes);
    }
    case 3: {
      std::vector<int> axes(ndim);
      std::iota(axes.begin(), axes.end(), 0);
      std::shuffle(axes.begin(), axes.end(), rng);
      std::vector<Size> permuted;
      for (int axis : axes) permuted.push_back(sizes[axis]);
      chain.sizes = permuted;
      chain.symbolic = chain.symbolic.permute(axes);
      for (ShapeTracker& numeric : chain.at_value) numeric = numeric.permute(axes);
      chain.history += " permute";
      return;
    }
    case 4: {
      std::vector<bool> axes;
      for (size_t dim = 0; dim < ndim; ++dim) axes.push_back(pick(0, 1) == 1);
      chain.symbolic = chain.symbolic.flip(axes);
      for (ShapeTracker& numeric : chain.at_value) numeric = numeric.flip(axes);
      chain.history += " flip";
      return;
    }
    case 5:  // shrink or pad a constant size
    case 6: {
      const bool shrinking = pick(0, 1) == 0;
      std::vector<std::pair<Sym, Sym>> sym_args;
      std::vector<std::vector<std::pair<Sym, Sym>>> value_args(kLargest);
      for (size_t dim = 0; dim < ndim; ++dim) {
        int64_t first = 0, second = shrinking ? sizes[dim].factor : 0;
        if (!sizes[dim].has_n) {
          first = pick(0, shrinking ? sizes[dim].factor - 1 : 1);
          second = shrinking ? pick(first + 1, sizes[dim].factor) : pick(0, 1);
          sizes[dim].factor = shrinking ? second - first : sizes[dim].factor + first + second;
        }
        for (int64_t value = 1; value <= kLargest; ++value) {
          const int64_t end = sizes[dim].has_n && shrinking ? chain.sizes[dim].at(value) : second;
          value_args[value - 1].emplace_back(Sym(first), Sym(end));
        }
        sym_args.emplace_back(Sym(first), sizes[dim].has_n && shrinking
                                              ? chain.sizes[dim].sym(chain.n)
                                              : Sym(second));
      }
      chain.sizes = sizes;
      chain.symbolic = shrinking ? chain.symbolic.shrink(sym_args) : chain.symbolic.pad(sym_args);
      for (int64_t value = 1; value <= kLargest; ++value) {
        ShapeTracker& numeric = chain.at_value[value - 1];
        numeric =
            shrinking ? numeric.shrink(value_args[value - 1]) : numeric.pad(value_args[value - 1]);
      }
      chain.history += shrinking ? " shrink" : " pad";
      return;
    }
    default: {  // broadcast a size-1 dimension
      for (size_t dim = 0; dim < ndim; ++dim) {
        if (sizes[dim].factor == 1 && !sizes[dim].has_n) sizes[dim].factor = pick(1, 3);
      }
      chain.sizes = sizes;
      chain.symbolic = chain.symbolic.expand(chain.sym_shape());
      for (int64_t value = 1; value <= kLargest; ++value)
        chain.at_value[value - 1] = chain.at_value[value - 1].expand(chain.shape_at(value));
      chain.history += " expand";
      return;
    }
  }
}

}  // namespace

TEST_CASE("view: chains over a symbolic size index as at each of its values", "[view]") {
  int failures = 0;
  for (uint32_t seed = 1; seed <= 300 && failures < 3; ++seed) {
    std::mt19937 rng(seed);
    Chain chain = start(rng);
    INFO("seed " << seed);
    const int ops = std::uniform_int_distribution<int>(1, 6)(rng);
    for (int op = 0; op < ops && failures == 0; ++op) {
      random_op(rng, chain);
      if (!indexes_alike(chain)) ++failures;
    }
  }
  CHECK(failures == 0);
}

TEST_CASE("view: reshapes around a symbolic size stay one View", "[view]") {
  const Sym n = Sym::var("n", 1, 80);
  // The first n rows of a [2, 80, 128] cache, as a matmul reshapes them.
  const ShapeTracker rows = ShapeTracker::contiguous(to_sym_shape({2, 80, 128}))
                                .shrink({{Sym(0), Sym(2)}, {Sym(0), n}, {Sym(0), Sym(128)}});
  const ShapeTracker unsqueezed = rows.reshape({Sym(2), n, Sym(1), Sym(128)});
  CHECK(unsqueezed.views().size() == 1);
  const ShapeTracker heads = rows.reshape({Sym(2), n, Sym(4), Sym(32)});
  CHECK(heads.views().size() == 1);
  // Merging the batch with n needs a copy: rows are 80 apart, not n.
  CHECK(rows.reshape({Sym(2) * n, Sym(128)}).views().size() == 2);
  // A contiguous [2, n, 384] splits and merges around n freely.
  const ShapeTracker dense = ShapeTracker::contiguous({Sym(2), n, Sym(384)});
  CHECK(dense.reshape({Sym(2) * n, Sym(3), Sym(128)}).views().size() == 1);
  CHECK(dense.permute({1, 0, 2}).reshape({n, Sym(2), Sym(3), Sym(128)}).views().size() == 1);
}

TEST_CASE("view: a reshape over a symbolic size indexes without dividing by it", "[view]") {
  const Sym n = Sym::var("n", 1, 80);
  const Sym row = Sym::var("row", 0, 79), column = Sym::var("column", 0, 383);
  // (2, n, 1, 384) -> (2, n, 384): a size-1 axis dropped, nothing flattened.
  const std::vector<Sym> index =
      reshape_index({Sym(1), row, column}, {Sym(2), n, Sym(384)}, {Sym(2), n, Sym(1), Sym(384)});
  CHECK(index == std::vector<Sym>{Sym(1), row, Sym(0), column});
  // (2, n, 384) -> (2n, 384): the merged run is flattened, the rest passes through.
  const std::vector<Sym> merged =
      reshape_index({Sym(1), row, column}, {Sym(2), n, Sym(384)}, {Sym(2) * n, Sym(384)});
  CHECK(merged[0] == n + row);
  CHECK(merged[1] == column);
}

TEST_CASE("view: a contiguous View that holds fewer elements than the one below is no reshape",
          "[view]") {
  // (8, 4) transposed, flattened, its first 16 elements as (4, 4): the View on top is contiguous
  // but reads only half of the one below, so its index must go through the flat position.
  const ShapeTracker tracker = ShapeTracker::contiguous(to_sym_shape({8, 4}))
                                   .permute({1, 0})
                                   .reshape(to_sym_shape({32}))
                                   .shrink({{Sym(0), Sym(16)}})
                                   .reshape(to_sym_shape({4, 4}));
  for (int64_t row = 0; row < 4; ++row) {
    for (int64_t column = 0; column < 4; ++column) {
      const int64_t flat = row * 4 + column;  // position in the transposed (4, 8)
      const int64_t expected = (flat % 8) * 4 + flat / 8;
      CHECK(tracker.to_index({Sym(row), Sym(column)}).first.eval() == expected);
    }
  }
}

// Tests for core/view.h: movement ops on a ShapeTracker against an explicit reference.
//
// The reference is the dense answer: for every logical position (row-major), which buffer element
// sits there, or -1 for padding. Each movement op transforms it by a plain loop, so whatever views,
// masks and symbolic simplifications the tracker uses, to_index must land on the same elements.

#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/view.h"

using namespace kiln;

namespace {

using Shape = std::vector<int64_t>;
using Index = std::vector<int64_t>;

int64_t numel(const Shape& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<int64_t>());
}

Index unravel(int64_t flat, const Shape& shape) {
  Index index(shape.size());
  for (size_t dim = shape.size(); dim-- > 0;) {
    index[dim] = flat % shape[dim];
    flat /= shape[dim];
  }
  return index;
}

int64_t ravel(const Index& index, const Shape& shape) {
  int64_t flat = 0;
  for (size_t dim = 0; dim < shape.size(); ++dim) flat = flat * shape[dim] + index[dim];
  return flat;
}

std::string text(const Shape& shape) {
  std::string out = "(";
  for (size_t dim = 0; dim < shape.size(); ++dim)
    out += (dim ? "," : "") + std::to_string(shape[dim]);
  return out + ")";
}

struct Reference {
  Shape shape;
  std::vector<int64_t> source;  // per logical position: the buffer element, or -1 for padding
};

// Builds the reference of `new_shape` where each position reads the old position that old_of
// gives (std::nullopt: padding).
Reference remap(const Reference& old, const Shape& new_shape,
                const std::function<std::optional<Index>(const Index&)>& old_of) {
  Reference result{new_shape, {}};
  for (int64_t flat = 0; flat < numel(new_shape); ++flat) {
    const std::optional<Index> from = old_of(unravel(flat, new_shape));
    result.source.push_back(from ? old.source[ravel(*from, old.shape)] : -1);
  }
  return result;
}

// A tracker and its reference, moved in lockstep; `history` names the ops for failure messages.
struct Pair {
  ShapeTracker tracker;
  Reference ref;
  std::string history;
};

Pair start(const Shape& shape) {
  Reference ref{shape, std::vector<int64_t>(numel(shape))};
  std::iota(ref.source.begin(), ref.source.end(), 0);
  return {ShapeTracker::contiguous(to_sym_shape(shape)), ref, "contiguous" + text(shape)};
}

Pair reshape(const Pair& in, const Shape& shape) {
  // Row-major order is unchanged by a reshape.
  return {in.tracker.reshape(to_sym_shape(shape)),
          {shape, in.ref.source},
          in.history + " reshape" + text(shape)};
}

Pair permute(const Pair& in, const std::vector<int>& axes) {
  Shape shape;
  for (int axis : axes) shape.push_back(in.ref.shape[axis]);
  Reference ref = remap(in.ref, shape, [&](const Index& index) -> std::optional<Index> {
    Index old(index.size());
    for (size_t dim = 0; dim < axes.size(); ++dim) old[axes[dim]] = index[dim];
    return old;
  });
  Shape axes64(axes.begin(), axes.end());
  return {in.tracker.permute(axes), ref, in.history + " permute" + text(axes64)};
}

Pair expand(const Pair& in, const Shape& shape) {
  Reference ref = remap(in.ref, shape, [&](const Index& index) -> std::optional<Index> {
    Index old = index;
    for (size_t dim = 0; dim < old.size(); ++dim) {
      if (in.ref.shape[dim] == 1) old[dim] = 0;
    }
    return old;
  });
  return {in.tracker.expand(to_sym_shape(shape)), ref, in.history + " expand" + text(shape)};
}

Pair pad(const Pair& in, const std::vector<std::pair<int64_t, int64_t>>& before_after) {
  Shape shape = in.ref.shape;
  std::vector<std::pair<Sym, Sym>> sym_args;
  std::string args;
  for (size_t dim = 0; dim < shape.size(); ++dim) {
    shape[dim] += before_after[dim].first + before_after[dim].second;
    sym_args.emplace_back(before_after[dim].first, before_after[dim].second);
    args += "(" + std::to_string(before_after[dim].first) + "," +
            std::to_string(before_after[dim].second) + ")";
  }
  Reference ref = remap(in.ref, shape, [&](const Index& index) -> std::optional<Index> {
    Index old = index;
    for (size_t dim = 0; dim < old.size(); ++dim) {
      old[dim] -= before_after[dim].first;
      if (old[dim] < 0 || old[dim] >= in.ref.shape[dim]) return std::nullopt;
    }
    return old;
  });
  return {in.tracker.pad(sym_args), ref, in.history + " pad[" + args + "]"};
}

Pair shrink(const Pair& in, const std::vector<std::pair<int64_t, int64_t>>& begin_end) {
  Shape shape;
  std::vector<std::pair<Sym, Sym>> sym_args;
  std::string args;
  for (const auto& [begin, end] : begin_end) {
    shape.push_back(end - begin);
    sym_args.emplace_back(begin, end);
    args += "(" + std::to_string(begin) + "," + std::to_string(end) + ")";
  }
  Reference ref = remap(in.ref, shape, [&](const Index& index) -> std::optional<Index> {
    Index old = index;
    for (size_t dim = 0; dim < old.size(); ++dim) old[dim] += begin_end[dim].first;
    return old;
  });
  return {in.tracker.shrink(sym_args), ref, in.history + " shrink[" + args + "]"};
}

Pair flip(const Pair& in, const std::vector<bool>& axes) {
  Reference ref = remap(in.ref, in.ref.shape, [&](const Index& index) -> std::optional<Index> {
    Index old = index;
    for (size_t dim = 0; dim < old.size(); ++dim) {
      if (axes[dim]) old[dim] = in.ref.shape[dim] - 1 - index[dim];
    }
    return old;
  });
  std::string args;
  for (bool axis : axes) args += axis ? "1" : "0";
  return {in.tracker.flip(axes), ref, in.history + " flip[" + args + "]"};
}

// Checks to_index at every logical position, first with constant indices (which must fold to
// constants) and then with one bounded variable per dimension evaluated at each point. Returns
// false after reporting the first mismatch.
bool check(const Pair& pair) {
  INFO("ops: " << pair.history);
  INFO("tracker: " << pair.tracker.to_string());
  const Shape& shape = pair.ref.shape;
  REQUIRE(pair.tracker.ndim() == shape.size());
  for (size_t dim = 0; dim < shape.size(); ++dim) {
    REQUIRE(pair.tracker.shape()[dim] == Sym(shape[dim]));
  }
  const int64_t count = numel(shape);

  for (int64_t flat = 0; flat < count; ++flat) {
    const Index index = unravel(flat, shape);
    const auto [buffer, valid] = pair.tracker.to_index(to_sym_shape(index));
    const int64_t expected = pair.ref.source[flat];
    INFO("constant index at " << text(index) << ": expected " << expected << ", got ("
                              << buffer.key() << ", valid " << valid.key() << ")");
    const bool ok = valid.is_const() && buffer.is_const() &&
                    (expected < 0 ? valid.const_value() == 0
                                  : valid.const_value() == 1 && buffer.const_value() == expected);
    if (!ok) {
      FAIL_CHECK("constant to_index disagrees with the reference");
      return false;
    }
  }

  if (count > 0) {
    std::vector<Sym> index_vars;
    for (size_t dim = 0; dim < shape.size(); ++dim) {
      index_vars.push_back(Sym::var("i" + std::to_string(dim), 0, shape[dim] - 1));
    }
    const auto [buffer, valid] = pair.tracker.to_index(index_vars);
    INFO("symbolic: (" << buffer.key() << ", valid " << valid.key() << ")");
    std::map<std::string, int64_t> env;
    for (int64_t flat = 0; flat < count; ++flat) {
      const Index index = unravel(flat, shape);
      for (size_t dim = 0; dim < shape.size(); ++dim) env["i" + std::to_string(dim)] = index[dim];
      const int64_t expected = pair.ref.source[flat];
      const int64_t is_valid = valid.eval(env);
      const int64_t value = buffer.eval(env);
      INFO("symbolic index at " << text(index) << ": expected " << expected << ", got (" << value
                                << ", valid " << is_valid << ")");
      // The value must be right, and each Sym's claimed range must hold at every point.
      const bool ok = (expected < 0 ? is_valid == 0 : is_valid == 1 && value == expected) &&
                      valid.vmin() <= is_valid && is_valid <= valid.vmax() &&
                      buffer.vmin() <= value && value <= buffer.vmax();
      if (!ok) {
        FAIL_CHECK("symbolic to_index disagrees with the reference (or leaves its range)");
        return false;
      }
    }
  }

  // is_injective may say false conservatively, but a true must be true.
  if (pair.tracker.is_injective()) {
    std::set<int64_t> seen;
    for (int64_t source : pair.ref.source) {
      if (source >= 0 && !seen.insert(source).second) {
        FAIL_CHECK("is_injective() is true but element " << source << " is read twice");
        return false;
      }
    }
  }
  return true;
}

constexpr int64_t kMaxElements = 1500;  // keeps the per-point checks fast

Shape random_shape(std::mt19937& rng, int64_t count) {
  auto pick = [&](int64_t low, int64_t high) {
    return std::uniform_int_distribution<int64_t>(low, high)(rng);
  };
  Shape shape;
  if (count == 0) {
    shape.resize(pick(1, 4));
    for (auto& size : shape) size = pick(1, 5);
    shape[pick(0, shape.size() - 1)] = 0;
    return shape;
  }
  const int64_t ndim = count == 1 ? pick(0, 4) : pick(1, 4);
  int64_t remaining = count;
  for (int64_t dim = 0; dim + 1 < ndim; ++dim) {
    std::vector<int64_t> divisors;
    for (int64_t divisor = 1; divisor <= remaining; ++divisor) {
      if (remaining % divisor == 0) divisors.push_back(divisor);
    }
    shape.push_back(divisors[pick(0, divisors.size() - 1)]);
    remaining /= shape.back();
  }
  if (ndim > 0) shape.push_back(remaining);
  return shape;
}

// One random movement op that is valid for the current shape.
Pair random_op(std::mt19937& rng, const Pair& in) {
  auto pick = [&](int64_t low, int64_t high) {
    return std::uniform_int_distribution<int64_t>(low, high)(rng);
  };
  const Shape& shape = in.ref.shape;
  const size_t ndim = shape.size();
  // Reshape is drawn twice as often: it is the op that pushes Views, and Views on Views are
  // where index arithmetic gets interesting.
  switch (pick(0, 6)) {
    case 0:
    case 6:
      return reshape(in, random_shape(rng, numel(shape)));
    case 1: {
      std::vector<int> axes(ndim);
      std::iota(axes.begin(), axes.end(), 0);
      std::shuffle(axes.begin(), axes.end(), rng);
      return permute(in, axes);
    }
    case 2: {
      Shape target = shape;
      for (auto& size : target) {
        if (size == 1 && pick(0, 1)) size = pick(0, 4);
      }
      if (numel(target) <= kMaxElements) return expand(in, target);
      break;
    }
    case 3: {
      std::vector<std::pair<int64_t, int64_t>> before_after;
      Shape target = shape;
      for (size_t dim = 0; dim < ndim; ++dim) {
        before_after.emplace_back(pick(0, 2), pick(0, 2));
        target[dim] += before_after.back().first + before_after.back().second;
      }
      if (numel(target) <= kMaxElements) return pad(in, before_after);
      break;
    }
    case 4: {
      std::vector<std::pair<int64_t, int64_t>> begin_end;
      for (int64_t size : shape) {
        const int64_t begin = pick(0, size);
        begin_end.emplace_back(begin, pick(begin, size));
      }
      return shrink(in, begin_end);
    }
    default:
      break;
  }
  std::vector<bool> axes;
  for (size_t dim = 0; dim < ndim; ++dim) axes.push_back(pick(0, 1) == 1);
  return flip(in, axes);
}

}  // namespace

TEST_CASE("view: random movement chains index like the reference", "[view]") {
  int failures = 0;
  // Seeds past 400 make every second op a reshape, so that Views stack up (3 and more).
  for (uint32_t seed = 1; seed <= 700 && failures < 3; ++seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int64_t low, int64_t high) {
      return std::uniform_int_distribution<int64_t>(low, high)(rng);
    };
    Shape shape(pick(0, 4));
    for (auto& size : shape) size = pick(1, 5);
    if (!shape.empty() && pick(0, 9) == 0) shape[pick(0, shape.size() - 1)] = 0;
    Pair pair = start(shape);
    const int64_t ops = pick(1, 6);
    INFO("seed " << seed);
    for (int64_t op = 0; op < ops && failures == 0; ++op) {
      const bool reshape_turn = seed > 400 && op % 2 == 1;
      pair = reshape_turn ? reshape(pair, random_shape(rng, numel(pair.ref.shape)))
                          : random_op(rng, pair);
      if (!check(pair)) ++failures;  // every prefix of the chain is checked
    }
  }
  CHECK(failures == 0);
}

TEST_CASE("view: is_contiguous for simple cases", "[view]") {
  const ShapeTracker base = ShapeTracker::contiguous(to_sym_shape({2, 3}));
  CHECK(base.is_contiguous());
  CHECK(ShapeTracker::contiguous({}).is_contiguous());
  CHECK(ShapeTracker::contiguous(to_sym_shape({1, 4, 1})).is_contiguous());
  CHECK_FALSE(base.permute({1, 0}).is_contiguous());
  CHECK(base.permute({1, 0}).permute({1, 0}).is_contiguous());
  CHECK(base.permute({0, 1}).is_contiguous());
  CHECK_FALSE(base.flip({false, true}).is_contiguous());
  CHECK(base.shrink({{0, 2}, {0, 3}}).is_contiguous());
  CHECK_FALSE(base.shrink({{1, 2}, {0, 3}}).is_contiguous());  // offset 3
  CHECK_FALSE(base.shrink({{0, 2}, {0, 2}}).is_contiguous());  // rows have gaps
  CHECK(base.pad({{0, 0}, {0, 0}}).is_contiguous());
  CHECK_FALSE(base.pad({{0, 0}, {1, 0}}).is_contiguous());
  CHECK(base.reshape(to_sym_shape({3, 2})).is_contiguous());
  CHECK(base.reshape(to_sym_shape({6})).reshape(to_sym_shape({1, 6, 1})).is_contiguous());
  CHECK_FALSE(
      ShapeTracker::contiguous(to_sym_shape({1, 3})).expand(to_sym_shape({2, 3})).is_contiguous());
}

TEST_CASE("view: reshape stays one View exactly where NumPy would not copy", "[view]") {
  // Contiguous: any reshape is free.
  Pair split = reshape(start({4, 6}), {2, 2, 6});
  CHECK(split.tracker.views().size() == 1);
  CHECK(split.tracker.is_contiguous());
  CHECK(check(split));

  // Transposed (6,4) with strides (1,6): splitting the first axis needs no copy.
  Pair transposed = permute(start({4, 6}), {1, 0});
  Pair split_transposed = reshape(transposed, {3, 2, 4});
  CHECK(split_transposed.tracker.views().size() == 1);
  CHECK(check(split_transposed));
  // ... but flattening it does.
  Pair flat_transposed = reshape(transposed, {24});
  CHECK(flat_transposed.tracker.views().size() == 2);
  CHECK(check(flat_transposed));

  Pair small_transposed = reshape(permute(start({2, 3}), {1, 0}), {6});
  CHECK(small_transposed.tracker.views().size() == 2);
  CHECK(check(small_transposed));

  // Swapping the outer axes of (2,3,4) and merging the inner two needs a copy.
  Pair swapped = reshape(permute(start({2, 3, 4}), {1, 0, 2}), {3, 8});
  CHECK(swapped.tracker.views().size() == 2);
  CHECK(check(swapped));
  // Merging only the untouched inner axis with nothing is free: (3,2,4) -> (3,2,2,2).
  Pair split_inner = reshape(permute(start({2, 3, 4}), {1, 0, 2}), {3, 2, 2, 2});
  CHECK(split_inner.tracker.views().size() == 1);
  CHECK(check(split_inner));

  // Flipping every axis reverses the flat order: still one View (negative stride).
  Pair flipped = reshape(flip(start({2, 3}), {true, true}), {6});
  CHECK(flipped.tracker.views().size() == 1);
  CHECK(check(flipped));

  // Whole rows of a matrix are contiguous; a column slice is not.
  Pair rows = reshape(shrink(start({4, 6}), {{1, 3}, {0, 6}}), {12});
  CHECK(rows.tracker.views().size() == 1);
  CHECK(check(rows));
  Pair columns = reshape(shrink(start({4, 6}), {{0, 4}, {0, 3}}), {12});
  CHECK(columns.tracker.views().size() == 2);
  CHECK(check(columns));

  // A broadcast row: adding size-1 axes is free, flattening copies.
  Pair broadcast = expand(start({1, 3}), {4, 3});
  Pair unsqueezed = reshape(broadcast, {4, 1, 3});
  CHECK(unsqueezed.tracker.views().size() == 1);
  CHECK(check(unsqueezed));
  Pair flat_broadcast = reshape(broadcast, {12});
  CHECK(flat_broadcast.tracker.views().size() == 2);
  CHECK(check(flat_broadcast));

  // A padded (masked) View takes added or removed size-1 axes in place.
  Pair padded = reshape(pad(start({3}), {{1, 1}}), {1, 5, 1});
  CHECK(padded.tracker.views().size() == 1);
  CHECK(check(padded));
  CHECK(check(reshape(padded, {5})));
  CHECK(check(reshape(pad(start({2, 3}), {{0, 0}, {1, 0}}), {8})));  // must push a View
}

TEST_CASE("view: empty shapes and scalars", "[view]") {
  // A scalar reads element 0, also once reshaped and broadcast.
  const ShapeTracker scalar = ShapeTracker::contiguous({});
  CHECK(scalar.ndim() == 0);
  const auto [buffer, valid] = scalar.to_index({});
  CHECK(buffer == Sym(0));
  CHECK(valid == Sym(1));
  CHECK(check(start({})));
  CHECK(check(expand(reshape(start({}), {1, 1}), {3, 4})));
  CHECK(check(reshape(reshape(start({}), {1, 1, 1}), {})));
  CHECK(check(pad(reshape(start({}), {1}), {{2, 1}})));

  // Size-0 dimensions: nothing to index, but every op must keep the shape right.
  CHECK(check(start({2, 0, 3})));
  CHECK(check(permute(reshape(start({2, 0, 3}), {0, 5}), {1, 0})));
  CHECK(check(shrink(start({2, 3}), {{1, 1}, {0, 3}})));
  // Padding an empty axis gives positions that are all padding.
  CHECK(check(pad(start({0}), {{1, 2}})));
  CHECK(check(expand(pad(shrink(start({2, 3}), {{1, 1}, {0, 3}}), {{1, 0}, {0, 0}}), {4, 3})));
  CHECK(check(flip(pad(start({2, 0}), {{0, 0}, {1, 1}}), {true, true})));
}

TEST_CASE("view: symbolic shapes index like their constant instances", "[view]") {
  const Sym n = Sym::var("n", 1, 8);
  const ShapeTracker tracker = ShapeTracker::contiguous({n, Sym(4)});
  CHECK(tracker.is_contiguous());
  const Sym i = Sym::var("i", 0, 7), j = Sym::var("j", 0, 3);
  const auto [buffer, valid] = tracker.to_index({i, j});
  CHECK(valid == Sym(1));
  CHECK(buffer == i * Sym(4) + j);
  // Flattening a contiguous symbolic shape stays contiguous and reads element k at k.
  const ShapeTracker flat = tracker.reshape({n * Sym(4)});
  CHECK(flat.views().size() == 1);
  const Sym k = Sym::var("k", 0, 31);
  CHECK(flat.to_index({k}).first == k);
  // A transposed symbolic matrix, flattened, pushes a View; check it for every n.
  const ShapeTracker transposed = tracker.permute({1, 0}).reshape({Sym(4) * n});
  for (int64_t size = 1; size <= 8; ++size) {
    for (int64_t position = 0; position < 4 * size; ++position) {
      const auto [index, ok] = transposed.to_index({Sym(position)});
      const std::map<std::string, int64_t> env{{"n", size}};
      CHECK(ok.eval(env) == 1);
      CHECK(index.eval(env) == (position % size) * 4 + position / size);
    }
  }
}

// In-place writes (Tensor::assign, index_put_) on every device: the write lands in the tensor's
// own memory where nothing else reads the old value; reads built before the write keep the old
// value and reads built after see the new one; bad input is a typed error that changes nothing.

#include <catch2/catch.hpp>

#include <kiln/kiln.h>

#include <vector>

#include "tests/index_checks.h"
#include "tests/test_support.h"

using namespace kiln;
using namespace kiln::indexing;
using kiln::testing::check_same;

namespace {

// The device's own allocation behind a realized tensor, to tell a write in place from a new one.
const void* memory_of(const Tensor& tensor) {
  return tensor.native_memory().handle;
}

}  // namespace

TEST_CASE("assign writes a realized tensor's own buffer", "[assign]") {
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    Tensor w = Tensor::from_vector<float>({1, 2, 3, 4}, {4}, device);
    const void* memory = memory_of(w);
    // An optimizer's update: the value given as a temporary reads w element by element.
    w.assign(w * 2 - 1);
    check_same(w.to_vector<float>(), {1, 3, 5, 7});
    CHECK(memory_of(w) == memory);
    // A value that reads w at other elements is computed beside it first.
    w.assign(w.flip({0}));
    check_same(w.to_vector<float>(), {7, 5, 3, 1});
    CHECK(memory_of(w) == memory);
    // Broadcast and converted.
    w.assign(Tensor::full({1}, 9, dtypes::int32, device));
    check_same(w.to_vector<float>(), {9, 9, 9, 9});
    CHECK(memory_of(w) == memory);
  }
}

TEST_CASE("the temporaries of + - * / let go of what they read: an update needs no copy",
          "[assign]") {
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    Tensor w = Tensor::from_vector<float>({1, 2, 3, 4}, {4}, device);
    const Tensor g = Tensor::from_vector<float>({1, 1, 1, 1}, {4}, device);
    const UOp* const node = w.node().get();  // not holding it: a holder would read the old value
    // Every temporary here is an operand of + - * /: none holds w's old value when assign
    // counts its readers, so the write is in place and w keeps its node (no copy aside).
    w.assign(w * 0.5 + g * 2 - (w / 4) * (1 - w));
    check_same(w.to_vector<float>(), {2.5f, 3.5f, 5, 7});
    CHECK(w.node().get() == node);
    w.assign(2 * w - 1 + (0.5 * w + g));
    check_same(w.to_vector<float>(), {6.25f, 8.75f, 12.5f, 17.5f});
    CHECK(w.node().get() == node);
    // A temporary that is another function's operand holds w to the statement's end: still
    // right, through a copy.
    w.assign((w * 0).exp() + w);
    check_same(w.to_vector<float>(), {7.25f, 9.75f, 13.5f, 18.5f});
    // A named tensor given with std::move is left empty; its value went into the result.
    Tensor named = w - 7;
    const Tensor sum = std::move(named) + g;
    CHECK_FALSE(named.defined());
    check_same(sum.to_vector<float>(), {1.25f, 3.75f, 7.5f, 12.5f});
  }
}

TEST_CASE("reads built before an assign see the old value, reads after it the new one",
          "[assign]") {
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    Tensor w = Tensor::from_vector<float>({1, 2, 3}, {3}, device);
    const Tensor lazy = w + 10;  // built before, not yet computed
    const Tensor computed = w * 3;
    computed.realize();
    w.assign(Tensor::zeros({3}, dtypes::float32, device));
    check_same(w.to_vector<float>(), {0, 0, 0});
    check_same(lazy.to_vector<float>(), {11, 12, 13});
    check_same(computed.to_vector<float>(), {3, 6, 9});
    // Built after: the same expressions see the new value (no result cached from before).
    check_same((w * 3).to_vector<float>(), {0, 0, 0});
    check_same((w + 10).to_vector<float>(), {10, 10, 10});

    // A value realized into the buffer, read again through an equal graph built before.
    Tensor ramp = Tensor::arange(4, device).cast(dtypes::float32);
    ramp.realize();
    const Tensor same_ramp = Tensor::arange(4, device).cast(dtypes::float32);
    ramp.assign(ramp * 0 + 5);
    check_same(same_ramp.to_vector<float>(), {0, 1, 2, 3});
    check_same(ramp.to_vector<float>(), {5, 5, 5, 5});
  }
}

TEST_CASE("index_put_ grows a key/value cache in place", "[assign][scatter]") {
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    // [heads, positions, features]; one position written per step.
    Tensor cache = Tensor::zeros({2, 6, 3}, dtypes::float32, device);
    cache.realize();
    const void* memory = memory_of(cache);
    std::vector<float> want(2 * 6 * 3, 0.0f);
    for (int64_t step = 0; step < 4; ++step) {
      std::vector<float> row(2 * 3);
      for (size_t at = 0; at < row.size(); ++at) row[at] = static_cast<float>(step * 10) + at;
      const Tensor position = Tensor::from_vector<int64_t>({step}, {1}, device);
      cache.index_put_({Slice(), position}, Tensor::from_vector(row, {2, 1, 3}, device));
      for (int64_t head = 0; head < 2; ++head) {
        for (int64_t feature = 0; feature < 3; ++feature)
          want[static_cast<size_t>((head * 6 + step) * 3 + feature)] =
              row[static_cast<size_t>(head * 3 + feature)];
      }
      check_same(cache.to_vector<float>(), want);
      CHECK(memory_of(cache) == memory);
    }
    // Accumulating with repeated positions, and slices (computed beside, then copied).
    cache.index_put_({0, Tensor::from_vector<int64_t>({5, 5}, {2}, device)},
                     Tensor::ones({3}, dtypes::float32, device), true);
    for (int64_t feature = 0; feature < 3; ++feature)
      want[static_cast<size_t>(5 * 3 + feature)] += 2;
    cache.index_put_({1, Slice(None, None, 2), 0}, Tensor::full({3}, -1, dtypes::float32, device));
    for (int64_t position : {0, 2, 4}) want[static_cast<size_t>((6 + position) * 3)] = -1;
    check_same(cache.to_vector<float>(), want);
  }
}

TEST_CASE("an assign keeps the old value for every kind of reader built before it", "[assign]") {
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    Tensor w = Tensor::from_vector<float>({1, 2, 3, 4}, {4}, device);
    const void* memory = memory_of(w);
    // A value made in a statement before (its temporaries gone) and moved in: no reader of the
    // old contents is left, so the write is in place.
    Tensor doubled = w * 2;
    w.assign(std::move(doubled));
    check_same(w.to_vector<float>(), {2, 4, 6, 8});
    // A view, another tensor over the same node (a reshape to its own shape), and a part of the
    // value the caller keeps.
    const Tensor head = w.slice(0, 0, 2);
    const Tensor same = w.reshape({4});
    const Tensor part = w.flip({0});
    w.assign(part + 1);
    check_same(w.to_vector<float>(), {9, 7, 5, 3});
    CHECK(memory_of(w) == memory);
    check_same(head.to_vector<float>(), {2, 4});
    check_same(same.to_vector<float>(), {2, 4, 6, 8});
    check_same(part.to_vector<float>(), {8, 6, 4, 2});
    // A view over the whole buffer (read without a realize) keeps them too.
    const Tensor square = w.reshape({2, 2});
    w.assign(w * 1);
    check_same(square.to_vector<float>(), {9, 7, 5, 3});
    w.assign(std::move(w));  // itself: nothing to do
    check_same(w.to_vector<float>(), {9, 7, 5, 3});
    // The kept contents are a tensor's own: written in turn, they keep theirs for their readers.
    const Tensor head_of_same = same.slice(0, 1, 3);
    Tensor same_copy = same;
    same_copy.assign(Tensor::zeros({4}, dtypes::float32, device));
    check_same(same.to_vector<float>(), {0, 0, 0, 0});  // a copy of a handle is the tensor
    check_same(head_of_same.to_vector<float>(), {4, 6});
    check_same(head.to_vector<float>(), {2, 4});
    check_same(w.to_vector<float>(), {9, 7, 5, 3});
    // Many writes with a reader held across each: a chain of them reads right.
    std::vector<Tensor> before;
    for (int step = 0; step < 20; ++step) {
      before.push_back(w.slice(0, 0, 1));
      w.assign(w + 1);
    }
    for (int step = 0; step < 20; ++step)
      check_same(before[static_cast<size_t>(step)].to_vector<float>(), {9.0f + step});
    check_same(w.to_vector<float>(), {29, 27, 25, 23});
    CHECK(memory_of(w) == memory);
  }
}

TEST_CASE("assign writes memory the application lent (from_blob)", "[assign]") {
  std::vector<int32_t> owned = {1, 2, 3};
  // (The CPU: the device whose kernels use host memory in place.)
  Tensor lent = Tensor::from_blob(
      owned.data(), {3}, dtypes::int32, [](void*) {}, "CPU");
  lent.assign(lent * 10);
  CHECK(owned == std::vector<int32_t>({10, 20, 30}));
  const Tensor reader = lent + 0;
  lent.assign(lent + 1);  // a snapshot for the reader, the write still into `owned`
  CHECK(owned == std::vector<int32_t>({11, 21, 31}));
  check_same(reader.to_vector<int32_t>(), {10, 20, 30});
}

TEST_CASE("a captured step replays its writes and reads what is written outside it",
          "[assign][capture]") {
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    // State the step updates (a running sum), a value it returns from before the update, and a
    // weight an optimizer outside the step writes.
    Tensor total = Tensor::zeros({3}, dtypes::float32, device);
    total.realize();
    Tensor weight = Tensor::ones({3}, dtypes::float32, device);
    weight.realize();
    CapturedStep step([&](const std::vector<Tensor>& in) {
      const Tensor before = total * weight;
      total.assign(total + in[0]);
      return std::vector<Tensor>{before};
    });
    std::vector<float> sum(3, 0.0f);
    for (int call = 0; call < 5; ++call) {
      const std::vector<float> x = {1.0f + call, 2.0f, -1.0f};
      const float scale = static_cast<float>(call + 1);
      std::vector<float> want(3);
      for (size_t at = 0; at < 3; ++at) want[at] = sum[at] * scale;
      const std::vector<Tensor> out = step({Tensor::from_vector(x, {3}, device)});
      check_same(out[0].to_vector<float>(), want);
      for (size_t at = 0; at < 3; ++at) sum[at] += x[at];
      check_same(total.to_vector<float>(), sum);
      weight.assign(Tensor::full({3}, scale + 1, dtypes::float32, device));
    }
    CHECK(step.captured());

    // A step that returns the tensor it writes returns that tensor, written, every call.
    Tensor count = Tensor::zeros({2}, dtypes::int32, device);
    count.realize();
    CapturedStep counter([&](const std::vector<Tensor>& in) {
      count.assign(count + in[0]);
      return std::vector<Tensor>{count};
    });
    for (int call = 1; call <= 4; ++call) {
      const std::vector<Tensor> out = counter({Tensor::from_vector<int32_t>({1, 2}, {2}, device)});
      check_same(out[0].to_vector<int32_t>(), {call, 2 * call});
      check_same(count.to_vector<int32_t>(), {call, 2 * call});
    }
    CHECK(counter.captured());

    // A tensor the step makes, written while a read of it is alive, and returned: each call's
    // output is its own.
    CapturedStep fresh([&](const std::vector<Tensor>& in) {
      Tensor made = in[0] * 2;
      made.realize();
      const Tensor before = made.flip({0});
      made.assign(made + 1);
      return std::vector<Tensor>{made, before};
    });
    std::vector<std::vector<Tensor>> kept;
    for (int call = 0; call < 4; ++call)
      kept.push_back(fresh({Tensor::from_vector<int32_t>({call, 10}, {2}, device)}));
    for (int call = 0; call < 4; ++call) {
      check_same(kept[static_cast<size_t>(call)][0].to_vector<int32_t>(), {2 * call + 1, 21});
      check_same(kept[static_cast<size_t>(call)][1].to_vector<int32_t>(), {20, 2 * call});
    }
  }
}

TEST_CASE("a captured step's output that is a tensor it keeps follows writes made outside it",
          "[assign][capture]") {
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    Tensor state = Tensor::from_vector<float>({1, 2, 3}, {3}, device);
    CapturedStep step([&](const std::vector<Tensor>& in) {
      state.assign(state + in[0]);
      // The state itself, a view of it, the state again, and another handle on its node.
      return std::vector<Tensor>{state, state.flip({0}), state, state.reshape({3})};
    });
    const Tensor ones = Tensor::from_vector<float>({1, 1, 1}, {3}, device);
    std::vector<float> want = {1, 2, 3};
    auto add = [&](float amount) {
      for (float& value : want) value += amount;
    };
    for (int call = 0; call < 3; ++call) {
      step({ones});
      add(1);
    }
    CHECK(step.captured());
    // Written outside between replays: the next replay writes on, and returns, what is there.
    state.assign(state * 10);
    for (float& value : want) value *= 10;
    const std::vector<Tensor> out = step({ones});
    add(1);
    check_same(out[0].to_vector<float>(), want);
    check_same(out[1].to_vector<float>(), {want[2], want[1], want[0]});
    check_same(state.to_vector<float>(), want);
    // The output is the state: a read of it built before a write keeps the old value, one
    // built after sees the new.
    const Tensor before = out[0] + 0;
    state.assign(state * 0);
    check_same(before.to_vector<float>(), want);
    check_same(out[0].to_vector<float>(), {0, 0, 0});
    const std::vector<Tensor> again = step({ones});
    check_same(again[0].to_vector<float>(), {1, 1, 1});
    check_same(again[1].to_vector<float>(), {1, 1, 1});
    check_same(again[2].to_vector<float>(), {1, 1, 1});
    // A read realized before a replay keeps its value; the same read built after the replay is
    // computed again, not served from before.
    const Tensor held_sum = state.sum();
    CHECK(held_sum.item<float>() == 3);
    const std::vector<Tensor> earlier = step({ones});
    const Tensor reshaped_sum = earlier[3].sum();
    CHECK(reshaped_sum.item<float>() == 6);
    const std::vector<Tensor> later = step({ones});
    CHECK(state.sum().item<float>() == 9);
    CHECK(later[3].sum().item<float>() == 9);
    CHECK(later[0].sum().item<float>() == 9);
    CHECK(held_sum.item<float>() == 3);
    CHECK(reshaped_sum.item<float>() == 6);
  }
}

TEST_CASE("a captured step may not write in place a tensor it made from host data",
          "[assign][capture][errors]") {
  CapturedStep step([](const std::vector<Tensor>& in) {
    Tensor made = Tensor::from_vector<float>({1, 2}, {2});
    made.assign(made + in[0]);
    return std::vector<Tensor>{made};
  });
  const Tensor x = Tensor::from_vector<float>({1, 1}, {2});
  check_same(step({x})[0].to_vector<float>(), {2, 3});
  CHECK_THROWS_WITH(step({x}), Catch::Matchers::Contains("made from host data"));
  CHECK_FALSE(step.captured());
  // Computed in the step, the same tensor replays.
  CapturedStep computed([](const std::vector<Tensor>& in) {
    Tensor made = Tensor::arange(2, dtypes::float32) + 1;
    made.realize();
    made.assign(made + in[0]);
    return std::vector<Tensor>{made};
  });
  for (int call = 0; call < 4; ++call) check_same(computed({x})[0].to_vector<float>(), {2, 3});
  CHECK(computed.captured());
}

TEST_CASE("a captured step may not write its inputs in place", "[assign][capture][errors]") {
  CapturedStep step([](const std::vector<Tensor>& in) {
    Tensor input = in[0];
    input.assign(input + 1);
    return std::vector<Tensor>{input * 2};
  });
  const Tensor x = Tensor::from_vector<float>({1, 2}, {2});
  step({x});
  CHECK_THROWS_AS(step({x}), ValueError);
  check_same(x.to_vector<float>(), {1, 2});
}

TEST_CASE("index_put_ by slices and positions writes the selection only", "[assign]") {
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    std::vector<float> want(4 * 5);
    for (size_t at = 0; at < want.size(); ++at) want[at] = static_cast<float>(at);
    Tensor x = Tensor::from_vector(want, {4, 5}, device);
    const void* memory = memory_of(x);
    // x[2] = 7; x[1:3, ::-2] += 1 (accumulating reads the selection where it writes it).
    x.index_put_({2}, Tensor::full({1}, 7, dtypes::float32, device));
    for (int column = 0; column < 5; ++column) want[static_cast<size_t>(2 * 5 + column)] = 7;
    x.index_put_({Slice(1, 3), Slice(None, None, -2)},
                 Tensor::ones({2, 3}, dtypes::float32, device), true);
    for (int row : {1, 2}) {
      for (int column : {4, 2, 0}) want[static_cast<size_t>(row * 5 + column)] += 1;
    }
    check_same(x.to_vector<float>(), want);
    CHECK(memory_of(x) == memory);
    // With a read of x alive: it keeps the old values, the write still lands in x's memory.
    const std::vector<float> before_values = want;
    const Tensor before = x * 1;
    x.index_put_({Slice(), 3}, Tensor::from_vector<float>({-1, -2, -3, -4}, {4}, device));
    for (int row = 0; row < 4; ++row) want[static_cast<size_t>(row * 5 + 3)] = -1.0f - row;
    check_same(x.to_vector<float>(), want);
    check_same(before.to_vector<float>(), before_values);
    CHECK(memory_of(x) == memory);
    // x[::-1] = x (the values are x's own buffer, read at other elements than written).
    Tensor row = Tensor::from_vector<float>({1, 2, 3, 4}, {4}, device);
    row.index_put_({Slice(None, None, -1)}, row);
    check_same(row.to_vector<float>(), {4, 3, 2, 1});
    // Values that read x elsewhere (its transpose's row) are computed beside it first.
    x.index_put_({0, Slice(None, 4)}, x.index({Slice(), 1}));
    for (int column = 0; column < 4; ++column)
      want[static_cast<size_t>(column)] = want[static_cast<size_t>(column * 5 + 1)];
    check_same(x.to_vector<float>(), want);
  }
}

TEST_CASE("assign's bad input is a typed error and changes nothing", "[assign][errors]") {
  Tensor w = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  Tensor lazy = w + 1;
  CHECK_THROWS_AS(lazy.assign(w), ValueError);
  Tensor view = w.slice(0, 0, 1);
  CHECK_THROWS_AS(view.assign(Tensor::zeros({1, 2})), ValueError);
  CHECK_THROWS_AS(w.assign(Tensor::zeros({3})), ShapeError);
  CHECK_THROWS_WITH(w.assign(Tensor::zeros({3})), Catch::Matchers::Contains("[assign]"));
  check_same(w.to_vector<float>(), {1, 2, 3, 4});
  check_same(lazy.to_vector<float>(), {2, 3, 4, 5});
  // A value whose gather reads out of range: an IndexError, and w as it was.
  Tensor flat = Tensor::from_vector<float>({1, 2, 3, 4}, {4});
  kiln::testing::check_index_error(
      [&] {
        flat.assign(flat + flat.take(Tensor::from_vector<int64_t>({0, 1, 2, 9}, {4}), 0));
      },
      {"index 9"});
  check_same(flat.to_vector<float>(), {1, 2, 3, 4});
  // An index_put_ position out of range: an IndexError before any store.
  Tensor table = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {3, 2});
  kiln::testing::check_index_error(
      [&] {
        table.index_put_({Tensor::from_vector<int64_t>({0, 3}, {2})},
                         Tensor::zeros({2, 2}, dtypes::float32));
      },
      {"[index_put_]", "index 3", "axis 0 of size 3"});
  check_same(table.to_vector<float>(), {1, 2, 3, 4, 5, 6});
  CHECK_THROWS_AS(table.index_put_({Slice(), Tensor::from_vector<float>({0}, {1})}, table),
                  DTypeError);
  Tensor unrealized = table + 1;
  CHECK_THROWS_AS(unrealized.index_put_({0}, Tensor::zeros({2})), ValueError);
  check_same(table.to_vector<float>(), {1, 2, 3, 4, 5, 6});
}

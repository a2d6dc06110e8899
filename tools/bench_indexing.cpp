// The `embedding` workloads of `kiln bench`: rows of a large table looked up by index, as a
// language model's first step does, and the gradient that step sends back (the rows' gradients
// added into a table of zeros). The lookup reads only the rows it needs (a Gather), the gradient
// writes the table once and adds each row where its index points (a Scatter), so each is set
// beside the copy bandwidth for the bytes it must move.

#include <kiln/kiln.h>

#include <string>
#include <vector>

#include "tools/bench.h"
#include "tools/bench_check.h"

namespace kiln::tools::bench {

Result bench_embedding(Harness& harness, const CopyLimit& copy) {
  constexpr int64_t kFeatures = 768;
  const int64_t rows = harness.sizes().embedding_rows, tokens = harness.sizes().tokens;
  Result result("embedding", std::to_string(tokens) + " of " + std::to_string(rows) + "x" +
                                 std::to_string(kFeatures) + " f32");
  const Tensor table = harness.realized_rand({rows, kFeatures}, 21);
  // Token ids spread over the whole table, some counted from the end (negative).
  std::vector<int32_t> ids(static_cast<size_t>(tokens));
  uint64_t state = 88172645463325252ull;
  for (int32_t& id : ids) {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    id = static_cast<int32_t>(state % static_cast<uint64_t>(rows));
    if (state & 1) id -= static_cast<int32_t>(rows);
  }
  const Tensor indices = Tensor::from_vector(ids, {tokens}, harness.device());
  indices.realize();
  const std::vector<float> host = table.to_vector<float>();
  auto measured =
      harness.measure([&] { return embedding(indices, table); },
                      [&](const Tensor& out) {
                        return compare(
                            out.to_vector<float>(),
                            [&](size_t at) {
                              const int64_t id = ids[at / kFeatures];
                              const int64_t row = id < 0 ? id + rows : id;
                              return static_cast<double>(
                                  host[static_cast<size_t>(row * kFeatures) + at % kFeatures]);
                            },
                            0, 0);
                      },
                      harness.repeat(), 1);
  record_bandwidth(result, measured, 2.0 * 4 * tokens * kFeatures, copy);
  return result;
}

Result bench_embedding_grad(Harness& harness, const CopyLimit& copy) {
  constexpr int64_t kFeatures = 768;
  const int64_t rows = harness.sizes().embedding_rows, tokens = harness.sizes().tokens;
  Result result("embedding grad", std::to_string(tokens) + " into " + std::to_string(rows) + "x" +
                                      std::to_string(kFeatures) + " f32");
  const Tensor grads = harness.realized_rand({tokens, kFeatures}, 22);
  // Token ids with repeats (a quarter of the tokens share 16 ids), some from the end.
  std::vector<int32_t> ids(static_cast<size_t>(tokens));
  uint64_t state = 2463534242ull;
  for (size_t at = 0; at < ids.size(); ++at) {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    const uint64_t range = at % 4 == 0 ? 16 : static_cast<uint64_t>(rows);
    ids[at] = static_cast<int32_t>(state % range);
    if (state & 2) ids[at] -= static_cast<int32_t>(rows);
  }
  const Tensor indices = Tensor::from_vector(ids, {tokens}, harness.device());
  indices.realize();
  // The reference adds in token order, as kiln documents (the sums are then the same bits).
  const std::vector<float> host_grads = grads.to_vector<float>();
  std::vector<float> want(static_cast<size_t>(rows * kFeatures), 0.0f);
  for (size_t token = 0; token < ids.size(); ++token) {
    const int64_t row = ids[token] < 0 ? ids[token] + rows : ids[token];
    for (int64_t feature = 0; feature < kFeatures; ++feature)
      want[static_cast<size_t>(row * kFeatures + feature)] +=
          host_grads[token * kFeatures + static_cast<size_t>(feature)];
  }
  const Tensor zeros = Tensor::zeros({rows, kFeatures}, dtypes::float32, harness.device());
  // Two kernels: the destination's zeros, then the scatter that adds into them in place.
  auto measured = harness.measure([&] { return zeros.index_put({indices}, grads, true); },
                                  [&](const Tensor& out) {
                                    return compare(
                                        out.to_vector<float>(),
                                        [&](size_t at) { return double{want[at]}; }, 0, 0);
                                  },
                                  harness.repeat(), 2);
  // The table written, and the gradients read.
  record_bandwidth(result, measured, 4.0 * (rows + tokens) * kFeatures, copy);
  return result;
}

}  // namespace kiln::tools::bench

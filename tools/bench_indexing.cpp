// The `embedding` workload of `kiln bench`: rows of a large table looked up by index, as a
// language model's first step does. The lookup reads only the rows it needs (a Gather), so it is
// set beside the copy bandwidth for those bytes.

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

}  // namespace kiln::tools::bench

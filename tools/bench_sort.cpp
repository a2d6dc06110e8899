// The sort workload of `kiln bench`: one line of float32 values sorted, beside the copy
// bandwidth for reading and writing it once (what any sort must move at least).

#include <kiln/sort.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "tools/bench.h"
#include "tools/bench_check.h"

namespace kiln::tools::bench {

Result bench_sort(Harness& harness, const CopyLimit& copy) {
  const int64_t count = harness.sizes().sort;
  Result result("sort", "2^" + std::to_string(static_cast<int>(std::log2(count))) + " f32");
  Tensor x = harness.realized_rand({count}, 31);
  std::vector<float> expected = x.to_vector<float>();
  std::sort(expected.begin(), expected.end());
  auto measured =
      harness.measure([&] { return sort(x).first; },
                      [&](const Tensor& out) {
                        return compare(
                            out.to_vector<float>(), [&](size_t i) { return expected[i]; }, 0, 0);
                      },
                      harness.repeat(), std::nullopt);
  record_bandwidth(result, measured, 2.0 * 4 * static_cast<double>(count), copy);
  return result;
}

}  // namespace kiln::tools::bench

#include "codegen/blocked_sum.h"

#include <algorithm>
#include <cmath>

namespace kiln {
namespace {

// Sums of up to this many terms stay in one accumulator: their bound is small already, and most
// kernels (softmax rows, matmul up to K = 4096) keep their loops as they are.
constexpr int64_t kBlockedSumMinTerms = 4096;

}  // namespace

BlockedSum plan_blocked_sum(const std::vector<ReduceLoop>& loops, int64_t per_trip) {
  int64_t terms = per_trip;
  for (const ReduceLoop& loop : loops) terms *= loop.size;
  if (terms <= kBlockedSumMinTerms) return {};
  const int64_t target = static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(terms))));
  if (loops.empty()) return {};
  BlockedSum plan;
  plan.enabled = true;
  plan.level = loops.size();
  int64_t inner = per_trip;
  do {
    inner *= loops[--plan.level].size;
  } while (plan.level > 0 && inner < target);
  const int64_t size = loops[plan.level].size;
  const int64_t inside = inner / size;  // terms per step of loop `level`
  if (inner <= 2 * target && plan.level > 0) return plan;
  const int64_t wanted = std::max<int64_t>(2, (target + inside - 1) / inside);
  if (wanted >= size) return plan.level > 0 ? plan : BlockedSum{};
  // A divisor of the loop near the wanted length needs no mask.
  plan.length = wanted;
  for (int64_t offset = 0; offset <= wanted / 2; ++offset) {
    if (size % (wanted + offset) == 0) {
      plan.length = wanted + offset;
      break;
    }
    if (wanted - offset >= 2 && size % (wanted - offset) == 0) {
      plan.length = wanted - offset;
      break;
    }
  }
  return plan;
}

}  // namespace kiln

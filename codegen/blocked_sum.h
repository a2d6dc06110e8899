#pragma once
// Blocked float sums: how a long reduction's loops are split so that its rounding error grows
// like sqrt(n), not n.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/symbolic.h"

namespace kiln {

// One loop of a reduction: a reduced axis and its size (above 1).
struct ReduceLoop {
  int axis;
  int64_t size;  // trips (the largest, where `extent` is symbolic)
  Sym extent;    // trips as an expression over the kernel's variables
};

// A float sum of n terms into one accumulator has an error bound that grows like n. Blocked, the
// loops from `level` inwards add into a fresh block accumulator that is then added to the total,
// so each accumulator takes about sqrt(n) terms and the bound grows like 2 sqrt(n) ulp. Where the
// loops at and inside `level` are far more than sqrt(n) terms, loop `level` itself is split into
// blocks of `length` steps (0: not split); a length that does not divide it masks the tail.
struct BlockedSum {
  bool enabled = false;
  size_t level = 0;
  int64_t length = 0;
};

// `per_trip` terms are added on each trip of the innermost loop (an unrolled body).
BlockedSum plan_blocked_sum(const std::vector<ReduceLoop>& loops, int64_t per_trip);

}  // namespace kiln

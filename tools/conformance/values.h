#pragma once
// Input values for the conformance battery (see values.cpp for the edge values).

#include <cstdint>
#include <string>

#include "tools/conformance/case.h"

namespace kiln::conformance {

// splitmix64: small, fast, and the same sequence everywhere.
struct Random {
  uint64_t state = 0;
  uint64_t next();
  double uniform();                          // [0, 1)
  int64_t range(int64_t low, int64_t high);  // inclusive
};

// A stable hash of a text (case names seed their inputs, so a case sees the same values every
// run).
uint64_t hash_text(const std::string& text);

// `shape`'s worth of values of `dtype`: the edge values of `kind` and `role` first, then random.
HostTensor generate(DType dtype, const Shape& shape, Values kind, int role, uint64_t seed);

}  // namespace kiln::conformance

#pragma once
// `kiln conformance --fuzz N --seed S`: random graphs (elementwise, reductions and movement ops
// mixed) checked against the reference. A failing graph prints its seed, the worst element, and
// the smallest failing sub-graph as kiln C++ code.

#include <cstdint>
#include <cstdio>
#include <string>

namespace kiln::conformance {

// Checks `count` graphs with seeds seed, seed + 1, ...; returns how many failed. `verbose` prints
// every graph as kiln C++, passing or not.
int64_t run_fuzz(const std::string& device, int64_t count, uint64_t seed, FILE* out,
                 bool verbose = false);

// The graph of `seed` as kiln C++ code.
std::string fuzz_code(uint64_t seed);

// One graph: "" when it matches the reference, else the failure report (with the reproduction).
std::string fuzz_one(const std::string& device, uint64_t seed);

}  // namespace kiln::conformance

#pragma once
// What the workloads of `kiln bench` share: checking a result against a host reference, and
// turning a measurement into a Result.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "tools/bench.h"

namespace kiln::tools::bench {

// "" when every element is within atol + rtol * |expected|; otherwise how many are not and the
// worst one (by relative error).
template <typename Expected>
std::string compare(const std::vector<float>& got, Expected expected, double rtol, double atol) {
  int64_t wrong = 0, worst_index = -1;
  double worst_error = 0, worst_expected = 0;
  for (size_t index = 0; index < got.size(); ++index) {
    const double want = expected(index);
    const double error = std::fabs(static_cast<double>(got[index]) - want);
    if (error <= atol + rtol * std::fabs(want)) continue;  // written so that NaN counts as wrong
    ++wrong;
    const double relative = error / std::max(std::fabs(want), 1e-30);
    if (worst_index < 0 || !(relative <= worst_error)) {
      worst_index = static_cast<int64_t>(index);
      worst_error = relative;
      worst_expected = want;
    }
  }
  if (wrong == 0) return "";
  char text[256];
  std::snprintf(text, sizeof text,
                "%lld of %zu elements off; worst [%lld] = %.9g, expected %.9g (rtol %g)",
                static_cast<long long>(wrong), got.size(), static_cast<long long>(worst_index),
                static_cast<double>(got[worst_index]), worst_expected, rtol);
  return text;
}

// Copies what every workload's result shares from a measurement.
inline void record(Result& result, const Harness::Measured& measured) {
  result.kernels = measured.kernels;
  result.problem = measured.problem;
  result.timing = measured.timing;
}

// A bandwidth figure: `bytes` moved per run, against the copy bandwidth.
inline void record_bandwidth(Result& result, const Harness::Measured& measured, double bytes,
                             const CopyLimit& copy) {
  record(result, measured);
  result.unit = Result::Unit::BytesPerSecond;
  result.limit = copy.bytes_per_second;
  result.limit_name = copy.name;
  if (measured.timing.runs > 0) result.figure = bytes / measured.timing.figure_seconds();
}

}  // namespace kiln::tools::bench

#pragma once
// Runs one case on one device: uploads the inputs, applies their layouts, builds the op, realizes
// it into poisoned (and, where the device supports subregions, guarded) memory, reads
// the whole output buffer back and compares it with the reference.

#include <memory>
#include <string>

#include "tools/conformance/case.h"

namespace kiln {
class DeviceContext;
}

namespace kiln::conformance {

class Runner {
 public:
  explicit Runner(const std::string& device);
  const std::string& device() const { return device_; }
  // Whether out-of-bounds writes are detected on this device (see runner.cpp).
  bool guards() const { return guards_; }
  // On a compile-only device (DeviceProperties::compile_only) a case passes when its kernels
  // render and compile; nothing runs.
  CaseResult run(const Case& item);

 private:
  CaseResult compile_case(const Case& item);
  // The symbolic tier (Case::bound_sizes).
  CaseResult run_symbolic(const Case& item);

  std::string device_;
  std::shared_ptr<DeviceContext> context_;
  bool guards_ = false;
  bool compile_only_ = false;
};

// Checks the guard machinery itself on `device` (changes one byte on each side of a planted
// block): "" when it works or the device has no guards, else what went wrong.
std::string guard_self_test(const std::string& device);

// Compares device output with the reference (exposed for the fuzzer and the tests).
CaseResult compare(const Expected& expected, const HostTensor& got, const Tolerance& tolerance);

}  // namespace kiln::conformance

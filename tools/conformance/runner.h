#pragma once
// Runs one case on one device: uploads the inputs, applies their layouts, builds the op, realizes
// it into poisoned (and, where the device supports subregions, guarded) memory, reads
// the whole output buffer back and compares it with the reference.

#include <memory>
#include <optional>
#include <string>
#include <vector>

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
  // Whether the device flushes float32 subnormals to zero (NVIDIA's Vulkan driver does, and
  // offers no mode that keeps them): a result then also passes where it matches the reference
  // of the inputs with subnormals flushed, or where a subnormal result is flushed. Found by
  // running a multiply on the device (not by asking its driver), the first time it is needed.
  bool flushes_subnormals();
  // On a compile-only device (DeviceProperties::compile_only) a case passes when its kernels
  // render and compile; nothing runs.
  CaseResult run(const Case& item);

 private:
  CaseResult compile_case(const Case& item);
  // The symbolic tier (Case::bound_sizes).
  CaseResult run_symbolic(const Case& item);
  CaseResult check(const Case& item, const std::vector<HostTensor>& inputs, const HostTensor& got);
  // The reference of `inputs` with their float32 subnormals flushed.
  std::unique_ptr<Expected> flushed_reference(const Case& item,
                                              const std::vector<HostTensor>& inputs) const;

  std::string device_;
  std::shared_ptr<DeviceContext> context_;
  bool guards_ = false;
  bool compile_only_ = false;
  std::optional<bool> flushes_subnormals_;  // found when first needed
};

// Checks the guard machinery itself on `device` (changes one byte on each side of a planted
// block): "" when it works or the device has no guards, else what went wrong.
std::string guard_self_test(const std::string& device);

// Whether `device` flushes float32 subnormals to zero, found by running a multiply there (the
// smallest normal float halved, the smallest subnormal times one).
bool device_flushes_subnormals(const std::string& device);

// Compares device output with the reference (exposed for the fuzzer and the tests). With
// `flushed_inputs` (the reference of the inputs with float32 subnormals flushed to zero), an
// element also passes where it matches that, or where either reference's subnormal result is
// flushed to a zero of either sign: what a device that flushes subnormals computes.
CaseResult compare(const Expected& expected, const HostTensor& got, const Tolerance& tolerance,
                   const Expected* flushed_inputs = nullptr);

// `tensor` with its float32 and bfloat16 subnormals replaced by zeros of the same sign.
HostTensor flush_subnormals(HostTensor tensor);

}  // namespace kiln::conformance

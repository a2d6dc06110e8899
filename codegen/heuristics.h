#pragma once
// The one place that chooses a kernel's opts: heuristics per kind of device (work items run as a
// loop on the CPU; workgroups of work items on OpenCL and GPUs), and valid random lists that
// prove the optimiser (kiln conformance --opts random).

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/opts.h"
#include "codegen/schedule.h"

namespace kiln {

struct OptChoice {
  std::vector<Opt> opts;
  std::vector<std::string> reasons;  // why each was chosen (KILN_DEBUG=5)
};

// `axes` are the kernel's (kernel_axes(item.ast)), computed once by the caller.
OptChoice choose_opts(const ScheduleItem& item, const KernelAxes& axes, const OptTarget& target);

// A valid opts list drawn at random for this kernel: the same seed and kernel give the same list.
std::vector<Opt> random_opts(const ScheduleItem& item, const KernelAxes& axes,
                             const OptTarget& target, uint64_t seed);

}  // namespace kiln

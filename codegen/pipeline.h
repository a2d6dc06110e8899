#pragma once
// The codegen pipeline: one scheduled kernel to source for one dialect, as a list of named
// passes (codegen/pipeline.cpp reads as that list). Needs no device: a device's runtime passes
// its optimiser target, its dialect and the checks only it can make, and tools and tests compile
// kernels for any target the same way (`kiln render`).
//
//   choose opts  the policy's opts for the target (heuristics, none, random)
//   plan opts    the opts checked against the kernel and the target, and folded into its plan
//   lower        the kernel with its plan applied: a linear program
//   vectorize    loads, then stores, of neighbouring elements as vectors where the dialect can
//   check        the device's own checks (dtypes it supports, loop limits)
//   decompose    kiln's semantics (division by zero, NaN-propagating max/min, wrapping, saturating
//                casts, half rounding) as the target's primitive instructions
//   render       the program as source in the dialect, one instruction per statement
//
// Each pass runs through one helper that times it and reports the program after it; a pass
// that breaks an invariant raises InternalError naming the pass and the kernel.

#include <functional>
#include <string>
#include <vector>

#include "codegen/dialect.h"
#include "codegen/heuristics.h"
#include "codegen/linear.h"
#include "codegen/opt_settings.h"
#include "codegen/opts.h"
#include "codegen/schedule.h"

namespace kiln {

struct PassTiming {
  std::string pass;
  double milliseconds = 0;
};

struct CompileOptions {
  OptSettings settings;
  // Checks the device makes on the program before it is rendered (null: none).
  std::function<void(const LinearProgram&)> check;
  // Called after each pass with its name and what it produced, printed (the opts chosen, the
  // program, the source). Null: nothing is printed (the text is not even made).
  std::function<void(const std::string& pass, const std::string& result)> report;
};

struct CompiledKernel {
  OptChoice choice;
  KernelPlan plan;
  LinearProgram program;
  std::string source;
  std::vector<PassTiming> timings;  // one per pass, in order
};

// Runs the passes above. Throws OptError where the opts do not fit the kernel or the target,
// DTypeError where the dialect or the checks refuse a dtype, InternalError where a pass breaks
// an invariant.
CompiledKernel compile_kernel(const ScheduleItem& kernel, const OptTarget& target,
                              const Dialect& dialect, const CompileOptions& options = {});

}  // namespace kiln

#pragma once
// Row fusion: a reduction over a row (the last axis), read back broadcast along that row by the
// kernel after it, moves into that kernel, whose workgroup per row then computes it together
// (ROW opts: the row's lanes share each reduction through local memory) before its outputs.
// Softmax's three kernels (max, sum of exponentials, the quotient) become one that reads each row
// from memory once where the rows fit a workgroup's caches.

#include <cstdint>

#include "codegen/opt_target.h"
#include "codegen/schedule.h"

namespace kiln {

// Whether `node` is a View that broadcasts a value computed from a reduction (through
// elementwise ops): a fused row value, computed once per row by the row's workgroup.
bool broadcasts_row_value(const UOp& node);
// Whether the kernel's ast reads such a value.
bool reads_row_reductions(const UOpRef& ast);

// A row's workgroup on `target`: at most this many work items (a GPU's usual best), within the
// device's limits.
int64_t max_row_lanes(const OptTarget& target);

// Whether realize fuses row reductions for kernels on `target`: GPUs, whose workgroups share
// local memory.
inline bool fuses_rows(const OptTarget& target) {
  return target.is_gpu && !target.loop_launch && target.local_memory_bytes > 0;
}

// The work items of a row's workgroup for rows of `row_length`: the largest divisor of it, at most
// `max_lanes` and at least 32, leaving each work item at most 16 outputs; 0 where there is none.
int64_t row_lanes(int64_t row_length, int64_t max_lanes);

// Fuses, on a device whose workgroups take up to `max_lanes` work items and whose kernels bind
// up to `max_buffers` buffers: a kernel item that computes a value per row from reductions over
// the last axis of [..., C] values (elementwise ops over them: a max, a mean, the log of a sum),
// into the one kernel that reads its output, where that kernel stores [..., C] (the same leading
// axes) and reads the value only through Views broadcasting its last axis.
// The reduction's output must not be a result. Repeats until nothing more fuses (softmax's sum
// reads the max: both move). Returns the number of kernels fused away.
int fuse_row_reductions(Schedule& schedule, int64_t max_lanes, int64_t max_buffers);

}  // namespace kiln

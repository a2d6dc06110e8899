#pragma once
// How much a kernel computing a node would hold (codegen/schedule.cpp cuts kernels by it): the
// ops fused into it, the buffers it binds, and the elementwise work per element.

#include <cstdint>
#include <unordered_map>
#include <unordered_set>

#include "core/uop.h"

namespace kiln {

// A kernel fuses at most this many ops; past it, the node is realized and its users start a new
// kernel. Compilers take time that grows faster than linearly with a kernel's length (gcc: 2 s
// for 5,000 chained adds, 30 s for 20,000); a graph built by an unrolled loop (100,000 chained
// ops) then compiles as a run of equal kernels, which the kernel cache compiles once.
constexpr int64_t kMaxFusedOps = 1000;
constexpr int64_t kMaxCountedBuffers = 1 << 20;  // caps the estimates against overflow

struct KernelSize {
  int64_t ops = 0;
  int64_t buffers = 0;
  int64_t arithmetic = 0;  // of the ops, the elementwise ones: the work per element
};

// Counted over sources as a tree (a shared source counts once per distinct user edge, from
// `size_of` where it is there), so an estimate from above; capped so that the sums cannot
// overflow. `realized` sources count as one buffer each.
KernelSize kernel_size(const UOp& node, const std::unordered_set<const UOp*>& realized,
                       const std::unordered_map<const UOp*, KernelSize>& size_of);

// kernel_size, counted exactly through elementwise ops where the tree estimate passes a limit
// (kMaxFusedOps, or `max_inputs` buffers): the kernel computes an elementwise value once however
// many paths reach it (a hash's rounds reuse each value twice, which the tree count doubles per
// round), but below a view, a reduction or a gather it may compute a source once per position it
// reads, so those keep their estimate. Still an estimate from above.
KernelSize measured_size(const UOp& node, int64_t max_inputs,
                         const std::unordered_set<const UOp*>& realized,
                         const std::unordered_map<const UOp*, KernelSize>& size_of);

}  // namespace kiln

#include "codegen/kernel_size.h"

#include <algorithm>
#include <vector>

namespace kiln {
namespace {

// Sources up to this many are checked for repeats by scanning them, not with a set.
constexpr size_t kLinearSourceScan = 8;

}  // namespace

KernelSize kernel_size(const UOp& node, const std::unordered_set<const UOp*>& realized,
                       const std::unordered_map<const UOp*, KernelSize>& size_of) {
  KernelSize size;
  if (node.op() == Op::Const || node.op() == Op::Iota) return size;
  if (node.op() == Op::Buffer) return {0, 1, 0};
  size.ops = 1;
  size.arithmetic = is_elementwise(node.op()) ? 1 : 0;
  // A Gather's or Scatter's kernel binds a buffer for its index errors (counted per Gather: an
  // upper bound).
  if (node.op() == Op::Gather || node.op() == Op::Scatter) size.buffers = 1;
  const std::vector<UOpRef>& srcs = node.srcs();
  // A source read twice (x * x) counts once. Sources are few (a scan finds a repeat), but a cat
  // may have thousands: those are looked up in a set.
  std::unordered_set<const UOp*> seen;
  const bool many = srcs.size() > kLinearSourceScan;
  for (size_t at = 0; at < srcs.size(); ++at) {
    const UOpRef& src = srcs[at];
    bool repeated = false;
    if (many) {
      repeated = !seen.insert(src.get()).second;
    } else {
      for (size_t before = 0; before < at && !repeated; ++before)
        repeated = srcs[before].get() == src.get();
    }
    if (repeated) continue;
    if (realized.count(src.get())) {
      size.buffers += 1;
      continue;
    }
    auto found = size_of.find(src.get());
    const KernelSize part = found != size_of.end() ? found->second : kernel_size(*src, {}, {});
    size.ops = std::min(size.ops + part.ops, kMaxFusedOps + 1);
    size.arithmetic = std::min(size.arithmetic + part.arithmetic, kMaxFusedOps + 1);
    size.buffers = std::min(size.buffers + part.buffers, kMaxCountedBuffers);
  }
  return size;
}

KernelSize measured_size(const UOp& node, int64_t max_inputs,
                         const std::unordered_set<const UOp*>& realized,
                         const std::unordered_map<const UOp*, KernelSize>& size_of) {
  const KernelSize estimate = kernel_size(node, realized, size_of);
  if (estimate.ops <= kMaxFusedOps && estimate.buffers <= max_inputs) return estimate;
  KernelSize size;
  std::unordered_set<const UOp*> seen{&node};
  std::vector<const UOp*> stack{&node};
  while (!stack.empty()) {
    const UOp* at = stack.back();
    stack.pop_back();
    if (at != &node && (realized.count(at) || at->op() == Op::Buffer)) {
      size.buffers += 1;
      continue;
    }
    if (at != &node && !is_elementwise(at->op())) {
      auto found = size_of.find(at);
      const KernelSize part = found != size_of.end() ? found->second : kernel_size(*at, {}, {});
      size.ops += part.ops;
      size.arithmetic += part.arithmetic;
      size.buffers += part.buffers;
    } else if (at->op() != Op::Const && at->op() != Op::Iota) {
      size.ops += 1;
      if (is_elementwise(at->op())) size.arithmetic += 1;
      if (at->op() == Op::Gather || at->op() == Op::Scatter) size.buffers += 1;
      for (const UOpRef& src : at->srcs()) {
        if (seen.insert(src.get()).second) stack.push_back(src.get());
      }
    }
    // Past the limit the estimate, an upper bound, serves as well.
    if (size.ops > kMaxFusedOps) return estimate;
  }
  size.buffers = std::min(size.buffers, kMaxCountedBuffers);
  return size;
}

}  // namespace kiln

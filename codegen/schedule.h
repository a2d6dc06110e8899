#pragma once
// The scheduler: turns a tensor graph into an ordered list of kernels and copies.
//
// Fusion is the default: elementwise chains, elementwise into a reduce, and a reduce into the
// elementwise work after it all become one kernel, because lowering evaluates any node at any
// index. A node gets a buffer of its own only where recomputing it would repeat a reduction:
// a node that holds an unrealized reduce and has several users, or is read through a View that
// broadcasts it (softmax's max is the classic case). Roots, Contiguous, Scatters and the source
// of a Copy are always realized. Large full reductions are split in two kernels so that both cores
// (or all workgroups) share the work, except on devices whose kernels share them between workgroups
// (ScheduleTarget below).

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "codegen/opt_target.h"
#include "core/uop.h"

namespace kiln {

// A buffer a schedule's items read or fill: one the graph holds already (a leaf), or one the
// realize makes. Items name buffers by their index in Schedule::buffers.
struct ScheduleBuffer {
  // A leaf's own Buffer node; for a buffer the realize makes, a Buffer node named "bufferK" (K
  // its index) that stands for it. Either gives the dtype and the (symbolic) shape.
  UOpRef node;
  bool is_leaf = false;
  std::string device;
  int64_t numel = 0;  // elements to allocate (a symbolic shape's largest)
};

// A kernel or a copy. A kernel is abstract: its ast reads the kernel's parameters, Buffer nodes
// named "paramN" (param0 the output, which a Scatter's kernel also reads as it updates it in
// place; then one per input in the order the ast first reads them),
// so the same kernel over other buffers is the same node, and codegen and the caches see no
// storage. The runtime binds buffers[N] to parameter N.
struct ScheduleItem {
  enum class Kind { Kernel, Copy } kind = Kind::Kernel;
  UOpRef output;               // Kernel: param0 (the output's dtype and shape)
  UOpRef ast;                  // Kernel: the value to compute (shape == output shape)
  std::vector<UOpRef> inputs;  // Kernel: param1, param2, ...: the Buffer nodes the ast reads
  // The schedule buffer of each parameter, output first (a Copy: its destination, its source).
  std::vector<int> buffers;
  // Why the value has a buffer of its own, where no rule of its graph's shape required one
  // (the fusion cost rule in schedule.cpp); "" otherwise. Printed with the schedule.
  std::string why;
};

// What a root holds once the schedule has run: the buffer an item fills, or where no item
// computes it (a leaf buffer, a view of one, a value realized before) the node as it is.
struct ScheduleResult {
  int buffer = -1;
  UOpRef unchanged;  // where buffer < 0
};

struct Schedule {
  std::vector<ScheduleBuffer> buffers;
  std::vector<ScheduleItem> items;
  std::vector<ScheduleResult> results;  // one per root
};

// A kernel's ast with its parameters replaced by the schedule's buffers, and back: what a pass
// that moves work between kernels (row fusion) rewrites. A buffer is a Buffer node: a leaf's own
// node, or one named "bufferK" for buffer K that the realize makes.
UOpRef ast_over_buffers(const Schedule& schedule, const ScheduleItem& kernel);
// Makes `kernel` compute `ast` (over the schedule's buffers, as above) into buffer `output`: its
// parameters are the buffers the ast reads, numbered in the order it first reads them.
void bind_kernel(const Schedule& schedule, ScheduleItem& kernel, int output, const UOpRef& ast);

// What the scheduler knows of a device that kernels run on: its optimiser target, and whether
// the heuristics choose the opts there. Kernels are shaped for the opts they will get: where the
// heuristics give a large full reduction GRID (OptTarget::prefers_grid) it stays one kernel (else
// it is split in two, so that every core or workgroup shares it), and where they give each row a
// workgroup (fuses_rows, codegen/row_fusion.h) a row's reductions fuse into the kernel that reads
// them, when every kernel is on that device. The target's limits cut kernels to fit: the buffers
// one binds, and the loop iterations a work item may run (a reduction gets a quarter of them,
// leaving room for a kernel's other loops: blocked sums, TILE's chunks).
struct ScheduleTarget {
  OptTarget target;
  bool heuristics = true;
};
using ScheduleTargetOf = std::function<ScheduleTarget(const std::string& device)>;

// `target_of` describes each device (unset: a CPU-like default for every device). With
// `read_realized`, a node realized before (UOp::realized_value) is read, not computed.
Schedule create_schedule(const std::vector<UOpRef>& roots, const std::string& device,
                         const ScheduleTargetOf& target_of = {}, bool read_realized = true);

// Text of a schedule (what KILN_DEBUG=3 prints).
std::string schedule_to_string(const Schedule& schedule);

}  // namespace kiln

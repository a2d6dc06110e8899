#pragma once
// The scheduler: turns a tensor graph into an ordered list of kernels and copies.
//
// Fusion is the default: elementwise chains, elementwise into a reduce, and a reduce into the
// elementwise work after it all become one kernel, because lowering evaluates any node at any
// index. A node gets a buffer of its own only where recomputing it would repeat a reduction:
// a node that holds an unrealized reduce and has several users, or is read through a View that
// broadcasts it (softmax's max is the classic case). Roots, Contiguous and the source of a Copy
// are always realized. Large full reductions are split in two kernels so that both cores (or all
// workgroups) share the work, except on devices whose kernels share them between workgroups
// (ScheduleTarget below).

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "codegen/opt_target.h"
#include "core/uop.h"

namespace kiln {

struct ScheduleItem {
  enum class Kind { Kernel, Copy } kind = Kind::Kernel;
  UOpRef output;               // the Buffer node this item fills
  UOpRef ast;                  // Kernel: the value to compute (shape == output shape)
  std::vector<UOpRef> inputs;  // Kernel: Buffer nodes the ast reads; Copy: the source buffer
};

struct Schedule {
  std::vector<ScheduleItem> items;
  std::vector<UOpRef> results;  // one per root: a Buffer node, or a View of one
};

// Makes the storage behind a new Buffer node (allocation may be deferred to first use).
using BufferFactory =
    std::function<std::shared_ptr<Storage>(const std::string& device, DType dtype, int64_t numel)>;

// Storage that is never allocated, named for the CPU: what a schedule's buffers point at where its
// kernels are compiled and not run (`kiln render`, tests).
class UnallocatedStorage : public Storage {
 public:
  explicit UnallocatedStorage(size_t nbytes) : nbytes_(nbytes) {}
  const std::string& device() const override { return device_; }
  size_t nbytes() const override { return nbytes_; }

 private:
  std::string device_ = "CPU";
  size_t nbytes_;
};
// A BufferFactory of UnallocatedStorage.
BufferFactory unallocated_buffers();

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
                         const BufferFactory& make_buffer, const ScheduleTargetOf& target_of = {},
                         bool read_realized = true);

// Text of a schedule (what KILN_DEBUG=3 prints).
std::string schedule_to_string(const Schedule& schedule);

}  // namespace kiln

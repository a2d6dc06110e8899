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
// (KernelLimits::grid_reductions).

#include <functional>
#include <memory>
#include <string>
#include <vector>

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

// What one device's kernels may hold; the scheduler cuts kernels to fit.
struct KernelLimits {
  int64_t max_buffers = 128;      // buffers a kernel binds, its output included
  int64_t max_reduce_length = 0;  // elements a kernel reduces per output; 0: any number
  // The device's kernels share a full reduction between workgroups (GRID): a large one is not
  // split in two kernels there, where GRID applies to it (32- and 64-bit results, not a float
  // product).
  bool grid_reductions = false;
};
using KernelLimitsOf = std::function<KernelLimits(const std::string& device)>;

// `limits_of` gives each device's limits (unset: the defaults above for every device). With
// `read_realized`, a node realized before (UOp::realized_value) is read, not computed.
Schedule create_schedule(const std::vector<UOpRef>& roots, const std::string& device,
                         const BufferFactory& make_buffer, const KernelLimitsOf& limits_of = {},
                         bool read_realized = true);

// Text of a schedule (what KILN_DEBUG=3 prints).
std::string schedule_to_string(const Schedule& schedule);

}  // namespace kiln

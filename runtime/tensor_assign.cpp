// In-place writes: Tensor::assign (index_put_ builds on it, runtime/tensor_slicing.cpp). The value
// is computed into the tensor's own memory (an Assign node, realized at once), so a key/value
// cache or an optimizer's state changes without new memory, and a captured step that reads the
// tensor reads the new contents.
//
// Reads built before the write keep the old value. A graph holds the tensor's Buffer node: where
// anything but the value's own graph still holds it (or a node of the value that reads it), the
// old contents are first copied aside and the node is given that copy as its snapshot
// (UOp::snapshot), which every later schedule reads in its place; the tensor takes a new Buffer
// node over the same memory (Buffer::alias_of). A value realized into the memory before (a
// realized_value) is out of date once its storage's version moves (Storage::note_written).

#include <kiln/autograd.h>
#include <kiln/error.h>
#include <kiln/tensor.h>

#include <unordered_map>
#include <unordered_set>

#include "core/rewrite.h"
#include "runtime/buffer.h"
#include "runtime/launch_recorder.h"
#include "runtime/realize.h"
#include "runtime/tensor_internal.h"

namespace kiln {

namespace {

// Whether anything beside the write's own graph holds `target` or a node of that graph that
// reads it: a read built before the write (a lazy graph, a view, another tensor, a part of the
// value the caller keeps, the C++ temporaries of the expression that made the value), which
// must keep the old contents. The references this accounts for: the tensor's state and the
// caller's `target` on the target, the caller's `write` and `written` (the Assign and its
// value), and each source edge within the write's graph. Never too few holders; temporaries make
// it err towards a copy.
bool read_elsewhere(const UOpRef& write, const UOpRef& written, const UOpRef& target) {
  const std::vector<UOpRef> order = toposort({write});  // holds each node once more
  std::unordered_map<const UOp*, long> accounted;
  for (const UOpRef& node : order) {
    accounted[node.get()] += 1;
    for (const UOpRef& src : node->srcs()) accounted[src.get()] += 1;
  }
  accounted[write.get()] += 1;
  accounted[written.get()] += 1;
  accounted[target.get()] += 2;
  std::unordered_set<const UOp*> reads_target{target.get()};
  for (const UOpRef& node : order) {
    for (const UOpRef& src : node->srcs()) {
      if (reads_target.count(src.get())) reads_target.insert(node.get());
    }
    if (reads_target.count(node.get()) && node.use_count() > accounted[node.get()]) return true;
  }
  return false;
}

// The write of `value` into `into` (a Buffer node, or a region's View of one).
UOpRef assign_node(const UOpRef& into, const UOpRef& value) {
  return UOp::make(Op::Assign, into->dtype(), {into, value}, {}, into->shape());
}

// Whether computing `value` may raise an IndexError after its kernels stored (a Gather's or a
// Scatter's check comes after them), other than `checked`'s.
bool checks_after_storing(const UOpRef& value, const UOp* checked) {
  for (const UOpRef& node : toposort({value})) {
    if ((node->op() == Op::Gather || node->op() == Op::Scatter) && node.get() != checked)
      return true;
  }
  return false;
}

}  // namespace

UOpRef buffer_node(const UOp& like, std::shared_ptr<Storage> storage) {
  if (like.is_symbolic())
    return UOp::make_symbolic(Op::Buffer, like.dtype(), {}, std::move(storage), like.sym_shape());
  return UOp::make(Op::Buffer, like.dtype(), {}, std::move(storage), like.shape());
}

void check_writable(const Tensor& x, const char* op) {
  check_defined(x, op);
  if (node_of(x)->op() != Op::Buffer)
    throw ValueError(std::string("[") + op + "] " + describe(x) +
                     " has no buffer of its own to write: it is not realized, or is a view of "
                     "another tensor's (a slice, a broadcast, a reshape); realize() it first, or "
                     "write the tensor that owns the buffer (index_put_)");
}

Tensor& Tensor::assign(const Tensor& value) {
  return write_in_place(Tensor(value), "assign", false);
}

Tensor& Tensor::assign(Tensor&& value) {
  if (&value == this) return *this;  // x.assign(std::move(x)): x already
  return write_in_place(std::move(value), "assign", false);
}

Tensor& Tensor::write_in_place(Tensor&& value, const char* op, bool scatter_checked,
                               std::shared_ptr<const UOp> region) {
  check_writable(*this, op);
  check_defined(value, op);
  // A write records no gradient: one that would cut a recorded path is refused, as PyTorch's.
  if (grad_enabled() && (requires_grad() || value.requires_grad())) {
    throw ValueError(
        std::string("[") + op + "] cannot write " + describe(*this) +
        " in place while gradients are recorded: " +
        (requires_grad() ? "it requires a gradient" : "the value written requires a gradient") +
        "; write under a NoGradGuard (as optimizers do), or detach() the value");
  }
  check_same_device(*this, value, op);
  TensorState& held = state(op);
  const UOpRef target = held.node();
  const DimShape sizes = region ? make_tensor(region, device()).dims() : dims();
  const Shape shape_written = region ? region->shape() : shape();
  if (value.ndim() > static_cast<int64_t>(sizes.size()) ||
      broadcast_shapes(value.shape(), shape_written, op) != shape_written)
    throw ShapeError(std::string("[") + op + "] the value " + describe(value) +
                     " does not broadcast to " + (region ? "the selection's shape of " : "") +
                     describe(*this) + ", the tensor written");
  UOpRef written = node_of(value.cast(dtype()).expand(sizes));
  { const Tensor given = std::move(value); }  // given up: not a reader of the old contents
  if (written == (region ? region : target)) return *this;
  const std::string& on = device();
  // A value whose index checks come after its stores is computed beside x first: an IndexError
  // then leaves x as it was.
  const bool own_scatter = scatter_checked && written->op() == Op::Scatter;
  if (checks_after_storing(written, own_scatter ? written.get() : nullptr))
    written = realize_nodes({written}, on)[0];
  if (region && written == target) {
    // x[::-1] = x: the region read from the buffer it is written to at other elements, and a
    // buffer is no node a schedule computes beside it. Copied first.
    Buffer& source = buffer_of(*target);
    const UOpRef copy = buffer_node(
        *target, std::make_shared<Buffer>(source.shared_context(), dtype(), source.numel()));
    realize_nodes({assign_node(copy, target)}, on);
    written = copy;
  }
  Storage& storage = *target->storage();
  try {
    UOpRef write;
    {
      const UOpRef into = region ? std::move(region) : target;
      write = assign_node(into, written);
    }
    if (!read_elsewhere(write, written, target)) {
      // Elementwise reads of the target are computed in place; others beside it first
      // (codegen/schedule.cpp).
      realize_nodes({write}, on);
    } else {
      // The old contents aside for the graphs that hold the target, then the write into the
      // same memory under a new node (its value reads the copy, so it may read the target
      // anywhere).
      Buffer& old_buffer = buffer_of(*target);
      const UOpRef contents = buffer_node(
          *target,
          std::make_shared<Buffer>(old_buffer.shared_context(), dtype(), old_buffer.numel()));
      realize_nodes({assign_node(contents, target)}, on);
      const UOpRef renewed = buffer_node(
          *target, Buffer::alias_of(std::static_pointer_cast<Buffer>(target->storage())));
      target->set_snapshot(contents);
      held.set_node(renewed);
      const UOpRef& into = write->src(0);
      realize_nodes({assign_node(into == target ? renewed : with_srcs(into, {renewed}), written)},
                    on);
    }
  } catch (...) {
    storage.note_written();  // a kernel that failed may have stored some elements
    throw;
  }
  storage.note_written();
  // A capture recording the write: its replays renew this tensor's node (runtime/capture.cpp).
  // (The value read what the step made where another thread's capture records this write.)
  if (RecorderHold hold = recorder_for({held.node(), written}); hold.recorder)
    hold.recorder->written_in_place.push_back(state_);
  return *this;
}

}  // namespace kiln

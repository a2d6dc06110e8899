#include "codegen/row_fusion.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "codegen/kernel_axes.h"
#include "core/rewrite.h"

namespace kiln {
namespace {

constexpr int64_t kMinRowLanes = 32;
constexpr int64_t kMaxRowLanes = 256;
constexpr int64_t kMaxRowOutputsPerItem = 16;

// A reduction over the last axis only: [..., C] -> [..., 1].
bool is_row_reduction(const UOp& node) {
  if (node.op() != Op::Reduce || node.is_symbolic() || node.src()->is_symbolic()) return false;
  // The row's work items combine partial results: not for a float product (its rounding).
  if (node.dtype().is_float() && node.reduce_arg().op == ReduceOp::Prod) return false;
  const std::vector<int>& axes = node.reduce_arg().axes;
  const int last = static_cast<int>(node.shape().size()) - 1;
  return last >= 0 && axes.size() == 1 && axes[0] == last;
}

// The row length C where `ast` is a value per row computed from row reductions of [..., C]
// values (elementwise ops over them, constants and [..., 1] buffers: softmax's max, a mean, the
// log of a sum), else 0.
int64_t row_value_length(const UOpRef& ast) {
  if (ast->is_symbolic() || ast->shape().empty() || ast->shape().back() != 1) return 0;
  int64_t length = 0;
  std::vector<const UOp*> stack{ast.get()};
  std::unordered_set<const UOp*> seen{ast.get()};
  while (!stack.empty()) {
    const UOp& node = *stack.back();
    stack.pop_back();
    if (node.op() == Op::Reduce) {
      if (!is_row_reduction(node) || node.shape() != ast->shape()) return 0;
      const int64_t row = node.src()->shape().back();
      if (length != 0 && row != length) return 0;
      length = row;
      continue;
    }
    if (node.op() == Op::Const || (node.op() == Op::View && node.src()->op() == Op::Const))
      continue;
    if (node.op() == Op::Buffer && node.shape() == ast->shape()) continue;
    if (!is_elementwise(node.op())) return 0;
    for (const UOpRef& src : node.srcs()) {
      if (seen.insert(src.get()).second) stack.push_back(src.get());
    }
  }
  return length;
}

// Whether every reader of `buffer` in `ast` is a View that broadcasts its last axis to `shape`.
bool read_as_row_broadcast(const UOpRef& ast, const UOp* buffer, const Shape& shape) {
  Shape narrow = shape;
  narrow.back() = 1;
  const ShapeTracker expected =
      ShapeTracker::contiguous(to_sym_shape(narrow)).expand(to_sym_shape(shape));
  for (const UOpRef& node : toposort({ast})) {
    for (const UOpRef& src : node->srcs()) {
      if (src.get() != buffer) continue;
      if (node->op() != Op::View || node->shape() != shape || !(node->tracker() == expected))
        return false;
    }
  }
  return true;
}

// Whether every path from the kernel's output to `buffer` keeps the row: elementwise ops,
// broadcasting Views, and row reductions into their sources. A transpose, flip, pad or shrink
// of a computed value holding it would read the row value at other rows' indices (each work
// item would then compute it alone), and a mask would switch off some work items' shares.
bool reached_along_rows(const UOpRef& ast, const UOp* buffer) {
  std::unordered_set<const UOp*> holds;  // nodes whose sources reach `buffer`
  for (const UOpRef& node : toposort({ast})) {
    for (const UOpRef& src : node->srcs()) {
      if (src.get() == buffer || holds.count(src.get())) holds.insert(node.get());
    }
  }
  for (const UOpRef& node : toposort({ast})) {
    if (!holds.count(node.get())) continue;
    const bool keeps_rows = is_elementwise(node->op()) ||
                            (node->op() == Op::View && !node->tracker().is_injective()) ||
                            is_row_reduction(*node);
    if (!keeps_rows) return false;
  }
  return true;
}

}  // namespace

bool broadcasts_row_value(const UOp& node) {
  if (node.op() != Op::View || node.tracker().is_injective()) return false;
  // Each value once: an elementwise graph may reach one value by many paths (a hash's rounds
  // reuse every value twice), which a walk of the paths would take exponentially long to tell.
  std::vector<const UOp*> stack{node.src().get()};
  std::unordered_set<const UOp*> seen{node.src().get()};
  while (!stack.empty()) {
    const UOp& value = *stack.back();
    stack.pop_back();
    if (value.op() == Op::Reduce) return true;
    if (!is_elementwise(value.op())) continue;
    for (const UOpRef& src : value.srcs()) {
      if (seen.insert(src.get()).second) stack.push_back(src.get());
    }
  }
  return false;
}

bool reads_row_reductions(const UOpRef& ast) {
  for (const UOpRef& node : toposort({ast})) {
    if (broadcasts_row_value(*node)) return true;
  }
  return false;
}

int64_t max_row_lanes(const OptTarget& target) {
  return std::min({kMaxRowLanes, target.max_workgroup_size, target.max_workgroup_dims[0]});
}

int64_t row_lanes(int64_t row_length, int64_t max_lanes) {
  for (int64_t lanes = std::min(row_length, max_lanes); lanes >= kMinRowLanes; --lanes) {
    if (row_length % lanes == 0 && row_length / lanes <= kMaxRowOutputsPerItem) return lanes;
  }
  return 0;
}

int fuse_row_reductions(Schedule& schedule, int64_t max_lanes, int64_t max_buffers) {
  std::vector<ScheduleItem>& items = schedule.items;
  std::unordered_map<int, size_t> producer;  // a buffer: the item that fills it
  for (size_t index = 0; index < items.size(); ++index) producer[items[index].buffers[0]] = index;
  std::vector<bool> removed(items.size(), false);
  std::unordered_map<int, int> readers;  // items left that read each buffer
  auto count_readers = [&] {
    readers.clear();
    for (size_t index = 0; index < items.size(); ++index) {
      if (removed[index]) continue;
      for (size_t param = 1; param < items[index].buffers.size(); ++param)
        readers[items[index].buffers[param]] += 1;
    }
  };
  count_readers();
  std::unordered_set<int> results;
  for (const ScheduleResult& result : schedule.results) results.insert(result.buffer);
  int fused = 0;
  for (size_t consumer = items.size(); consumer-- > 0;) {
    ScheduleItem& item = items[consumer];
    if (item.kind != ScheduleItem::Kind::Kernel || removed[consumer]) continue;
    const Shape& shape = item.output->shape();
    if (shape.empty() || row_lanes(shape.back(), max_lanes) == 0) continue;
    // A kernel with a reduction of its own (a matmul of normalized rows) keeps its opts; a
    // Scatter's or an Attention's work items own lines, not rows.
    if (kernel_reduce(item.ast) || item.ast->op() == Op::Scatter || item.ast->op() == Op::Attention)
      continue;
    bool again = true;
    while (again) {
      again = false;
      for (size_t param = 1; param < item.buffers.size(); ++param) {
        const int buffer = item.buffers[param];
        auto found = producer.find(buffer);
        if (found == producer.end() || results.count(buffer) || readers[buffer] != 1) continue;
        const ScheduleItem& reduction = items[found->second];
        if (reduction.kind != ScheduleItem::Kind::Kernel) continue;
        Shape narrow = shape;
        narrow.back() = 1;
        if (reduction.ast->shape() != narrow || row_value_length(reduction.ast) != shape.back())
          continue;
        const UOp* replaced = item.inputs[param - 1].get();
        if (!read_as_row_broadcast(item.ast, replaced, shape) ||
            !reached_along_rows(item.ast, replaced))
          continue;
        // Both kernels over the schedule's buffers: the reduction's value takes the place of
        // the buffer it fills, and the fused kernel's parameters are numbered afresh.
        const UOp* filled = schedule.buffers[buffer].node.get();
        const UOpRef reduction_ast = ast_over_buffers(schedule, reduction);
        const UOpRef fused_ast =
            graph_rewrite({ast_over_buffers(schedule, item)}, [&](const UOpRef& node) -> UOpRef {
              return node.get() == filled ? reduction_ast : nullptr;
            })[0];
        ScheduleItem fused_item;
        bind_kernel(schedule, fused_item, item.buffers[0], fused_ast);
        if (static_cast<int64_t>(fused_item.buffers.size()) > max_buffers) continue;
        item = std::move(fused_item);
        removed[found->second] = true;
        count_readers();
        ++fused;
        again = true;
        break;
      }
    }
  }
  std::vector<ScheduleItem> kept;
  for (size_t index = 0; index < items.size(); ++index) {
    if (!removed[index]) kept.push_back(std::move(items[index]));
  }
  items = std::move(kept);
  return fused;
}

}  // namespace kiln

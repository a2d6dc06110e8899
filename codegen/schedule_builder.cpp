#include "codegen/schedule_builder.h"

#include <sstream>

#include "core/rewrite.h"

namespace kiln {
namespace {

using NodeMap = std::unordered_map<const UOp*, UOpRef>;

// The value of `root` as a kernel sees it: realized sources become their buffers. Sources first,
// with an explicit stack (graphs may be 100,000 nodes deep); `substituted` keeps what is done for
// the next kernels.
UOpRef as_kernel_reads(const UOpRef& root, const NodeMap& buffer_of, NodeMap& substituted) {
  auto as_source = [&](const UOpRef& src) -> const UOpRef* {
    if (auto buffer = buffer_of.find(src.get()); buffer != buffer_of.end()) return &buffer->second;
    if (auto done = substituted.find(src.get()); done != substituted.end()) return &done->second;
    return nullptr;
  };
  if (auto done = substituted.find(root.get()); done != substituted.end()) return done->second;
  std::vector<std::pair<UOpRef, size_t>> stack{{root, 0}};
  while (!stack.empty()) {
    const UOpRef node = stack.back().first;
    const size_t next = stack.back().second++;
    if (next < node->srcs().size()) {
      const UOpRef& src = node->srcs()[next];
      if (!as_source(src)) stack.emplace_back(src, 0);
      continue;
    }
    stack.pop_back();
    if (substituted.count(node.get())) continue;
    std::vector<UOpRef> srcs;
    for (const UOpRef& src : node->srcs()) srcs.push_back(*as_source(src));
    substituted[node.get()] = with_srcs(node, std::move(srcs));
  }
  return substituted.at(root.get());
}

UOpRef buffer_like(const UOp& like, std::string name) {
  return like.is_symbolic()
             ? UOp::make_symbolic(Op::Buffer, like.dtype(), {}, std::move(name), like.sym_shape())
             : UOp::make(Op::Buffer, like.dtype(), {}, std::move(name), like.shape());
}

// Binds a kernel as bind_kernel does, `index_of` giving each buffer node's index. The output's
// own buffer read in the ast (a Scatter's destination, updated in place) is parameter 0.
template <typename IndexOf>
void bind_kernel_with(const std::vector<ScheduleBuffer>& buffers, ScheduleItem& kernel, int output,
                      const UOpRef& ast, IndexOf&& index_of) {
  kernel.kind = ScheduleItem::Kind::Kernel;
  kernel.buffers = {output};
  kernel.output = buffer_like(*buffers[output].node, "param0");
  kernel.inputs.clear();
  std::unordered_map<const UOp*, UOpRef> param_of;
  for (const UOpRef& node : toposort({ast})) {
    if (node->op() != Op::Buffer) continue;
    const int buffer = index_of(node);
    if (buffer == output) {
      param_of.emplace(node.get(), kernel.output);
      continue;
    }
    UOpRef param = buffer_like(*node, "param" + std::to_string(kernel.inputs.size() + 1));
    kernel.buffers.push_back(buffer);
    kernel.inputs.push_back(param);
    param_of.emplace(node.get(), std::move(param));
  }
  kernel.ast = graph_rewrite({ast}, [&](const UOpRef& node) -> UOpRef {
    auto found = param_of.find(node.get());
    return found == param_of.end() ? nullptr : found->second;
  })[0];
}

}  // namespace

void ScheduleBuilder::add_item(const UOpRef& node, const std::string& device, std::string why,
                               bool in_place) {
  int output;
  UOpRef buffer;
  if (in_place || node->op() == Op::Assign) {
    // The destination's (a Scatter's, or a leaf's) or the target's buffer (a leaf, or the one
    // the target views: an Assign into a region).
    const UOpRef& into = node->src()->op() == Op::View ? node->src()->src() : node->src();
    buffer = into->op() == Op::Buffer ? into : buffer_of_.at(into.get());
    output = index_of(buffer);
  } else {
    output = static_cast<int>(schedule_.buffers.size());
    buffer = buffer_like(*node, "buffer" + std::to_string(output));
    schedule_.buffers.push_back(ScheduleBuffer{buffer, false, device, node->numel()});
    index_of_.emplace(buffer.get(), output);
  }
  if (node->op() == Op::Scatter) {
    // The destination's values into the buffer (unless there already), then the stores into it
    // in place (a Scatter's kernel writes only where the index points).
    if (!in_place) schedule_.items.push_back(kernel_item(node->src(0), output));
    UOpRef reads = as_kernel_reads(node, buffer_of_, substituted_);
    std::vector<UOpRef> srcs = reads->srcs();
    srcs[0] = buffer;
    ScheduleItem scatter;
    bind_kernel_with(schedule_.buffers, scatter, output, with_srcs(reads, std::move(srcs)),
                     [this](const UOpRef& read) { return index_of(read); });
    schedule_.items.push_back(std::move(scatter));
  } else if (node->op() == Op::Assign && node->src()->op() == Op::View) {
    // Into a region: the kernel's ast is the Assign, its target the region's view of parameter
    // 0, so that it stores through that view (codegen/lower.cpp).
    auto value = buffer_of_.find(node->src(1).get());
    const UOpRef reads = value != buffer_of_.end()
                             ? value->second
                             : as_kernel_reads(node->src(1), buffer_of_, substituted_);
    ScheduleItem write;
    bind_kernel_with(schedule_.buffers, write, output, with_srcs(node, {node->src(), reads}),
                     [this](const UOpRef& read) { return index_of(read); });
    schedule_.items.push_back(std::move(write));
  } else if (node->op() == Op::Assign) {
    // The value, unless it was computed there already (a Scatter in place).
    auto value = buffer_of_.find(node->src(1).get());
    if (value == buffer_of_.end() || value->second != buffer)
      schedule_.items.push_back(kernel_item(node->src(1), output));
  } else {
    schedule_.items.push_back(item_of(node, output));
  }
  if (!schedule_.items.empty()) schedule_.items.back().why = std::move(why);
  // Known only after its item is made: the item computes the node rather than reading it.
  buffer_of_[node.get()] = std::move(buffer);
}

Schedule ScheduleBuilder::finish(const std::vector<UOpRef>& roots) {
  for (const UOpRef& root : roots) {
    auto buffer = buffer_of_.find(root.get());
    schedule_.results.push_back(buffer != buffer_of_.end()
                                    ? ScheduleResult{index_of_.at(buffer->second.get()), nullptr}
                                    : ScheduleResult{-1, root});
  }
  return std::move(schedule_);
}

int ScheduleBuilder::index_of(const UOpRef& buffer) {
  auto [found, added] = index_of_.emplace(buffer.get(), static_cast<int>(schedule_.buffers.size()));
  if (added)
    schedule_.buffers.push_back(
        ScheduleBuffer{buffer, true, buffer->storage()->device(), buffer->numel()});
  return found->second;
}

ScheduleItem ScheduleBuilder::item_of(const UOpRef& node, int output) {
  ScheduleItem item;
  if (node->op() == Op::Copy) {
    item.kind = ScheduleItem::Kind::Copy;
    const UOpRef& src = node->src();
    item.buffers = {output, index_of(src->op() == Op::Buffer ? src : buffer_of_.at(src.get()))};
    return item;
  }
  return kernel_item(node->op() == Op::Contiguous ? node->src() : node, output);
}

ScheduleItem ScheduleBuilder::kernel_item(const UOpRef& value, int output) {
  ScheduleItem item;
  auto src_buffer = buffer_of_.find(value.get());
  const UOpRef ast = src_buffer != buffer_of_.end()
                         ? src_buffer->second
                         : as_kernel_reads(value, buffer_of_, substituted_);
  bind_kernel_with(schedule_.buffers, item, output, ast,
                   [this](const UOpRef& buffer) { return index_of(buffer); });
  return item;
}

UOpRef ast_over_buffers(const Schedule& schedule, const ScheduleItem& kernel) {
  std::unordered_map<const UOp*, const UOpRef*> buffer_of;
  // A Scatter's kernel reads its output too.
  buffer_of.emplace(kernel.output.get(), &schedule.buffers[kernel.buffers[0]].node);
  for (size_t param = 0; param < kernel.inputs.size(); ++param)
    buffer_of.emplace(kernel.inputs[param].get(),
                      &schedule.buffers[kernel.buffers[param + 1]].node);
  return graph_rewrite({kernel.ast}, [&](const UOpRef& node) -> UOpRef {
    auto found = buffer_of.find(node.get());
    return found == buffer_of.end() ? nullptr : *found->second;
  })[0];
}

void bind_kernel(const Schedule& schedule, ScheduleItem& kernel, int output, const UOpRef& ast) {
  std::unordered_map<const UOp*, int> index_of;
  for (size_t index = 0; index < schedule.buffers.size(); ++index)
    index_of.emplace(schedule.buffers[index].node.get(), static_cast<int>(index));
  bind_kernel_with(schedule.buffers, kernel, output, ast,
                   [&](const UOpRef& buffer) { return index_of.at(buffer.get()); });
}

std::string schedule_to_string(const Schedule& schedule) {
  std::ostringstream text;
  for (size_t index = 0; index < schedule.buffers.size(); ++index) {
    const ScheduleBuffer& buffer = schedule.buffers[index];
    text << "buffer " << index << ": " << (buffer.is_leaf ? "leaf " : "new ")
         << buffer.node->dtype().name() << "[" << buffer.numel << "] on " << buffer.device << "\n";
  }
  for (size_t index = 0; index < schedule.items.size(); ++index) {
    const ScheduleItem& item = schedule.items[index];
    if (item.kind == ScheduleItem::Kind::Copy) {
      text << "item " << index << ": COPY buffer " << item.buffers[1] << " -> buffer "
           << item.buffers[0] << "\n";
      continue;
    }
    text << "item " << index << ": KERNEL -> buffer " << item.buffers[0] << " reads";
    for (size_t param = 1; param < item.buffers.size(); ++param)
      text << " param" << param << "=buffer " << item.buffers[param];
    if (!item.why.empty()) text << " (" << item.why << ")";
    text << "\n" << graph_to_string({item.ast});
  }
  return text.str();
}

}  // namespace kiln

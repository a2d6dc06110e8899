#include "codegen/schedule.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>

#include "codegen/bound_reduce.h"
#include "codegen/kernel_size.h"
#include "codegen/row_fusion.h"
#include "codegen/row_major_operand.h"
#include "codegen/schedule_builder.h"
#include "codegen/unfused_attention.h"
#include "core/const_fold.h"
#include "core/rewrite.h"

namespace kiln {
namespace {

// A full reduction of at least this many elements is split in two kernels.
constexpr int64_t kSplitReductionThreshold = 1 << 15;
// The first kernel leaves this many partial results (or fewer, see choose_split).
constexpr int64_t kMaxSplits = 256;
// A kernel also binds at most KernelLimits::max_buffers buffers (drivers limit kernel arguments:
// Vulkan's lavapipe to 32): past that, the node's sources are realized (kMaxFusedOps, the other
// limit, is in codegen/kernel_size.h). kiln's own limit on the buffers a kernel binds (a device
// may allow fewer):
constexpr int64_t kMaxKernelBuffers = 128;
// Every device binds at least this many buffers per kernel (Vulkan guarantees 4 storage buffers
// per stage), so smaller kernels need not look up the device's limit.
constexpr int64_t kMinKernelBuffers = 4;

bool is_leaf_buffer_view(const UOp& node) {
  return node.op() == Op::Buffer || (node.op() == Op::View && node.src()->op() == Op::Buffer);
}

UOpRef make_view(const UOpRef& src, const ShapeTracker& tracker, const Shape& shape) {
  return UOp::make(Op::View, src->dtype(), {src}, tracker, shape);
}

// Largest divisor of n not above kMaxSplits that leaves at least 1024 elements per split.
int64_t choose_split(int64_t n) {
  for (int64_t splits = kMaxSplits; splits >= 2; --splits) {
    if (n % splits == 0 && n / splits >= 1024) return splits;
  }
  return 1;
}

UOpRef split_rule(const UOpRef& node) {
  if (node->op() != Op::Reduce) return nullptr;
  const UOpRef& src = node->src();
  // A symbolic reduction keeps one kernel for every size (its split would depend on the value).
  if (src->is_symbolic()) return nullptr;
  if (node->numel() != 1 || src->numel() < kSplitReductionThreshold) return nullptr;
  const int64_t total = src->numel();
  const int64_t splits = choose_split(total);
  if (splits == 1) return nullptr;
  const ReduceOp op = node->reduce_arg().op;
  ShapeTracker tracker = ShapeTracker::contiguous(to_sym_shape(src->shape()))
                             .reshape({Sym(splits), Sym(total / splits)});
  UOpRef grouped = make_view(src, tracker, {splits, total / splits});
  UOpRef partial = UOp::make(Op::Reduce, node->dtype(), {grouped}, ReduceArg{op, {1}}, {splits, 1});
  UOpRef stored = UOp::make(Op::Contiguous, node->dtype(), {partial}, {}, partial->shape());
  UOpRef total_reduce = UOp::make(Op::Reduce, node->dtype(), {stored}, ReduceArg{op, {0}}, {1, 1});
  ShapeTracker back =
      ShapeTracker::contiguous({Sym(1), Sym(1)}).reshape(to_sym_shape(node->shape()));
  return make_view(total_reduce, back, node->shape());
}

// A sum, max or min of a constant is a constant: folded rather than computed, which also keeps a
// reduction of 2^40 ones from needing 2^26 partial sums where a device bounds its loops (lavapipe:
// more than one buffer may hold). Products and empty reductions are left to the kernels.
UOpRef fold_constant_reduce(const UOpRef& node) {
  const UOpRef& src = node->src();
  if (src->op() != Op::Const || src->is_symbolic() || node->is_symbolic()) return nullptr;
  const DType dtype = node->dtype();
  if (dtype.is_bool() || src->numel() == 0) return nullptr;
  const ConstArg& value = src->const_arg();
  const ReduceOp op = node->reduce_arg().op;
  if (op == ReduceOp::Max || op == ReduceOp::Min)
    return UOp::make(Op::Const, dtype, {}, value, node->shape());
  if (op != ReduceOp::Sum) return nullptr;
  const int64_t count = src->numel() / node->numel();
  ConstArg folded;
  if (dtype.is_float()) {
    folded = make_const(value.float_value * static_cast<double>(count), dtype);
  } else {
    // Integers wrap as the kernel's sum would: (value * count) modulo 2^bits.
    const std::optional<ConstArg> product = fold_constant(
        Op::Mul, dtype, {{dtype, value}, {dtype, make_const(static_cast<double>(count), dtype)}});
    if (!product) return nullptr;
    folded = *product;
  }
  return UOp::make(Op::Const, dtype, {}, folded, node->shape());
}

// A large full reduction that stays one kernel (GRID) reduces one flat axis, which its workgroups
// share, rather than several.
UOpRef flatten_rule(const UOpRef& node) {
  const UOpRef& src = node->src();
  if (src->is_symbolic() || node->numel() != 1 || src->numel() < kSplitReductionThreshold)
    return nullptr;
  if (node->reduce_arg().axes.size() < 2) return nullptr;
  const int64_t total = src->numel();
  ShapeTracker tracker = ShapeTracker::contiguous(to_sym_shape(src->shape())).reshape({Sym(total)});
  UOpRef flat = make_view(src, tracker, {total});
  UOpRef reduce =
      UOp::make(Op::Reduce, node->dtype(), {flat}, ReduceArg{node->reduce_arg().op, {0}}, {1});
  ShapeTracker back = ShapeTracker::contiguous({Sym(1)}).reshape(to_sym_shape(node->shape()));
  return make_view(reduce, back, node->shape());
}

// The device a node is computed on, as create_schedule decides it: a Copy's target, a Buffer's
// device, else its first source's that has one; `fallback` where none does (a graph of constants).
// Each node is looked at once, however many Reduces ask.
class DeviceOf {
 public:
  explicit DeviceOf(std::string fallback) : fallback_(std::move(fallback)) {}

  const std::string& operator()(const UOpRef& root) {
    std::vector<std::pair<const UOp*, size_t>> stack{{root.get(), 0}};
    while (!stack.empty()) {
      const UOp* node = stack.back().first;
      const size_t next = stack.back().second++;
      if (known_.count(node)) {
        stack.pop_back();
        continue;
      }
      if (node->op() == Op::Copy || node->op() == Op::Buffer) {
        known_[node] = node->op() == Op::Copy ? node->device_arg() : node->storage()->device();
        stack.pop_back();
        continue;
      }
      if (next < node->srcs().size()) {
        stack.emplace_back(node->srcs()[next].get(), 0);
        continue;
      }
      std::string& device = known_[node];
      for (const UOpRef& src : node->srcs()) {
        if (device.empty()) device = known_.at(src.get());
      }
      stack.pop_back();
    }
    const std::string& device = known_.at(root.get());
    return device.empty() ? fallback_ : device;
  }

 private:
  std::string fallback_;
  std::unordered_map<const UOp*, std::string> known_;  // "" for a graph of constants
};

int64_t saturating_add(int64_t a, int64_t b) {
  int64_t sum;
  return __builtin_add_overflow(a, b, &sum) ? INT64_MAX : sum;
}

int64_t saturating_mul(int64_t a, int64_t b) {
  int64_t product;
  return __builtin_mul_overflow(a, b, &product) ? INT64_MAX : product;
}

// The loop iterations a work item computing one element of `node` runs, the realized sources
// read as buffers: a reduction runs its loop once per element it reduces, and the loops of its
// source's kernel inside each of those. A symbolic length counts at its largest value.
int64_t loop_work_of(const UOp& node, const std::unordered_map<const UOp*, int64_t>& loop_work,
                     const std::unordered_set<const UOp*>& realized) {
  int64_t inside = 0;
  for (const UOpRef& src : node.srcs()) {
    if (realized.count(src.get())) continue;
    auto found = loop_work.find(src.get());
    if (found != loop_work.end()) inside = saturating_add(inside, found->second);
  }
  if (node.op() != Op::Reduce) return inside;
  const SymShape source_shape = node.src()->sym_shape();
  int64_t length = 1;
  for (int axis : node.reduce_arg().axes)
    length = saturating_mul(length, std::max<int64_t>(source_shape[axis].vmax(), 0));
  // One more per entry: a loop tests its condition once after the last trip.
  return saturating_mul(length, saturating_add(inside, 1));
}

// Keeps the loops of the kernel computing `node` within `limit` iterations per work item (a
// device that stops long loops, lavapipe, would give a short result; 0: no limit): the source
// whose kernel loops the most is realized, until the rest fit. Fused nested reductions
// (x.sum(1).sum(), a matmul then a sum) become one kernel per reduction where together they would
// pass the limit. Records the node's loop work.
void bound_loop_work(const UOp& node, int64_t limit,
                     std::unordered_map<const UOp*, int64_t>& loop_work,
                     std::unordered_set<const UOp*>& realized) {
  int64_t work = loop_work_of(node, loop_work, realized);
  while (limit > 0 && work > limit) {
    const UOp* busiest = nullptr;
    for (const UOpRef& src : node.srcs()) {
      if (realized.count(src.get()) || src->op() == Op::Buffer) continue;
      auto found = loop_work.find(src.get());
      if (found == loop_work.end() || found->second == 0) continue;
      if (!busiest || found->second > loop_work.at(busiest)) busiest = src.get();
    }
    if (!busiest) break;  // the node's own loop alone: bound_reduce_length splits it
    realized.insert(busiest);
    work = loop_work_of(node, loop_work, realized);
  }
  loop_work[&node] = work;
}

// What one device's kernels may hold; the scheduler cuts kernels to fit.
struct KernelLimits {
  int64_t max_buffers = kMaxKernelBuffers;  // buffers a kernel binds, its output included
  int64_t max_reduce_length = 0;            // elements a kernel reduces per output; 0: any number
  // The heuristics share a full reduction between workgroups (GRID): a large one is not split in
  // two kernels, where GRID applies to it (32- and 64-bit results, not a float product).
  bool grid_reductions = false;
  // Attention runs as its own kernel (codegen/lower_attention.cpp) on a device with workgroups,
  // where its walk over the keys fits the loop limit; elsewhere as reductions.
  bool attention_kernels = false;
};

KernelLimits limits_on(const ScheduleTarget& scheduled) {
  const OptTarget& target = scheduled.target;
  KernelLimits limits;
  if (target.max_kernel_buffers > 0)
    limits.max_buffers = std::min(limits.max_buffers, target.max_kernel_buffers);
  if (target.max_loop_iterations > 0)
    limits.max_reduce_length = std::max<int64_t>(1, target.max_loop_iterations / 4);
  // Only where the heuristics choose the opts: other policies may leave a reduction that is not
  // split to a single work item.
  limits.grid_reductions = scheduled.heuristics && target.prefers_grid();
  limits.attention_kernels = !target.loop_launch;
  return limits;
}

// Each device's target and limits, asked of `target_of` once per device.
class TargetsOf {
 public:
  explicit TargetsOf(const ScheduleTargetOf& target_of) : target_of_(target_of) {}

  const ScheduleTarget& target(const std::string& device) { return known(device).first; }
  const KernelLimits& operator()(const std::string& device) { return known(device).second; }

 private:
  const std::pair<ScheduleTarget, KernelLimits>& known(const std::string& device) {
    auto found = known_.find(device);
    if (found != known_.end()) return found->second;
    const ScheduleTarget target = target_of_ ? target_of_(device) : ScheduleTarget{};
    return known_.emplace(device, std::make_pair(target, limits_on(target))).first->second;
  }

  const ScheduleTargetOf& target_of_;
  std::unordered_map<std::string, std::pair<ScheduleTarget, KernelLimits>> known_;
};

// The part [start, end) of `node` along `axis`, as a View.
UOpRef part_along(const UOpRef& node, int axis, int64_t start, int64_t end) {
  const SymShape sizes = node->sym_shape();
  std::vector<std::pair<Sym, Sym>> ranges;
  for (const Sym& size : sizes) ranges.emplace_back(Sym(0), size);
  ranges[static_cast<size_t>(axis)] = {Sym(start), Sym(end)};
  Shape shape = node->shape();
  shape[static_cast<size_t>(axis)] = end - start;
  return make_view(node, ShapeTracker::contiguous(sizes).shrink(ranges), shape);
}

// A Scatter's work item walks the index along its axis in one loop: where that is longer than
// `limit` steps (0: any number), a chain of Scatters over consecutive parts of the index, each
// updating the one before in place (build_items), in the same order. (Not where the length is
// symbolic: such a loop is left whole.)
UOpRef bound_scatter_length(const UOpRef& node, int64_t limit) {
  const int axis = node->scatter_arg().axis;
  const Sym length = node->src(1)->sym_shape()[static_cast<size_t>(axis)];
  if (limit <= 0 || !length.is_const() || length.const_value() <= limit) return nullptr;
  UOpRef result = node->src(0);
  for (int64_t start = 0; start < length.const_value(); start += limit) {
    const int64_t end = std::min(length.const_value(), start + limit);
    result = UOp::make(Op::Scatter, node->dtype(),
                       {result, part_along(node->src(1), axis, start, end),
                        part_along(node->src(2), axis, start, end)},
                       node->arg(), node->shape());
  }
  return result;
}

// An Attention's kernel holds a query row's E values and Ev sums per lane, unrolled: it runs as
// one where those are fixed and few (a head's 64 or 128) and its walk over the keys fits the
// device's loop limit.
constexpr int64_t kMaxAttentionWidth = 256;

bool runs_as_kernel(const UOp& attention, const KernelLimits& limits) {
  if (!limits.attention_kernels) return false;
  const SymShape key_shape = attention.src(1)->sym_shape();
  const Sym features = key_shape.back(), keys = key_shape[key_shape.size() - 2];
  const Sym value_features = attention.src(2)->sym_shape().back();
  if (!features.is_const() || !value_features.is_const()) return false;
  if (features.const_value() > kMaxAttentionWidth ||
      value_features.const_value() > kMaxAttentionWidth)
    return false;
  return limits.max_reduce_length <= 0 || keys.vmax() <= limits.max_reduce_length;
}

// One pass: values realized before (by another graph that shares these nodes) are read, not
// computed, long scatters are chained, and long reductions are split (a replacement's new nodes are
// rewritten too, so a split's parts are bounded).
std::vector<UOpRef> rewrite_reductions(const std::vector<UOpRef>& input_roots,
                                       const std::string& device, TargetsOf& limits,
                                       bool read_realized) {
  DeviceOf device_of_node(device);
  const RewriteRule realized_before = [&](const UOpRef& node) -> UOpRef {
    if (UOpRef contents = node->snapshot()) return contents;
    if (!read_realized) return nullptr;
    UOpRef value = node->realized_value();
    if (!value) return nullptr;
    // A graph of constants carries no device: its node may have been realized on another one.
    const UOp& buffer = value->op() == Op::Buffer ? *value : *value->src();
    return buffer.storage()->device() == device_of_node(node) ? value : nullptr;
  };
  return graph_rewrite(
      input_roots,
      [&](const UOpRef& node) -> UOpRef {
        if (node->op() == Op::Scatter)
          return bound_scatter_length(node, limits(device_of_node(node)).max_reduce_length);
        if (node->op() == Op::Attention)
          return runs_as_kernel(*node, limits(device_of_node(node))) ? nullptr
                                                                     : unfused_attention(node);
        if (node->op() != Op::Reduce) return nullptr;
        if (UOpRef folded = fold_constant_reduce(node)) return folded;
        const ScheduleTarget& on = limits.target(device_of_node(node));
        if (on.heuristics && on.target.loop_launch) {
          if (UOpRef copied = copy_transposed_operand(node)) return copied;
        }
        const bool one_kernel =
            limits(device_of_node(node)).grid_reductions && node->dtype().itemsize() >= 4 &&
            !(node->dtype().is_float() && node->reduce_arg().op == ReduceOp::Prod);
        if (UOpRef split = one_kernel ? flatten_rule(node) : split_rule(node)) return split;
        return bound_reduce_length(node, limits(device_of_node(node)).max_reduce_length);
      },
      realized_before);
}

// Elements at the largest value of every variable in the shape.
int64_t largest_numel(const UOp& node) {
  int64_t elements = 1;
  for (const Sym& extent : node.sym_shape()) elements = saturating_mul(elements, extent.vmax());
  return elements;
}

// Whether `value`'s graph holds `buffer`.
bool reads(const UOpRef& value, const UOp* buffer) {
  for (const UOpRef& node : toposort({value})) {
    if (node.get() == buffer) return true;
  }
  return false;
}

// Whether `value` reads its Assign's `target` (a Buffer, or a View of one that the Assign writes
// through) only element by element (through elementwise ops, at the element it computes), and
// the target's buffer nowhere else.
bool reads_elementwise(const UOpRef& value, const UOp* target) {
  const UOp* buffer = target->op() == Op::Buffer ? target : target->src().get();
  std::vector<const UOp*> stack{value.get()};
  std::unordered_set<const UOp*> seen{value.get()};
  while (!stack.empty()) {
    const UOp* node = stack.back();
    stack.pop_back();
    if (node == target) continue;
    if (node == buffer) return false;  // reached other than through the target's view
    const bool elementwise = is_elementwise(node->op()) || node->op() == Op::Cast;
    for (const UOpRef& src : node->srcs()) {
      if (!elementwise) {
        if (reads(src, buffer)) return false;
        continue;
      }
      if (seen.insert(src.get()).second) stack.push_back(src.get());
    }
  }
  return true;
}

bool has_mask(const ShapeTracker& tracker) {
  for (const View& view : tracker.views()) {
    if (view.mask) return true;
  }
  return false;
}

// How the graph uses each node, as far as the choice of realized nodes needs it.
struct Uses {
  // How many distinct nodes use a node (a node that lists a source twice counts once: its users
  // are met in order, so a repeat is the last one counted).
  struct Users {
    int64_t count = 0;
    const UOp* last = nullptr;
  };
  std::unordered_map<const UOp*, Users> users;
  std::unordered_set<const UOp*> broadcast_read;  // some user broadcasts it through a View
  // Where a reduction inside it would be computed untiled if fused: some user reads it through
  // a View with a mask (a pad: the reduction runs under the pad's guard in its user's kernel; a
  // slice's gradient is a pad, attention's in-projection gradient three padded matmuls), or a
  // Contiguous stores it in another order (codegen/row_major_operand.h copies an operand so).
  std::unordered_set<const UOp*> untiled_read;
  std::unordered_set<const UOp*> must_realize;  // roots, Contiguous, Scatters, a Copy's source
  // A computed node read through a broadcasting View (past Views that only move it): the most
  // times one of its elements is read, as the View's elements per element of its source.
  std::unordered_map<const UOp*, int64_t> reads_per_element;

  int64_t user_count(const UOp* node) const {
    auto found = users.find(node);
    return found == users.end() ? 0 : found->second.count;
  }
};

// What choose_realized asks of every node, gathered in one walk over the graph.
Uses find_uses(const std::vector<UOpRef>& order, const std::vector<UOpRef>& roots) {
  Uses uses;
  for (const UOpRef& ref : order) {
    const UOp* node = ref.get();
    for (const UOpRef& src : node->srcs()) {
      Uses::Users& of_src = uses.users[src.get()];
      if (of_src.last != node) of_src.count += 1, of_src.last = node;
    }
    if (node->op() == Op::View && !node->tracker().is_injective()) {
      uses.broadcast_read.insert(node->src().get());
      const UOp* computed = node->src().get();
      while (computed->op() == Op::View && computed->tracker().is_injective())
        computed = computed->src().get();
      const int64_t reads =
          largest_numel(*node) / std::max<int64_t>(largest_numel(*node->src()), 1);
      int64_t& most = uses.reads_per_element[computed];
      most = std::max(most, reads);
    }
    const bool reordered_copy = node->op() == Op::Contiguous && node->src()->op() == Op::View &&
                                !node->src()->tracker().is_contiguous();
    if ((node->op() == Op::View && has_mask(node->tracker())) || reordered_copy) {
      const UOp* computed = reordered_copy ? node->src()->src().get() : node->src().get();
      while (computed->op() == Op::View) computed = computed->src().get();
      uses.untiled_read.insert(computed);
    }
    // A Gather evaluates its source at computed positions and its index once per element: a
    // reduction in either is realized first (kernel_reduce stops at the Gather).
    if (node->op() == Op::Gather || node->op() == Op::Scatter) {
      for (const UOpRef& src : node->srcs()) uses.broadcast_read.insert(src.get());
    }
    // A Scatter's kernel stores into its own buffer (codegen/lower_scatter.cpp).
    if (node->op() == Op::Scatter) uses.must_realize.insert(node);
    // An Attention's kernel too (codegen/lower_attention.cpp). It reads each key and value once
    // per query row: a computed source is realized first (its Views, which only address it, stay
    // fused), so that its arithmetic is not repeated per read.
    if (node->op() == Op::Attention) {
      uses.must_realize.insert(node);
      for (const UOpRef& src : node->srcs()) {
        const UOp* computed = src.get();
        while (computed->op() == Op::View) computed = computed->src().get();
        if (computed->op() != Op::Buffer && computed->op() != Op::Const)
          uses.must_realize.insert(computed);
      }
    }
    // An Assign computes its value into its target's buffer (through the target's view, where it
    // writes a region): where the value reads that buffer other than element by element (through
    // another view, a reduction, a gather), it is computed into a buffer of its own first, so
    // that no work item reads what another has written.
    if (node->op() == Op::Assign) {
      uses.must_realize.insert(node);
      if (!reads_elementwise(node->src(1), node->src(0).get()))
        uses.must_realize.insert(node->src(1).get());
    }
    if (node->op() == Op::Contiguous) uses.must_realize.insert(node);
    if (node->op() == Op::Copy && node->src()->op() != Op::Buffer)
      uses.must_realize.insert(node->src().get());
  }
  for (const UOpRef& root : roots) {
    if (!is_leaf_buffer_view(*root)) uses.must_realize.insert(root.get());
  }
  return uses;
}

// Which nodes get a buffer, and the device of each node.
struct Placement {
  std::unordered_set<const UOp*> realized;
  std::unordered_map<const UOp*, std::string> device_of;  // "" for a graph of constants
  std::unordered_map<const UOp*, std::string> why;        // ScheduleItem::why, where set
};

// The fusion cost rule. Fused into a kernel that reads it through a broadcast (a matmul operand,
// read once per output column), a value is computed once per read: its arithmetic repeats
// (reads - 1) times per element. Realized, it costs a kernel and a store and load per element.
// It is realized where it holds at least kMinRepeatedArithmetic elementwise ops and the repeats
// add up to at least kMinRepeatedWork ops (about what a kernel launch and a pass over the value
// cost), so that a cheap value (a bias, a relu) and a small one stay fused.
constexpr int64_t kMinRepeatedArithmetic = 4;
constexpr int64_t kMinRepeatedWork = int64_t{1} << 20;

// Why `node` is realized by the cost rule, or "" where it is not.
std::string repeated_work(const UOp& node, const KernelSize& size, const Uses& uses) {
  auto found = uses.reads_per_element.find(&node);
  if (found == uses.reads_per_element.end() || found->second < 2) return "";
  if (size.arithmetic < kMinRepeatedArithmetic || size.arithmetic > kMaxFusedOps) return "";
  const int64_t reads = found->second;
  // A symbolic size counts at its largest, so that every value gets the same kernels.
  const double repeated = static_cast<double>(size.arithmetic) * static_cast<double>(reads - 1) *
                          static_cast<double>(largest_numel(node));
  if (repeated < static_cast<double>(kMinRepeatedWork)) return "";
  return "fusion cost rule: computed once, not once per read: its " +
         std::to_string(size.arithmetic) + " elementwise ops are read " + std::to_string(reads) +
         " times per element through a broadcast";
}

// A node lives on its Copy's target, else on its Buffer's device, else on its first source's
// device that is set. Its sources are placed before it.
const std::string& place(const UOp& node, std::unordered_map<const UOp*, std::string>& device_of) {
  std::string& node_device = device_of[&node];
  if (node.op() == Op::Copy) {
    node_device = node.device_arg();
  } else if (node.op() == Op::Buffer) {
    node_device = node.storage()->device();
  } else {
    for (const UOpRef& src : node.srcs()) {
      if (node_device.empty()) node_device = device_of[src.get()];
    }
  }
  return node_device;
}

// The size of a kernel computing `node`, its sources realized as needed to bind at most
// `max_buffers` buffers (its output is one more): those that read the most first, until it binds
// few enough.
KernelSize fit_buffers(const UOp& node, int64_t max_buffers,
                       std::unordered_set<const UOp*>& realized,
                       std::unordered_map<const UOp*, KernelSize>& size_of) {
  const int64_t max_inputs =
      std::max<int64_t>(max_buffers - 1, static_cast<int64_t>(node.srcs().size()));
  KernelSize size = measured_size(node, max_inputs, realized, size_of);
  if (size.buffers <= kMinKernelBuffers - 1 || size.buffers <= max_inputs) return size;
  std::vector<const UOp*> sources;
  for (const UOpRef& src : node.srcs()) {
    // Realizing a source pays where it reads more than the one buffer it would become.
    auto src_size = size_of.find(src.get());
    if (!realized.count(src.get()) && src_size != size_of.end() && src_size->second.buffers > 1)
      sources.push_back(src.get());
  }
  std::sort(sources.begin(), sources.end(),
            [&](const UOp* a, const UOp* b) { return size_of[a].buffers > size_of[b].buffers; });
  for (const UOp* src : sources) {
    realized.insert(src);
    size = measured_size(node, max_inputs, realized, size_of);
    if (size.buffers <= max_inputs) break;
  }
  return size;
}

// Decides in order, so that realized sources stop the reduce search: a node is realized where it
// must be, where recomputing it would repeat a reduction, or where its kernel would grow too
// large; and a source where its user's kernel would bind too many buffers or loop too long.
Placement choose_realized(const std::vector<UOpRef>& order, const Uses& uses,
                          const std::string& device, TargetsOf& limits) {
  Placement placement;
  std::unordered_set<const UOp*>& realized = placement.realized;
  std::unordered_map<const UOp*, bool> holds_reduce;
  std::unordered_map<const UOp*, KernelSize> size_of;
  std::unordered_map<const UOp*, int64_t> loop_work;
  for (const UOpRef& ref : order) {
    const UOp* node = ref.get();
    const std::string& node_device = place(*node, placement.device_of);
    if (node->op() == Op::Buffer) continue;
    const KernelLimits& node_limits = limits(node_device.empty() ? device : node_device);
    const KernelSize size = fit_buffers(*node, node_limits.max_buffers, realized, size_of);
    bound_loop_work(*node, node_limits.max_reduce_length, loop_work, realized);
    bool reduce_inside = node->op() == Op::Reduce;
    for (const UOpRef& src : node->srcs()) {
      if (!realized.count(src.get()) && holds_reduce[src.get()]) reduce_inside = true;
    }
    holds_reduce[node] = reduce_inside;
    const bool repeats_reduce =
        reduce_inside && (uses.user_count(node) > 1 || uses.broadcast_read.count(node) ||
                          uses.untiled_read.count(node));
    size_of[node] = size;
    const bool too_large = size.ops > kMaxFusedOps;
    if (uses.must_realize.count(node) || repeats_reduce || too_large || node->op() == Op::Copy) {
      realized.insert(node);
    } else if (std::string why = repeated_work(*node, size, uses); !why.empty()) {
      realized.insert(node);
      placement.why.emplace(node, std::move(why));
    }
  }
  return placement;
}

// One item per realized node, in order (sources first), each with a new buffer; the
// roots' results are their buffers where realized.
// A Scatter updates its destination's buffer in place where the destination is a Scatter on
// the same device that nothing else reads (not a root, no other user, not the Scatter's own
// index or values): a chain of Scatters (a long one in parts, scatter_reduce without x's own
// values) writes one buffer. So does a Scatter assigned to its own destination.
Schedule build_items(const std::vector<UOpRef>& order, const std::vector<UOpRef>& roots,
                     const Placement& placement, const Uses& uses, const std::string& device) {
  std::unordered_set<const UOp*> root_set;
  for (const UOpRef& root : roots) root_set.insert(root.get());
  ScheduleBuilder builder;
  for (const UOpRef& node : order) {
    const UOp* raw = node.get();
    if (!placement.realized.count(raw)) continue;
    const std::string& placed = placement.device_of.at(raw);
    auto why = placement.why.find(raw);
    bool in_place = false;
    if (node->op() == Op::Scatter) {
      // (One user may list the destination again as its index or values: those must read the
      // destination's values, not the stores.)
      const UOp* destination = node->src().get();
      in_place = destination->op() == Op::Scatter && uses.user_count(destination) == 1 &&
                 !root_set.count(destination) && placement.device_of.at(destination) == placed &&
                 node->src(1).get() != destination && node->src(2).get() != destination;
      // Assigned to its own destination's buffer, where its index and values do not read it
      // (index_put_): the stores go straight there.
      auto users = uses.users.find(raw);
      if (destination->op() == Op::Buffer && users != uses.users.end() &&
          users->second.count == 1 && users->second.last->op() == Op::Assign &&
          users->second.last->src().get() == destination && !root_set.count(raw) &&
          !reads(node->src(1), destination) && !reads(node->src(2), destination))
        in_place = true;
    }
    builder.add_item(node, placed.empty() ? device : placed,
                     why == placement.why.end() ? "" : why->second, in_place);
  }
  return builder.finish(roots);
}

// Row fusion where the heuristics give each row a workgroup (codegen/row_fusion.h): not under
// other opt policies, whose opts would leave each work item to compute its row's reductions
// alone. Only where every kernel is on the one device.
void fuse_rows(Schedule& schedule, TargetsOf& targets) {
  if (schedule.items.empty()) return;
  const std::string& device = schedule.buffers[schedule.items[0].buffers[0]].device;
  for (const ScheduleItem& item : schedule.items) {
    if (schedule.buffers[item.buffers[0]].device != device) return;
  }
  const ScheduleTarget& on = targets.target(device);
  if (on.heuristics && fuses_rows(on.target))
    fuse_row_reductions(schedule, max_row_lanes(on.target), targets(device).max_buffers);
}

}  // namespace

Schedule create_schedule(const std::vector<UOpRef>& input_roots, const std::string& device,
                         const ScheduleTargetOf& target_of, bool read_realized) {
  TargetsOf targets(target_of);
  const std::vector<UOpRef> roots = rewrite_reductions(input_roots, device, targets, read_realized);
  const std::vector<UOpRef> order = toposort(roots);
  const Uses uses = find_uses(order, roots);
  const Placement placement = choose_realized(order, uses, device, targets);
  Schedule schedule = build_items(order, roots, placement, uses, device);
  fuse_rows(schedule, targets);
  return schedule;
}

}  // namespace kiln

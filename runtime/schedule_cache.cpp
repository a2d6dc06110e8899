#include "runtime/schedule_cache.h"

#include <kiln/memory.h>

#include <cstring>
#include <functional>
#include <iterator>

#include "codegen/kernel_variables.h"
#include "runtime/buffer.h"

namespace kiln {
namespace {

// Larger graphs are scheduled afresh: their keys would hold much memory per plan, and their
// realize is not dominated by the host's scheduling.
constexpr size_t kMaxCachedNodes = 4096;

// A node's own part of the key's hash (`sizes`: with its shape). Trackers are left to the
// comparison: a View's shape is hashed already, and printing a tracker to hash it would cost more
// than the lookup saves.
size_t hash_node(const UOp& node, int leaf, const int* srcs, size_t src_count, bool sizes) {
  size_t hash =
      hash_combine(static_cast<size_t>(node.op()), static_cast<size_t>(node.dtype().type()));
  if (sizes) {
    for (int64_t size : node.shape()) hash = hash_combine(hash, static_cast<size_t>(size));
  }
  for (size_t index = 0; index < src_count; ++index)
    hash = hash_combine(hash, static_cast<size_t>(srcs[index]));
  switch (node.op()) {
    case Op::Buffer:
      hash = hash_combine(hash, static_cast<size_t>(leaf));
      return hash_combine(hash, std::hash<std::string>()(node.storage()->device()));
    case Op::Const: {
      uint64_t bits;
      std::memcpy(&bits, &node.const_arg().float_value, sizeof bits);
      hash = hash_combine(hash, bits);
      return hash_combine(hash, static_cast<size_t>(node.const_arg().int_value));
    }
    case Op::Reduce:
      hash = hash_combine(hash, static_cast<size_t>(node.reduce_arg().op));
      for (int axis : node.reduce_arg().axes) hash = hash_combine(hash, static_cast<size_t>(axis));
      return hash;
    case Op::Copy:
      return hash_combine(hash, std::hash<std::string>()(node.device_arg()));
    case Op::Gather:
      return hash_combine(hash, static_cast<size_t>(node.gather_arg().axis));
    case Op::Attention: {
      const AttentionArg& attention = node.attention_arg();
      hash = hash_combine(hash, std::hash<double>()(attention.scale));
      return hash_combine(hash, static_cast<size_t>(attention.causal));
    }
    case Op::Scatter: {
      const ScatterArg& scatter = node.scatter_arg();
      hash = hash_combine(hash, static_cast<size_t>(scatter.axis));
      return hash_combine(hash, scatter.reduce ? static_cast<size_t>(*scatter.reduce) + 1 : 0);
    }
    default:
      return hash;
  }
}

bool symbolic(const UOp& node) {
  return node.is_symbolic() || (node.op() == Op::View && node.tracker().is_symbolic());
}

// Records the bound variables of a symbolic node in the walk; false where a name is bound to two
// values (or met unbound), which the key could not tell apart.
bool note_variables(const UOp& node, GraphWalk& walk) {
  bool consistent = true;
  for_each_sym(node, [&](const Sym& value) {
    for (const Sym& variable : value.variable_nodes()) {
      if (!variable.is_bound()) {
        consistent = false;
        continue;
      }
      auto [found, added] = walk.bound.emplace(variable.var_name(), variable);
      if (added) {
        walk.unbound.emplace(variable.var_name(),
                             Sym::var(variable.var_name(), variable.vmin(), variable.vmax()));
      } else if (found->second != variable) {
        consistent = false;
      }
    }
  });
  return consistent;
}

bool same_node(const KeyNode& key, const UOp& node, const GraphWalk& walk, size_t index,
               const int* srcs, size_t src_count) {
  if (key.op != node.op() || key.dtype != node.dtype() || key.symbolic != symbolic(node))
    return false;
  if (key.symbolic ? key.generic_shape != walk.generic_shapes[index] : key.shape != node.shape())
    return false;
  if (key.srcs.size() != src_count ||
      !std::equal(key.srcs.begin(), key.srcs.end(), srcs, srcs + src_count))
    return false;
  if (key.symbolic && node.op() == Op::View)
    return key.generic_tracker == walk.generic_trackers[index];
  // Leaves are numbered in the order they are met, so equal sources give equal numbers.
  if (node.op() == Op::Buffer) return key.leaf_device == node.storage()->device();
  return key.arg == node.arg();
}

}  // namespace

GraphWalk walk_graph(const std::vector<UOpRef>& roots, const std::string& device) {
  GraphWalk walk;
  walk.edge_begin.push_back(0);
  // As create_schedule reads them: a node realized before is its value (a Buffer, or a View of
  // one), and a Buffer written in place since a graph took it is its snapshot. Realized on another
  // device, the scheduler may compute it instead: not cached. Each node is read once per walk:
  // another thread may realize it meanwhile.
  std::unordered_map<const UOp*, const UOpRef*> resolved;
  auto resolve = [&](const UOpRef& ref) -> const UOpRef* {
    auto [found, fresh] = resolved.emplace(ref.get(), &ref);
    if (!fresh) return found->second;
    UOpRef value = ref->snapshot();  // a Buffer written in place since: its old contents
    if (!value) value = ref->realized_value();
    if (!value) return &ref;
    const UOp& buffer = value->op() == Op::Buffer ? *value : *value->src();
    if (buffer.storage()->device() != device) walk.cacheable = false;
    walk.values.push_front(std::move(value));
    found->second = &walk.values.front();
    return found->second;
  };
  std::unordered_map<const UOp*, int> index_of;
  std::vector<std::pair<const UOpRef*, size_t>> stack;
  std::vector<int> srcs;
  size_t hash = std::hash<std::string>()(device);
  for (const UOpRef& root : roots) {
    const UOpRef* start = resolve(root);
    if (!index_of.count(start->get())) stack.emplace_back(start, 0);
    while (!stack.empty() && walk.cacheable) {
      const UOp& node = **stack.back().first;
      const size_t next = stack.back().second++;
      if (next < node.srcs().size()) {
        const UOpRef* src = resolve(node.srcs()[next]);
        if (!index_of.count(src->get())) stack.emplace_back(src, 0);
        continue;
      }
      const UOpRef& ref = *stack.back().first;
      stack.pop_back();
      if (index_of.count(&node)) continue;
      if (walk.nodes.size() >= kMaxCachedNodes) walk.cacheable = false;
      std::vector<Sym> generic_shape;
      std::optional<ShapeTracker> generic_tracker;
      size_t generic_hash = 0;
      if (symbolic(node)) {
        if (!note_variables(node, walk)) {
          walk.cacheable = false;
          continue;
        }
        for (const Sym& size : node.sym_shape()) {
          generic_shape.push_back(size.substitute(walk.unbound));
          generic_hash = hash_combine(generic_hash, generic_shape.back().hash());
        }
        if (node.op() == Op::View) {
          generic_tracker = node.tracker().substitute(walk.unbound);
          generic_hash = hash_combine(generic_hash, generic_tracker->hash());
        }
      }
      srcs.clear();
      for (const UOpRef& src : node.srcs()) srcs.push_back(index_of.at(resolve(src)->get()));
      int leaf = -1;
      if (node.op() == Op::Buffer) {
        leaf = static_cast<int>(walk.leaves.size());
        walk.leaves.push_back(ref);
      }
      // A symbolic node's sizes are hashed unbound, so that every value of them hashes alike.
      hash = hash_combine(hash, hash_node(node, leaf, srcs.data(), srcs.size(), !symbolic(node)));
      hash = hash_combine(hash, generic_hash);
      index_of.emplace(&node, static_cast<int>(walk.nodes.size()));
      walk.nodes.push_back(&node);
      walk.generic_shapes.push_back(std::move(generic_shape));
      walk.generic_trackers.push_back(std::move(generic_tracker));
      walk.edges.insert(walk.edges.end(), srcs.begin(), srcs.end());
      walk.edge_begin.push_back(static_cast<int>(walk.edges.size()));
    }
    if (!walk.cacheable) return walk;
    walk.roots.push_back(index_of.at(start->get()));
    hash = hash_combine(hash, static_cast<size_t>(walk.roots.back()));
  }
  walk.hash = hash;
  return walk;
}

std::shared_ptr<const SchedulePlan> ScheduleCache::find(const GraphWalk& walk,
                                                        const std::string& device,
                                                        const OptSettings& settings) const {
  std::lock_guard<SpinLock> lock(mutex_);
  auto [begin, end] = by_hash_.equal_range(walk.hash);
  for (auto found = begin; found != end; ++found) {
    const Entry& entry = *found->second;
    if (entry.device != device || !(entry.settings == settings) || entry.roots != walk.roots ||
        entry.nodes.size() != walk.nodes.size())
      continue;
    bool same = true;
    for (size_t index = 0; index < walk.nodes.size() && same; ++index) {
      const int* srcs = walk.edges.data() + walk.edge_begin[index];
      const size_t count = static_cast<size_t>(walk.edge_begin[index + 1] - walk.edge_begin[index]);
      same = same_node(entry.nodes[index], *walk.nodes[index], walk, index, srcs, count);
    }
    if (!same) continue;
    ++hits_;
    recent_.splice(recent_.begin(), recent_, found->second);
    return entry.plan;
  }
  return nullptr;
}

void ScheduleCache::record(const GraphWalk& walk, const std::string& device,
                           const OptSettings& settings, const SchedulePlan& made) {
  if (!walk.cacheable) return;
  auto plan = std::make_shared<SchedulePlan>(made);
  std::unordered_map<const UOp*, int> number_of;
  for (size_t index = 0; index < walk.leaves.size(); ++index)
    number_of.emplace(walk.leaves[index].get(), static_cast<int>(index));
  for (size_t index = 0; index < plan->schedule.buffers.size(); ++index) {
    ScheduleBuffer& buffer = plan->schedule.buffers[index];
    if (!buffer.is_leaf) continue;
    auto found = number_of.find(buffer.node.get());
    if (found == number_of.end()) return;  // read from outside the walk's leaves
    plan->leaf_numbers[index] = found->second;
    buffer.node = nullptr;
  }
  for (const ScheduleResult& result : plan->schedule.results) {
    if (result.buffer < 0) return;  // the walk's own node
  }
  Entry entry;
  entry.hash = walk.hash;
  entry.device = device;
  entry.settings = settings;
  entry.roots = walk.roots;
  entry.plan = std::move(plan);
  for (size_t index = 0; index < walk.nodes.size(); ++index) {
    const UOp& node = *walk.nodes[index];
    KeyNode key;
    key.op = node.op();
    key.dtype = node.dtype();
    key.symbolic = symbolic(node);
    if (key.symbolic) {
      key.generic_shape = walk.generic_shapes[index];
      key.generic_tracker = walk.generic_trackers[index];
    } else {
      key.shape = node.shape();
    }
    key.srcs.assign(walk.edges.begin() + walk.edge_begin[index],
                    walk.edges.begin() + walk.edge_begin[index + 1]);
    if (node.op() == Op::Buffer) {
      key.leaf_device = node.storage()->device();
    } else {
      key.arg = node.arg();
    }
    entry.nodes.push_back(std::move(key));
  }
  std::list<Entry> dropped;  // destroyed after the lock
  std::lock_guard<SpinLock> lock(mutex_);
  // Two threads that missed the same walk both record it: the later entry is found first, and
  // the earlier one ages out.
  recent_.push_front(std::move(entry));
  by_hash_.emplace(walk.hash, recent_.begin());
  trim(dropped);
}

size_t ScheduleCache::size() const {
  std::lock_guard<SpinLock> lock(mutex_);
  return recent_.size();
}

int64_t ScheduleCache::hits() const {
  std::lock_guard<SpinLock> lock(mutex_);
  return hits_;
}

void ScheduleCache::clear() {
  std::list<Entry> dropped;
  std::lock_guard<SpinLock> lock(mutex_);
  by_hash_.clear();
  dropped.swap(recent_);
}

void ScheduleCache::trim() {
  std::list<Entry> dropped;
  std::lock_guard<SpinLock> lock(mutex_);
  trim(dropped);
}

void ScheduleCache::trim(std::list<Entry>& dropped) {
  const size_t limit = kernel_cache_limit();
  while (recent_.size() > limit) {
    const auto last = std::prev(recent_.end());
    auto [begin, end] = by_hash_.equal_range(last->hash);
    for (auto found = begin; found != end; ++found) {
      if (found->second != last) continue;
      by_hash_.erase(found);
      break;
    }
    dropped.splice(dropped.end(), recent_, last);
  }
}

// Lives for the process (as prepared_kernels() does): its schedules hold realized buffers, device
// memory that must not be freed after the drivers' own teardown at exit.
ScheduleCache& schedule_cache() {
  static ScheduleCache* const cache = new ScheduleCache();
  return *cache;
}

}  // namespace kiln

#pragma once
// The schedule cache: a warm realize of a graph built again over other buffers (the next step of
// a loop, the next request) skips the scheduler and kernel preparation, which are most of a
// small realize's host time.
//
// A graph's key is its structure with the Buffer leaves numbered in the order a walk first meets
// them: ops, dtypes, shapes, arguments, which node reads which, and each leaf's dtype, shape and
// device. Nodes realized before count as the values they hold, as the scheduler reads them. The
// scheduler and the kernels it makes depend on nothing else, so a graph with an equal key gets
// the same schedule: the same items, bound to the same numbered leaves or new buffers, with the
// same prepared kernels. A graph over bound variables (include/kiln/variable.h) is keyed with its
// variables unbound, so that every value of them finds the plan: the realize binds the walk's
// values into it (the kernels' variables, the new buffers' sizes, the results' shapes). Not
// cached: graphs that bind one variable name to two values, and graphs of more than a few
// thousand nodes.

#include <forward_list>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/schedule.h"
#include "core/spin_lock.h"
#include "core/uop.h"
#include "runtime/opt_policy.h"
#include "runtime/prepared_kernel.h"

namespace kiln {

// One node of a graph's key.
struct KeyNode {
  Op op;
  DType dtype;
  Shape shape;  // empty for a symbolic node: its generic shape stands for it
  // A symbolic node: its shape, and a View's tracker, with every variable unbound.
  bool symbolic = false;
  std::vector<Sym> generic_shape;
  std::optional<ShapeTracker> generic_tracker;
  Arg arg;                  // unset for a leaf: its buffer is not part of the key
  std::vector<int> srcs;    // indices of earlier nodes
  std::string leaf_device;  // a Buffer: its storage's device
};

// What a realize's roots are, read once: the walk's nodes (sources first) and leaves.
struct GraphWalk {
  bool cacheable = true;
  size_t hash = 0;
  std::vector<const UOp*> nodes;
  std::vector<UOpRef> leaves;  // the Buffer nodes, numbered by position
  std::vector<int> roots;      // each root's node index
  // Each node's sources as node indices: node i's are edges[edge_begin[i] .. edge_begin[i + 1]).
  std::vector<int> edges;
  std::vector<int> edge_begin;
  std::forward_list<UOpRef> values;  // realized values met, kept alive for the realize
  // The bound variables met, by name (a graph that binds one name to two values is not cached),
  // and the same names unbound: what the key holds instead.
  std::map<std::string, Sym> bound;
  std::map<std::string, Sym> unbound;
  // Per walk node: its shape and a View's tracker unbound (empty for a node that is not symbolic).
  std::vector<std::vector<Sym>> generic_shapes;
  std::vector<std::optional<ShapeTracker>> generic_trackers;
};

// Walks the roots as create_schedule sees them on `device` (realized nodes as their values).
GraphWalk walk_graph(const std::vector<UOpRef>& roots, const std::string& device);

// A schedule with its kernels prepared. Kept in the cache for the graphs whose walk equals the
// one it was made for, its leaves are walk numbers (their own nodes are dropped, so the cache
// holds no user's memory); made afresh, they are their own nodes.
struct SchedulePlan {
  Schedule schedule;
  std::vector<int> leaf_numbers;      // per buffer: a leaf's index in GraphWalk::leaves, else -1
  std::vector<KernelLaunch> kernels;  // per item (a copy's is empty)

  // The node of buffer `index` for a walk: a leaf's node in it, else the schedule's.
  const UOpRef& node(size_t index, const GraphWalk& walk) const {
    return leaf_numbers[index] >= 0 ? walk.leaves[leaf_numbers[index]]
                                    : schedule.buffers[index].node;
  }
};

// Keyed by the walk, the realize device and the opt settings; holds the kernel_cache_limit()
// plans used last (kiln/memory.h). Safe to use from any thread: realizes in several threads find
// and record plans at once. A plan is never changed once recorded.
class ScheduleCache {
 public:
  std::shared_ptr<const SchedulePlan> find(const GraphWalk& walk, const std::string& device,
                                           const OptSettings& settings) const;
  // Records the plan made afresh (its leaves their own nodes) for a walk that find() missed.
  // Does nothing where it cannot be replayed: a leaf outside the walk, a kernel whose variables
  // are bound per realize, a result that no item computes.
  void record(const GraphWalk& walk, const std::string& device, const OptSettings& settings,
              const SchedulePlan& made);
  size_t size() const;
  int64_t hits() const;  // plans found, since the process began
  void clear();
  // Drops the least recently used plans beyond kernel_cache_limit().
  void trim();

 private:
  struct Entry {
    size_t hash = 0;
    std::string device;
    OptSettings settings;
    std::vector<KeyNode> nodes;
    std::vector<int> roots;
    std::shared_ptr<const SchedulePlan> plan;
  };
  // Moves the least recently used entries beyond kernel_cache_limit() to `dropped`, which the
  // caller destroys after releasing mutex_ (a plan holds prepared kernels). Under mutex_.
  void trim(std::list<Entry>& dropped);

  mutable SpinLock mutex_;
  // Most recently used first; by_hash finds a walk's candidates in it.
  mutable std::list<Entry> recent_;
  std::unordered_multimap<size_t, std::list<Entry>::iterator> by_hash_;
  mutable int64_t hits_ = 0;
};

ScheduleCache& schedule_cache();

}  // namespace kiln

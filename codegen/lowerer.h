#pragma once
// The Lowerer: lower_kernel's working state (codegen/lower.h is the interface). Its core (the
// launch, elementwise ops, views, loads) is in lower.cpp; reductions (the opts' GROUP, UPCAST,
// UNROLL, TILE and GRID, and a row's shared reductions) in lower_reduce.cpp.

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/linear_builder.h"
#include "codegen/opts.h"
#include "codegen/schedule.h"
#include "codegen/tensor_cores.h"

namespace kiln {

using Index = std::vector<Sym>;
using Lanes = std::vector<Index>;

// TILE: an input's chunk in local memory, and where it lies along the output axes its index
// depends on (input->output_axes): the workgroup's first output and the extent.
struct StagedInput {
  const KernelAxes::ReduceInput* input = nullptr;
  int local = -1;  // the DefineLocal
  std::vector<Sym> bases, extents;
  int64_t per_step = 1;  // elements per reduce step: the product of the extents
  // Work items copy it step-major where its memory holds neighbouring steps together.
  bool step_major = false;
  int64_t row = 1;  // elements per step in local memory (tile_row, or TC's padded rows)
};

class Lowerer : public LinearBuilder {
 public:
  // `vector_loads`: the target joins neighbouring loads into vectors (OptTarget::vector_loads).
  Lowerer(const ScheduleItem& item, const KernelPlan& plan, bool vector_loads);

  LinearProgram run();

 private:
  // Runs `lower` with `condition` added to the gate that loads check.
  template <typename LowerFn>
  auto gated(const Sym& condition, LowerFn&& lower_fn) {
    const Sym outer = gate_;
    gate_ = logical_and(gate_, condition);
    auto result = lower_fn();
    gate_ = outer;
    return result;
  }

  // Work items cover tiles of outputs, upcast[axis] neighbours along each axis: the tiles along
  // each axis of `shape` (a symbolic axis' last one may lie in part past its size).
  SymShape tile_counts(const SymShape& shape) const;
  // A work item's lanes (their indices, the indices they store at, and the guards that switch
  // off the lanes past a symbolic axis' size) for its `tile` index.
  void tile_lanes(const Index& tile, const SymShape& shape, Lanes& lanes, Lanes& store_lanes,
                  std::vector<Sym>& lane_guards) const;

  // A value depends on the node, the index and the gate it is lowered under.
  ValueKey memo_key(const UOpRef& node, const Index& index) const;

  // The node's value at each lane's index. Lanes already lowered in an enclosing scope, and
  // lanes with equal indices, are lowered once.
  std::vector<int> lower(const UOpRef& node, const Lanes& lanes);

  int lower_one(const UOpRef& node, const Index& index) { return lower(node, {index})[0]; }

  bool is_lowered(const UOpRef& node, const Lanes& lanes) const;

  // A chain of elementwise ops (a graph built by an unrolled loop: 100,000 deep) would recurse
  // once per node. Its elementwise operands share the lanes, so they are lowered first, in an
  // explicit post-order; each `lower` below then finds its operands done.
  void lower_operands_first(const UOpRef& root, const Lanes& lanes);

  std::vector<int> lower_uncached(const UOpRef& node, const Lanes& lanes);

  // Loads of one element (from different lanes or nodes) are made once per scope.
  int load(const UOpRef& buffer, const Sym& flat, const Sym& valid_in);

  std::vector<int> lower_view(const UOpRef& node, const Lanes& lanes);

  // A Gather (codegen/lower_gather.cpp): the source read where each lane's index points.
  std::vector<int> lower_gather(const UOpRef& node, const Lanes& lanes);
  // The position the index value `raw` points at along the Gather's axis, as an index variable
  // in [0, size): a negative index wrapped, one outside the axis reported (KernelParam::
  // index_errors) and read as 0. Made once per value and scope.
  // `inside`, where given, is set to where the index lies inside the axis (1 where it always
  // does).
  Sym gathered_position(const UOpRef& node, int raw, Sym* inside = nullptr);
  // The Gather's (or Scatter's) place in program_.gathers (added at its first use, with the
  // report parameter).
  int gather_site(const UOpRef& node);

  // A Scatter's kernel (codegen/lower_scatter.cpp), in place on its output: each work item owns
  // lines of the output along the Scatter's axis and walks the index's lines in ascending
  // order, storing (or reducing) each value where its index points: a work item's stores are in
  // program order, and no other work item writes its lines.
  void lower_scatter();
  // An Attention's kernel (codegen/lower_attention.cpp): each work item owns query rows and walks
  // the keys once, with a running maximum, sum and weighted sum per row (online softmax); the
  // scores never leave its registers.
  void lower_attention();

  // One loop nest for every lane: each lane has its accumulator. Long float sums add into block
  // accumulators first (see plan_blocked_sum), so their rounding error grows like sqrt(n). The
  // kernel's own reduction takes its opts: along each reduce axis, position =
  // ((trip * unroll + copy) * upcast + part) * group + group lane.
  std::vector<int> lower_reduce(const UOpRef& node, const Lanes& lanes);

  // Whether an index mentions the variable `var` (a Sym variable).
  static bool mentions(const Index& index, const Sym& var);

  // TILE: the reduction in chunks. For each chunk the workgroup copies what its work items will
  // read of each input into local memory (work item i copies elements i, i + workgroup, ...),
  // waits at a barrier, reduces its lanes from local memory, and waits again before the next
  // chunk overwrites it. An input's chunk is laid out [step][coordinates along its output axes],
  // the coordinates relative to the workgroup's first output. Work items number the elements in
  // the order of the input's memory: step-major where neighbouring steps are neighbours in
  // memory (A of A B), coordinate-major otherwise, so that a warp's loads coalesce.
  std::vector<int> lower_tiled_reduce(const UOpRef& node, const Lanes& lanes);

  // TILE: the work item's number within its workgroup, the workgroup's size, and the first
  // output of the workgroup along output axis `axis`.
  Sym workgroup_item() const;
  int64_t workgroup_size() const;
  Sym workgroup_base(int axis) const;
  // TILE: a local array per input for its chunk (staged_).
  void define_chunks(int reduce_axis);
  // TILE: the workgroup copies the chunk that starts at chunk_start_ into the arrays.
  void copy_chunks(int reduce_axis);

  // TC (codegen/tensor_cores.h): TILE's chunks multiplied by the warps' fragments; the results
  // pass through local memory to the work items whose lanes they are.
  std::vector<int> lower_tensor_core_reduce(const UOpRef& node, const Lanes& lanes);

  // TILE: an input's values at `lanes`, from its chunk in local memory.
  std::vector<int> chunk_loads(const StagedInput& staged, const Lanes& lanes);

  // GROUP: the kernel's reduction combines its partial results across the workgroup (one work
  // item then stores them).
  std::vector<int> finish_group(std::vector<int> values, ReduceOp op, DType dtype, bool grouped);

  // GRID: each workgroup stores its partial result; the last to count itself done combines them
  // (in order, as a GROUP does) and alone stores the output, leaving the counter at zero. The
  // other workgroups run the same instructions with their loads and stores switched off, so that
  // every work item reaches the barriers.
  std::vector<int> finish_grid(std::vector<int> values, ReduceOp op, DType dtype, int64_t group);

  const ScheduleItem& item_;
  const KernelPlan& plan_;   // the opts, checked and folded
  const KernelAxes& axes_;   // plan_.axes
  UOpRef kernel_reduce_;     // the Reduce the reduction opts apply to
  Sym group_lane_ = Sym(0);  // GROUP: the work item's place in its group
  int64_t row_lanes_ = 0;    // a workgroup per row: its work items (0: none)
  bool vector_loads_ = false;
  Sym row_lane_ = Sym(0);                       // the work item's place in its row's workgroup
  Sym grid_item_ = Sym(0);                      // GRID: the work item's place in the grid
  Sym grid_group_ = Sym(0);                     // GRID: its workgroup
  int grid_partials_ = -1, grid_counter_ = -1;  // GRID: the scratch parameters
  Index tile_index_;                            // the work item's tile index along each output axis
  std::unordered_map<const UOp*, StagedInput> staged_;  // TILE: the inputs' chunks, by node
  Sym chunk_start_ = Sym(0);     // TILE: the reduce index where the current chunk starts
  bool reading_chunks_ = false;  // TILE: inputs are read from their chunks
  Sym store_guard_ = Sym(1);     // which work items store the outputs
  std::unordered_map<const UOp*, int> param_of_;
  std::unordered_map<const UOp*, int> gather_site_of_;
  int index_errors_ = -1;   // the index_errors parameter, once a Gather needs it
  int gathered_count_ = 0;  // names the IndexOf variables
  // A gathered position's variable (by name): the variable that is 1 where its index lies
  // outside the axis.
  std::unordered_map<std::string, Sym> gathered_outside_;
  // Where the values being lowered are needed; loads outside it read nothing (see lower_view).
  Sym gate_ = Sym(1);
};

}  // namespace kiln

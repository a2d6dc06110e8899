#pragma once
// A kernel as the optimiser sees it: its axes, and a list of optimisations (opts) applied to them.
//
// A kernel's axes are its output axes (the shape it stores) followed by the axes of its reduction
// (the one Reduce its output is computed from, through elementwise ops and Views but no other
// Reduce, where there is exactly one). An opt is a plain value `{kind, axis, amount}`; lowering
// applies the list, and check_opts refuses a list that does not fit the kernel or the device before
// anything is built, so an invalid list never produces a wrong kernel.

#include <cstdint>
#include <string>
#include <vector>

#include <kiln/dtype.h>

#include "core/uop.h"

namespace kiln {

enum class OptKind : uint8_t {
  // Output axis, or kFlatAxis: split it across the work items of a workgroup of `amount` items,
  // as one launch dimension (at most three). kFlatAxis is the flat index over the output axes
  // that have no LOCAL of their own. An amount that does not divide the axis rounds the launch
  // up, and the surplus work items return at once.
  Local,
  // Output axis: each work item computes `amount` neighbouring outputs along it. Reduce axis:
  // `amount` partial accumulators per output, combined at the end (the reduction is
  // reassociated). The amount divides the axis. On a GROUP's axis the order matters: listed
  // before the GROUP, each work item's parts read neighbouring elements (vector loads); after it,
  // they are a workgroup's lanes apart.
  Upcast,
  // Reduce axis: the loop body is repeated `amount` times per trip, into the same accumulator in
  // the same order. The amount divides the axis.
  Unroll,
  // Reduce axis: the `amount` work items of a workgroup each reduce every amount-th element (every
  // amount-th run of an UPCAST listed before it), then combine their partial results through
  // local memory after a barrier. The workgroup is those work items only (no LOCAL beside a
  // GROUP), and none of them returns early.
  Group,
  // The last output axis, on devices that run work items as a loop (the CPU): an inner loop over
  // it inside a loop over the other axes, so what depends only on the outer index (a broadcast
  // operand) is computed once per row. `amount` is the row length (the axis' size).
  Rows,
  // Reduce axis of a matmul-shaped kernel (see KernelAxes::source_axis): the reduction runs in
  // chunks of `amount`, and for each chunk the workgroup first copies what its work items will
  // read of each input (KernelAxes::reduce_inputs) into local memory, together, then
  // reduces from there: a value one work item loaded is read by all that need it. Needs a LOCAL
  // on an output axis, every LOCAL dividing its axis (all work items reach the barriers), no LOCAL
  // on the flat index, no GROUP, and no other opt on the reduce axis.
  Tile,
  // The GROUP's reduce axis, in a kernel with one output: `amount` workgroups share the
  // reduction (a grid-wide GROUP), each storing its partial result in a buffer the runtime
  // provides; the last workgroup to finish (counted by an atomic counter beside it, which it
  // leaves at zero again) combines the partials in order and stores the output. One kernel where
  // a large full reduction would otherwise take two. Needs 32- or 64-bit accumulators (workgroups
  // write neighbouring partials) and two buffer bindings more than the kernel's own.
  Grid,
  // The TILE's reduce axis, `amount` 16: the workgroup's products run on matrix units (CUDA's
  // tensor cores), 16x16x16 at a time, each warp of 32 work items computing some 16x16 tiles of
  // the workgroup's outputs; work items then read their outputs from local memory as under
  // TILE. For a product of two float16 (or two bfloat16) inputs summed in float32; the
  // workgroup's outputs form a tile of whole 16x16 tiles split evenly among its warps (see
  // codegen/tensor_cores.h for every condition).
  TensorCore,
};

const char* opt_kind_name(OptKind kind);

struct Opt {
  OptKind kind;
  int axis = 0;  // a kernel axis; kFlatAxis for LOCAL over the flat output index
  int64_t amount = 0;

  static constexpr int kFlatAxis = -1;
  std::string to_string() const;  // "UPCAST(axis 1, 4)"
  bool operator==(const Opt& other) const {
    return kind == other.kind && axis == other.axis && amount == other.amount;
  }
};

std::string opts_to_string(const std::vector<Opt>& opts);

// The axes of one kernel.
//
// An axis whose size is symbolic (over the kernel's variables) has its largest value in `output`
// or `reduce_sizes`, and the expression in `sym_sizes`: opts that must divide it (UPCAST,
// UNROLL, TILE, ROWS) are refused there; LOCAL and GROUP work at any value.
struct KernelAxes {
  Shape output;             // the kernel's output shape: axes 0 .. output.size() - 1
  std::vector<int> reduce;  // the reduced axes of the kernel's reduction, in the source's shape
  std::vector<int64_t> reduce_sizes;  // their sizes: kernel axes output.size() ...
  std::vector<Sym> sym_sizes;         // every axis' size, in kernel axis order
  ReduceOp reduce_op = ReduceOp::Sum;
  DType reduce_dtype = dtypes::float32;
  // Whether the reduction may be reassociated (split into partial results): every integer and
  // bool reduction, and float sums, maxima and minima. Not a float product.
  bool reassociable = false;
  // The reduction's source is reduce_inputs[0] * reduce_inputs[1], both float16 or both
  // bfloat16: what a matrix unit multiplies (TC).
  bool products_of_halves = false;

  // Matmul-shaped kernels (one reduce axis; the reduction's source axes are the output axes, in
  // order, with the reduce axis among them): the source axis of each output axis. Empty otherwise.
  std::vector<int> source_axis;
  // What the reduction's source reads (Buffers, and Views of Buffers or of computed values,
  // reached through elementwise ops), with the output axes each one's index depends on; filled
  // for matmul-shaped kernels.
  struct ReduceInput {
    UOpRef node;
    std::vector<int> output_axes;
  };
  std::vector<ReduceInput> reduce_inputs;

  int rank() const { return static_cast<int>(output.size() + reduce.size()); }
  bool is_reduce_axis(int axis) const { return axis >= static_cast<int>(output.size()); }
  int64_t size(int axis) const;
  bool is_symbolic(int axis) const { return !sym_sizes[axis].is_const(); }
  std::string to_string() const;  // "[64 128 | r 4096]"
};

// The node a kernel's reduction opts apply to: the one Reduce reached from `ast` through
// elementwise ops and injective Views only; null where there is none, or more than one. (A Reduce
// read through a broadcasting View is a row's reduction, computed once per row.)
UOpRef kernel_reduce(const UOpRef& ast);

KernelAxes kernel_axes(const UOpRef& ast);

// The launch dimensions a list of opts gives a kernel, in order (x, y, z): the GROUP's work items,
// then each LOCAL output axis from the last to the first, then the flat index over the other
// output axes (omitted where every output axis has a LOCAL). More than three is invalid.
struct LaunchAxis {
  enum class Role { GroupLanes, Axis, Flat } role;
  int axis;            // the kernel axis (GroupLanes, Axis); kFlatAxis for Flat
  int64_t local;       // work items per workgroup along this dimension
  int64_t groups = 1;  // GroupLanes under a GRID: its workgroups (else one per output)
};
std::vector<LaunchAxis> launch_layout(const KernelAxes& axes, const std::vector<Opt>& opts);

// What a device offers the optimiser (from its DeviceProperties) and how its dialect launches.
struct OptTarget {
  std::string device = "?";  // for messages
  std::string architecture;  // DeviceProperties::architecture ("sm_90"; empty: none named)
  bool loop_launch = true;   // work items run as a loop (the CPU): no workgroups
  bool is_gpu = false;
  int64_t max_workgroup_size = 1;
  int64_t max_workgroup_dims[3] = {1, 1, 1};
  int64_t max_workgroups[3] = {INT64_MAX, INT64_MAX, INT64_MAX};  // per launch dimension
  int64_t local_memory_bytes = 0;
  int64_t compute_units = 1;
  int64_t simd_width = 1;          // a GPU's warp or wavefront
  int64_t max_kernel_buffers = 0;  // buffers one kernel binds (0: no limit below kiln's own)
  bool grid = false;               // the dialect renders GRID (global atomics and fences)
  bool vector_loads = false;       // the dialect joins neighbouring 32-bit loads into vectors
  // TC is valid: the dialect renders matrix fragments (on the device's matrix units where
  // `native_tensor_cores`, else emulated by each work item, which proves the lowering on any
  // device with workgroups). The heuristics choose TC where native (and under KILN_OPTS=gpu,
  // which sets it so that emulated units stand in for a GPU's).
  bool tensor_cores = false;
  bool native_tensor_cores = false;
  // Whether the heuristics give a large full reduction GRID (a GPU): the scheduler then keeps it
  // one kernel (KernelLimits::grid_reductions).
  bool prefers_grid() const { return grid && is_gpu; }
};

// GRID: the scratch buffers a kernel binds after its inputs (the partial results and the
// counter).
constexpr int kGridScratchBuffers = 2;

// TILE: whether `input` (a View of a Buffer) holds neighbouring steps of the reduction next to
// each other in memory; false for a computed input, which has no memory order. Such an input is
// copied into local memory step-major (neighbouring work items load neighbouring steps).
bool reduce_steps_are_neighbours(const UOpRef& input, int reduce_axis);
// TILE: the elements of one step's row in local memory, for `per_step` elements per step. Rows
// copied step-major are stored a row apart by neighbouring work items: a row of a multiple of 8
// elements gets 4 more, so that those stores spread over the banks, and rows stay 16-byte
// aligned for vector loads.
inline int64_t tile_row(int64_t per_step, bool step_major) {
  return step_major && per_step % 8 == 0 ? per_step + 4 : per_step;
}

// Throws OptError naming the opt, the kernel and the limit it breaks, where the list does not
// fit. `kernel` names the kernel in the message.
void check_opts(const KernelAxes& axes, const std::vector<Opt>& opts, const OptTarget& target,
                const std::string& kernel);

}  // namespace kiln

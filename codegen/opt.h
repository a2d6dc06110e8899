#pragma once
// An optimisation (opt): a plain value `{kind, axis, amount}` that lowering applies to a kernel's
// axes (codegen/opts.h has the axes and the checks). Kept apart so that a linear program can say
// which opts built it without the optimiser's headers.

#include <cstdint>
#include <string>
#include <vector>

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

// Whether the list holds an opt of `kind`.
bool has_opt(const std::vector<Opt>& opts, OptKind kind);

// "UPCAST(axis 1, 4) LOCAL(flat, 64)", or "none".
std::string opts_to_string(const std::vector<Opt>& opts);

}  // namespace kiln

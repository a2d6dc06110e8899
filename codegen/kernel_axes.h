#pragma once
// A kernel as the optimiser sees it: its axes.
//
// A kernel's axes are its output axes (the shape it stores) followed by the axes of its reduction
// (the one Reduce its output is computed from, through elementwise ops and Views but no other
// Reduce, where there is exactly one). Opts (codegen/opt.h) name these axes; codegen/opts.h
// checks a list of them against the axes and folds it into the kernel's plan.

#include <cstdint>
#include <string>
#include <vector>

#include <kiln/dtype.h>

#include "core/uop.h"

namespace kiln {

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
  // The buffers the kernel binds: its output and each distinct buffer it reads.
  int64_t buffers = 1;
  // A Scatter's kernel (codegen/lower_scatter.cpp) or an Attention's (lower_attention.cpp): each
  // work item owns a line of the output along the Scatter's axis (the Attention's last), whose
  // size is 1 among the output axes here; only LOCAL and UPCAST (neighbouring lines per work
  // item) apply.
  bool owns_lines = false;

  int rank() const { return static_cast<int>(output.size() + reduce.size()); }
  bool is_reduce_axis(int axis) const { return axis >= static_cast<int>(output.size()); }
  int64_t size(int axis) const;
  bool is_symbolic(int axis) const { return !sym_sizes[axis].is_const(); }
  std::string to_string() const;  // "[64 128 | SUM float32 4096]"
};

// The node a kernel's reduction opts apply to: the one Reduce reached from `ast` through
// elementwise ops and injective Views only; null where there is none, or more than one. (A Reduce
// read through a broadcasting View is a row's reduction, computed once per row.)
UOpRef kernel_reduce(const UOpRef& ast);

KernelAxes kernel_axes(const UOpRef& ast);

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

}  // namespace kiln

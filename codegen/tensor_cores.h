#pragma once
// TC: a matmul's multiply-adds on a GPU's matrix units (CUDA's tensor cores, through WMMA's
// 16x16x16 fragments).
//
// Under TC a kernel keeps TILE's chunks of its two inputs in local memory, as 16-bit values.
// Each warp of 32 work items multiplies 16x16 tiles of them into float32 accumulators, then
// stores its tiles of the workgroup's result in local memory; every work item reads its own
// outputs (its UPCAST and LOCAL lanes, as without TC) from there and finishes the kernel. The
// products of two halves are exact in float32 and accumulate in float32, as kiln computes half
// types everywhere, with two differences: the order of the additions, and, on NVIDIA's units,
// the rounding inside one 16-step product (its terms are aligned and added with truncation, not
// rounded to nearest: errors of a float32 ulp or so, far below a half type's rounding of the
// result). Emulated fragments add in order, rounding to nearest.
//
// The plan is part of the kernel's plan (codegen/opts.h), which the lowering reads.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codegen/kernel_axes.h"
#include "codegen/opt.h"

namespace kiln {

constexpr int64_t kFragment = 16;  // a fragment's rows, columns and reduce steps
constexpr int64_t kWarp = 32;      // the work items that share fragments

struct TensorCorePlan {
  int row_axis = -1, column_axis = -1;  // the output axes of the result's rows and columns
  // KernelAxes::reduce_inputs: A (rows x steps) and B (steps x columns).
  int a_input = -1, b_input = -1;
  int64_t rows = 0, columns = 0;  // outputs per workgroup along each
  int64_t chunk = 0;              // TILE's reduce steps per chunk
  int64_t workgroup = 0, warps = 0, tiles_per_warp = 0;
  // Elements per row of the local arrays: A's and B's chunks, [step][row] and [step][column] in
  // 16 bits, and the result, [row][column] in float32. Each row is padded by 16 bytes, so that
  // neighbouring rows start in other banks while the row length stays a multiple of 16 bytes (a
  // fragment's stride must be) and every fragment, 16 rows and 16 elements apart from the next,
  // starts 32-byte aligned (as its address must) in an array that is.
  int64_t a_row = 0, b_row = 0, c_row = 0;

  int64_t column_tiles() const { return columns / kFragment; }
  int64_t local_bytes() const { return 2 * chunk * (a_row + b_row) + 4 * rows * c_row; }
};

// A shape of work for TC: `rows` x `columns` outputs per workgroup of `workgroup` work items, in
// chunks of `chunk` reduce steps.
struct TensorCoreLayout {
  int64_t rows, columns, workgroup, chunk;
};

// The plan for TC under a TILE of `chunk` reduce steps, whose workgroup of `workgroup` work items
// computes `extent[axis]` outputs along each output axis (its LOCAL times its UPCAST);
// std::nullopt with the reason in `why` where it does not fit.
std::optional<TensorCorePlan> plan_tensor_cores(const KernelAxes& axes,
                                                const std::vector<int64_t>& extent,
                                                int64_t workgroup, int64_t chunk, std::string& why);

// A list of opts that gives a matmul-shaped kernel TC in `layout`, each work item computing 4
// neighbouring columns of its outputs. Empty where the kernel has no A and B axes to put them
// on; plan_opts decides whether the list fits.
std::vector<Opt> tensor_core_opts(const KernelAxes& axes, const TensorCoreLayout& layout);

}  // namespace kiln

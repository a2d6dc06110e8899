#include "codegen/heuristics.h"

#include <kiln/error.h>

#include <algorithm>
#include <functional>
#include <iterator>
#include <map>
#include <random>

#include "codegen/lower.h"
#include "codegen/row_fusion.h"
#include "codegen/tensor_cores.h"

namespace kiln {
namespace {

// Rows shorter than this leave the inner loop of a ROWS kernel too short to vectorize well.
constexpr int64_t kMinRowLength = 16;
// Workgroup sizes: a GPU's usual best, and PoCL's (a CPU runs a group as one vectorized loop).
constexpr int64_t kGpuGroupSize = 256;
constexpr int64_t kCpuGroupSize = 1024;
// Partial results per work item of a long float reduction (UPCAST): enough independent adds to
// hide their latency.
constexpr int64_t kReduceParts = 8;

bool holds_op(const UOpRef& ast, Op op) {
  for (const UOpRef& node : toposort({ast})) {
    if (node->op() == op) return true;
  }
  return false;
}

bool holds_reduce(const UOpRef& ast) {
  return holds_op(ast, Op::Reduce);
}

// The program's loads from its buffers (not from local memory), in program order.
std::vector<const LinInstr*> global_loads(const LinearProgram& program) {
  std::vector<const LinInstr*> loads;
  for (const LinInstr& instr : program.instrs) {
    if (instr.op == LinOp::Load && !instr.local) loads.push_back(&instr);
  }
  return loads;
}

// Whether some load reads neighbouring elements in neighbouring upcast lanes (what makes a tile
// pay): two loads of one buffer whose indices differ by one.
bool lanes_load_contiguously(const LinearProgram& program) {
  const std::vector<const LinInstr*> loads = global_loads(program);
  for (size_t at = 1; at < loads.size(); ++at) {
    const LinInstr& load = *loads[at];
    const LinInstr& before = *loads[at - 1];
    if (load.buffer == before.buffer && load.index - before.index == Sym(1)) return true;
  }
  return false;
}

// How many divisions and modulos the program's load and store indices hold: a rough cost of the
// index arithmetic done per element.
int index_divisions(const LinearProgram& program) {
  int count = 0;
  std::function<void(const Sym&)> count_in = [&](const Sym& value) {
    if (value.kind() == SymKind::Div || value.kind() == SymKind::Mod) ++count;
    for (const auto& term : value.sum_terms()) count_in(term.first);
    for (const Sym& operand : value.operands()) count_in(operand);
  };
  for (const LinInstr& instr : program.instrs) {
    if (instr.op != LinOp::Load && instr.op != LinOp::Store && instr.op != LinOp::Index) continue;
    count_in(instr.index);
    count_in(instr.valid);
  }
  return count;
}

// Whether two of `loads` read neighbouring elements of one buffer (in any order in the program).
bool any_neighbours(const std::vector<const LinInstr*>& loads) {
  for (const LinInstr* load : loads) {
    for (const LinInstr* other : loads) {
      if (load->buffer == other->buffer && other->index - load->index == Sym(1)) return true;
    }
  }
  return false;
}

int64_t round_down_to_power_of_two(int64_t value) {
  int64_t power = 1;
  while (power * 2 <= value) power *= 2;
  return power;
}

class Chooser {
 public:
  Chooser(const ScheduleItem& item, const KernelAxes& axes, const OptTarget& target)
      : item_(item), target_(target), axes_(axes) {}

  OptChoice run() {
    if (item_.ast->numel() == 0) return {};  // at every value: a symbolic size counts its largest
    // A Scatter's or an Attention's work items each own lines: how many, and their workgroups.
    if (axes_.owns_lines) {
      if (item_.ast->op() == Op::Attention) {
        choose_attention_rows();
      } else if (!target_.is_gpu) {
        choose_scatter_lanes();
      }
      if (!target_.loop_launch) choose_workgroup();
      return std::move(choice_);
    }
    const bool reduces = holds_reduce(item_.ast);
    if (fuses_rows(target_) && reads_row_reductions(item_.ast) && choose_row_workgroup())
      return std::move(choice_);
    if (target_.native_tensor_cores && choose_tensor_cores()) return std::move(choice_);
    if (target_.is_gpu && choose_local_tile()) return std::move(choice_);
    if (reduces) choose_tile();
    if (!axes_.reduce.empty()) choose_reduce();
    if (target_.loop_launch) {
      if (!reduces) choose_rows();
    } else {
      // Elsewhere (a CPU's OpenCL) its compiler vectorizes across work items, which serves
      // neighbouring work items' loads, but not loads from computed addresses: a gathered row
      // is read in vectors by each work item.
      if ((target_.is_gpu || holds_op(item_.ast, Op::Gather)) && !reduces)
        choose_vector_lanes(target_.is_gpu ? 4 : 16);
      choose_workgroup();
    }
    return std::move(choice_);
  }

 private:
  void add(Opt opt, std::string reason) {
    choice_.opts.push_back(opt);
    choice_.reasons.push_back(opt.to_string() + ": " + std::move(reason));
  }

  // The kernel lowered with `opts` (OptError where they do not fit): what a choice is judged by.
  LinearProgram lowered(const std::vector<Opt>& opts) const {
    return lower_kernel(item_, plan_opts(axes_, opts, target_, "candidate"), target_);
  }

  int64_t output_lanes() const {
    int64_t lanes = 1;
    for (const Opt& opt : choice_.opts) {
      if (opt.kind == OptKind::Upcast && !axes_.is_reduce_axis(opt.axis)) lanes *= opt.amount;
    }
    return lanes;
  }

  // Reduction kernels compute a small tile of outputs per work item (rows x columns), so that
  // loads shared by the tile are made once and its lanes vectorize. The columns are along the
  // last axis; the rows along the axis before it (a matmul's) unless another shares more loads:
  // a convolution's output channels, which read the same input window, where the axis before the
  // last (an image row) shares none. The largest tile whose lanes read neighbouring elements
  // wins.
  void choose_tile() {
    const Shape& shape = axes_.output;
    if (shape.empty()) return;
    const int last = static_cast<int>(shape.size()) - 1;
    // Columns along a symbolic last axis would store through a guard, one element at a time.
    if (axes_.is_symbolic(last)) return;
    struct Tile {
      int64_t rows, columns;
    };
    // Larger tiles load less per output: 128 accumulators are 8 AVX-512 registers (16 AVX2 ones,
    // where some spill). On 2 Cooperlake cores, 1024^3 matmul: 4x16 67, 8x16 173 GFLOP/s
    // (OpenBLAS 200); a 3x3 convolution 64 -> 64 channels of 56 x 56: 4x8 54, 8x8 70, 16x8 120
    // GFLOP/s (OpenBLAS on its im2col product 152). A GPU work item runs short of registers past
    // 64 outputs.
    std::vector<Tile> tiles = {{8, 16}, {4, 16}, {1, 16}, {16, 8}, {8, 8}, {4, 8}, {1, 8}, {1, 4}};
    if (target_.is_gpu) tiles = {{4, 16}, {1, 16}, {4, 8}, {1, 8}, {1, 4}};
    for (const Tile& tile : tiles) {
      if (shape[last] % tile.columns != 0) continue;
      if (item_.output->numel() / (tile.rows * tile.columns) < 4) continue;  // work for several
      std::vector<Opt> best;
      size_t best_loads = 0;
      for (int rows_axis = last - 1; rows_axis >= (tile.rows > 1 ? 0 : last - 1); --rows_axis) {
        std::vector<Opt> opts{{OptKind::Upcast, last, tile.columns}};
        if (tile.rows > 1) {
          if (rows_axis < 0 || !rows_fit(rows_axis, tile.rows, rows_axis == last - 1)) continue;
          opts.push_back({OptKind::Upcast, rows_axis, tile.rows});
        }
        LinearProgram program;
        try {
          program = lowered(opts);
        } catch (const OptError&) {
          continue;
        }
        if (!lanes_load_contiguously(program)) continue;
        const size_t loads = global_loads(program).size();
        if (best.empty() || loads < best_loads) {
          best = opts;
          best_loads = loads;
        }
      }
      if (best.empty()) continue;
      const std::string what = std::to_string(tile.rows) + "x" + std::to_string(tile.columns);
      for (const Opt& opt : best) add(opt, "a " + what + " tile of outputs shares its loads");
      return;
    }
  }

  // Whether `rows` outputs along `axis` fit a tile: a divisor of its size; along a symbolic axis
  // only the one before the last, whose last tile is guarded (at any value).
  bool rows_fit(int axis, int64_t rows, bool before_last) const {
    if (axes_.is_symbolic(axis)) return before_last && rows <= axes_.output[axis];
    return axes_.output[axis] % rows == 0;
  }

  // GPUs: a matmul-shaped kernel computes 8x8 (else 4x4) outputs per work item in 16x16
  // workgroups, which read their inputs through local memory in chunks of 16 (or 8) reduce
  // steps: each input element is loaded from global memory once per workgroup, not once per
  // work item. (H100, 4096^3 float32: 4x4 6.9 ms, 8x8 6.1 ms; cuBLAS SGEMM 2.7 ms.) Not on
  // PoCL: it runs a workgroup as loops split at each barrier, and TILE made matmul 1024 ten
  // times slower there (35 -> 340 ms).
  bool choose_local_tile() {
    const Shape& shape = axes_.output;
    if (!outputs_share_inputs() || shape.size() < 2 || target_.local_memory_bytes <= 0)
      return false;
    const int last = static_cast<int>(shape.size()) - 1;
    struct Tile {
      int64_t outputs, chunk;  // outputs per work item along each axis; reduce steps per chunk
    };
    for (const Tile& tile : {Tile{8, 16}, Tile{4, 16}, Tile{4, 8}}) {
      const std::vector<Opt> opts{{OptKind::Upcast, last, tile.outputs},
                                  {OptKind::Upcast, last - 1, tile.outputs},
                                  {OptKind::Local, last, 16},
                                  {OptKind::Local, last - 1, 16},
                                  {OptKind::Tile, last + 1, tile.chunk}};
      try {
        plan_opts(axes_, opts, target_, "matmul tile");
      } catch (const OptError&) {
        continue;
      }
      const std::string side = std::to_string(tile.outputs * 16);
      for (const Opt& opt : opts)
        add(opt, side + "x" + side + " outputs per workgroup read their inputs from local memory");
      return true;
    }
    return false;
  }

  // GPUs with matrix units: a matmul of halves through them (TC). The largest layout that fits:
  // 128x64 outputs per workgroup of 8 warps, each warp a row of four 16x16 tiles (one A
  // fragment and four B fragments per 16 steps), in chunks of 32 steps, which with the results
  // take 47 of the 48 KB of local memory a CUDA block has without opting in to more.
  bool choose_tensor_cores() {
    for (const TensorCoreLayout& layout :
         {TensorCoreLayout{128, 64, 256, 32}, TensorCoreLayout{128, 64, 256, 16},
          TensorCoreLayout{64, 64, 256, 32}, TensorCoreLayout{32, 32, 128, 16},
          TensorCoreLayout{16, 16, 32, 16}}) {
      const std::vector<Opt> opts = tensor_core_opts(axes_, layout);
      if (opts.empty()) continue;
      try {
        plan_opts(axes_, opts, target_, "tensor cores");
      } catch (const OptError&) {
        continue;
      }
      const std::string what = std::to_string(layout.rows) + "x" + std::to_string(layout.columns) +
                               " outputs per workgroup multiplied on the matrix units";
      for (const Opt& opt : opts) add(opt, what);
      return true;
    }
    return false;
  }

  // The innermost loop of the kernel's reduction: partial results where the dialect will not
  // reassociate one accumulator itself (a float sum is one add latency per element), otherwise
  // an unrolled body.
  void choose_reduce() {
    int axis = -1;
    for (size_t at = axes_.reduce.size(); at-- > 0;) {
      if (axes_.reduce_sizes[at] > 1) {
        axis = static_cast<int>(axes_.output.size() + at);
        break;
      }
    }
    if (axis < 0) return;
    // `size` is what one work item reduces (less under a GROUP); an UPCAST or UNROLL must still
    // divide the whole axis.
    const int64_t axis_size = axes_.size(axis);
    int64_t size = axis_size;
    const bool one_float_accumulator =
        output_lanes() == 1 && axes_.reduce_dtype.is_float() && axes_.reduce_op != ReduceOp::Prod;
    if (!target_.loop_launch && target_.is_gpu && axes_.reassociable && output_lanes() == 1 &&
        item_.output->numel() < target_.compute_units * 4 && size >= 4096) {
      const int64_t group = round_down_to_power_of_two(
          std::min({kGpuGroupSize, target_.max_workgroup_size, target_.max_workgroup_dims[0]}));
      if (group >= 2) {
        const int64_t inner = choose_inner_parts(axis, group);
        add({OptKind::Group, axis, group},
            "too few outputs to fill the device: a workgroup shares each reduction");
        size /= group;
        // The elements a work item reads per step once the opts below join: a float
        // reduction's partial results, or the inner parts times an UNROLL of 4.
        size /= choose_grid(axis, group, one_float_accumulator ? kReduceParts : inner * 4);
      }
    } else if (!target_.loop_launch && target_.is_gpu && axes_.reassociable &&
               output_lanes() == 1 && size >= 128 &&
               reads_contiguously(axis, /*every=*/outputs_share_inputs())) {
      // One work item per row would read rows far apart: a warp's loads would not coalesce.
      // A workgroup per row reads it in neighbouring elements; every item then combines the
      // group's partials, so the group is about the square root of the row (work balanced).
      // Where outputs share an input (a matmul without tiles: sizes no tile divides), only if
      // the rows read every input in order: a matrix times a vector, not a matmul, whose other
      // input a workgroup would read down a column.
      int64_t group = 32;
      while (group * 2 * group * 2 <= size) group *= 2;
      group = std::min(
          {group, round_down_to_power_of_two(std::min({kGpuGroupSize, target_.max_workgroup_size,
                                                       target_.max_workgroup_dims[0]}))});
      if (group >= 2) {
        choose_inner_parts(axis, group);
        add({OptKind::Group, axis, group},
            "the reduce axis is contiguous: a workgroup reads each row, its loads coalesce");
        size /= group;
      }
    }
    if (one_float_accumulator && target_.loop_launch) return;  // the dialect's pragma
    if (axes_.is_symbolic(axis)) return;  // UPCAST and UNROLL must divide every value
    if (one_float_accumulator) {
      // Parts an UPCAST before the GROUP made already count (each work item's neighbours).
      const int64_t inner = reduce_upcast(axis);
      for (int64_t parts : {kReduceParts, kReduceParts / 2, kReduceParts / 4}) {
        const int64_t more = parts / inner;
        if (more < 2) break;
        if (axis_size % (inner * more) == 0 && size >= 2 * inner * more) {
          add({OptKind::Upcast, axis, more},
              "independent partial results hide the add latency and fill vector lanes");
          return;
        }
      }
    }
    if (one_float_accumulator && axes_.reduce_op == ReduceOp::Sum) return;
    // A tile of outputs is a long body already: unrolled further, gcc no longer keeps the tile's
    // accumulators in registers (matmul 1024: 44 -> 74 ms).
    if (output_lanes() > 4) return;
    if (axis_size % 4 == 0 && size >= 8)
      add({OptKind::Unroll, axis, 4}, "an ordered reduction: unrolled, not reassociated");
  }

  // A matmul-shaped kernel with an input that several outputs read (a matmul's rows and
  // columns): neighbouring outputs can share its loads. A row sum of one matrix, or of several
  // read alike, shares none.
  bool outputs_share_inputs() const {
    if (axes_.source_axis.empty()) return false;
    return std::any_of(axes_.reduce_inputs.begin(), axes_.reduce_inputs.end(),
                       [&](const KernelAxes::ReduceInput& input) {
                         return input.output_axes.size() < axes_.output.size();
                       });
  }

  // The product of the UPCASTs chosen so far on a reduce axis.
  int64_t reduce_upcast(int axis) const {
    int64_t parts = 1;
    for (const Opt& opt : choice_.opts) {
      if (opt.kind == OptKind::Upcast && opt.axis == axis) parts *= opt.amount;
    }
    return parts;
  }

  // Before a GROUP, on a device with vector loads: each work item reads 4 neighbouring elements
  // per step, one 16-byte load (8 bytes of 16-bit elements), where the reduction reads memory in
  // order and the steps divide the axis (a masked load is no vector). Returns the parts (1: none).
  int64_t choose_inner_parts(int axis, int64_t group) {
    constexpr int64_t kInner = 4;
    if (!target_.vector_loads || axes_.is_symbolic(axis) ||
        axes_.size(axis) % (kInner * group * 2) != 0)
      return 1;
    std::vector<Opt> opts = choice_.opts;
    opts.push_back({OptKind::Upcast, axis, kInner});
    opts.push_back({OptKind::Group, axis, group});
    LinearProgram program;
    try {
      program = lowered(opts);
    } catch (const OptError&) {
      return 1;  // the GROUP alone is refused too, with its reason, when the kernel is lowered
    }
    std::vector<const LinInstr*> loads = global_loads(program);
    loads.erase(std::remove_if(loads.begin(), loads.end(),
                               [](const LinInstr* load) {
                                 const size_t bytes = load->dtype.itemsize();
                                 return !(load->valid == Sym(1)) || (bytes != 4 && bytes != 2);
                               }),
                loads.end());
    // 16-bit elements join into words only from an index that is a multiple of the width.
    const bool aligned = std::any_of(loads.begin(), loads.end(), [](const LinInstr* load) {
      return load->dtype.itemsize() == 4 || mod(load->index, Sym(kInner)) == Sym(0);
    });
    if (!any_neighbours(loads) || !aligned) return 1;
    add(opts[opts.size() - 2],
        "each work item reads 4 neighbouring elements per step: 16-byte loads (8 of 16-bit "
        "elements)");
    return kInner;
  }

  // A kernel holding fused row reductions (codegen/row_fusion.h): a workgroup per row whose work
  // items share each reduction and then compute the row's outputs, neighbouring ones per item.
  bool choose_row_workgroup() {
    const Shape& shape = axes_.output;
    if (shape.empty() || axes_.is_symbolic(static_cast<int>(shape.size()) - 1)) return false;
    const int last = static_cast<int>(shape.size()) - 1;
    const int64_t lanes = row_lanes(shape.back(), max_row_lanes(target_));
    if (lanes == 0) return false;
    const std::string reason = "a workgroup of " + std::to_string(lanes) +
                               " per row shares its reductions, then computes its outputs";
    if (shape.back() / lanes > 1) add({OptKind::Upcast, last, shape.back() / lanes}, reason);
    add({OptKind::Local, last, lanes}, reason);
    return true;
  }

  // GRID for one output whose reduction fills the device: about two workgroups per compute unit
  // (an H100's 264 of 256 work items matched a hand-written sum's best), each work item reducing
  // at least 32 elements. Where a count from one to two per compute unit divides the axis into
  // whole steps (`per_step` elements per work item), that one: no load then needs a bounds
  // check (and neighbouring ones join into vectors). Returns the workgroups (1: none).
  int64_t choose_grid(int axis, int64_t group, int64_t per_step) {
    if (!target_.prefers_grid() || item_.output->numel() != 1 || axes_.is_symbolic(axis) ||
        axes_.reduce_dtype.itemsize() < 4)
      return 1;
    const int64_t buffers = axes_.buffers + kGridScratchBuffers;
    if (target_.max_kernel_buffers > 0 && buffers > target_.max_kernel_buffers) return 1;
    const int64_t size = axes_.size(axis);
    int64_t groups =
        std::min({2 * target_.compute_units, size / (group * 32), target_.max_workgroups[0]});
    for (int64_t even = groups; even >= std::max<int64_t>(2, groups / 2); --even) {
      if (size % (even * group * per_step) == 0) {
        groups = even;
        break;
      }
    }
    if (groups < 2) return 1;
    add({OptKind::Grid, axis, groups},
        "one output: " + std::to_string(groups) +
            " workgroups share its reduction, and the last to finish combines their partials");
    return groups;
  }

  // Whether neighbouring steps of the reduce axis read neighbouring elements of some input (of
  // every input that the steps read apart, with `every`: a matmul's other input, read down a
  // column, is not).
  bool reads_contiguously(int axis, bool every = false) const {
    if (axes_.is_symbolic(axis) || axes_.size(axis) % 2 != 0) return false;
    const LinearProgram program = lowered({{OptKind::Upcast, axis, 2}});
    std::map<int, std::vector<const LinInstr*>> loads_of;  // per buffer
    for (const LinInstr* load : global_loads(program)) loads_of[load->buffer].push_back(load);
    bool some = false;
    for (const auto& [buffer, reads] : loads_of) {
      const bool neighbours = any_neighbours(reads);
      const bool apart = std::any_of(reads.begin(), reads.end(), [&](const LinInstr* load) {
        return !(load->index == reads.front()->index);
      });
      if (every && apart && !neighbours) return false;
      some = some || neighbours;
    }
    return some;
  }

  // GPUs: an elementwise kernel with enough work computes 4 neighbouring outputs per work item,
  // so that its loads and stores move 16 bytes each (float4) where they are contiguous: fewer
  // memory instructions for the same bytes (a 16M float copy on an H100: 63 -> 51 us, hand-written
  // kernels). Only where the lanes' loads are neighbours too (or there are none): a transpose
  // gains nothing from it. `lanes` outputs per work item (a CPU's OpenCL reading gathered rows:
  // 16, a 64-byte vector).
  void choose_vector_lanes(int64_t lanes) {
    const Shape& shape = axes_.output;
    if (shape.empty() || axes_.is_symbolic(static_cast<int>(shape.size()) - 1)) return;
    const int last = static_cast<int>(shape.size()) - 1;
    // Enough work items left for every compute unit to hold several full workgroups.
    if (shape[last] % lanes != 0 ||
        item_.output->numel() / lanes < target_.compute_units * kGpuGroupSize * 4)
      return;
    const std::vector<Opt> opts{{OptKind::Upcast, last, lanes}};
    const LinearProgram program = lowered(opts);
    const std::vector<const LinInstr*> loads = global_loads(program);  // pointers into `program`
    if (!loads.empty() && !any_neighbours(loads)) return;
    add(opts[0], std::to_string(lanes) + " neighbouring outputs per work item: " +
                     std::to_string(lanes * 4) + "-byte loads and stores");
  }

  // An elementwise kernel whose flat indices divide (a broadcast along the last axis, a permute):
  // where work items are a loop, rows and columns move such divisions out of the inner loop.
  // (With one work item per index the split only rewrites the index, and PoCL then no longer sees
  // contiguous loads.)
  void choose_rows() {
    const Shape& shape = axes_.output;
    if (shape.size() < 2 || axes_.is_symbolic(static_cast<int>(shape.size()) - 1) ||
        shape.back() < kMinRowLength || item_.output->numel() / shape.back() < 2 ||
        !choice_.opts.empty())
      return;
    const int divisions = index_divisions(lowered({}));
    if (divisions == 0) return;
    const Opt rows{OptKind::Rows, static_cast<int>(shape.size()) - 1, shape.back()};
    if (index_divisions(lowered({rows})) < divisions)
      add(rows, "the inner loop over a row has fewer index divisions");
  }

  // On a CPU a scatter's work item takes neighbouring lines (along the last axis, where that is
  // not the scattered one): each step of its loops then loads and stores a vector's worth of
  // neighbours, not one element a cache line. Enough work items stay for every core.
  // An Attention's work item reads each key and value once for all its query rows: neighbouring
  // rows per work item share those loads, where enough work items remain.
  void choose_attention_rows() {
    if (axes_.output.size() < 2) return;
    const int rows = static_cast<int>(axes_.output.size()) - 2;
    if (axes_.is_symbolic(rows)) return;
    // Each row holds its query and sums in registers: wide heads get one row per work item.
    const int64_t widths = item_.ast->src(0)->shape().back() + item_.ast->shape().back();
    if (widths > 256) return;
    int64_t lines = 1;
    for (int64_t size : axes_.output) lines *= size;
    const int64_t wanted = 2 * target_.compute_units * (target_.is_gpu ? 64 : 1);
    for (int64_t amount : {4, 2}) {
      if (axes_.output[rows] % amount != 0 || lines / amount < wanted) continue;
      add({OptKind::Upcast, rows, amount},
          "neighbouring query rows per work item share each key and value: " +
              std::to_string(amount));
      return;
    }
  }

  void choose_scatter_lanes() {
    if (axes_.output.empty()) return;
    const int last = static_cast<int>(axes_.output.size()) - 1;
    if (axes_.is_symbolic(last)) return;
    int64_t lines = 1;
    for (int64_t size : axes_.output) lines *= size;
    for (int64_t amount : {16, 8, 4}) {
      if (axes_.output[last] % amount != 0 || lines / amount < 2 * target_.compute_units) continue;
      add({OptKind::Upcast, last, amount},
          "neighbouring lines per work item: " + std::to_string(amount));
      return;
    }
  }

  // Work items in groups: as large as the device likes, no larger than the launch, and enough
  // groups for every compute unit. A launch that is a multiple of 64 is split exactly (the kernel
  // then needs no bounds check, which keeps PoCL vectorizing across work items).
  void choose_workgroup() {
    if (std::any_of(choice_.opts.begin(), choice_.opts.end(),
                    [](const Opt& opt) { return opt.kind == OptKind::Group; }))
      return;
    int64_t items = 1;
    for (int64_t size : axes_.output) items *= size;
    items /= output_lanes();
    int64_t local = round_down_to_power_of_two(
        std::min({target_.is_gpu ? kGpuGroupSize : kCpuGroupSize, target_.max_workgroup_size,
                  target_.max_workgroup_dims[0]}));
    while (local > 1 && local / 2 >= items) local /= 2;
    const int64_t smallest = target_.is_gpu ? std::min(local, target_.simd_width) : 1;
    while (local / 2 >= smallest && (items + local - 1) / local < target_.compute_units) local /= 2;
    if (items % 64 == 0) {
      while (items % local != 0) local /= 2;
    }
    if (local >= 2)
      add({OptKind::Local, Opt::kFlatAxis, local}, "workgroups of " + std::to_string(local) +
                                                       " over " + std::to_string(items) +
                                                       " work items");
  }

  const ScheduleItem& item_;
  const OptTarget& target_;
  const KernelAxes& axes_;
  OptChoice choice_;
};

uint64_t mix(uint64_t value) {
  value += 0x9e3779b97f4a7c15ull;
  value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ull;
  value = (value ^ (value >> 27)) * 0x94d049bb133111ebull;
  return value ^ (value >> 31);
}

}  // namespace

OptChoice choose_opts(const ScheduleItem& item, const KernelAxes& axes, const OptTarget& target) {
  return Chooser(item, axes, target).run();
}

std::vector<Opt> random_opts(const ScheduleItem& item, const KernelAxes& axes,
                             const OptTarget& target, uint64_t seed) {
  // The kernel's identity: its axes, its dtypes and the shapes it reads.
  uint64_t state = mix(seed);
  std::string identity = axes.to_string() + item.output->dtype().name();
  for (const UOpRef& input : item.inputs)
    identity += input->dtype().name() + std::to_string(input->numel());
  for (char c : identity) state = mix(state ^ static_cast<uint8_t>(c));
  std::mt19937_64 random(state);

  std::vector<Opt> candidates;
  for (int axis = 0; axis < axes.rank(); ++axis) {
    const int64_t size = axes.size(axis);
    for (int64_t amount : {2, 3, 4, 8}) {
      if (size % amount != 0 || size < amount) continue;
      candidates.push_back({OptKind::Upcast, axis, amount});
      if (axes.is_reduce_axis(axis)) candidates.push_back({OptKind::Unroll, axis, amount});
    }
    for (int64_t amount : {2, 4, 16, 64}) {
      candidates.push_back(
          {axes.is_reduce_axis(axis) ? OptKind::Group : OptKind::Local, axis, amount});
    }
    if (axes.is_reduce_axis(axis) && target.grid) {
      for (int64_t amount : {2, 3, 16}) candidates.push_back({OptKind::Grid, axis, amount});
    }
  }
  for (int64_t amount : {2, 8, 64, 256})
    candidates.push_back({OptKind::Local, Opt::kFlatAxis, amount});
  if (!axes.output.empty()) {
    const int last = static_cast<int>(axes.output.size()) - 1;
    candidates.push_back({OptKind::Rows, last, axes.output.back()});
  }
  for (int64_t amount : {2, 4, 8, 16}) {
    if (!axes.source_axis.empty())
      candidates.push_back({OptKind::Tile, static_cast<int>(axes.output.size()), amount});
  }
  std::shuffle(candidates.begin(), candidates.end(), random);
  const size_t wanted = static_cast<size_t>(random() % 5);
  std::vector<Opt> opts;
  size_t prefix_size = 0;
  // TC needs a whole layout (codegen/tensor_cores.h): half of the kernels that can take it
  // start from one of a few, so that random lists prove TC (emulated where the device has no
  // matrix units) with what else they add.
  if (target.tensor_cores && axes.products_of_halves && random() % 2 == 0) {
    const TensorCoreLayout layouts[] = {
        {16, 16, 32, 16}, {16, 64, 64, 32}, {64, 16, 64, 16}, {32, 32, 128, 16}, {64, 64, 256, 32}};
    std::vector<Opt> prefix = tensor_core_opts(axes, layouts[random() % std::size(layouts)]);
    try {
      plan_opts(axes, prefix, target, "random");
      prefix_size = prefix.size();
      opts = std::move(prefix);
    } catch (const OptError&) {
    }
  }
  // A TILE needs LOCALs on output axes before it: for a third of matmul-shaped kernels the list
  // starts with such a set, so that random lists prove TILE too.
  if (opts.empty() && !axes.source_axis.empty() && target.local_memory_bytes > 0 &&
      random() % 3 == 0) {
    auto pick = [&random](int64_t size) {
      std::vector<int64_t> amounts;
      for (int64_t amount : {2, 4, 8, 16}) {
        if (size % amount == 0) amounts.push_back(amount);
      }
      return amounts.empty() ? int64_t{0} : amounts[random() % amounts.size()];
    };
    std::vector<Opt> prefix;
    for (int axis = static_cast<int>(axes.output.size()) - 1;
         axis >= 0 && axis >= static_cast<int>(axes.output.size()) - 2; --axis) {
      if (const int64_t amount = pick(axes.output[axis]))
        prefix.push_back({OptKind::Local, axis, amount});
    }
    const int reduce_axis = static_cast<int>(axes.output.size());
    if (const int64_t amount = pick(axes.reduce_sizes[0]))
      prefix.push_back({OptKind::Tile, reduce_axis, amount});
    try {
      plan_opts(axes, prefix, target, "random");
      prefix_size = prefix.size();
      opts = std::move(prefix);
    } catch (const OptError&) {
    }
  }
  for (const Opt& candidate : candidates) {
    if (opts.size() >= prefix_size + wanted) break;
    std::vector<Opt> trial = opts;
    trial.push_back(candidate);
    // Keep kernels small: at most 64 lanes of work per work item.
    int64_t lanes = 1;
    for (const Opt& opt : trial) {
      if (opt.kind == OptKind::Upcast || opt.kind == OptKind::Unroll) lanes *= opt.amount;
    }
    if (lanes > 64) continue;
    try {
      plan_opts(axes, trial, target, "random");
    } catch (const OptError&) {
      continue;
    }
    opts = std::move(trial);
  }
  // ROWS must name the last axis' size after upcasts: the check above accepted it as given.
  return opts;
}

}  // namespace kiln

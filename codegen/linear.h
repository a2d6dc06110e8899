#pragma once
// The linear program: one kernel as a straight list of instructions, ready to render.
//
// Values are referred to by their position in the list. Index arithmetic stays symbolic (Sym)
// until rendering, so it is simplified with the loop variables' ranges. Work items are indexed by
// up to three launch dimensions (`launch`), each a variable of the index arithmetic: a global id,
// or a local id where the dimension is one workgroup's share of a reduction. How the ids are
// produced (a CPU loop over a flat range, or GPU work-item ids) is the dialect's business.

#include <cstdint>
#include <string>
#include <vector>

#include <kiln/dtype.h>

#include "codegen/opt.h"
#include "core/symbolic.h"
#include "core/uop.h"

namespace kiln {

enum class LinOp : uint8_t {
  Const,      // value
  Index,      // the integer value of `index` (a Sym over loop variables)
  Load,       // buffer[index] where valid, else `value` (the pad value)
  Store,      // buffer[index] = srcs[0]
  Alu,        // alu(srcs...), computed in `dtype` (the result type); Where is a select
  Cast,       // srcs[0] converted to `dtype`
  AccDefine,  // an accumulator of `dtype`, initialised to `value`
  AccUpdate,  // srcs[0] (an AccDefine) = reduce(srcs[0], srcs[1]); primitive: = srcs[1]
  LoopBegin,  // for loop_var in [0, loop_end)
  LoopEnd,
  DefineLocal,  // an array of `local_size` values of `dtype` in workgroup-shared memory
  Barrier,      // every work item of the workgroup waits here; local memory writes are then seen
  // GRID: after a fence that makes the workgroup's stores to global memory visible, the work
  // items where `valid` holds count their workgroup done on the counter `buffer` (a parameter);
  // every work item of the workgroup then knows, as the index variable named `loop_var` (0 or 1),
  // whether it was the last of the `local_size` workgroups. srcs[0] is a DefineLocal of one
  // uint32 that carries the answer across the workgroup (the instruction waits at a barrier).
  GridTicket,
  // TC (see codegen/tensor_cores.h): 16x16x16 matrix products that a warp of 32 work items
  // computes together. FragmentDefine: a 16x16 float32 accumulator, zero; each work item holds
  // 8 of its elements. FragmentLoad: the 16x16 tile of the half-typed DefineLocal `buffer` at
  // `index` whose rows are `stride` elements apart: A of the product (`matrix_b` false) is stored
  // column-major (element (m, k) at index + k * stride + m), B row-major ((k, n) at index +
  // k * stride + n). Mma: srcs[0] (a FragmentDefine) += srcs[1] * srcs[2] (FragmentLoads A, B).
  // FragmentStore: srcs[0] into the DefineLocal `buffer`, row-major ((m, n) at index + m * stride
  // + n). Mma's and FragmentStore's `lane` is the work item's place in its warp (0..31), for
  // dialects that emulate them.
  FragmentDefine,
  FragmentLoad,
  Mma,
  FragmentStore,
  // srcs[0] (an integer value in [0, loop_end)) as the index variable named `loop_var`, which
  // index arithmetic (Sym) then uses like a loop's: a computed address (a Gather's position
  // along its axis).
  IndexOf,
  // srcs[0]'s bits as `dtype`, between a float dtype and the unsigned integer of its size: a half
  // type's value (a float, rounded to the half type) as its 16 bits (uint16) or back, float32 and
  // uint32, float64 and uint64 (LinearBuilder::bitcast_to reaches the other pairs by casts).
  Bitcast,
};

struct LinInstr {
  LinInstr(LinOp op_in, DType dtype_in) : op(op_in), dtype(dtype_in) {}
  LinOp op;
  DType dtype;
  std::vector<int> srcs;
  Op alu = Op::Add;
  ReduceOp reduce = ReduceOp::Sum;
  int buffer = -1;
  Sym index;
  Sym valid = Sym(1);  // Load: read only where it holds; Store: write only where it holds
  bool local = false;  // Load, Store: `buffer` is a DefineLocal (its position), not a parameter
  int64_t local_size = 0;
  ConstArg value;
  std::string loop_var;
  Sym loop_end = Sym(0);  // symbolic where a size is
  // LoopBegin: an accumulator that is this loop's only state and whose update may be
  // reassociated (a float sum, max or min; the op is in `reduce`), so the renderer may vectorize
  // the loop. -1 when not.
  int reduction_acc = -1;
  // Load: the first of `vector_width` neighbouring elements read as one vector (the dialect's);
  // the others' loads name it in `vector_head` and their place in `vector_lane` (see
  // vectorize_loads). Store: the first of `vector_width` neighbouring elements written as one
  // vector, its `srcs` every lane's value in order; the others' stores name it in `vector_head`
  // and write nothing themselves (see vectorize_stores).
  int vector_width = 1;
  int vector_head = -1;
  int vector_lane = 0;
  // Load, Store: `buffer` (a parameter of 16 bits an element) read or written as 32-bit words
  // (Dialect::word_buffer), two elements a word, the first in its low half; `dtype` is uint32 and
  // `index` counts words (see decompose_semantics, which packs 16-bit vectors so).
  bool words = false;
  // DefineLocal: read or written by fragment ops (aligned as they need); `packed`: a half-typed
  // array that holds its 16-bit values, which FragmentLoad reads (others hold computed floats).
  bool fragments = false;
  bool packed = false;
  // Fragment ops: see FragmentDefine.
  bool matrix_b = false;
  int64_t stride = 0;
  Sym lane = Sym(0);
  // Alu, Cast, AccUpdate: the target's own operation where kiln's of the same name means more
  // (see codegen/decompose.h): an integer Div or Mod whose divisor is never 0 nor -1, a
  // comparison of half values as computed (not rounded to the half type first), a float
  // converted to an integer as the target converts (a value out of range gives an unspecified
  // value, which selects after it discard), an AccUpdate that stores srcs[1] (the reduction
  // computed by the instructions before it).
  bool primitive = false;
};

struct KernelParam {
  DType dtype;
  int64_t numel = 0;
  bool is_output = false;
  // Bound by the runtime (after the inputs), zero-filled once and kept across launches: GRID's
  // partial results and counter. Workgroups exchange values through it, so dialects declare it
  // coherent between them.
  bool scratch = false;
  // Bound by the runtime after the scratch, zero-filled before each launch, read after it: where
  // a Gather meets an index outside its axis, the kernel writes 4 int32 here (1 + the Gather's
  // place in LinearProgram::gathers, the index's low and high 32 bits, 0). Also is_output.
  bool index_errors = false;
};

// A Gather the kernel computes, for the message of the IndexError its index_errors report
// raises: the Tensor operation, the axis and its size (over the kernel's variables).
struct GatherSite {
  std::string op;
  int axis = 0;
  Sym size = Sym(0);
  bool unsigned_index = false;  // the index's 64 bits are read as unsigned
};

// One launch dimension: work items [0, global) in groups of `local`; those at `size` and beyond
// (where the launch was rounded up to whole groups) return at once. Launch dimension i is
// dispatched along hardware dimension i; where its workgroups exceed the device's limit along
// that one, they are spread over the hardware dimensions no launch dimension uses (see
// spread_launch): its workgroup id is then g0 + g1 * n0 + g2 * n0 * n1, for the workgroup ids g
// and counts n along `hardware`.
//
// A symbolic size (over the kernel's variables) is known only at launch: `global` and
// `hardware_groups` then hold what the variables' largest values need, and dispatch_sizes
// computes the launch from the values (a spread one fills the hardware dimensions in order, each
// up to its count here, which the rendered id arithmetic uses).
struct LaunchDim {
  std::string var;        // its variable in index expressions
  bool local_id = false;  // var is the id within the workgroup (global == local), else global
  Sym size = Sym(1);
  int64_t global = 1;  // work items dispatched: local times the product of hardware_groups
  int64_t local = 1;
  std::vector<int> hardware;             // hardware dimensions, its own first
  std::vector<int64_t> hardware_groups;  // workgroups along each

  bool spread() const { return hardware.size() > 1; }
};

// The names of a ROWS program's row and column indices (LinearProgram::row_length).
inline constexpr char kRowVar[] = "gid_row";
inline constexpr char kColumnVar[] = "gid_col";

struct LinearProgram {
  std::string name;
  std::vector<KernelParam> params;  // output first, then inputs
  std::vector<GatherSite> gathers;  // see KernelParam::index_errors
  std::vector<LinInstr> instrs;
  std::vector<LaunchDim> launch;  // x, y, z; a loop-style dialect renders one flat dimension
  Sym global_size = Sym(0);       // work items that run (the product of the dimensions' sizes)
  // The kernel's variables (unbound Syms, named var_<name>), in the order their values are
  // passed at launch (LaunchRequest::variables).
  std::vector<Sym> variables;
  std::vector<Opt> opts;  // the opts applied
  // Above 0 (ROWS): the flat work item index is split into kRowVar = index / row_length and
  // kColumnVar = index % row_length, and indices are written in those two. A loop-style renderer
  // then runs a loop over columns inside a loop over rows, so whatever depends only on the row (a
  // broadcast operand) is computed once per row and the column loop reads memory contiguously.
  int64_t row_length = 0;
  // Every element computed is stored by exactly one work item.
  std::string to_string() const;
};

// The loop iterations one work item runs, every loop counted (a loop nested in another once per
// trip of the outer one), with one more per entry of a loop (its last test of the condition,
// which lavapipe counts against its limit); symbolic loops at the variables' largest values.
int64_t loop_iterations(const LinearProgram& program);

// The global and local sizes a program is dispatched with, per hardware dimension (x, y, z), for
// the values of its variables (in `variables` order).
void dispatch_sizes(const LinearProgram& program, const std::vector<int64_t>& values,
                    int64_t global[3], int64_t local[3]);
// The work items that run for those values (global_size evaluated).
int64_t work_items(const LinearProgram& program, const std::vector<int64_t>& values);

// A short stable name for a kernel: "r_" (it loops) or "e_", its work items, and a hash of the
// program ("r_4096_5964c38d").
std::string kernel_name(const LinearProgram& program);

}  // namespace kiln

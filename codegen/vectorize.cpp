#include "codegen/vectorize.h"

#include <map>

namespace kiln {
namespace {

// Whether elements of `dtype` are packed two to a 32-bit word in vectors (Dialect::word_buffer).
bool packed(DType dtype) {
  return dtype.itemsize() == 2;
}

// An unmasked access to a kernel parameter, not yet part of a vector, of a 32-bit dtype (stored
// as it is computed) or of a 16-bit one where the dialect packs them into words.
bool vectorizable(const LinInstr& instr, LinOp op, const Dialect& dialect) {
  const ScalarType type = instr.dtype.type();
  const bool word =
      type == ScalarType::Float32 || type == ScalarType::Int32 || type == ScalarType::UInt32;
  return instr.op == op && !instr.local && instr.valid == Sym(1) && instr.vector_width == 1 &&
         instr.vector_head < 0 && (word || (packed(instr.dtype) && dialect.word_buffer));
}

// The widest of the dialect's widths for which lanes 1 .. width - 1 are all in `lane_at` (and
// the head index is aligned where the dialect wants it, and always for packed elements, whose
// words must not straddle two vectors' worth); 0 where none.
int widest_complete(const Dialect& dialect, const std::map<int64_t, size_t>& lane_at,
                    const LinInstr& head) {
  const bool aligned = dialect.vector_loads_aligned || packed(head.dtype);
  for (int width : dialect.vector_widths) {
    bool complete = true;
    for (int lane = 1; lane < width && complete; ++lane) complete = lane_at.count(lane) > 0;
    if (!complete) continue;
    if (aligned && mod(head.index, Sym(width)) != Sym(0)) continue;
    return width;
  }
  return 0;
}

// Ends the stretch of code in which a load at `head` may be joined by later loads.
bool ends_stretch(const LinInstr& instr, const LinInstr& head) {
  return instr.op == LinOp::LoopBegin || instr.op == LinOp::LoopEnd || instr.op == LinOp::Barrier ||
         instr.op == LinOp::GridTicket ||
         (instr.op == LinOp::Store && !instr.local && instr.buffer == head.buffer);
}

// Marks each group of neighbouring accesses of kind `op` as one vector: for each access that can
// head one, the later accesses up to where `stretch_ends` says (to the same buffer and dtype, at
// index + 1 .. index + widest - 1) are its lanes. Returns the heads marked, with their lanes.
template <typename StretchEnds>
std::vector<std::pair<size_t, std::vector<size_t>>> mark_vectors(std::vector<LinInstr>& instrs,
                                                                 const Dialect& dialect, LinOp op,
                                                                 StretchEnds&& stretch_ends) {
  const int widest = dialect.vector_widths.front();
  std::vector<std::pair<size_t, std::vector<size_t>>> marked;
  for (size_t head = 0; head < instrs.size(); ++head) {
    if (!vectorizable(instrs[head], op, dialect)) continue;
    std::map<int64_t, size_t> lane_at;
    for (size_t later = head + 1; later < instrs.size(); ++later) {
      if (stretch_ends(instrs[later], instrs[head])) break;
      if (!vectorizable(instrs[later], op, dialect) ||
          instrs[later].buffer != instrs[head].buffer || instrs[later].dtype != instrs[head].dtype)
        continue;
      const Sym offset = instrs[later].index - instrs[head].index;
      if (!offset.is_const()) continue;
      const int64_t lane = offset.const_value();
      if (lane >= 1 && lane < widest) lane_at.emplace(lane, later);
    }
    const int width = widest_complete(dialect, lane_at, instrs[head]);
    if (width == 0) continue;
    instrs[head].vector_width = width;
    std::vector<size_t> lanes;
    for (int lane = 1; lane < width; ++lane) {
      LinInstr& member = instrs[lane_at[lane]];
      member.vector_head = static_cast<int>(head);
      member.vector_lane = lane;
      lanes.push_back(lane_at[lane]);
    }
    marked.emplace_back(head, std::move(lanes));
  }
  return marked;
}

}  // namespace

LinearProgram vectorize_loads(LinearProgram program, const Dialect& dialect) {
  if (dialect.vector_widths.empty()) return program;
  mark_vectors(program.instrs, dialect, LinOp::Load, ends_stretch);
  return program;
}

LinearProgram vectorize_stores(LinearProgram program, const Dialect& dialect) {
  if (dialect.vector_widths.empty() || !dialect.vector_store) return program;
  // A run of stores only: every lane's value is then computed before the head, which writes them.
  std::vector<LinInstr>& instrs = program.instrs;
  auto run_ends = [](const LinInstr& instr, const LinInstr&) { return instr.op != LinOp::Store; };
  for (const auto& [head, lanes] : mark_vectors(instrs, dialect, LinOp::Store, run_ends)) {
    for (size_t lane : lanes) instrs[head].srcs.push_back(instrs[lane].srcs[0]);
  }
  return program;
}

}  // namespace kiln

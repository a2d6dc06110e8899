#include "codegen/render_launch.h"

#include <kiln/error.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <set>
#include <string>

#include "codegen/index_text.h"

namespace kiln {
namespace {

// A launch dimension's id: the hardware one, or for a dimension spread over several hardware
// dimensions (launch_spread.h), its workgroup id from theirs, times the workgroup size, plus
// the id within the workgroup.
std::string launch_id_text(const LaunchDim& launch, int dim, const Dialect& dialect) {
  if (launch.local_id) return dialect.launch_id(LaunchId::Local, dim);
  if (!launch.spread()) return dialect.launch_id(LaunchId::Global, dim);
  std::string group = dialect.launch_id(LaunchId::Group, launch.hardware[0]);
  int64_t below = launch.hardware_groups[0];
  for (size_t at = 1; at < launch.hardware.size(); ++at) {
    group += " + " + dialect.launch_id(LaunchId::Group, launch.hardware[at]) + " * " +
             int_literal(below, dialect);
    below *= launch.hardware_groups[at];
  }
  const std::string id = "(" + group + ") * " + int_literal(launch.local, dialect) + " + " +
                         dialect.launch_id(LaunchId::Local, launch.hardware[0]);
  // A grid spread for a size whose bound passes a 32-bit index type (GLSL's) is computed in
  // 64 bits: a launch's own ids fit the index type (the device refuses one whose would not).
  if (!dialect.wide_index_type.empty() &&
      below > std::numeric_limits<int32_t>::max() / std::max<int64_t>(launch.local, 1))
    return dialect.cast(dialect.index_type, id);
  return id;
}

}  // namespace

std::string size_text(const Sym& size, const Dialect& dialect) {
  return size.is_const() ? int_literal(size.const_value(), dialect) : sym_text(size, dialect);
}

std::vector<bool> row_invariant_instructions(const LinearProgram& program) {
  std::vector<bool> invariant(program.instrs.size(), false);
  if (program.row_length <= 0) return invariant;
  std::set<std::string> varying{kColumnVar};  // the column, and index variables made from it
  auto names_varying = [&](const Sym& value) {
    for (const std::string& name : value.variables()) {
      if (varying.count(name)) return true;
    }
    return false;
  };
  for (size_t at = 0; at < program.instrs.size(); ++at) {
    const LinInstr& instr = program.instrs[at];
    if (instr.op == LinOp::LoopBegin || instr.op == LinOp::Barrier ||
        instr.op == LinOp::DefineLocal || instr.op == LinOp::GridTicket)
      break;
    bool candidate = instr.op == LinOp::Const || instr.op == LinOp::Index ||
                     instr.op == LinOp::Load || instr.op == LinOp::Alu || instr.op == LinOp::Cast ||
                     instr.op == LinOp::IndexOf || instr.op == LinOp::Bitcast ||
                     instr.op == LinOp::Store;
    candidate = candidate && !instr.local && !instr.words && instr.vector_width == 1 &&
                instr.vector_head < 0 && !names_varying(instr.index) && !names_varying(instr.valid);
    for (int src : instr.srcs) candidate = candidate && invariant[static_cast<size_t>(src)];
    invariant[at] = candidate;
    if (instr.op == LinOp::IndexOf && !candidate) varying.insert(instr.loop_var);
  }
  // A store moved out of the column loop would change the order of its buffer's accesses.
  for (size_t at = 0; at < program.instrs.size(); ++at) {
    const LinInstr& store = program.instrs[at];
    if (store.op != LinOp::Store || !invariant[at]) continue;
    for (size_t other = 0; other < program.instrs.size(); ++other) {
      const LinInstr& access = program.instrs[other];
      const bool touches = (access.op == LinOp::Load || access.op == LinOp::Store) &&
                           !access.local && access.buffer == store.buffer;
      if (touches && !invariant[other]) invariant[at] = false;
    }
  }
  return invariant;
}

int render_work_item_ids(std::ostringstream& out, const LinearProgram& program,
                         const Dialect& dialect,
                         const std::function<void(int indent)>& row_prologue) {
  if (dialect.launch_style == Dialect::LaunchStyle::kCpuLoop) {
    if (program.launch.size() > 1)
      throw InternalError("[render_kernel] a loop-style dialect runs one launch dimension, " +
                          program.name + " has " + std::to_string(program.launch.size()));
    const std::string gid = program.launch.empty() ? "gidx0" : program.launch[0].var;
    const bool has_loops =
        std::any_of(program.instrs.begin(), program.instrs.end(),
                    [](const LinInstr& instr) { return instr.op == LinOp::LoopBegin; });
    const std::string pragma = has_loops ? "" : dialect.work_item_loop_pragma;
    if (program.row_length > 0) {
      // The flat range [begin, end) as whole and partial rows.
      const std::string row = kRowVar;
      const std::string column = kColumnVar;
      const std::string length = std::to_string(program.row_length) + "LL";
      const std::string row_start = "(" + row + " * " + length + ")";
      out << "  for (long long " << row << " = begin / " << length << "; " << row_start
          << " < end; " << row << "++) {\n";
      out << "    const long long " << column << "_end = end - " << row_start << " < " << length
          << " ? end - " << row_start << " : " << length << ";\n";
      if (row_prologue) row_prologue(2);
      if (!pragma.empty()) out << "    " << pragma << "\n";
      out << "    for (long long " << column << " = begin > " << row_start << " ? begin - "
          << row_start << " : 0; " << column << " < " << column << "_end; " << column << "++) {\n";
      return 3;
    }
    if (!pragma.empty()) out << "  " << pragma << "\n";
    out << "  for (long long " << gid << " = begin; " << gid << " < end; " << gid << "++) {\n";
    return 2;
  }
  for (size_t dim = 0; dim < program.launch.size(); ++dim) {
    const LaunchDim& launch = program.launch[dim];
    out << "  " << dialect.value_qualifier << dialect.index_type << " " << launch.var << " = "
        << launch_id_text(launch, static_cast<int>(dim), dialect) << ";\n";
  }
  // Work items past the end of a launch rounded up to whole groups. In a kernel with a barrier
  // its opts divide every dimension, so these are whole surplus workgroups of a spread one,
  // which return together.
  for (const LaunchDim& launch : program.launch) {
    if (!launch.size.is_const() || launch.global > launch.size.const_value())
      out << "  if (" << launch.var << " >= " << size_text(launch.size, dialect) << ") return;\n";
  }
  return 1;
}

}  // namespace kiln

#include "codegen/linear.h"

#include <algorithm>
#include <climits>
#include <map>
#include <sstream>

#include "core/hash.h"

namespace kiln {

std::string LinearProgram::to_string() const {
  static const char* const kOpNames[] = {
      "CONST",        "INDEX",          "LOAD",        "STORE",      "ALU",
      "CAST",         "DEFACC",         "ACC_UPDATE",  "LOOP_BEGIN", "LOOP_END",
      "DEFINE_LOCAL", "BARRIER",        "GRID_TICKET", "FRAGMENT",   "FRAGMENT_LOAD",
      "MMA",          "FRAGMENT_STORE", "INDEX_OF",    "BITCAST"};
  std::ostringstream text;
  text << "kernel " << name << " opts: " << opts_to_string(opts) << "\n  launch:";
  for (const LaunchDim& dim : launch) {
    text << " " << dim.var << (dim.local_id ? "(local)" : "") << " < " << dim.size.key()
         << " [global " << dim.global << ", local " << dim.local << "]";
    if (dim.spread()) {
      text << " spread over";
      for (size_t at = 0; at < dim.hardware.size(); ++at)
        text << " "
             << "xyz"[dim.hardware[at]] << ":" << dim.hardware_groups[at];
    }
  }
  if (row_length > 0) text << " in rows of " << row_length;
  for (const Sym& variable : variables)
    text << " " << variable.var_name() << " in [" << variable.vmin() << ", " << variable.vmax()
         << "]";
  text << "\n";
  for (size_t param = 0; param < params.size(); ++param) {
    text << "  param " << param << ": " << params[param].dtype.name() << "[" << params[param].numel
         << "]" << (params[param].is_output ? " out" : "")
         << (params[param].index_errors ? " index errors" : "") << "\n";
  }
  for (size_t index = 0; index < instrs.size(); ++index) {
    const LinInstr& instr = instrs[index];
    text << "  %" << index << " = " << kOpNames[static_cast<int>(instr.op)] << " "
         << instr.dtype.name();
    if (instr.op == LinOp::Alu) text << " " << op_name(instr.alu);
    if (instr.op == LinOp::AccUpdate) text << " " << reduce_op_name(instr.reduce);
    if (instr.primitive) text << " primitive";
    for (int src : instr.srcs) text << " %" << src;
    if (instr.op == LinOp::Const || instr.op == LinOp::AccDefine) {
      text << " "
           << (instr.dtype.is_float() ? std::to_string(instr.value.float_value)
                                      : std::to_string(instr.value.int_value));
    }
    if (instr.buffer >= 0) text << (instr.local ? " local%" : " buf") << instr.buffer;
    if (instr.op == LinOp::DefineLocal) {
      text << " [" << instr.local_size << "]";
      if (instr.packed) text << " packed";
    }
    if (instr.op == LinOp::FragmentLoad || instr.op == LinOp::FragmentStore) {
      text << (instr.op == LinOp::FragmentStore ? ""
               : instr.matrix_b                 ? " B"
                                                : " A")
           << " [" << instr.index.key() << "] stride " << instr.stride;
    }
    if (instr.op == LinOp::Load || instr.op == LinOp::Store || instr.op == LinOp::Index) {
      text << " [" << instr.index.key() << "]";
    }
    if (instr.words) text << " words";
    if (instr.vector_width > 1) text << " vector of " << instr.vector_width;
    if (instr.vector_head >= 0)
      text << " lane " << instr.vector_lane << " of %" << instr.vector_head;
    if ((instr.op == LinOp::Load || instr.op == LinOp::Store) && !(instr.valid == Sym(1)))
      text << " if " << instr.valid.key();
    if (instr.op == LinOp::LoopBegin)
      text << " " << instr.loop_var << " < " << instr.loop_end.key();
    if (instr.op == LinOp::IndexOf) text << " as " << instr.loop_var;
    text << "\n";
  }
  return text.str();
}

int64_t loop_iterations(const LinearProgram& program) {
  int64_t total = 0, trips = 1;
  std::vector<int64_t> enclosing;
  for (const LinInstr& instr : program.instrs) {
    if (instr.op == LinOp::LoopBegin) {
      enclosing.push_back(trips);
      const int64_t entries = trips;
      const int64_t end = instr.loop_end.vmax();
      trips = trips > INT64_MAX / std::max<int64_t>(end, 1) ? INT64_MAX
                                                            : trips * std::max<int64_t>(end, 0);
      // Each entry tests the condition once more than it has trips (lavapipe counts those too).
      const int64_t tests = trips > INT64_MAX - entries ? INT64_MAX : trips + entries;
      total = total > INT64_MAX - tests ? INT64_MAX : total + tests;
    } else if (instr.op == LinOp::LoopEnd && !enclosing.empty()) {
      trips = enclosing.back();
      enclosing.pop_back();
    }
  }
  return total;
}

namespace {

std::map<std::string, int64_t> values_by_name(const LinearProgram& program,
                                              const std::vector<int64_t>& values) {
  std::map<std::string, int64_t> named;
  for (size_t at = 0; at < program.variables.size() && at < values.size(); ++at)
    named[program.variables[at].var_name()] = values[at];
  return named;
}

}  // namespace

void dispatch_sizes(const LinearProgram& program, const std::vector<int64_t>& values,
                    int64_t global[3], int64_t local[3]) {
  for (int dim = 0; dim < 3; ++dim) global[dim] = local[dim] = 1;
  std::map<std::string, int64_t> named;
  if (!program.variables.empty()) named = values_by_name(program, values);
  for (const LaunchDim& dim : program.launch) {
    // A symbolic dimension's workgroups fill its hardware dimensions in order.
    int64_t remaining = 0;
    if (!dim.size.is_const()) {
      const int64_t size = std::max<int64_t>(dim.size.eval(named), 0);
      remaining = std::max<int64_t>((size + dim.local - 1) / dim.local, 1);
    }
    for (size_t at = 0; at < dim.hardware.size(); ++at) {
      const int hardware = dim.hardware[at];
      local[hardware] = at == 0 ? dim.local : 1;
      int64_t groups = dim.hardware_groups[at];
      if (!dim.size.is_const()) {
        const bool last = at + 1 == dim.hardware.size();
        groups = last ? remaining : std::min(remaining, groups);
        remaining = (remaining + groups - 1) / groups;
      }
      global[hardware] = groups * local[hardware];
    }
  }
}

int64_t work_items(const LinearProgram& program, const std::vector<int64_t>& values) {
  if (program.global_size.is_const()) return program.global_size.const_value();
  return program.global_size.eval(values_by_name(program, values));
}

std::string kernel_name(const LinearProgram& program) {
  bool has_loop = false;
  for (const LinInstr& instr : program.instrs) has_loop |= instr.op == LinOp::LoopBegin;
  const uint64_t hash = stable_hash(program.to_string());
  std::ostringstream name;
  // A symbolic kernel is named by its largest launch ("r_v4096_...").
  name << (has_loop ? "r_" : "e_") << (program.global_size.is_const() ? "" : "v")
       << program.global_size.vmax() << "_" << std::hex << (hash & 0xffffffffull);
  return name.str();
}

}  // namespace kiln

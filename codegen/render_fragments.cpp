#include "codegen/render_fragments.h"

#include <kiln/error.h>

#include "codegen/index_text.h"

namespace kiln {
namespace {

// Elements of a 16x16 result each of a warp's 32 work items holds.
constexpr int kElementsPerLane = 8;

std::string address(const LinInstr& instr, const std::vector<std::string>& names,
                    const Dialect& dialect) {
  return "(" + names[instr.buffer] + " + " + sym_text(instr.index, dialect) + ")";
}

}  // namespace

std::vector<std::string> render_fragment_op(const LinearProgram& program, int index,
                                            const std::vector<std::string>& names,
                                            const Dialect& dialect) {
  const LinInstr& instr = program.instrs[index];
  if (!dialect.mma)
    throw InternalError("[render_kernel] " + program.name + ": the " + dialect.name +
                        " dialect has no matrix units; decompose_semantics emulates fragments");
  const std::string name = "frag" + std::to_string(index);
  std::vector<std::string> lines;
  switch (instr.op) {
    case LinOp::FragmentDefine: {
      lines.push_back(dialect.exact_qualifier + dialect.type_name(dtypes::float32) + " " + name +
                      "[" + std::to_string(kElementsPerLane) + "];");
      const std::string zero = value_literal(dtypes::float32, ConstArg{}, dialect);
      for (int element = 0; element < kElementsPerLane; ++element)
        lines.push_back(name + "[" + std::to_string(element) + "] = " + zero + ";");
      return lines;
    }
    case LinOp::FragmentLoad:
      lines.push_back(dialect.fragment_load(instr.dtype, instr.matrix_b, name,
                                            address(instr, names, dialect), instr.stride));
      return lines;
    case LinOp::Mma:
      lines.push_back(dialect.mma(instr.dtype, "frag" + std::to_string(instr.srcs[0]),
                                  "frag" + std::to_string(instr.srcs[1]),
                                  "frag" + std::to_string(instr.srcs[2])));
      return lines;
    case LinOp::FragmentStore:
      lines.push_back(dialect.fragment_store(address(instr, names, dialect),
                                             "frag" + std::to_string(instr.srcs[0]), instr.stride));
      return lines;
    default:
      throw InternalError("[render_kernel] not a fragment op in " + program.name);
  }
}

}  // namespace kiln

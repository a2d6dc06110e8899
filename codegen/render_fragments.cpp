#include "codegen/render_fragments.h"

#include <kiln/error.h>

#include "codegen/index_text.h"
#include "codegen/tensor_cores.h"

namespace kiln {
namespace {

// Elements of a 16x16 result each of a warp's 32 work items holds.
constexpr int kElementsPerLane = 8;

std::string address(const LinInstr& instr, const std::vector<std::string>& names,
                    const Dialect& dialect) {
  return "(" + names[instr.buffer] + " + " + sym_text(instr.index, dialect) + ")";
}

// Emulation: a work item's elements of a 16x16 result are in row lane / 2, from column
// (lane % 2) * 8 on.
constexpr int64_t kLanesPerRow = kFragment / kElementsPerLane;

Sym emulated_row(const Sym& lane) {
  return floordiv(lane, Sym(kLanesPerRow));
}

Sym emulated_column(const Sym& lane, int element) {
  return mod(lane, Sym(kLanesPerRow)) * Sym(kElementsPerLane) + Sym(element);
}

}  // namespace

std::vector<std::string> render_fragment_op(const LinearProgram& program, int index,
                                            const std::vector<std::string>& names,
                                            const Dialect& dialect) {
  const LinInstr& instr = program.instrs[index];
  const std::string name = "frag" + std::to_string(index);
  const bool native = static_cast<bool>(dialect.mma);
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
      // Emulated fragments are read where they are multiplied.
      if (native)
        lines.push_back(dialect.fragment_load(instr.dtype, instr.matrix_b, name,
                                              address(instr, names, dialect), instr.stride));
      return lines;
    case LinOp::Mma: {
      const std::string accumulator = "frag" + std::to_string(instr.srcs[0]);
      if (native) {
        lines.push_back(dialect.mma(instr.dtype, accumulator,
                                    "frag" + std::to_string(instr.srcs[1]),
                                    "frag" + std::to_string(instr.srcs[2])));
        return lines;
      }
      const LinInstr& a = program.instrs[instr.srcs[1]];
      const LinInstr& b = program.instrs[instr.srcs[2]];
      const std::string step = "mma" + std::to_string(index);
      const Sym k = Sym::var(step, 0, kFragment - 1);
      // A is column-major: (row, k) at a.index + k * a.stride + row.
      const std::string a_value =
          names[a.buffer] + "[" +
          sym_text(a.index + k * Sym(a.stride) + emulated_row(instr.lane), dialect) + "]";
      std::string body;
      for (int element = 0; element < kElementsPerLane; ++element) {
        const Sym b_index = b.index + k * Sym(b.stride) + emulated_column(instr.lane, element);
        const std::string target = accumulator + "[" + std::to_string(element) + "]";
        body += " " + target + " = " + target + " + " + a_value + " * " + names[b.buffer] + "[" +
                sym_text(b_index, dialect) + "];";
      }
      lines.push_back("for (" + dialect.index_type + " " + step + " = 0; " + step + " < " +
                      int_literal(kFragment, dialect) + "; " + step + "++) {" + body + " }");
      return lines;
    }
    case LinOp::FragmentStore: {
      const std::string accumulator = "frag" + std::to_string(instr.srcs[0]);
      if (native) {
        lines.push_back(
            dialect.fragment_store(address(instr, names, dialect), accumulator, instr.stride));
        return lines;
      }
      for (int element = 0; element < kElementsPerLane; ++element) {
        const Sym at = instr.index + emulated_row(instr.lane) * Sym(instr.stride) +
                       emulated_column(instr.lane, element);
        lines.push_back(names[instr.buffer] + "[" + sym_text(at, dialect) + "] = " + accumulator +
                        "[" + std::to_string(element) + "];");
      }
      return lines;
    }
    default:
      throw InternalError("[render_kernel] not a fragment op in " + program.name);
  }
}

}  // namespace kiln

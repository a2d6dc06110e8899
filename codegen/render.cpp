#include "codegen/render.h"

#include <kiln/error.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <sstream>

#include "codegen/decompose.h"
#include "codegen/index_text.h"
#include "codegen/render_fragments.h"
#include "codegen/render_launch.h"

namespace kiln {
namespace {

class Renderer {
 public:
  Renderer(const LinearProgram& program, const Dialect& dialect)
      : program_(program), dialect_(dialect), names_(program.instrs.size()) {}

  std::string run() {
    std::ostringstream out;
    // Local arrays first: OpenCL C wants them at the kernel's outermost scope (GLSL outside the
    // function), and every work item must reach their barrier.
    std::ostringstream locals;
    const int count = static_cast<int>(program_.instrs.size());
    for (int index = 0; index < count; ++index) {
      const LinInstr& instr = program_.instrs[index];
      if (instr.op != LinOp::DefineLocal) continue;
      names_[index] = "local" + std::to_string(index);
      // Matrix units read 16-bit values: a packed array holds them as stored (emulated
      // fragments read computed floats).
      const bool packed = instr.packed && dialect_.mma;
      locals << (dialect_.local_arrays_outside_kernel ? "" : "  ") << dialect_.local_qualifier
             << (instr.fragments ? dialect_.fragment_alignment : "")
             << (packed ? dialect_.type_name(instr.dtype) : compute_type(instr.dtype)) << " "
             << names_[index] << "[" << instr.local_size << "];\n";
    }
    if (dialect_.local_arrays_outside_kernel) out << locals.str();
    if (!dialect_.signature)
      throw InternalError("[render_kernel] the " + dialect_.name + " dialect has no signature");
    out << dialect_.signature(program_, dialect_);
    if (!dialect_.local_arrays_outside_kernel) out << locals.str();
    // A loop-style dialect computes what a row's columns share once per row.
    std::vector<bool> per_row;
    if (dialect_.launch_style == Dialect::LaunchStyle::kCpuLoop)
      per_row = row_invariant_instructions(program_);
    const auto render_per_row = [&](int indent) {
      indent_ = indent;
      for (int index = 0; index < count; ++index) {
        if (per_row[index]) render_instr(out, index);
      }
    };
    indent_ = render_work_item_ids(out, program_, dialect_,
                                   per_row.empty() ? std::function<void(int)>{} : render_per_row);
    for (int index = 0; index < count; ++index) {
      if (per_row.empty() || !per_row[index]) render_instr(out, index);
    }
    if (dialect_.launch_style == Dialect::LaunchStyle::kCpuLoop) {
      if (program_.row_length > 0) out << "    }\n";
      out << "  }\n";
    }
    out << "}\n";
    std::string libraries;
    for (const Dialect::MathLibrary& library : dialect_.math_libraries) {
      const bool called = std::any_of(library.functions.begin(), library.functions.end(),
                                      [&](const std::string& name) { return called_.count(name); });
      if (called) libraries += library.source;
    }
    return dialect_.prelude + "\n" + libraries + out.str();
  }

 private:
  // The type a value is computed in: half types compute in float.
  std::string compute_type(DType dtype) const {
    if (dtype.is_half()) return dialect_.type_name(dtypes::float32);
    if (dtype.is_bool() && !dialect_.bool_type.empty()) return dialect_.bool_type;
    return dialect_.type_name(dtype);
  }

  std::string pad() const { return std::string(indent_ * 2, ' '); }

  std::string float_literal(double number, bool wide) const {
    return kiln::float_literal(number, wide, dialect_);
  }

  std::string literal(DType dtype, const ConstArg& value) const {
    return value_literal(dtype, value, dialect_);
  }

  std::string zero(DType dtype) const { return literal(dtype, ConstArg{}); }

  std::string math(const std::string& function, DType dtype, const std::string& argument) const {
    const bool wide = dtype == dtypes::float64;
    if (wide && dialect_.missing_float64_math.count(function))
      throw UnsupportedDTypeError(
          "[render_kernel] " + program_.name + ": the " + dialect_.name +
              " dialect does not support float64 " + function + " (" + dialect_.name +
              " has none, nor does kiln's library for it yet); valid: float32, float16 or " +
              "bfloat16 (computed in float32) on this device",
          dtype);
    std::string name;
    if (dialect_.math_helpers.count(function)) {
      called_.insert(function);
      name = "kiln_" + function;
    } else if (auto spelled = dialect_.math_names.find(function);
               spelled != dialect_.math_names.end()) {
      name = spelled->second;
    } else {
      name = dialect_.math_prefix + function;
    }
    if (!wide) name += dialect_.float32_math_suffix;
    return name + "(" + argument + ")";
  }

  // A primitive operation in the dialect's spelling (C's infix operator unless the dialect spells
  // it otherwise).
  std::string primitive(Op op, OperandClass operands, const std::string& a,
                        const std::string& b = "") const {
    if (auto spelled = dialect_.op_spellings.find({op, operands});
        spelled != dialect_.op_spellings.end()) {
      std::string text;
      const std::string& pattern = spelled->second;
      for (size_t at = 0; at < pattern.size(); ++at) {
        if (pattern[at] == '$' && at + 1 < pattern.size() &&
            (pattern[at + 1] == '0' || pattern[at + 1] == '1')) {
          text += pattern[++at] == '0' ? a : b;
        } else {
          text += pattern[at];
        }
      }
      return text;
    }
    if (op == Op::Not) return "(!" + a + ")";
    return "(" + a + " " + c_operator(op) + " " + b + ")";
  }

  static const char* c_operator(Op op) {
    switch (op) {
      case Op::Add:
        return "+";
      case Op::Sub:
        return "-";
      case Op::Mul:
        return "*";
      case Op::Div:
        return "/";
      case Op::Mod:
        return "%";
      case Op::And:
        return "&";
      case Op::Or:
        return "|";
      case Op::Xor:
        return "^";
      case Op::Shl:
        return "<<";
      case Op::Shr:
        return ">>";
      case Op::CmpLt:
        return "<";
      case Op::CmpLe:
        return "<=";
      case Op::CmpGt:
        return ">";
      case Op::CmpGe:
        return ">=";
      case Op::CmpEq:
        return "==";
      case Op::CmpNe:
        return "!=";
      default:
        break;
    }
    throw InternalError(std::string("[render_kernel] no operator for ") + op_name(op));
  }

  std::string name_of(int value) const { return names_[value]; }

  // An index expression as an index_type value (a condition is a bool in GLSL).
  std::string index_value(const Sym& index) const {
    const std::string text = sym_text(index, dialect_);
    const SymKind kind = index.kind();
    if (kind == SymKind::Lt || kind == SymKind::Eq || kind == SymKind::And)
      return dialect_.cast(dialect_.index_type, text);
    return text;
  }

  // An instruction that still means kiln's semantics is decompose_semantics' to rewrite.
  void check_decomposed(int index) const {
    if (needs_decomposition(program_, index, dialect_))
      throw InternalError("[render_kernel] " + program_.name + ": instruction %" +
                          std::to_string(index) + " (" + program_.instrs[index].dtype.name() +
                          ") needs decompose_semantics before rendering");
  }

  // One instruction as the dialect's operator, function or select.
  std::string render_alu(int index) const {
    const LinInstr& instr = program_.instrs[index];
    const DType dtype = instr.dtype;
    const DType operand_dtype = program_.instrs[instr.srcs[0]].dtype;
    const OperandClass operands = operand_class(operand_dtype);
    const std::string a = name_of(instr.srcs[0]);
    const std::string b = instr.srcs.size() > 1 ? name_of(instr.srcs[1]) : "";
    const std::string c = instr.srcs.size() > 2 ? name_of(instr.srcs[2]) : "";
    switch (instr.alu) {
      case Op::Neg:  // a float's (decompose_semantics rewrites the others)
        return "(-" + a + ")";
      case Op::Not:
        return primitive(Op::Not, operands, a);
      case Op::Abs:
        return math("fabs", dtype, a);
      case Op::Recip:
        return primitive(Op::Div, operands, literal(dtype, ConstArg{1.0, 1}), a);
      case Op::Sqrt:
        return math("sqrt", dtype, a);
      case Op::Exp:
        return math("exp", dtype, a);
      case Op::Exp2:
        return math("exp2", dtype, a);
      case Op::Log:
        return math("log", dtype, a);
      case Op::Log2:
        return math("log2", dtype, a);
      case Op::Sin:
        return math("sin", dtype, a);
      case Op::Cos:
        return math("cos", dtype, a);
      case Op::Tan:
        return math("tan", dtype, a);
      case Op::Tanh:
        return math("tanh", dtype, a);
      case Op::Erf:
        return math("erf", dtype, a);
      case Op::Asin:
        return math("asin", dtype, a);
      case Op::Acos:
        return math("acos", dtype, a);
      case Op::Atan:
        return math("atan", dtype, a);
      case Op::Sinh:
        return math("sinh", dtype, a);
      case Op::Cosh:
        return math("cosh", dtype, a);
      case Op::Asinh:
        return math("asinh", dtype, a);
      case Op::Acosh:
        return math("acosh", dtype, a);
      case Op::Atanh:
        return math("atanh", dtype, a);
      case Op::Log10:
        return math("log10", dtype, a);
      case Op::Log1p:
        return math("log1p", dtype, a);
      case Op::Expm1:
        return math("expm1", dtype, a);
      case Op::Floor:
        return math("floor", dtype, a);
      case Op::Ceil:
        return math("ceil", dtype, a);
      case Op::Round:
        return math("rint", dtype, a);
      case Op::Trunc:
        return math("trunc", dtype, a);
      case Op::Mod:
        if (operands == OperandClass::Float) return math("fmod", dtype, a + ", " + b);
        return primitive(Op::Mod, operands, a, b);  // a divisor never 0 nor -1
      case Op::Pow:
        return math("pow", dtype, a + ", " + b);
      case Op::Atan2:
        return math("atan2", dtype, a + ", " + b);
      case Op::Hypot:
        return math("hypot", dtype, a + ", " + b);
      case Op::Copysign:
        return math("copysign", dtype, a + ", " + b);
      case Op::CmpLt:
      case Op::CmpLe:
      case Op::CmpGt:
      case Op::CmpGe:
      case Op::CmpEq:
      case Op::CmpNe:
      case Op::And:
      case Op::Or:
      case Op::Xor:
      case Op::Shr:
      case Op::Shl:
      case Op::Add:
      case Op::Sub:
      case Op::Mul:
      case Op::Div:
        return primitive(instr.alu, operands, a, b);
      case Op::Where:
        return "(" + a + " ? " + b + " : " + c + ")";
      default:
        break;
    }
    throw InternalError(std::string("[render_kernel] no rendering for ") + op_name(instr.alu));
  }

  std::string render_cast(int index) const {
    const LinInstr& instr = program_.instrs[index];
    const DType to = instr.dtype;
    const LinInstr& source = program_.instrs[instr.srcs[0]];
    const DType from = source.dtype;
    const std::string value = name_of(instr.srcs[0]);
    if (to.is_bool()) return primitive(Op::CmpNe, operand_class(from), value, zero(from));
    // Into a half type: its compute type (decompose_semantics rounds after); a float into an
    // integer: in the target's range, or selected away after (decompose_semantics saturates).
    return dialect_.cast(compute_type(to), value);
  }

  // A half type's value as its 16 bits, or back.
  std::string render_bitcast(const LinInstr& instr) const {
    const DType to = instr.dtype;
    const DType from = program_.instrs[instr.srcs[0]].dtype;
    const std::string value = name_of(instr.srcs[0]);
    if (from.is_half() && to == dtypes::uint16)
      return (from == dtypes::float16 ? dialect_.float_to_half : dialect_.float_to_bfloat16) + "(" +
             value + ")";
    if (from == dtypes::uint16 && to.is_half())
      return (to == dtypes::float16 ? dialect_.half_to_float : dialect_.bfloat16_to_float) + "(" +
             value + ")";
    if (from == dtypes::float32 && to == dtypes::uint32) return "KILN_AS_BITS(" + value + ")";
    if (from == dtypes::uint32 && to == dtypes::float32) return "KILN_AS_FLOAT(" + value + ")";
    if (from == dtypes::float64 && to == dtypes::uint64) return "KILN_AS_BITS64(" + value + ")";
    if (from == dtypes::uint64 && to == dtypes::float64) return "KILN_AS_DOUBLE(" + value + ")";
    throw InternalError(std::string("[render_kernel] no bit cast from ") + from.name() + " to " +
                        to.name());
  }

  // A parameter, a local array, or a 16-bit parameter as its 32-bit words (LinInstr::words).
  std::string buffer_name(const LinInstr& instr, bool writable = false) const {
    if (instr.local) return names_[instr.buffer];
    if (!instr.words) return param_name(instr.buffer);
    if (!dialect_.word_buffer)
      throw InternalError("[render_kernel] the " + dialect_.name +
                          " dialect has no words (kernel " + program_.name + ")");
    return dialect_.word_buffer(param_name(instr.buffer), writable);
  }

  // A store to local memory: a computed value, or into a packed array (LinInstr::packed) that
  // matrix units read, its 16 bits (emulated fragments read the value rounded before).
  std::string local_store(const LinInstr& instr, const std::string& buffer,
                          const std::string& index, const std::string& value) const {
    const LinInstr& array = program_.instrs[instr.buffer];
    if (array.packed && dialect_.mma) return dialect_.store(instr.dtype, buffer, index, value);
    return buffer + "[" + index + "] = " + value;
  }

  std::string load_expression(const LinInstr& instr) const {
    const std::string buffer = buffer_name(instr);
    const std::string index = sym_text(instr.index, dialect_);
    // Local memory holds values in their compute type.
    std::string element = instr.local || instr.words ? buffer + "[" + index + "]"
                                                     : dialect_.load(instr.dtype, buffer, index);
    if (instr.valid == Sym(1)) return element;
    return "(" + sym_text(instr.valid, dialect_) + " ? " + element + " : " +
           literal(instr.dtype, ConstArg{}) + ")";
  }

  // The statement (without ';') that folds srcs[1] into the accumulator srcs[0]: the target's
  // + or *, or (primitive) srcs[1] itself, the update computed before.
  std::string reduce_update(int index) const {
    const LinInstr& instr = program_.instrs[index];
    const std::string acc = name_of(instr.srcs[0]);
    const std::string value = name_of(instr.srcs[1]);
    if (instr.primitive) return acc + " = " + value;
    const Op op = instr.reduce == ReduceOp::Prod ? Op::Mul : Op::Add;
    return acc + " = " + primitive(op, operand_class(instr.dtype), acc, value);
  }

  // The reduction operator of the pragma before the loop `loop`; "" for none.
  std::string reduction_clause(const LinInstr& loop) const {
    if (loop.reduction_acc < 0 || dialect_.reduce_loop_pragma.empty()) return "";
    switch (loop.reduce) {
      case ReduceOp::Sum:
        return "+";
      case ReduceOp::Max:
        return dialect_.max_reduction_name;
      case ReduceOp::Min:
        return dialect_.min_reduction_name;
      default:
        return "";
    }
  }

  void render_instr(std::ostringstream& out, int index) {
    check_decomposed(index);
    const LinInstr& instr = program_.instrs[index];
    const std::string value_name = "v" + std::to_string(index);
    const std::string type = compute_type(instr.dtype);
    switch (instr.op) {
      case LinOp::Const:
        names_[index] = literal(instr.dtype, instr.value);
        return;
      case LinOp::Index:
        names_[index] = value_name;
        out << pad() << dialect_.exact_qualifier << dialect_.value_qualifier << dialect_.index_type
            << " " << value_name << " = " << index_value(instr.index) << ";\n";
        return;
      case LinOp::IndexOf: {
        // A position past a 32-bit index type (GLSL's) is held in its wide type.
        const bool wide = !dialect_.wide_index_type.empty() &&
                          instr.loop_end.vmax() - 1 > std::numeric_limits<int32_t>::max();
        const std::string& type = wide ? dialect_.wide_index_type : dialect_.index_type;
        names_[index] = instr.loop_var;
        out << pad() << dialect_.exact_qualifier << dialect_.value_qualifier << type << " "
            << instr.loop_var << " = " << dialect_.cast(type, name_of(instr.srcs[0])) << ";\n";
        return;
      }
      case LinOp::Load:
        names_[index] = value_name;
        if (instr.vector_width > 1) {
          // The vector, then its first lane; the other lanes' loads read theirs from it.
          out << pad() << dialect_.exact_qualifier << dialect_.value_qualifier
              << dialect_.vector_type(instr.dtype, instr.vector_width) << " " << value_name
              << "_vector = "
              << dialect_.vector_load(instr.dtype, instr.vector_width, buffer_name(instr),
                                      sym_text(instr.index, dialect_))
              << ";\n";
          out << pad() << dialect_.exact_qualifier << dialect_.value_qualifier << type << " "
              << value_name << " = " << dialect_.vector_lane(value_name + "_vector", 0) << ";\n";
        } else if (instr.vector_head >= 0) {
          out << pad() << dialect_.exact_qualifier << dialect_.value_qualifier << type << " "
              << value_name << " = "
              << dialect_.vector_lane(names_[instr.vector_head] + "_vector", instr.vector_lane)
              << ";\n";
        } else {
          out << pad() << dialect_.exact_qualifier << dialect_.value_qualifier << type << " "
              << value_name << " = " << load_expression(instr) << ";\n";
        }
        return;
      case LinOp::Alu:
        names_[index] = value_name;
        out << pad() << dialect_.exact_qualifier << dialect_.value_qualifier << type << " "
            << value_name << " = " << render_alu(index) << ";\n";
        return;
      case LinOp::Cast:
        names_[index] = value_name;
        out << pad() << dialect_.exact_qualifier << dialect_.value_qualifier << type << " "
            << value_name << " = " << render_cast(index) << ";\n";
        return;
      case LinOp::Bitcast:
        names_[index] = value_name;
        out << pad() << dialect_.exact_qualifier << dialect_.value_qualifier << type << " "
            << value_name << " = " << render_bitcast(instr) << ";\n";
        return;
      case LinOp::AccDefine:
        names_[index] = "acc" + std::to_string(index);
        out << pad() << dialect_.exact_qualifier << type << " " << names_[index] << " = "
            << literal(instr.dtype, instr.value) << ";\n";
        return;
      case LinOp::AccUpdate:
        out << pad() << reduce_update(index) << ";\n";
        return;
      case LinOp::LoopBegin:
        if (const std::string clause = reduction_clause(instr); !clause.empty()) {
          out << pad() << dialect_.reduce_loop_pragma << "(" << clause << ":"
              << names_[instr.reduction_acc] << ")\n";
        }
        out << pad() << "for (" << dialect_.index_type << " " << instr.loop_var << " = 0; "
            << instr.loop_var << " < " << size_text(instr.loop_end, dialect_) << "; "
            << instr.loop_var << "++) {\n";
        ++indent_;
        return;
      case LinOp::LoopEnd:
        --indent_;
        out << pad() << "}\n";
        return;
      case LinOp::Store: {
        if (instr.vector_head >= 0) return;  // written by its vector's first store
        const std::string buffer = buffer_name(instr, /*writable=*/true);
        const std::string element_index = sym_text(instr.index, dialect_);
        const std::string value = name_of(instr.srcs[0]);
        std::string statement = instr.local ? local_store(instr, buffer, element_index, value)
                                : instr.words
                                    ? buffer + "[" + element_index + "] = " + value
                                    : dialect_.store(instr.dtype, buffer, element_index, value);
        if (instr.vector_width > 1) {
          std::vector<std::string> values;
          for (int src : instr.srcs) values.push_back(name_of(src));
          statement = dialect_.vector_store(instr.dtype, buffer, element_index, values);
        }
        out << pad();
        if (!(instr.valid == Sym(1))) out << "if (" << sym_text(instr.valid, dialect_) << ") ";
        out << statement << ";\n";
        return;
      }
      case LinOp::DefineLocal:  // rendered first
        return;
      case LinOp::Barrier:
        out << pad() << dialect_.barrier << "\n";
        return;
      case LinOp::FragmentDefine:
      case LinOp::FragmentLoad:
      case LinOp::Mma:
      case LinOp::FragmentStore:
        for (const std::string& line : render_fragment_op(program_, index, names_, dialect_))
          out << pad() << line << "\n";
        return;
      case LinOp::GridTicket: {
        if (!dialect_.atomic_increment)
          throw InternalError("[render_kernel] the " + dialect_.name +
                              " dialect has no GRID (kernel " + program_.name + ")");
        const std::string& flag = names_[instr.srcs[0]];
        const std::string& u = dialect_.uint32_literal_suffix;
        out << pad() << dialect_.global_fence << "\n";
        out << pad() << "if (" << sym_text(instr.valid, dialect_) << ") " << flag << "[0] = ("
            << dialect_.atomic_increment(buffer_name(instr)) << " == " << instr.local_size - 1 << u
            << ") ? 1" << u << " : 0" << u << ";\n";
        out << pad() << dialect_.barrier << "\n";
        // And the other side: the last workgroup's reads of the partials come after this fence.
        out << pad() << dialect_.global_fence << "\n";
        names_[index] = instr.loop_var;
        out << pad() << dialect_.value_qualifier << dialect_.index_type << " " << instr.loop_var
            << " = " << dialect_.cast(dialect_.index_type, flag + "[0]") << ";\n";
        return;
      }
    }
  }

  const LinearProgram& program_;
  const Dialect& dialect_;
  std::vector<std::string> names_;
  // The math helpers the kernel calls (Dialect::math_libraries).
  mutable std::set<std::string> called_;
  int indent_ = 0;
};

}  // namespace

std::string render_kernel(const LinearProgram& program, const Dialect& dialect) {
  return Renderer(program, dialect).run();
}

}  // namespace kiln

#include "codegen/index_text.h"

#include <limits>

namespace kiln {

std::string int_literal(int64_t value, const Dialect& dialect) {
  if (value == std::numeric_limits<int64_t>::min())
    return "(-9223372036854775807" + dialect.int64_literal_suffix + " - 1)";
  if (value >= -2147483647 && value <= 2147483647) return std::to_string(value);
  return std::to_string(value) + dialect.int64_literal_suffix;
}

std::string sym_text(const Sym& value, const Dialect& dialect) {
  switch (value.kind()) {
    case SymKind::Const:
      return int_literal(value.const_value(), dialect);
    case SymKind::Var:
      return value.var_name();
    case SymKind::Sum: {
      std::string text = "(";
      bool first = true;
      for (const auto& [atom, coefficient] : value.sum_terms()) {
        if (!first) text += " + ";
        first = false;
        text += coefficient == 1
                    ? sym_text(atom, dialect)
                    : sym_text(atom, dialect) + " * " + int_literal(coefficient, dialect);
      }
      if (value.sum_constant() != 0) text += " + " + int_literal(value.sum_constant(), dialect);
      return text + ")";
    }
    default:
      break;
  }
  const Sym& left = value.operands()[0];
  const Sym& right = value.operands()[1];
  const std::string a = sym_text(left, dialect);
  const std::string b = sym_text(right, dialect);
  switch (value.kind()) {
    case SymKind::Mul:
      return "(" + a + " * " + b + ")";
    case SymKind::Div:
      if (left.vmin() >= 0) return "(" + a + " / " + b + ")";
      return "kiln_floordiv(" + a + ", " + b + ")";
    case SymKind::Mod:
      if (left.vmin() >= 0) return "(" + a + " % " + b + ")";
      return "kiln_floormod(" + a + ", " + b + ")";
    case SymKind::Min:
      return "(" + a + " < " + b + " ? " + a + " : " + b + ")";
    case SymKind::Max:
      return "(" + a + " > " + b + " ? " + a + " : " + b + ")";
    case SymKind::Lt:
      return "(" + a + " < " + b + ")";
    case SymKind::Eq:
      return "(" + a + " == " + b + ")";
    case SymKind::And:
      return "(" + a + " && " + b + ")";
    default:
      return "0";
  }
}

}  // namespace kiln

#include "codegen/index_text.h"

#include <cmath>
#include <cstdio>
#include <limits>

namespace kiln {

std::string int_literal(int64_t value, const Dialect& dialect) {
  if (value == std::numeric_limits<int64_t>::min())
    return "(-9223372036854775807" + dialect.int64_literal_suffix + " - 1)";
  if (value >= -2147483647 && value <= 2147483647) return std::to_string(value);
  return std::to_string(value) + dialect.int64_literal_suffix;
}

std::string float_literal(double number, bool wide, const Dialect& dialect) {
  char text[64];
  std::snprintf(text, sizeof(text), wide ? "%.17g" : "%.9g", number);
  std::string result = text;
  if (result.find_first_of(".en") == std::string::npos) result += ".0";
  return result + (wide ? dialect.float64_literal_suffix : dialect.float32_literal_suffix);
}

std::string value_literal(DType dtype, const ConstArg& value, const Dialect& dialect) {
  if (dtype.is_bool())
    return value.int_value || value.float_value != 0 ? dialect.true_literal : dialect.false_literal;
  if (dtype.is_float()) {
    const bool wide = dtype == dtypes::float64;
    // Narrowed first: a value beyond float's range is float's infinity, never `inff`.
    const double number =
        wide ? value.float_value : static_cast<double>(static_cast<float>(value.float_value));
    if (std::isnan(number)) return wide ? dialect.float64_nan : dialect.float32_nan;
    if (const std::string& zero = wide ? dialect.float64_zero : dialect.float32_zero;
        number == 0 && !zero.empty())
      return std::signbit(number) ? "(-" + zero + ")" : zero;
    if (std::isinf(number)) {
      const std::string& inf = wide ? dialect.float64_infinity : dialect.float32_infinity;
      return number < 0 ? "(-" + inf + ")" : inf;
    }
    return "(" + float_literal(number, wide, dialect) + ")";
  }
  const std::string& type = dialect.type_name(dtype);
  if (dtype.is_unsigned()) {
    const uint64_t number = static_cast<uint64_t>(value.int_value);
    return dialect.cast(
        type, std::to_string(number) + (number <= 0xffffffffu ? dialect.uint32_literal_suffix
                                                              : dialect.uint64_literal_suffix));
  }
  return dialect.cast(type, int_literal(value.int_value, dialect));
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

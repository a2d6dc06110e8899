#include "codegen/index_text.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
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

namespace {

int64_t saturating_add(int64_t a, int64_t b) {
  int64_t sum;
  return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<int64_t>::max() : sum;
}

int64_t saturating_mul(int64_t a, int64_t b) {
  int64_t product;
  return __builtin_mul_overflow(a, b, &product) ? std::numeric_limits<int64_t>::max() : product;
}

int64_t magnitude_of(int64_t value) {
  return value == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max()
                                                      : std::abs(value);
}

// The largest magnitude any step of `value`'s text computes: a sum's terms added one by one, a
// product of its operands' largest, the operands of every other kind.
int64_t largest_step(const Sym& value) {
  const int64_t own = std::max(magnitude_of(value.vmin()), magnitude_of(value.vmax()));
  switch (value.kind()) {
    case SymKind::Const:
    case SymKind::Var:
      return own;
    case SymKind::Sum: {
      int64_t running = magnitude_of(value.sum_constant()), largest = own;
      for (const auto& [atom, coefficient] : value.sum_terms()) {
        const int64_t atom_step = largest_step(atom);
        const int64_t term = saturating_mul(atom_step, magnitude_of(coefficient));
        running = saturating_add(running, term);
        largest = std::max({largest, atom_step, term, running});
      }
      return largest;
    }
    default:
      break;
  }
  const int64_t left = largest_step(value.operands()[0]);
  const int64_t right = largest_step(value.operands()[1]);
  int64_t largest = std::max({own, left, right});
  if (value.kind() == SymKind::Mul) largest = std::max(largest, saturating_mul(left, right));
  return largest;
}

std::string sym_text_in(const Sym& value, const Dialect& dialect, bool wide);

}  // namespace

std::string sym_text(const Sym& value, const Dialect& dialect) {
  // Where index_type is 32 bits (GLSL) and some step would pass its range (a flat index of more
  // than 2^31 work items taken modulo a size), the arithmetic is done in wide_index_type and the
  // value converted back: the result itself is an index into a buffer, which fits.
  if (dialect.wide_index_type.empty() || largest_step(value) <= std::numeric_limits<int32_t>::max())
    return sym_text_in(value, dialect, false);
  const std::string text = sym_text_in(value, dialect, true);
  const SymKind kind = value.kind();
  if (kind == SymKind::Lt || kind == SymKind::Eq || kind == SymKind::And) return text;
  return dialect.cast(dialect.index_type, text);
}

namespace {

std::string sym_text_in(const Sym& value, const Dialect& dialect, bool wide) {
  switch (value.kind()) {
    case SymKind::Const:
      return int_literal(value.const_value(), dialect);
    case SymKind::Var:
      return wide ? dialect.cast(dialect.wide_index_type, value.var_name()) : value.var_name();
    case SymKind::Sum: {
      std::string text = "(";
      bool first = true;
      for (const auto& [atom, coefficient] : value.sum_terms()) {
        if (!first) text += " + ";
        first = false;
        text += coefficient == 1
                    ? sym_text_in(atom, dialect, wide)
                    : sym_text_in(atom, dialect, wide) + " * " + int_literal(coefficient, dialect);
      }
      if (value.sum_constant() != 0) text += " + " + int_literal(value.sum_constant(), dialect);
      return text + ")";
    }
    default:
      break;
  }
  const Sym& left = value.operands()[0];
  const Sym& right = value.operands()[1];
  const std::string a = sym_text_in(left, dialect, wide);
  const std::string b = sym_text_in(right, dialect, wide);
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

}  // namespace

}  // namespace kiln

#include "core/symbolic.h"

#include <kiln/error.h>

#include <algorithm>
#include <cctype>
#include <numeric>
#include <set>

#include "core/symbolic_node.h"

namespace kiln {

Sym::Sym(int64_t value) : node_(SymBuilder::small_constant(value)) {}

Sym Sym::var(const std::string& name, int64_t min_value, int64_t max_value) {
  if (min_value > max_value) {
    throw ShapeError("[Sym::var] variable '" + name + "' has empty range [" +
                     std::to_string(min_value) + ", " + std::to_string(max_value) + "]");
  }
  if (min_value == max_value) return Sym(min_value);
  SymNode node;
  node.kind = SymKind::Var;
  node.name = name;
  node.vmin = min_value;
  node.vmax = max_value;
  node.key = name;
  return SymBuilder::make(std::move(node));
}

Sym Sym::parameter(const std::string& name, int64_t min_value, int64_t max_value) {
  const Sym variable = var(name, min_value, max_value);
  if (variable.is_const()) return variable;
  SymNode node = *variable.node();
  node.parameter = true;
  node.key = name + "[" + std::to_string(min_value) + "," + std::to_string(max_value) + "]";
  return SymBuilder::make(std::move(node));
}

Sym Sym::bound_var(const std::string& name, int64_t min_value, int64_t max_value, int64_t value) {
  if (value < min_value || value > max_value) {
    throw ShapeError("[Sym::bound_var] variable '" + name + "' bound to " + std::to_string(value) +
                     ", outside its bounds [" + std::to_string(min_value) + ", " +
                     std::to_string(max_value) + "]");
  }
  const Sym variable = var(name, min_value, max_value);
  if (variable.is_const()) return variable;
  SymNode node = *variable.node();
  node.bound = true;
  node.value = value;
  node.key = name + "=" + std::to_string(value) + "[" + std::to_string(min_value) + "," +
             std::to_string(max_value) + "]";
  return SymBuilder::make(std::move(node));
}

std::string Sym::to_string() const {
  // A bound variable's key is name=value[min,max]: keep the name.
  const std::string& text = key();
  std::string named;
  for (size_t at = 0; at < text.size(); ++at) {
    if (text[at] == '=') {
      size_t end = at + 1;
      if (end < text.size() && text[end] == '-') ++end;
      while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
      if (end > at + 1 && end < text.size() && text[end] == '[') {
        at = text.find(']', end);
        continue;
      }
    }
    named += text[at];
  }
  return named;
}

bool Sym::is_bound() const {
  return node_->kind == SymKind::Var && node_->bound;
}
int64_t Sym::bound_value() const {
  return node_->value;
}

bool Sym::has_unbound() const {
  for (const Sym& variable : variable_nodes()) {
    if (!variable.is_bound()) return true;
  }
  return false;
}

std::vector<Sym> Sym::variable_nodes() const {
  std::set<Sym> found;
  std::vector<const Sym*> stack{this};
  while (!stack.empty()) {
    const Sym* value = stack.back();
    stack.pop_back();
    const SymNode* node = value->node();
    if (node->kind == SymKind::Var) found.insert(*value);
    for (const auto& term : node->terms) stack.push_back(&term.first);
    for (const auto& operand : node->operands) stack.push_back(&operand);
  }
  return {found.begin(), found.end()};
}

SymKind Sym::kind() const {
  return node_->kind;
}
int64_t Sym::const_value() const {
  return node_->value;
}
const std::string& Sym::var_name() const {
  return node_->name;
}
int64_t Sym::vmin() const {
  return node_->vmin;
}
int64_t Sym::vmax() const {
  return node_->vmax;
}
int64_t Sym::sum_constant() const {
  return node_->value;
}
const SymTerms& Sym::sum_terms() const {
  return node_->terms;
}
const std::vector<Sym>& Sym::operands() const {
  return node_->operands;
}
const std::string& Sym::key() const {
  return node_->key;
}

size_t Sym::hash() const {
  return node_->hash;
}

bool Sym::operator<(const Sym& other) const {
  return compare_nodes(node_.get(), other.node_.get()) < 0;
}

int64_t Sym::eval(const std::map<std::string, int64_t>& values) const {
  const SymNode* node = node_.get();
  switch (node->kind) {
    case SymKind::Const:
      return node->value;
    case SymKind::Var: {
      auto found = values.find(node->name);
      if (found == values.end() && node->bound) return node->value;
      if (found == values.end())
        throw Error("[Sym::eval] no value for variable '" + node->name + "'");
      return found->second;
    }
    case SymKind::Sum: {
      int64_t total = node->value;
      for (const auto& [atom, coefficient] : node->terms) total += atom.eval(values) * coefficient;
      return total;
    }
    default:
      break;
  }
  const int64_t a = node->operands[0].eval(values);
  const int64_t b = node->operands[1].eval(values);
  switch (node->kind) {
    case SymKind::Mul:
      return a * b;
    case SymKind::Div:
      return floor_div(a, b);
    case SymKind::Mod:
      return floor_mod(a, b);
    case SymKind::Min:
      return std::min(a, b);
    case SymKind::Max:
      return std::max(a, b);
    case SymKind::Lt:
      return a < b ? 1 : 0;
    case SymKind::Eq:
      return a == b ? 1 : 0;
    case SymKind::And:
      return (a != 0 && b != 0) ? 1 : 0;
    default:
      return 0;
  }
}

namespace {

// Rebuilds `value` with each variable replaced by `replace(variable)` (null: kept), simplifying
// on the way up.
template <typename Replace>
Sym substitute_variables(const Sym& value, const Replace& replace) {
  switch (value.kind()) {
    case SymKind::Const:
      return value;
    case SymKind::Var: {
      const Sym* replacement = replace(value);
      return replacement ? *replacement : value;
    }
    case SymKind::Sum: {
      Sym total(value.sum_constant());
      for (const auto& [atom, coefficient] : value.sum_terms())
        total = total + substitute_variables(atom, replace) * Sym(coefficient);
      return total;
    }
    default:
      break;
  }
  const Sym a = substitute_variables(value.operands()[0], replace);
  const Sym b = substitute_variables(value.operands()[1], replace);
  switch (value.kind()) {
    case SymKind::Mul:
      return a * b;
    case SymKind::Div:
      return floordiv(a, b);
    case SymKind::Mod:
      return mod(a, b);
    case SymKind::Min:
      return sym_min(a, b);
    case SymKind::Max:
      return sym_max(a, b);
    case SymKind::Lt:
      return lt(a, b);
    case SymKind::Eq:
      return eq(a, b);
    default:
      return logical_and(a, b);
  }
}

}  // namespace

Sym Sym::substitute(const std::map<std::string, Sym>& by_name) const {
  return substitute_variables(*this, [&](const Sym& variable) -> const Sym* {
    auto found = by_name.find(variable.var_name());
    return found == by_name.end() ? nullptr : &found->second;
  });
}

Sym Sym::substitute(const std::map<Sym, Sym>& by_variable) const {
  return substitute_variables(*this, [&](const Sym& variable) -> const Sym* {
    auto found = by_variable.find(variable);
    return found == by_variable.end() ? nullptr : &found->second;
  });
}

std::vector<std::string> Sym::variables() const {
  std::set<std::string> names;
  std::vector<const SymNode*> stack{node_.get()};
  while (!stack.empty()) {
    const SymNode* node = stack.back();
    stack.pop_back();
    if (node->kind == SymKind::Var) names.insert(node->name);
    for (const auto& term : node->terms) stack.push_back(term.first.node());
    for (const auto& operand : node->operands) stack.push_back(operand.node());
  }
  return {names.begin(), names.end()};
}

Sym operator+(const Sym& a, const Sym& b) {
  if (a.is_const() && b.is_const()) return Sym(a.const_value() + b.const_value());
  if (a.is_const() && a.const_value() == 0) return b;
  if (b.is_const() && b.const_value() == 0) return a;
  TermMap terms;
  int64_t constant = 0;
  SymBuilder::linear_form(a, 1, terms, constant);
  SymBuilder::linear_form(b, 1, terms, constant);
  return SymBuilder::from_linear(terms, constant);
}

Sym operator-(const Sym& a) {
  return a * Sym(-1);
}
Sym operator-(const Sym& a, const Sym& b) {
  return a + (-b);
}

Sym operator*(const Sym& a, const Sym& b) {
  if (a.is_const() && b.is_const()) return Sym(a.const_value() * b.const_value());
  if (b.is_const()) return b * a;
  if (a.is_const()) {
    const int64_t scale = a.const_value();
    if (scale == 0) return Sym(0);
    if (scale == 1) return b;
    TermMap terms;
    int64_t constant = 0;
    SymBuilder::linear_form(b, scale, terms, constant);
    return SymBuilder::from_linear(terms, constant);
  }
  const Sym& first = b < a ? b : a;
  const Sym& second = b < a ? a : b;
  const Wide corners[] = {
      static_cast<Wide>(a.vmin()) * b.vmin(), static_cast<Wide>(a.vmin()) * b.vmax(),
      static_cast<Wide>(a.vmax()) * b.vmin(), static_cast<Wide>(a.vmax()) * b.vmax()};
  return SymBuilder::binary(SymKind::Mul, first, second,
                            clamp_wide(*std::min_element(corners, corners + 4)),
                            clamp_wide(*std::max_element(corners, corners + 4)), "*");
}

namespace {

// Splits a by a positive constant divisor: a = divisor * quotient + remainder, where the
// quotient collects every term whose coefficient is a multiple of the divisor and the remainder
// keeps the rest with coefficients reduced to [0, divisor).
void split_by(const Sym& a, int64_t divisor, Sym& quotient, Sym& remainder) {
  quotient = Sym(0);
  remainder = Sym(0);
  auto add_part = [&](const Sym& atom, int64_t coefficient) {
    quotient = quotient + atom * Sym(floor_div(coefficient, divisor));
    remainder = remainder + atom * Sym(floor_mod(coefficient, divisor));
  };
  if (a.kind() == SymKind::Sum) {
    for (const auto& [atom, coefficient] : a.sum_terms()) add_part(atom, coefficient);
    quotient = quotient + Sym(floor_div(a.sum_constant(), divisor));
    remainder = remainder + Sym(floor_mod(a.sum_constant(), divisor));
  } else if (a.is_const()) {
    quotient = Sym(floor_div(a.const_value(), divisor));
    remainder = Sym(floor_mod(a.const_value(), divisor));
  } else {
    add_part(a, 1);
  }
}

// Greatest common divisor of every coefficient and the constant of a linear form.
int64_t content_gcd(const Sym& a) {
  if (a.is_const()) return std::abs(a.const_value());
  if (a.kind() != SymKind::Sum) return 1;
  int64_t result = std::abs(a.sum_constant());
  for (const auto& term : a.sum_terms()) result = std::gcd(result, std::abs(term.second));
  return result;
}

Sym divide_exact(const Sym& a, int64_t divisor) {
  Sym quotient, remainder;
  split_by(a, divisor, quotient, remainder);
  return quotient;
}

}  // namespace

Sym floordiv(const Sym& a, const Sym& b) {
  if (b.is_const()) {
    const int64_t divisor = b.const_value();
    if (divisor <= 0) throw Error("[floordiv] divisor must be positive, got " + b.key());
    if (divisor == 1) return a;
    if (a.is_const()) return Sym(floor_div(a.const_value(), divisor));
    if (a.vmin() >= 0 && a.vmax() < divisor) return Sym(0);
    // (x // c1) // c2 == x // (c1 * c2) for positive constants.
    if (a.kind() == SymKind::Div && a.operands()[1].is_const()) {
      return floordiv(a.operands()[0], Sym(a.operands()[1].const_value() * divisor));
    }
    Sym quotient, remainder;
    split_by(a, divisor, quotient, remainder);
    const int64_t low = floor_div(remainder.vmin(), divisor);
    const int64_t high = floor_div(remainder.vmax(), divisor);
    if (low == high) return quotient + Sym(low);
    const int64_t common = std::gcd(content_gcd(remainder), divisor);
    if (common > 1) {
      return quotient + floordiv(divide_exact(remainder, common), Sym(divisor / common));
    }
    return quotient + SymBuilder::binary(SymKind::Div, remainder, b, low, high, "//");
  }
  if (b.vmin() <= 0) throw Error("[floordiv] divisor must be positive, got " + b.key());
  if (a == b) return Sym(1);
  if (a.vmin() >= 0 && a.vmax() < b.vmin()) return Sym(0);
  const int64_t low = std::min(floor_div(a.vmin(), b.vmin()), floor_div(a.vmin(), b.vmax()));
  const int64_t high = std::max(floor_div(a.vmax(), b.vmin()), floor_div(a.vmax(), b.vmax()));
  return SymBuilder::binary(SymKind::Div, a, b, low, high, "//");
}

Sym mod(const Sym& a, const Sym& b) {
  if (b.is_const()) {
    const int64_t divisor = b.const_value();
    if (divisor <= 0) throw Error("[mod] divisor must be positive, got " + b.key());
    if (divisor == 1) return Sym(0);
    if (a.is_const()) return Sym(floor_mod(a.const_value(), divisor));
    // (x % c1) % c2 == x % c2 when c2 divides c1.
    if (a.kind() == SymKind::Mod && a.operands()[1].is_const() &&
        a.operands()[1].const_value() % divisor == 0) {
      return mod(a.operands()[0], b);
    }
    Sym quotient, remainder;
    split_by(a, divisor, quotient, remainder);
    const int64_t low = floor_div(remainder.vmin(), divisor);
    const int64_t high = floor_div(remainder.vmax(), divisor);
    if (low == high) return remainder - Sym(low * divisor);
    const int64_t common = std::gcd(content_gcd(remainder), divisor);
    if (common > 1) {
      return mod(divide_exact(remainder, common), Sym(divisor / common)) * Sym(common);
    }
    return SymBuilder::binary(SymKind::Mod, remainder, b, 0, divisor - 1, "%");
  }
  if (b.vmin() <= 0) throw Error("[mod] divisor must be positive, got " + b.key());
  if (a == b) return Sym(0);
  if (a.vmin() >= 0 && a.vmax() < b.vmin()) return a;
  return SymBuilder::binary(SymKind::Mod, a, b, 0, b.vmax() - 1, "%");
}

Sym sym_min(const Sym& a, const Sym& b) {
  if (a.vmax() <= b.vmin()) return a;
  if (b.vmax() <= a.vmin()) return b;
  if (a == b) return a;
  const Sym& first = b < a ? b : a;
  const Sym& second = b < a ? a : b;
  return SymBuilder::binary(SymKind::Min, first, second, std::min(a.vmin(), b.vmin()),
                            std::min(a.vmax(), b.vmax()), "min");
}

Sym sym_max(const Sym& a, const Sym& b) {
  if (a.vmin() >= b.vmax()) return a;
  if (b.vmin() >= a.vmax()) return b;
  if (a == b) return a;
  const Sym& first = b < a ? b : a;
  const Sym& second = b < a ? a : b;
  return SymBuilder::binary(SymKind::Max, first, second, std::max(a.vmin(), b.vmin()),
                            std::max(a.vmax(), b.vmax()), "max");
}

Sym lt(const Sym& a, const Sym& b) {
  const Sym difference = a - b;
  if (difference.vmax() < 0) return Sym(1);
  if (difference.vmin() >= 0) return Sym(0);
  // Compare the parts that differ: (x + 3 < y + 5) becomes (x - y < 2) only when that is shorter;
  // keeping the original operands reads better in rendered kernels.
  return SymBuilder::binary(SymKind::Lt, a, b, 0, 1, "<");
}

Sym le(const Sym& a, const Sym& b) {
  return lt(a, b + Sym(1));
}
Sym ge(const Sym& a, const Sym& b) {
  return lt(b, a + Sym(1));
}

Sym eq(const Sym& a, const Sym& b) {
  const Sym difference = a - b;
  if (difference.is_const()) return Sym(difference.const_value() == 0 ? 1 : 0);
  if (difference.vmin() > 0 || difference.vmax() < 0) return Sym(0);
  return SymBuilder::binary(SymKind::Eq, a, b, 0, 1, "==");
}

Sym logical_and(const Sym& a, const Sym& b) {
  if (a.is_const())
    return a.const_value() == 0 ? Sym(0)
                                : (b.vmin() >= 0 && b.vmax() <= 1 ? b : logical_and(b, Sym(1)));
  if (b.is_const()) {
    if (b.const_value() == 0) return Sym(0);
    if (a.vmin() >= 0 && a.vmax() <= 1) return a;
  }
  // x && x is x only for a 0/1 value; otherwise it is still (x != 0), which needs the node.
  if (a == b && a.vmin() >= 0 && a.vmax() <= 1) return a;
  return SymBuilder::binary(SymKind::And, a, b, 0, 1, "&&");
}

Sym sym_prod(const std::vector<Sym>& values) {
  Sym product(1);
  for (const Sym& value : values) product = product * value;
  return product;
}

}  // namespace kiln

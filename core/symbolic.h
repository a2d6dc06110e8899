#pragma once
// Symbolic integers: shapes, strides, offsets and kernel index arithmetic.
//
// A Sym is an immutable value (a shared pointer to a node). Nodes are hash-consed like UOps:
// building the same structure twice gives the same node, so equality is pointer equality and the
// hash is cached; the text key is for printing and for text keys only. Every constructor
// simplifies as it builds: sums are kept in a linear normal form (constant + sum of coefficient *
// atom, like terms combined), and each node knows its range [vmin, vmax], which the rules use to
// drop divisions, modulos, min/max and comparisons that cannot matter. Division and modulo are
// floor division and the matching non-negative modulo (Python semantics), which keep the algebra
// simple; renderers emit C's truncating operators when the numerator is known to be non-negative.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kiln {

enum class SymKind : uint8_t { Const, Var, Sum, Mul, Div, Mod, Min, Max, Lt, Eq, And };

class Sym;
struct SymNode;
using SymTerms = std::vector<std::pair<Sym, int64_t>>;  // (atom, coefficient)

class Sym {
 public:
  Sym() : Sym(int64_t{0}) {}
  Sym(int64_t value);  // NOLINT: constants convert implicitly, as in arithmetic
  Sym(int value) : Sym(static_cast<int64_t>(value)) {}  // NOLINT

  // A named variable with inclusive bounds.
  static Sym var(const std::string& name, int64_t min_value, int64_t max_value);
  // A variable whose key names its bounds too ("var_n[1,64]"): a kernel's parameter, so that
  // kernels over one name with other bounds (which the simplifier used) stay different.
  static Sym parameter(const std::string& name, int64_t min_value, int64_t max_value);
  // A variable bound to a value inside its bounds: symbolic for the simplifier (its range is the
  // bounds), with a value for eval. Its key names the value ("n=5[1,64]"), so graphs over
  // different values stay different; a kernel has it unbound (codegen/kernel_variables.h).
  static Sym bound_var(const std::string& name, int64_t min_value, int64_t max_value,
                       int64_t value);

  SymKind kind() const;
  bool is_const() const { return kind() == SymKind::Const; }
  int64_t const_value() const;          // only for constants
  const std::string& var_name() const;  // only for variables
  bool is_bound() const;                // a variable bound to a value
  int64_t bound_value() const;          // only for bound variables
  int64_t vmin() const;
  int64_t vmax() const;

  // Sum: the constant part and the terms. Other kinds: their operands (two, or one for Var=none).
  int64_t sum_constant() const;
  const SymTerms& sum_terms() const;
  const std::vector<Sym>& operands() const;

  // Canonical text, for printing and for text keys (kernel sources, cache names). Structurally
  // equal Syms have equal keys. A bound variable's names its value and bounds ("n=5[1,64]").
  const std::string& key() const;
  // The structural hash, cached in the node (in-process only: not stable across runs).
  size_t hash() const;
  // The expression with bound variables by name ("(n*4)"), for messages.
  std::string to_string() const;

  // Variables take their value from `values`, else (bound variables) their bound value.
  int64_t eval(const std::map<std::string, int64_t>& values = {}) const;
  // True when some variable occurs that is not bound (eval then needs `values`).
  bool has_unbound() const;
  // Replaces each variable whose name is in `by_name` (bound or not, whatever its bounds).
  Sym substitute(const std::map<std::string, Sym>& by_name) const;
  // Replaces exactly the variable nodes in `by_variable` (n=3 and n=5 are two variables).
  Sym substitute(const std::map<Sym, Sym>& by_variable) const;
  // Names of the variables that occur, sorted.
  std::vector<std::string> variables() const;
  // The variable nodes that occur (bound or not), each once, in the structural order.
  std::vector<Sym> variable_nodes() const;

  // Structural equality: one node per structure, so pointers compare.
  bool operator==(const Sym& other) const { return node_ == other.node_; }
  bool operator!=(const Sym& other) const { return !(*this == other); }
  // A total structural order, the same in every run: sums and commutative operands are kept in
  // it, so that x + y and y + x build one node.
  bool operator<(const Sym& other) const;

  const SymNode* node() const { return node_.get(); }

 private:
  explicit Sym(std::shared_ptr<const SymNode> node) : node_(std::move(node)) {}
  std::shared_ptr<const SymNode> node_;
  friend struct SymBuilder;
};

Sym operator+(const Sym& a, const Sym& b);
Sym operator-(const Sym& a, const Sym& b);
Sym operator-(const Sym& a);
Sym operator*(const Sym& a, const Sym& b);
// Floor division and non-negative modulo; the divisor must be positive.
Sym floordiv(const Sym& a, const Sym& b);
Sym mod(const Sym& a, const Sym& b);
Sym sym_min(const Sym& a, const Sym& b);
Sym sym_max(const Sym& a, const Sym& b);
// Comparisons and logical and give 0 or 1.
Sym lt(const Sym& a, const Sym& b);
Sym le(const Sym& a, const Sym& b);  // a < b + 1
Sym ge(const Sym& a, const Sym& b);  // b < a + 1
Sym eq(const Sym& a, const Sym& b);
Sym logical_and(const Sym& a, const Sym& b);

// The product of a list (1 for an empty list).
Sym sym_prod(const std::vector<Sym>& values);

struct SymHash {
  size_t operator()(const Sym& value) const { return value.hash(); }
};

}  // namespace kiln

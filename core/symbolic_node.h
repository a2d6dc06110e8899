#pragma once
// Inside Sym (core/symbolic.h): the node every Sym points at, and SymBuilder, which makes nodes.
// Nodes are hash-consed: SymBuilder::make returns the one live node with a structure, so Syms
// compare by pointer. symbolic_node.cpp holds the intern table, the structural hash and order,
// and the linear forms sums are built from; symbolic.cpp the arithmetic on Syms.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/symbolic.h"

namespace kiln {

struct SymNode {
  SymKind kind;
  int64_t value = 0;       // Const: the value; Sum: the constant part
  std::string name;        // Var
  bool bound = false;      // Var: `value` is its bound value
  bool parameter = false;  // Var: a kernel's parameter (its key names its bounds)
  SymTerms terms;          // Sum
  std::vector<Sym> operands;
  int64_t vmin = 0;
  int64_t vmax = 0;
  std::string key;  // for printing and for text keys (cache names); never for identity
  size_t hash = 0;  // structural: of the fields above but the key, children by their hashes
  mutable std::weak_ptr<const SymNode> self;
};

// Bounds are computed wide, then clamped to int64_t.
using Wide = __int128;

inline int64_t clamp_wide(Wide value) {
  constexpr Wide kLow = std::numeric_limits<int64_t>::min();
  constexpr Wide kHigh = std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(std::min(std::max(value, kLow), kHigh));
}

inline int64_t floor_div(int64_t a, int64_t b) {
  int64_t quotient = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) quotient -= 1;
  return quotient;
}

inline int64_t floor_mod(int64_t a, int64_t b) {
  return a - floor_div(a, b) * b;
}

// Like terms of a sum being built: atom -> coefficient, in the structural order.
using TermMap = std::map<Sym, int64_t>;

// The structural order behind Sym::operator<: by kind, then the node's own fields, then its
// children in order. Deterministic (no pointers), so kernels print alike in every run.
int compare_nodes(const SymNode* a, const SymNode* b);

// Builds nodes; a friend of Sym so the arithmetic can make them.
struct SymBuilder {
  // The one node with this structure: an existing live one, else this one, interned.
  static Sym make(SymNode node);
  static std::shared_ptr<const SymNode> constant(int64_t value);
  // Small constants are built on every step of index arithmetic: kept alive, they are found
  // without a lookup.
  static std::shared_ptr<const SymNode> small_constant(int64_t value);
  static Sym binary(SymKind kind, const Sym& a, const Sym& b, int64_t vmin, int64_t vmax,
                    const char* spelling);
  // Linear form of any Sym: constant + sum of coefficient * atom.
  static void linear_form(const Sym& value, int64_t scale, TermMap& terms, int64_t& constant);
  // (x // c) * c * k + (x % c) * k == x * k: folds index arithmetic that unravels and re-ravels.
  static bool fold_div_mod(TermMap& term_map, int64_t& constant);
  static Sym from_linear(TermMap term_map, int64_t constant);
};

}  // namespace kiln

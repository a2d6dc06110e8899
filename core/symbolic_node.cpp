#include "core/symbolic_node.h"

#include <mutex>
#include <unordered_map>

#include "core/hash.h"

namespace kiln {
namespace {

// The intern table: structural hash -> live nodes with that hash. A node's deleter removes its
// entry, so the table holds only what some Sym still uses.
struct SymTable {
  std::mutex mutex;
  std::unordered_multimap<size_t, const SymNode*> nodes;
};

SymTable& sym_table() {
  static SymTable* table = new SymTable();  // never destroyed: Syms may outlive statics
  return *table;
}

size_t structural_hash(const SymNode& node) {
  size_t seed = hash_combine(static_cast<size_t>(node.kind), std::hash<int64_t>()(node.value));
  seed = hash_combine(seed, std::hash<std::string>()(node.name));
  seed = hash_combine(seed, (node.bound ? 1u : 0u) | (node.parameter ? 2u : 0u));
  seed = hash_combine(seed, std::hash<int64_t>()(node.vmin));
  seed = hash_combine(seed, std::hash<int64_t>()(node.vmax));
  for (const auto& [atom, coefficient] : node.terms)
    seed = hash_combine(hash_combine(seed, atom.hash()), std::hash<int64_t>()(coefficient));
  for (const Sym& operand : node.operands) seed = hash_combine(seed, operand.hash());
  return seed;
}

// Children compare by pointer: they are interned already.
bool same_structure(const SymNode& a, const SymNode& b) {
  if (a.kind != b.kind || a.value != b.value || a.name != b.name || a.bound != b.bound ||
      a.parameter != b.parameter || a.vmin != b.vmin || a.vmax != b.vmax ||
      a.terms.size() != b.terms.size() || a.operands.size() != b.operands.size())
    return false;
  for (size_t index = 0; index < a.terms.size(); ++index) {
    if (a.terms[index].first.node() != b.terms[index].first.node() ||
        a.terms[index].second != b.terms[index].second)
      return false;
  }
  for (size_t index = 0; index < a.operands.size(); ++index) {
    if (a.operands[index].node() != b.operands[index].node()) return false;
  }
  return true;
}

template <typename T>
int three_way(const T& a, const T& b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

}  // namespace

int compare_nodes(const SymNode* a, const SymNode* b) {
  if (a == b) return 0;
  if (int order = three_way(a->kind, b->kind)) return order;
  if (int order = a->name.compare(b->name)) return order < 0 ? -1 : 1;
  if (int order = three_way(a->value, b->value)) return order;
  if (int order = three_way(a->parameter, b->parameter)) return order;
  if (int order = three_way(a->bound, b->bound)) return order;
  for (size_t index = 0; index < a->terms.size() && index < b->terms.size(); ++index) {
    if (int order = compare_nodes(a->terms[index].first.node(), b->terms[index].first.node()))
      return order;
    if (int order = three_way(a->terms[index].second, b->terms[index].second)) return order;
  }
  if (int order = three_way(a->terms.size(), b->terms.size())) return order;
  for (size_t index = 0; index < a->operands.size() && index < b->operands.size(); ++index) {
    if (int order = compare_nodes(a->operands[index].node(), b->operands[index].node()))
      return order;
  }
  if (int order = three_way(a->operands.size(), b->operands.size())) return order;
  if (int order = three_way(a->vmin, b->vmin)) return order;
  return three_way(a->vmax, b->vmax);
}

Sym SymBuilder::make(SymNode node) {
  node.hash = structural_hash(node);
  SymTable& table = sym_table();
  std::lock_guard<std::mutex> lock(table.mutex);
  auto [begin, end] = table.nodes.equal_range(node.hash);
  for (auto entry = begin; entry != end; ++entry) {
    if (!same_structure(*entry->second, node)) continue;
    // The node may be mid-destruction (its count reached zero); then build a fresh one.
    if (auto alive = entry->second->self.lock()) return Sym(std::move(alive));
  }
  auto deleter = [](const SymNode* dead) {
    {
      SymTable& owner = sym_table();
      std::lock_guard<std::mutex> guard(owner.mutex);
      auto [first, last] = owner.nodes.equal_range(dead->hash);
      for (auto entry = first; entry != last; ++entry) {
        if (entry->second == dead) {
          owner.nodes.erase(entry);
          break;
        }
      }
    }
    delete dead;  // outside the lock: dropping the children runs their deleters
  };
  std::shared_ptr<const SymNode> interned(new SymNode(std::move(node)), deleter);
  interned->self = interned;
  table.nodes.emplace(interned->hash, interned.get());
  return Sym(std::move(interned));
}

std::shared_ptr<const SymNode> SymBuilder::constant(int64_t value) {
  SymNode node;
  node.kind = SymKind::Const;
  node.value = value;
  node.vmin = node.vmax = value;
  node.key = std::to_string(value);
  return make(std::move(node)).node_;
}

std::shared_ptr<const SymNode> SymBuilder::small_constant(int64_t value) {
  constexpr int64_t kLow = -8, kHigh = 256;
  static const std::vector<std::shared_ptr<const SymNode>>* const kCache = [] {
    auto cache = std::make_unique<std::vector<std::shared_ptr<const SymNode>>>();
    for (int64_t constant_value = kLow; constant_value <= kHigh; ++constant_value)
      cache->push_back(constant(constant_value));
    return cache.release();  // never destroyed, like the table
  }();
  if (value < kLow || value > kHigh) return constant(value);
  return (*kCache)[static_cast<size_t>(value - kLow)];
}

Sym SymBuilder::binary(SymKind kind, const Sym& a, const Sym& b, int64_t vmin, int64_t vmax,
                       const char* spelling) {
  SymNode node;
  node.kind = kind;
  node.operands = {a, b};
  node.vmin = vmin;
  node.vmax = vmax;
  if (kind == SymKind::Min || kind == SymKind::Max) {
    node.key = std::string(spelling) + "(" + a.key() + ", " + b.key() + ")";
  } else {
    node.key = "(" + a.key() + spelling + b.key() + ")";
  }
  return make(std::move(node));
}

void SymBuilder::linear_form(const Sym& value, int64_t scale, TermMap& terms, int64_t& constant) {
  const SymNode* node = value.node();
  if (node->kind == SymKind::Const) {
    constant += node->value * scale;
  } else if (node->kind == SymKind::Sum) {
    constant += node->value * scale;
    for (const auto& [atom, coefficient] : node->terms) terms[atom] += coefficient * scale;
  } else {
    terms[value] += scale;
  }
}

bool SymBuilder::fold_div_mod(TermMap& term_map, int64_t& constant) {
  for (auto& [atom, coefficient] : term_map) {
    if (atom.kind() != SymKind::Mod || coefficient == 0 || !atom.operands()[1].is_const()) continue;
    const Sym numerator = atom.operands()[0];
    const int64_t divisor = atom.operands()[1].const_value();
    const int64_t mod_coefficient = coefficient;
    auto partner = std::find_if(term_map.begin(), term_map.end(), [&](const auto& entry) {
      const Sym& other = entry.first;
      return other.kind() == SymKind::Div && other.operands()[0] == numerator &&
             other.operands()[1].is_const() && other.operands()[1].const_value() == divisor &&
             entry.second == mod_coefficient * divisor;
    });
    if (partner == term_map.end()) continue;
    partner->second = 0;
    coefficient = 0;
    linear_form(numerator, mod_coefficient, term_map, constant);
    return true;
  }
  return false;
}

Sym SymBuilder::from_linear(TermMap term_map, int64_t constant) {
  while (fold_div_mod(term_map, constant)) {
  }
  SymTerms terms;
  for (const auto& entry : term_map) {
    if (entry.second != 0) terms.push_back(entry);
  }
  if (terms.empty()) return Sym(constant);
  if (terms.size() == 1 && terms[0].second == 1 && constant == 0) return terms[0].first;
  SymNode node;
  node.kind = SymKind::Sum;
  node.value = constant;
  Wide low = constant, high = constant;
  std::string key = "(";
  for (size_t index = 0; index < terms.size(); ++index) {
    const auto& [atom, coefficient] = terms[index];
    const Wide a = static_cast<Wide>(atom.vmin()) * coefficient;
    const Wide b = static_cast<Wide>(atom.vmax()) * coefficient;
    low += std::min(a, b);
    high += std::max(a, b);
    if (index > 0) key += "+";
    key += coefficient == 1 ? atom.key() : atom.key() + "*" + std::to_string(coefficient);
  }
  if (constant != 0) key += "+" + std::to_string(constant);
  key += ")";
  node.terms = std::move(terms);
  node.vmin = clamp_wide(low);
  node.vmax = clamp_wide(high);
  node.key = std::move(key);
  return make(std::move(node));
}

}  // namespace kiln

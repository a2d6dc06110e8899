#include "core/rewrite.h"

#include <unordered_map>

namespace kiln {
namespace {

// Bounds the rule applications on one node, so a rule pair that undoes itself cannot hang.
constexpr int kMaxRewritesPerNode = 64;

// Each visited node (kept alive, so that its address is not reused by a node made later in the
// same rewrite) and its rewritten form.
using Rewritten = std::unordered_map<const UOp*, std::pair<UOpRef, UOpRef>>;

// Rewrites `root` and everything below it, sources first, with an explicit stack (a graph may be
// 100,000 nodes deep).
UOpRef rewrite_from(const UOpRef& root, const RewriteRule& rule, const RewriteRule& stop,
                    Rewritten& done) {
  if (auto found = done.find(root.get()); found != done.end()) return found->second.second;
  std::vector<std::pair<UOpRef, size_t>> stack{{root, 0}};
  while (!stack.empty()) {
    const UOpRef node = stack.back().first;
    const size_t next = stack.back().second++;
    if (next == 0 && stop) {
      if (UOpRef replacement = stop(node)) {
        // Replaced as met: what lies below the node is not visited.
        stack.pop_back();
        if (!done.count(node.get()))
          done[node.get()] = {node, rewrite_from(replacement, rule, {}, done)};
        continue;
      }
    }
    if (next < node->srcs().size()) {
      const UOpRef& src = node->srcs()[next];
      if (!done.count(src.get())) stack.emplace_back(src, 0);
      continue;
    }
    stack.pop_back();
    if (done.count(node.get())) continue;  // reached twice before it was finished
    std::vector<UOpRef> srcs;
    bool changed = false;
    for (const UOpRef& src : node->srcs()) {
      srcs.push_back(done.at(src.get()).second);
      changed |= srcs.back().get() != src.get();
    }
    UOpRef result = changed ? with_srcs(node, std::move(srcs)) : node;
    for (int step = 0; step < kMaxRewritesPerNode; ++step) {
      UOpRef replacement = rule(result);
      if (!replacement || replacement.get() == result.get()) break;
      // A replacement is a new subgraph (small: what one rule builds): rewrite its sources too.
      result = rewrite_from(replacement, rule, stop, done);
    }
    done[node.get()] = {node, result};
  }
  return done.at(root.get()).second;
}

}  // namespace

UOpRef with_srcs(const UOpRef& node, std::vector<UOpRef> srcs) {
  if (node->is_symbolic() && node->srcs().empty())
    return UOp::make_symbolic(node->op(), node->dtype(), std::move(srcs), node->arg(),
                              node->sym_shape());
  return UOp::make(node->op(), node->dtype(), std::move(srcs), node->arg(), node->shape());
}

std::vector<UOpRef> graph_rewrite(const std::vector<UOpRef>& roots, const RewriteRule& rule,
                                  const RewriteRule& stop) {
  Rewritten done;
  std::vector<UOpRef> result;
  for (const UOpRef& root : roots) result.push_back(rewrite_from(root, rule, stop, done));
  return result;
}

}  // namespace kiln

#include "core/rewrite.h"

#include <unordered_map>

namespace kiln {
namespace {

// Bounds the rule applications on one node, so a rule pair that undoes itself cannot hang.
constexpr int kMaxRewritesPerNode = 64;

UOpRef rewrite_node(const UOpRef& node, const RewriteRule& rule,
                    std::unordered_map<const UOp*, UOpRef>& done) {
  auto found = done.find(node.get());
  if (found != done.end()) return found->second;
  std::vector<UOpRef> srcs;
  bool changed = false;
  for (const UOpRef& src : node->srcs()) {
    srcs.push_back(rewrite_node(src, rule, done));
    changed |= srcs.back().get() != src.get();
  }
  UOpRef result = changed ? with_srcs(node, std::move(srcs)) : node;
  for (int step = 0; step < kMaxRewritesPerNode; ++step) {
    UOpRef replacement = rule(result);
    if (!replacement || replacement.get() == result.get()) break;
    // A replacement is a new subgraph: rewrite its sources too.
    result = rewrite_node(replacement, rule, done);
  }
  done[node.get()] = result;
  return result;
}

}  // namespace

UOpRef with_srcs(const UOpRef& node, std::vector<UOpRef> srcs) {
  return UOp::make(node->op(), node->dtype(), std::move(srcs), node->arg(), node->shape());
}

std::vector<UOpRef> graph_rewrite(const std::vector<UOpRef>& roots, const RewriteRule& rule) {
  std::unordered_map<const UOp*, UOpRef> done;
  std::vector<UOpRef> result;
  for (const UOpRef& root : roots) result.push_back(rewrite_node(root, rule, done));
  return result;
}

}  // namespace kiln

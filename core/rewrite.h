#pragma once
// Graph rewriting: the one mechanism every pass over the UOp graph uses. A rule looks at one node
// (whose sources are already rewritten) and returns a replacement, or nullptr to keep it.

#include <functional>
#include <vector>

#include "core/uop.h"

namespace kiln {

using RewriteRule = std::function<UOpRef(const UOpRef& node)>;

// Rewrites bottom-up: each node is rebuilt over its rewritten sources, then `rule` is applied to
// it until it returns nullptr. Shared subgraphs are rewritten once.
std::vector<UOpRef> graph_rewrite(const std::vector<UOpRef>& roots, const RewriteRule& rule);

// The same node over other sources (same op, dtype, argument and shape).
UOpRef with_srcs(const UOpRef& node, std::vector<UOpRef> srcs);

}  // namespace kiln

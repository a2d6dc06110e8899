#pragma once
// Graph rewriting: the one mechanism every pass over the UOp graph uses. A rule looks at one node
// (whose sources are already rewritten) and returns a replacement, or nullptr to keep it.

#include <functional>
#include <vector>

#include "core/uop.h"

namespace kiln {

using RewriteRule = std::function<UOpRef(const UOpRef& node)>;

// Rewrites bottom-up: each node is rebuilt over its rewritten sources, then `rule` is applied to
// it until it returns nullptr. Shared subgraphs are rewritten once. `stop`, where given, is asked
// first, as each node is met: a node it replaces is not descended into (its replacement is
// rewritten by `rule` instead), so what lies below it costs nothing.
std::vector<UOpRef> graph_rewrite(const std::vector<UOpRef>& roots, const RewriteRule& rule,
                                  const RewriteRule& stop = {});

// The same node over other sources (same op, dtype, argument and shape).
UOpRef with_srcs(const UOpRef& node, std::vector<UOpRef> srcs);

}  // namespace kiln

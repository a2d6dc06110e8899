#pragma once
// Reductions no longer than a device allows one kernel's work item to loop (lavapipe stops a work
// item's loops after 65535 iterations in all, silently): a longer reduction becomes a partial
// reduction over parts of at most that length, realized, and a reduction of the parts (itself
// split again where the parts are too many). The reduced axes are moved last and flattened first
// (Views, no copies), and a length that does not divide is padded with the reduction's identity.
// A symbolic length is split by its largest value into parts of one length, their count
// symbolic (the padding too), so that the kernels serve every value.

#include "core/uop.h"

namespace kiln {

// A rewrite rule (core/rewrite.h): `node`, a Reduce of more than `limit` elements per output,
// as reductions of at most `limit` each; nullptr for any other node, or where `limit` is 0.
UOpRef bound_reduce_length(const UOpRef& node, int64_t limit);

}  // namespace kiln

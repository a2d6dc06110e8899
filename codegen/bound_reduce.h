#pragma once
// Reductions no longer than a device allows one kernel's work item to loop (lavapipe stops a work
// item's loops after 65535 iterations in all, silently): a longer reduction becomes a partial
// reduction over parts of at most that length, realized, and a reduction of the parts (itself
// split again where the parts are too many). The reduced axes are moved last and flattened first
// (Views, no copies), and a length that does not divide is padded with the reduction's identity.

#include <functional>
#include <vector>

#include "core/uop.h"

namespace kiln {

// The most elements one kernel may reduce per output for the reduction `reduce` (on whichever
// device it runs); 0: any number.
using ReduceLengthLimit = std::function<int64_t(const UOpRef& reduce)>;

std::vector<UOpRef> bound_reduce_lengths(const std::vector<UOpRef>& roots,
                                         const ReduceLengthLimit& limit);

}  // namespace kiln

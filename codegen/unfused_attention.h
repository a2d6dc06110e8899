#pragma once
// An Attention node as the graph of reductions it stands for (two batched products and a softmax
// between them), for a device that does not run Attention's own kernel: the CPU, whose matmul
// kernels compute it faster than one work item per query row would, and a device whose loop
// limit a walk over every key would pass. The scores are then realized between the kernels.

#include "core/uop.h"

namespace kiln {

// The same values as the Attention's kernel computes (codegen/lower_attention.cpp), in the same
// dtypes: float32 scores and sums (float64 for float64), the result in the node's dtype.
UOpRef unfused_attention(const UOpRef& attention);

}  // namespace kiln

#pragma once
// A CPU's matmul tiles its outputs by columns, so that a tile's lanes load neighbouring columns
// of the operand that changes along the output's last axis (codegen/heuristics.cpp). Where that
// operand is a buffer laid out down those columns (x @ W^T: nn::Linear's weight), no tile loads
// neighbours, and each output is a dot product of its own. This rewrite copies such an operand
// row-major first (one small kernel: the copy of W^T), so that the product is tiled.
// On 2 Cooperlake cores, 2048x128 @ (512x128)^T: 30 -> 92 GFLOP/s; 512x768 @ (768x768)^T:
// 43 -> 137 GFLOP/s.

#include "core/uop.h"

namespace kiln {

// A rewrite rule (core/rewrite.h): `node`, a float sum of the product of two operands, one a
// buffer read down the output's columns and along the reduction, over a row-major copy of that
// operand; nullptr for any other node, and where the product is too small for a copy to pay.
UOpRef copy_transposed_operand(const UOpRef& node);

}  // namespace kiln

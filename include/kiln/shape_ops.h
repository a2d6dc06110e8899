#pragma once
// Shape helpers: splitting a tensor into parts, giving an axis more axes, tiling and repeating,
// rolling, the triangles of matrices, and einsum. Each is built from movement ops (shrink,
// reshape, expand, cat) or a select against positions (einsum from products and sums), so it is
// lazy like them and fuses into what reads it; none copies data by itself.
//
// Axes may be negative (counted from the end). The axes these helpers split, repeat or roll must
// have fixed sizes; other axes may be symbolic. Bad arguments are a ShapeError naming the helper,
// the shape and what would be valid; nothing is built then.

#include <cstdint>
#include <string>
#include <vector>

#include <kiln/tensor.h>

namespace kiln {

// Parts of `split_size` along `axis`, the last one shorter where the size is not a multiple
// (torch.split with an int). An axis of size 0 gives one empty part. split_size >= 1.
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t axis = 0);
// Parts of the given sizes along `axis`, in order; the sizes (each >= 0) add up to its size.
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t axis = 0);
// At most `chunks` parts of ceil(size / chunks) along `axis`, the last one shorter: fewer parts
// where the size runs out first, and `chunks` empty parts of an empty axis (torch.chunk).
// chunks >= 1.
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t axis = 0);

// `axis` replaced by axes of `sizes`, whose product is its size; one size may be -1 (inferred).
Tensor unflatten(const Tensor& x, int64_t axis, const Shape& sizes);

// Tiled: `repeats[i]` copies along each axis (torch.repeat). More repeats than axes add leading
// axes of size 1 first; each repeat >= 0.
Tensor repeat(const Tensor& x, const Shape& repeats);
// Each element `repeats` times in a row along `axis` (torch.repeat_interleave with an int).
// repeats >= 0.
Tensor repeat_interleave(const Tensor& x, int64_t repeats, int64_t axis);

// Shifted by `shift` along `axis`, elements pushed past the end coming back at the start (a
// negative shift rolls the other way; any shift is taken modulo the size).
Tensor roll(const Tensor& x, int64_t shift, int64_t axis);
// Rolled along each axis by its shift (shifts and axes of the same length, at least one; an axis
// named twice is rolled by both shifts).
Tensor roll(const Tensor& x, const std::vector<int64_t>& shifts, const std::vector<int64_t>& axes);

// The lower (tril) or upper (triu) triangle of the matrices in the last two axes, the rest zero
// (false for bool): element (i, j) is kept where j - i <= diagonal (tril) or j - i >= diagonal
// (triu). diagonal 0 is the main diagonal, positive ones above it. Needs at least two axes.
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Tensor triu(const Tensor& x, int64_t diagonal = 0);

// The diagonal of the matrices in axes `axis1` and `axis2` (distinct): those two axes removed, a
// last axis of their elements (i, i + offset) appended (torch.diagonal). offset > 0 is above the
// main diagonal, < 0 below; one past the matrix gives an empty last axis.
Tensor diagonal(const Tensor& x, int64_t offset = 0, int64_t axis1 = 0, int64_t axis2 = 1);
// Of a vector of k elements: the square matrix of side k + |offset| with the vector on that
// diagonal and zeros elsewhere. Of a matrix: its diagonal (diagonal(x, offset)). Other ranks are
// a ShapeError.
Tensor diag(const Tensor& x, int64_t offset = 0);

// Einstein summation, as torch.einsum: "ij,jk->ik" is a matmul, "ii->i" a diagonal, "ij->" a
// sum, "...ij,...jk->...ik" a batched matmul (the axes "..." stands for broadcast). Without "->"
// the output is the "..." axes then the letters named once, alphabetically. Letters name axes of
// one size wherever they appear; a letter repeated in one operand takes its diagonal. The
// operands multiply in their promoted dtype, pairwise from the left, each product summed over
// the letters nothing later needs, so two operands are one reduction (as matmul); the result
// keeps that dtype.
Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands);

}  // namespace kiln

#pragma once
// Sorting and scans along one axis. Sorting runs a bitonic network over the axis padded to a
// power of two: log2(n) (log2(n) + 1) / 2 compare-exchange steps, each a kernel (two: values
// and positions) that reads and writes the whole tensor, so its cost is ~n log^2 n; it is lazy
// like every op (nothing runs before a realize) but does not fuse into its neighbours. The scans
// are masked reductions over an (n, n) expansion of the axis, as cumsum: fused and exact, at
// O(n^2) work per line, for the axis lengths of applications (sequences, vocabularies' tops).
//
// Axes may be negative (counted from the end); the axis sorted must have a fixed size (a scanned
// one may be a variable's). Values and positions come from one network: realize them together
// (kiln::realize({values, positions})), or each realize runs it again.
// Bad arguments are a ShapeError (ValueError for k) naming the function and the rule broken.

#include <cstdint>
#include <utility>

#include <kiln/tensor.h>

namespace kiln {

// The values along `axis` in order, and where each came from (int64 positions along the axis).
// Stable: equal values keep their order (their positions ascending), in either direction; -0.0
// and 0.0 are equal. NaN sorts as the largest value: last ascending, first descending (PyTorch's
// order). Any dtype.
std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t axis = -1, bool descending = false);
// sort's positions alone.
Tensor argsort(const Tensor& x, int64_t axis = -1, bool descending = false);
// The k largest (or smallest) values along `axis`, in order, and their positions (int64): the
// first k of a stable sort in that direction (NaN counts as the largest), which it runs whole.
// 0 <= k <= the axis' size.
std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t axis = -1, bool largest = true);

// out[..., i] = x[..., 0] * ... * x[..., i] along `axis`; integers and bool in int64 (uint64 for
// unsigned), as cumsum and prod.
Tensor cumprod(const Tensor& x, int64_t axis);
// The running maximum (minimum) along `axis` and where it was reached: the last position holding
// it (PyTorch's); once a NaN is reached the value stays NaN and the position is the last NaN's.
// The positions are int64; the values keep x's dtype.
std::pair<Tensor, Tensor> cummax(const Tensor& x, int64_t axis);
std::pair<Tensor, Tensor> cummin(const Tensor& x, int64_t axis);
// log(cumsum(exp(x))) along `axis`, without its overflow; float tensors (a DTypeError
// otherwise).
Tensor logcumsumexp(const Tensor& x, int64_t axis);

}  // namespace kiln

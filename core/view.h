#pragma once
// Views and the ShapeTracker: how a tensor's logical elements map onto a buffer.
//
// A View is {shape, strides, offset, mask}. Logical index i (one entry per dimension) reads buffer
// element offset + sum(i[d] * strides[d]) when every i[d] lies inside mask[d] = [begin, end), and
// reads nothing (the value 0, or a pad value applied by the caller) otherwise. Every movement op
// is metadata only: permute, expand (stride 0), shrink (offset and shape), flip (negative stride)
// and pad (mask and offset) always update the top View; a reshape that cannot be expressed on the
// top View pushes a new one, whose "buffer" is the View below read in row-major order.

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/symbolic.h"

namespace kiln {

using SymShape = std::vector<Sym>;
using Mask = std::vector<std::pair<Sym, Sym>>;  // per dimension: [begin, end)

struct View {
  SymShape shape;
  SymShape strides;
  Sym offset;
  std::optional<Mask> mask;

  static View contiguous(const SymShape& shape);
  // Row-major strides of a shape (size-1 dimensions get stride 0).
  static SymShape contiguous_strides(const SymShape& shape);

  // True when the view reads the whole buffer in row-major order (offset 0, no mask).
  bool is_contiguous() const;
  // (buffer index, valid) for one logical index.
  std::pair<Sym, Sym> to_index(const std::vector<Sym>& index) const;
  std::string to_string() const;
  size_t hash() const;
  bool operator==(const View& other) const;
};

class ShapeTracker {
 public:
  ShapeTracker() = default;
  explicit ShapeTracker(std::vector<View> views) : views_(std::move(views)) {}
  static ShapeTracker contiguous(const SymShape& shape) {
    return ShapeTracker({View::contiguous(shape)});
  }

  const SymShape& shape() const { return views_.back().shape; }
  const std::vector<View>& views() const { return views_; }
  size_t ndim() const { return shape().size(); }

  // The movement ops. Arguments are assumed valid (the Tensor API checks them first).
  ShapeTracker reshape(const SymShape& new_shape) const;
  ShapeTracker permute(const std::vector<int>& axes) const;
  ShapeTracker expand(const SymShape& new_shape) const;
  ShapeTracker pad(const std::vector<std::pair<Sym, Sym>>& before_after) const;
  ShapeTracker shrink(const std::vector<std::pair<Sym, Sym>>& begin_end) const;
  ShapeTracker flip(const std::vector<bool>& flip_axis) const;

  // Every variable named in `values` replaced (for instance bound variables by unbound ones).
  ShapeTracker substitute(const std::map<std::string, Sym>& values) const;
  // (buffer index, valid) for a logical index, through every View.
  std::pair<Sym, Sym> to_index(const std::vector<Sym>& index) const;
  bool is_contiguous() const { return views_.size() == 1 && views_[0].is_contiguous(); }
  // Whether a size, stride, offset or mask mentions a variable.
  bool is_symbolic() const;
  // True when no two in-bounds logical indices read the same buffer element (no expansion).
  bool is_injective() const;
  std::string to_string() const;
  size_t hash() const;
  bool operator==(const ShapeTracker& other) const { return views_ == other.views_; }

 private:
  ShapeTracker with_top(View view) const;
  std::vector<View> views_;
};

// Splits a flat row-major index into one index per dimension of `shape`.
std::vector<Sym> unravel_index(const Sym& flat, const SymShape& shape);
// The index in `to_shape` of the element at row-major position p of `from_shape` (at `index`):
// the element at position p of `to_shape`. For a reshape (sizes whose products are the same
// expression), runs of dimensions whose sizes multiply to the same
// expression are flattened and split on their own, so that a dimension the reshape keeps, and a
// size-1 dimension it adds or drops, passes through without a division: what keeps the index of
// a reshape over a symbolic size free of divisions by that size.
std::vector<Sym> reshape_index(const std::vector<Sym>& index, const SymShape& from_shape,
                               const SymShape& to_shape);
SymShape to_sym_shape(const std::vector<int64_t>& shape);
// The sizes' values: bound variables at their values, unbound ones at their largest.
std::vector<int64_t> shape_values(const SymShape& shape);

}  // namespace kiln

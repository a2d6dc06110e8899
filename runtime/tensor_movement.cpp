// Movement ops: they change the View over the data, never the data.

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "runtime/autograd.h"
#include "runtime/tensor_internal.h"

namespace kiln {
namespace {

std::string pairs_string(const std::vector<std::pair<int64_t, int64_t>>& pairs) {
  std::string text = "(";
  for (size_t index = 0; index < pairs.size(); ++index) {
    text += (index ? ", (" : "(") + std::to_string(pairs[index].first) + ", " +
            std::to_string(pairs[index].second) + ")";
  }
  return text + ")";
}

Tensor with_node(const Tensor& tensor, UOpRef node) {
  return make_tensor(std::move(node), tensor.device());
}

// The gradient of a view that keeps every element once (reshape, flip): the same view taken
// back.
Tensor reshaped(Tensor result, const Tensor& x) {
  return recorded(
      std::move(result), "reshape",
      [x](const Tensor& gradient) { return std::vector<Tensor>{gradient.reshape(x.dims())}; }, x);
}

// The gradient of a broadcast: summed over the axes it spread along.
Tensor expanded(Tensor result, const Tensor& x) {
  return recorded(
      std::move(result), "expand",
      [x](const Tensor& gradient) { return std::vector<Tensor>{gradient_for(x, gradient)}; }, x);
}

// The gradient of a region cut from x (start, end per axis): put back in place, zeros around it.
Tensor shrunk(Tensor result, const Tensor& x, std::vector<std::pair<Dim, Dim>> bounds) {
  return recorded(
      std::move(result), "shrink",
      [x, bounds](const Tensor& gradient) {
        std::vector<std::pair<Dim, Dim>> amounts;
        const DimShape sizes = x.dims();
        for (size_t dim = 0; dim < bounds.size(); ++dim)
          amounts.emplace_back(bounds[dim].first, sizes[dim] - bounds[dim].second);
        return std::vector<Tensor>{gradient.pad(amounts)};
      },
      x);
}

}  // namespace

Tensor Tensor::reshape(Shape new_shape) const {
  int inferred = -1;
  Shape known_sizes;
  for (size_t dim = 0; dim < new_shape.size(); ++dim) {
    if (new_shape[dim] == -1) {
      if (inferred >= 0)
        throw ShapeError("[reshape] only one size may be -1, got " + kiln::shape_string(new_shape));
      inferred = static_cast<int>(dim);
    } else if (new_shape[dim] < 0) {
      throw ShapeError("[reshape] sizes must be non-negative or -1, got " +
                       kiln::shape_string(new_shape));
    } else {
      known_sizes.push_back(new_shape[dim]);
    }
  }
  int64_t known = 0;
  try {
    known = check_numel(known_sizes, "reshape");
  } catch (const ShapeError&) {
    throw ShapeError("[reshape] cannot reshape " + describe(*this) + " to " +
                     kiln::shape_string(new_shape) +
                     ": more than the 2^60 elements a tensor may hold");
  }
  if (inferred >= 0) {
    if (known == 0 || numel() % known != 0) {
      throw ShapeError("[reshape] cannot infer the -1 in " + kiln::shape_string(new_shape) +
                       " for " + describe(*this));
    }
    new_shape[inferred] = numel() / known;
    known *= new_shape[inferred];
  }
  if (known != numel()) {
    throw ShapeError("[reshape] cannot reshape " + describe(*this) + " (" +
                     std::to_string(numel()) + " elements) to " + kiln::shape_string(new_shape) +
                     " (" + std::to_string(known) + " elements)");
  }
  return reshaped(with_node(*this, reshape_node(node_of(*this), new_shape)), *this);
}

Tensor Tensor::permute(std::vector<int64_t> axes) const {
  if (static_cast<int64_t>(axes.size()) != ndim()) {
    throw ShapeError("[permute] needs " + std::to_string(ndim()) + " axes for " + describe(*this) +
                     ", got " + std::to_string(axes.size()));
  }
  std::vector<int> order;
  std::vector<bool> seen(axes.size(), false);
  Shape new_shape;
  for (int64_t axis : axes) {
    const int normalized = normalize_axis(axis, ndim(), "permute");
    if (seen[normalized])
      throw ShapeError("[permute] axis " + std::to_string(axis) +
                       " is repeated; axes must be a permutation");
    seen[normalized] = true;
    order.push_back(normalized);
    new_shape.push_back(shape()[normalized]);
  }
  Tensor result = with_node(
      *this, movement_node(node_of(*this), new_shape,
                           [&](const ShapeTracker& tracker) { return tracker.permute(order); }));
  return recorded(
      std::move(result), "permute",
      [order](const Tensor& gradient) {
        std::vector<int64_t> inverse(order.size());
        for (size_t at = 0; at < order.size(); ++at) inverse[static_cast<size_t>(order[at])] = at;
        return std::vector<Tensor>{gradient.permute(inverse)};
      },
      *this);
}

Tensor Tensor::transpose(int64_t axis0, int64_t axis1) const {
  const int first = normalize_axis(axis0, ndim(), "transpose");
  const int second = normalize_axis(axis1, ndim(), "transpose");
  std::vector<int64_t> order(ndim());
  std::iota(order.begin(), order.end(), 0);
  std::swap(order[first], order[second]);
  return permute(order);
}

Tensor Tensor::expand(Shape new_shape) const {
  if (static_cast<int64_t>(new_shape.size()) < ndim()) {
    throw ShapeError("[expand] cannot expand " + describe(*this) + " to fewer dimensions " +
                     kiln::shape_string(new_shape));
  }
  const size_t lead = new_shape.size() - shape().size();
  for (size_t dim = 0; dim < new_shape.size(); ++dim) {
    const int64_t current = dim >= lead ? shape()[dim - lead] : 1;
    if (new_shape[dim] == -1) {
      if (dim < lead)
        throw ShapeError("[expand] -1 is not allowed for a new leading dimension in " +
                         kiln::shape_string(new_shape));
      new_shape[dim] = current;
    }
    if (new_shape[dim] < 0) {
      throw ShapeError("[expand] cannot expand " + describe(*this) + " to " +
                       kiln::shape_string(new_shape) +
                       ": sizes must be 0 or more (-1 keeps a size)");
    }
    if (current != new_shape[dim] && current != 1) {
      throw ShapeError("[expand] cannot expand " + describe(*this) + " to " +
                       kiln::shape_string(new_shape) + ": dimension " + std::to_string(dim) +
                       " has size " + std::to_string(current) + " (only size-1 dimensions expand)");
    }
  }
  check_numel(new_shape, "expand");
  const UOpRef node = node_of(*this);
  if (auto symbolic = broadcast_sym_shape(new_shape, {node}, "expand"))
    return expanded(with_node(*this, broadcast_node(node, *symbolic)), *this);
  return expanded(with_node(*this, broadcast_node(node, new_shape)), *this);
}

namespace {

bool any_symbolic(const DimShape& shape) {
  return std::any_of(shape.begin(), shape.end(), [](const Dim& dim) { return dim.is_symbolic(); });
}

Shape values_of(const DimShape& shape) {
  Shape values;
  for (const Dim& dim : shape) values.push_back(dim.value());
  return values;
}

}  // namespace

Tensor Tensor::reshape(const DimShape& new_shape) const {
  if (!any_symbolic(new_shape) && !node_of(*this)->is_symbolic())
    return reshape(values_of(new_shape));
  // -1 and the element count are checked on the values; the View gets the expressions.
  const Tensor checked = reshape(values_of(new_shape));
  const UOpRef node = node_of(*this);
  // A -1 takes the element count over the other sizes, symbolically where that divides.
  Sym known(1);
  for (const Dim& size : new_shape) known = size.value() == -1 ? known : known * size.sym();
  const Sym count = sym_prod(node->sym_shape());
  SymShape sizes;
  for (size_t dim = 0; dim < new_shape.size(); ++dim) {
    if (new_shape[dim].value() != -1) {
      sizes.push_back(new_shape[dim].sym());
      continue;
    }
    Sym inferred(checked.shape()[dim]);
    if (known.is_const() && known.const_value() > 0) {
      const Sym quotient = floordiv(count, known);
      if (quotient * known == count) inferred = quotient;
    }
    sizes.push_back(inferred);
  }
  check_symbolic_numel(sizes, "reshape");
  // A buffer takes the symbolic shape itself, so that kernels reading it do not depend on the
  // size it was made with (dynamic batching: one kernel for every batch's buffer).
  if (node->op() == Op::Buffer) {
    return reshaped(
        with_node(*this, UOp::make_symbolic(Op::Buffer, node->dtype(), {}, node->arg(), sizes)),
        *this);
  }
  return reshaped(with_node(*this, reshape_node(node, sizes)), *this);
}

Tensor Tensor::expand(const DimShape& new_shape) const {
  if (!any_symbolic(new_shape) && !node_of(*this)->is_symbolic())
    return expand(values_of(new_shape));
  expand(values_of(new_shape));  // checks the sizes, by value
  const SymShape current = node_of(*this)->sym_shape();
  const size_t lead = new_shape.size() - current.size();
  SymShape sizes;
  for (size_t dim = 0; dim < new_shape.size(); ++dim) {
    const Sym now = dim >= lead ? current[dim - lead] : Sym(1);
    const Dim& wanted = new_shape[dim];
    if (wanted.value() == -1) {
      sizes.push_back(now);
    } else if (now == Sym(1)) {
      sizes.push_back(wanted.sym());  // a 1 expands
    } else if (!now.is_const() && now.eval() != wanted.value()) {
      throw ShapeError("[expand] cannot expand " + describe(*this) + ": the symbolic size " +
                       now.to_string() + "=" + std::to_string(now.eval()) +
                       " does not broadcast; only the number 1 does");
    } else {
      sizes.push_back(wanted.is_symbolic() ? wanted.sym() : now);  // the same size, renamed
    }
  }
  check_symbolic_numel(sizes, "expand");
  return expanded(with_node(*this, broadcast_node(node_of(*this), sizes)), *this);
}

Tensor Tensor::shrink(const std::vector<std::pair<Dim, Dim>>& given) const {
  // Axes after the given ones keep their whole range.
  std::vector<std::pair<Dim, Dim>> start_end = given;
  const DimShape sizes = dims();
  for (size_t dim = start_end.size(); dim < sizes.size(); ++dim)
    start_end.emplace_back(Dim(0), sizes[dim]);
  std::vector<std::pair<int64_t, int64_t>> values;
  bool symbolic = false;
  for (const auto& [start, end] : start_end) {
    values.emplace_back(start.value(), end.value());
    symbolic |= start.is_symbolic() || end.is_symbolic();
  }
  const Tensor checked = shrink(values);
  if (!symbolic) return checked;
  std::vector<std::pair<Sym, Sym>> bounds;
  for (const auto& [start, end] : start_end) bounds.emplace_back(start.sym(), end.sym());
  return shrunk(with_node(*this, movement_node(node_of(*this), checked.shape(),
                                               [&](const ShapeTracker& tracker) {
                                                 return tracker.shrink(bounds);
                                               })),
                *this, start_end);
}

namespace {

// `tensor` padded by `amounts` (checked) to `new_shape`, the new part reading `value`.
Tensor padded_view(const Tensor& tensor, const Shape& new_shape,
                   const std::vector<std::pair<Sym, Sym>>& amounts, double value) {
  auto change = [&](const ShapeTracker& tracker) { return tracker.pad(amounts); };
  Tensor padded = with_node(tensor, movement_node(node_of(tensor), new_shape, change));
  // The masked-off part of a View reads +0 (or false): other fills, -0.0 included, are selected.
  if (value != 0 || std::signbit(value)) {
    // Where the mask is off, the padded View reads 0; a padded all-true mask selects the fill.
    UOpRef inside = movement_node(const_like(1, dtypes::bool_, node_of(tensor)), new_shape, change);
    padded = where(with_node(tensor, inside), padded, value);
  }
  // The gradient of a pad: the tensor's region of it.
  return recorded(
      std::move(padded), "pad",
      [tensor, amounts](const Tensor& gradient) {
        std::vector<std::pair<Dim, Dim>> region;
        const DimShape sizes = tensor.dims();
        for (size_t dim = 0; dim < amounts.size(); ++dim) {
          const Dim before(amounts[dim].first);
          region.emplace_back(before, before + sizes[dim]);
        }
        return std::vector<Tensor>{gradient.shrink(region)};
      },
      tensor);
}

}  // namespace

Tensor Tensor::pad(const std::vector<std::pair<Dim, Dim>>& before_after, double value) const {
  std::vector<std::pair<int64_t, int64_t>> values;
  bool symbolic = false;
  for (const auto& [before, after] : before_after) {
    values.emplace_back(before.value(), after.value());
    symbolic |= before.is_symbolic() || after.is_symbolic();
  }
  const Tensor checked = pad(values, value);  // checks every amount, by value
  if (!symbolic) return checked;
  std::vector<std::pair<Sym, Sym>> amounts;
  for (const auto& [before, after] : before_after) {
    // Replays and other values of the variables must not make an amount negative.
    for (const Dim& amount : {before, after}) {
      if (amount.sym().vmin() < 0)
        throw ShapeError("[pad] the amount " + amount.sym().to_string() + " of " + describe(*this) +
                         " can be as small as " + std::to_string(amount.sym().vmin()) +
                         " within its variables' bounds; padding must be non-negative");
    }
    amounts.emplace_back(before.sym(), after.sym());
  }
  return padded_view(*this, checked.shape(), amounts, value);
}

Tensor Tensor::pad(std::vector<std::pair<int64_t, int64_t>> before_after, double value) const {
  if (static_cast<int64_t>(before_after.size()) != ndim()) {
    throw ShapeError("[pad] needs one (before, after) pair per dimension of " + describe(*this) +
                     ", got " + pairs_string(before_after));
  }
  Shape new_shape;
  std::vector<std::pair<Sym, Sym>> amounts;
  for (size_t dim = 0; dim < before_after.size(); ++dim) {
    const auto [before, after] = before_after[dim];
    if (before < 0 || after < 0) {
      throw ShapeError("[pad] padding must be non-negative, got " + pairs_string(before_after) +
                       "; use shrink to cut");
    }
    if (before > kMaxElements || after > kMaxElements - before ||
        shape()[dim] > kMaxElements - before - after) {
      throw ShapeError("[pad] padding " + pairs_string(before_after) + " of " + describe(*this) +
                       " makes dimension " + std::to_string(dim) +
                       " larger than the 2^60 elements a tensor may hold");
    }
    new_shape.push_back(shape()[dim] + before + after);
    amounts.emplace_back(Sym(before), Sym(after));
  }
  check_numel(new_shape, "pad");
  check_fill_value(value, dtype(), "pad", describe(*this));
  return padded_view(*this, new_shape, amounts, value);
}

Tensor Tensor::shrink(std::vector<std::pair<int64_t, int64_t>> start_end) const {
  if (static_cast<int64_t>(start_end.size()) > ndim()) {
    throw ShapeError("[shrink] takes at most one (start, end) pair per dimension of " +
                     describe(*this) + ", got " + pairs_string(start_end));
  }
  // Axes after the given ones keep their whole range (a variable size stays one).
  if (static_cast<int64_t>(start_end.size()) < ndim()) {
    std::vector<std::pair<Dim, Dim>> given;
    for (const auto& [start, end] : start_end) given.emplace_back(Dim(start), Dim(end));
    return shrink(given);
  }
  Shape new_shape;
  std::vector<std::pair<Sym, Sym>> bounds;
  for (size_t dim = 0; dim < start_end.size(); ++dim) {
    const auto [start, end] = start_end[dim];
    if (start < 0 || end < start || end > shape()[dim]) {
      throw ShapeError("[shrink] range (" + std::to_string(start) + ", " + std::to_string(end) +
                       ") is invalid for dimension " + std::to_string(dim) + " of " +
                       describe(*this) +
                       "; need 0 <= start <= end <= " + std::to_string(shape()[dim]));
    }
    new_shape.push_back(end - start);
    bounds.emplace_back(Sym(start), Sym(end));
  }
  std::vector<std::pair<Dim, Dim>> given;
  for (const auto& [start, end] : start_end) given.emplace_back(Dim(start), Dim(end));
  return shrunk(with_node(*this, movement_node(node_of(*this), new_shape,
                                               [&](const ShapeTracker& tracker) {
                                                 return tracker.shrink(bounds);
                                               })),
                *this, std::move(given));
}

Tensor Tensor::flip(std::vector<int64_t> axes) const {
  std::vector<bool> flipped(ndim(), false);
  for (int axis : normalize_axes(axes, ndim(), "flip")) flipped[axis] = true;
  Tensor result = with_node(
      *this, movement_node(node_of(*this), shape(),
                           [&](const ShapeTracker& tracker) { return tracker.flip(flipped); }));
  return recorded(
      std::move(result), "flip",
      [axes](const Tensor& gradient) { return std::vector<Tensor>{gradient.flip(axes)}; }, *this);
}

Tensor Tensor::squeeze() const {
  DimShape new_shape;
  for (const Dim& size : dims()) {
    if (size.is_symbolic() || size.value() != 1) new_shape.push_back(size);
  }
  return reshape(new_shape);
}

Tensor Tensor::squeeze(int64_t axis) const {
  const int normalized = normalize_axis(axis, ndim(), "squeeze");
  // As PyTorch: a no-op on a dimension that is not 1 (nor on a variable that is 1 now).
  if (shape()[normalized] != 1 || dims()[normalized].is_symbolic()) return *this;
  DimShape new_shape = dims();
  new_shape.erase(new_shape.begin() + normalized);
  return reshape(new_shape);
}

Tensor Tensor::unsqueeze(int64_t axis) const {
  const int normalized = normalize_axis(axis, ndim() + 1, "unsqueeze");
  DimShape new_shape = dims();
  new_shape.insert(new_shape.begin() + normalized, Dim(1));
  return reshape(new_shape);
}

Tensor Tensor::flatten(int64_t start_axis, int64_t end_axis) const {
  if (ndim() == 0) return reshape({1});
  const int start = normalize_axis(start_axis, ndim(), "flatten");
  const int end = normalize_axis(end_axis, ndim(), "flatten");
  if (start > end)
    throw ShapeError("[flatten] start axis " + std::to_string(start_axis) +
                     " comes after end axis " + std::to_string(end_axis));
  const DimShape sizes = dims();
  DimShape new_shape(sizes.begin(), sizes.begin() + start);
  Dim merged = 1;
  for (int dim = start; dim <= end; ++dim) merged = merged * sizes[dim];
  new_shape.push_back(merged);
  new_shape.insert(new_shape.end(), sizes.begin() + end + 1, sizes.end());
  return reshape(new_shape);
}

Tensor cat(const std::vector<Tensor>& tensors, int64_t axis) {
  if (tensors.empty()) throw ShapeError("[cat] needs at least one tensor");
  const Tensor& first = tensors[0];
  if (first.ndim() == 0)
    throw ShapeError("[cat] cannot concatenate 0-dimensional tensors; use stack");
  const int dim = normalize_axis(axis, first.ndim(), "cat");
  DType dtype = first.dtype();
  int64_t total = 0;
  for (const Tensor& tensor : tensors) {
    check_same_device(first, tensor, "cat");
    bool compatible = tensor.ndim() == first.ndim();
    for (int64_t other = 0; compatible && other < first.ndim(); ++other) {
      compatible = other == dim || tensor.shape()[other] == first.shape()[other];
    }
    if (!compatible) {
      throw ShapeError("[cat] shapes " + shape_string(first.shape()) + " and " +
                       shape_string(tensor.shape()) + " differ outside axis " +
                       std::to_string(dim));
    }
    dtype = promote_types(dtype, tensor.dtype());
    if (tensor.shape()[dim] > kMaxElements - total)
      throw ShapeError("[cat] the result along axis " + std::to_string(dim) +
                       " would be longer than the 2^60 elements a tensor may hold");
    total += tensor.shape()[dim];
  }
  auto operands = [&] {
    std::string text;
    for (const Tensor& tensor : tensors) text += (text.empty() ? "" : ", ") + describe(tensor);
    return text;
  };
  // Each part padded to the full length along the axis and selected where it lies: one fused
  // kernel (a select, not a sum, so that -0.0 stays -0.0). Along a symbolic size the offsets are
  // expressions, so one kernel serves every value.
  return built_from_ops("cat", operands, [&] {
    Dim length = 0;
    for (const Tensor& tensor : tensors) length = length + tensor.dims()[dim];
    std::optional<Tensor> result;
    Dim offset = 0;
    for (const Tensor& tensor : tensors) {
      const Dim size = tensor.dims()[dim];
      std::vector<std::pair<Dim, Dim>> padding(first.ndim(), {Dim(0), Dim(0)});
      padding[dim] = {offset, length - offset - size};
      offset = offset + size;
      const Tensor part = tensor.cast(dtype).pad(padding);
      if (!result) {
        result = part;
        continue;
      }
      const Tensor inside =
          Tensor::ones(tensor.dims(), dtypes::bool_, tensor.device()).pad(padding);
      result = where(inside, part, *result);
    }
    return *result;
  });
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t axis) {
  if (tensors.empty()) throw ShapeError("[stack] needs at least one tensor");
  const int dim = normalize_axis(axis, tensors[0].ndim() + 1, "stack");
  std::vector<Tensor> expanded;
  for (const Tensor& tensor : tensors) {
    if (tensor.shape() != tensors[0].shape()) {
      throw ShapeError("[stack] all tensors must have one shape; got " +
                       shape_string(tensors[0].shape()) + " and " + shape_string(tensor.shape()));
    }
    expanded.push_back(tensor.unsqueeze(dim));
  }
  return cat(expanded, dim);
}

}  // namespace kiln

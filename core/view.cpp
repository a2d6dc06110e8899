#include "core/view.h"

#include "core/hash.h"

#include <algorithm>

namespace kiln {
namespace {

bool all_const(const SymShape& values) {
  return std::all_of(values.begin(), values.end(),
                     [](const Sym& value) { return value.is_const(); });
}

bool is_one(const Sym& value) {
  return value.is_const() && value.const_value() == 1;
}

std::string join(const SymShape& values) {
  std::string text = "(";
  for (size_t index = 0; index < values.size(); ++index) {
    if (index > 0) text += ", ";
    text += values[index].key();
  }
  return text + ")";
}

// A mask that covers every element is no mask.
std::optional<Mask> normalize_mask(const SymShape& shape, Mask mask) {
  bool covers_all = true;
  for (size_t dim = 0; dim < shape.size(); ++dim) {
    mask[dim].first = sym_max(mask[dim].first, Sym(0));
    mask[dim].second = sym_min(mask[dim].second, shape[dim]);
    if (!(mask[dim].first == Sym(0) && mask[dim].second == shape[dim])) covers_all = false;
  }
  if (covers_all) return std::nullopt;
  return mask;
}

Mask full_mask(const SymShape& shape) {
  Mask mask;
  for (const Sym& size : shape) mask.emplace_back(Sym(0), size);
  return mask;
}

// Whether `a` is smaller than `b` at every value of their variables, else (when that is not
// known) whether its largest value is: which side of a reshape's grouping to extend next.
bool grows_first(const Sym& a, const Sym& b) {
  if (a.vmax() < b.vmin()) return true;
  if (b.vmax() < a.vmin()) return false;
  return a.vmax() < b.vmax() || (a.vmax() == b.vmax() && a.vmin() < b.vmin());
}

// Reshape of a mask-free View when no copy is needed (the grouping rule NumPy uses for reshapes
// without a copy), for symbolic sizes too: runs of old and new dimensions whose products are the
// same expression, each run contiguous in the old View. A symbolic size is never compared with a
// number, so a grouping is only taken when it holds at every value of the variables.
std::optional<View> reshape_without_copy(const View& view, const SymShape& new_shape) {
  SymShape old_sizes, old_strides;
  for (size_t dim = 0; dim < view.shape.size(); ++dim) {
    if (is_one(view.shape[dim])) continue;
    old_sizes.push_back(view.shape[dim]);
    old_strides.push_back(view.strides[dim]);
  }
  SymShape new_strides(new_shape.size(), Sym(0));

  size_t old_dim = 0, new_dim = 0;
  while (old_dim < old_sizes.size() && new_dim < new_shape.size()) {
    Sym new_product = new_shape[new_dim], old_product = old_sizes[old_dim];
    size_t new_end = new_dim + 1, old_end = old_dim + 1;
    while (new_product != old_product) {
      if (grows_first(new_product, old_product)) {
        if (new_end >= new_shape.size()) return std::nullopt;
        new_product = new_product * new_shape[new_end++];
      } else {
        if (old_end >= old_sizes.size()) return std::nullopt;
        old_product = old_product * old_sizes[old_end++];
      }
    }
    for (size_t dim = old_dim; dim + 1 < old_end; ++dim) {
      if (old_strides[dim] != old_sizes[dim + 1] * old_strides[dim + 1]) return std::nullopt;
    }
    new_strides[new_end - 1] = old_strides[old_end - 1];
    for (size_t dim = new_end - 1; dim > new_dim; --dim) {
      new_strides[dim - 1] = new_strides[dim] * new_shape[dim];
    }
    old_dim = old_end;
    new_dim = new_end;
  }
  // Dimensions left over on one side must all be 1 (the other side's product is then matched).
  if (old_dim < old_sizes.size()) return std::nullopt;
  for (size_t dim = new_dim; dim < new_shape.size(); ++dim) {
    if (!is_one(new_shape[dim])) return std::nullopt;
  }
  View result;
  result.shape = new_shape;
  result.offset = view.offset;
  for (size_t dim = 0; dim < new_shape.size(); ++dim) {
    result.strides.push_back(is_one(new_shape[dim]) ? Sym(0) : new_strides[dim]);
  }
  return result;
}

// Reshape of a masked View that only inserts or removes size-1 dimensions.
std::optional<View> reshape_masked(const View& view, const SymShape& new_shape) {
  std::vector<size_t> old_dims, new_dims;
  for (size_t dim = 0; dim < view.shape.size(); ++dim) {
    if (!is_one(view.shape[dim])) old_dims.push_back(dim);
  }
  for (size_t dim = 0; dim < new_shape.size(); ++dim) {
    if (!is_one(new_shape[dim])) new_dims.push_back(dim);
  }
  if (old_dims.size() != new_dims.size()) return std::nullopt;
  for (size_t index = 0; index < old_dims.size(); ++index) {
    if (view.shape[old_dims[index]] != new_shape[new_dims[index]]) return std::nullopt;
  }
  // A size-1 dimension that is masked out empties the whole view; keep that as a new View.
  for (size_t dim = 0; dim < view.shape.size(); ++dim) {
    if (is_one(view.shape[dim]) &&
        !((*view.mask)[dim].first == Sym(0) && (*view.mask)[dim].second == Sym(1))) {
      return std::nullopt;
    }
  }
  View result;
  result.shape = new_shape;
  result.offset = view.offset;
  result.strides.assign(new_shape.size(), Sym(0));
  Mask mask = full_mask(new_shape);
  for (size_t index = 0; index < old_dims.size(); ++index) {
    result.strides[new_dims[index]] = view.strides[old_dims[index]];
    mask[new_dims[index]] = (*view.mask)[old_dims[index]];
  }
  result.mask = normalize_mask(new_shape, mask);
  return result;
}

}  // namespace

SymShape to_sym_shape(const std::vector<int64_t>& shape) {
  return SymShape(shape.begin(), shape.end());
}

SymShape View::contiguous_strides(const SymShape& shape) {
  SymShape strides(shape.size(), Sym(0));
  Sym running(1);
  for (size_t dim = shape.size(); dim-- > 0;) {
    strides[dim] = is_one(shape[dim]) ? Sym(0) : running;
    running = running * shape[dim];
  }
  return strides;
}

View View::contiguous(const SymShape& shape) {
  View view;
  view.shape = shape;
  view.strides = contiguous_strides(shape);
  view.offset = Sym(0);
  return view;
}

bool View::is_contiguous() const {
  if (!(offset == Sym(0)) || mask.has_value()) return false;
  // A size-1 dimension's stride never matters (a shrink can leave any value there).
  const SymShape expected = contiguous_strides(shape);
  for (size_t dim = 0; dim < shape.size(); ++dim) {
    if (!is_one(shape[dim]) && strides[dim] != expected[dim]) return false;
  }
  return true;
}

std::pair<Sym, Sym> View::to_index(const std::vector<Sym>& index) const {
  Sym flat = offset;
  Sym valid(1);
  for (size_t dim = 0; dim < shape.size(); ++dim) {
    flat = flat + index[dim] * strides[dim];
    if (mask) {
      valid = logical_and(valid, logical_and(ge(index[dim], (*mask)[dim].first),
                                             lt(index[dim], (*mask)[dim].second)));
    }
  }
  return {flat, valid};
}

std::string View::to_string() const {
  std::string text =
      "View(shape=" + join(shape) + ", strides=" + join(strides) + ", offset=" + offset.key();
  if (mask) {
    text += ", mask=(";
    for (size_t dim = 0; dim < mask->size(); ++dim) {
      if (dim > 0) text += ", ";
      text += "(" + (*mask)[dim].first.key() + ", " + (*mask)[dim].second.key() + ")";
    }
    text += ")";
  }
  return text + ")";
}

size_t View::hash() const {
  size_t seed = hash_combine(shape.size(), offset.hash());
  for (const Sym& size : shape) seed = hash_combine(seed, size.hash());
  for (const Sym& stride : strides) seed = hash_combine(seed, stride.hash());
  if (mask) {
    for (const auto& [begin, end] : *mask)
      seed = hash_combine(hash_combine(seed, begin.hash()), end.hash());
  }
  return seed;
}

size_t ShapeTracker::hash() const {
  size_t seed = views_.size();
  for (const View& view : views_) seed = hash_combine(seed, view.hash());
  return seed;
}

bool View::operator==(const View& other) const {
  return shape == other.shape && strides == other.strides && offset == other.offset &&
         mask == other.mask;
}

ShapeTracker ShapeTracker::with_top(View view) const {
  std::vector<View> views = views_;
  views.back() = std::move(view);
  return ShapeTracker(std::move(views));
}

ShapeTracker ShapeTracker::reshape(const SymShape& new_shape) const {
  const View& top = views_.back();
  if (top.shape == new_shape) return *this;
  const bool constant = all_const(top.shape) && all_const(top.strides) && all_const(new_shape);
  if (constant) {
    int64_t numel = 1;
    for (const Sym& size : new_shape) numel *= size.const_value();
    if (numel == 0) return ShapeTracker::contiguous(new_shape);  // no element is ever read
  }
  if (top.is_contiguous()) {
    std::vector<View> views = views_;
    views.back() = View::contiguous(new_shape);
    return ShapeTracker(std::move(views));
  }
  std::optional<View> merged;
  if (!top.mask) merged = reshape_without_copy(top, new_shape);
  if (top.mask) merged = reshape_masked(top, new_shape);
  if (merged) return with_top(*merged);
  std::vector<View> views = views_;
  views.push_back(View::contiguous(new_shape));
  return ShapeTracker(std::move(views));
}

ShapeTracker ShapeTracker::permute(const std::vector<int>& axes) const {
  const View& top = views_.back();
  View view;
  view.offset = top.offset;
  Mask mask;
  for (int axis : axes) {
    view.shape.push_back(top.shape[axis]);
    view.strides.push_back(top.strides[axis]);
    if (top.mask) mask.push_back((*top.mask)[axis]);
  }
  if (top.mask) view.mask = mask;
  return with_top(std::move(view));
}

ShapeTracker ShapeTracker::expand(const SymShape& new_shape) const {
  View view = views_.back();
  for (size_t dim = 0; dim < new_shape.size(); ++dim) {
    if (view.shape[dim] == new_shape[dim]) continue;
    if (!(view.shape[dim] == Sym(1))) {
      // The same size written another way (a number as the variable bound to it): the size
      // is renamed, the stride kept.
      if (view.mask && (*view.mask)[dim].first == Sym(0) &&
          (*view.mask)[dim].second == view.shape[dim])
        (*view.mask)[dim].second = new_shape[dim];
      view.shape[dim] = new_shape[dim];
      continue;
    }
    // Only size-1 dimensions expand; their mask is either all (0, 1) or empty (0, 0).
    view.shape[dim] = new_shape[dim];
    view.strides[dim] = Sym(0);
    if (view.mask) {
      const bool empty = (*view.mask)[dim].first == (*view.mask)[dim].second;
      (*view.mask)[dim] =
          empty ? std::make_pair(Sym(0), Sym(0)) : std::make_pair(Sym(0), new_shape[dim]);
    }
  }
  if (view.mask) view.mask = normalize_mask(view.shape, *view.mask);
  return with_top(std::move(view));
}

ShapeTracker ShapeTracker::pad(const std::vector<std::pair<Sym, Sym>>& before_after) const {
  View view = views_.back();
  Mask mask = view.mask ? *view.mask : full_mask(view.shape);
  for (size_t dim = 0; dim < view.shape.size(); ++dim) {
    const Sym& before = before_after[dim].first;
    const Sym& after = before_after[dim].second;
    view.offset = view.offset - before * view.strides[dim];
    mask[dim] = {mask[dim].first + before, mask[dim].second + before};
    view.shape[dim] = view.shape[dim] + before + after;
  }
  view.mask = normalize_mask(view.shape, mask);
  return with_top(std::move(view));
}

ShapeTracker ShapeTracker::shrink(const std::vector<std::pair<Sym, Sym>>& begin_end) const {
  View view = views_.back();
  for (size_t dim = 0; dim < view.shape.size(); ++dim) {
    const Sym& begin = begin_end[dim].first;
    const Sym& end = begin_end[dim].second;
    view.offset = view.offset + begin * view.strides[dim];
    view.shape[dim] = end - begin;
    if (view.mask) {
      (*view.mask)[dim] = {(*view.mask)[dim].first - begin, (*view.mask)[dim].second - begin};
    }
  }
  if (view.mask) {
    Mask mask = *view.mask;
    // Clip to the new bounds; an emptied dimension keeps an empty range.
    for (size_t dim = 0; dim < mask.size(); ++dim) {
      mask[dim].first = sym_min(sym_max(mask[dim].first, Sym(0)), view.shape[dim]);
      mask[dim].second = sym_max(sym_min(mask[dim].second, view.shape[dim]), mask[dim].first);
    }
    view.mask = normalize_mask(view.shape, mask);
  }
  return with_top(std::move(view));
}

ShapeTracker ShapeTracker::flip(const std::vector<bool>& flip_axis) const {
  View view = views_.back();
  for (size_t dim = 0; dim < view.shape.size(); ++dim) {
    if (!flip_axis[dim]) continue;
    view.offset = view.offset + (view.shape[dim] - Sym(1)) * view.strides[dim];
    view.strides[dim] = -view.strides[dim];
    if (view.mask) {
      auto& range = (*view.mask)[dim];
      range = {view.shape[dim] - range.second, view.shape[dim] - range.first};
    }
  }
  return with_top(std::move(view));
}

std::pair<Sym, Sym> ShapeTracker::to_index(const std::vector<Sym>& index) const {
  auto [flat, valid] = views_.back().to_index(index);
  std::vector<Sym> index_above = index;
  for (size_t level = views_.size() - 1; level-- > 0;) {
    const View& view = views_[level];
    // A View above that only reshapes this one indexes it without flattening.
    const View& above = views_[level + 1];
    std::vector<Sym> lower_index = above.is_contiguous()
                                       ? reshape_index(index_above, above.shape, view.shape)
                                       : unravel_index(flat, view.shape);
    auto [lower_flat, lower_valid] = view.to_index(lower_index);
    flat = lower_flat;
    valid = logical_and(valid, lower_valid);
    index_above = std::move(lower_index);
  }
  return {flat, valid};
}

bool ShapeTracker::is_injective() const {
  for (const View& view : views_) {
    for (size_t dim = 0; dim < view.shape.size(); ++dim) {
      if (view.strides[dim] == Sym(0) && !(view.shape[dim].vmax() <= 1)) return false;
    }
  }
  return true;
}

bool ShapeTracker::is_symbolic() const {
  auto symbolic = [](const SymShape& values) {
    return std::any_of(values.begin(), values.end(),
                       [](const Sym& value) { return !value.is_const(); });
  };
  for (const View& view : views_) {
    if (symbolic(view.shape) || symbolic(view.strides) || !view.offset.is_const()) return true;
    if (!view.mask) continue;
    for (const auto& [begin, end] : *view.mask) {
      if (!begin.is_const() || !end.is_const()) return true;
    }
  }
  return false;
}

ShapeTracker ShapeTracker::substitute(const std::map<std::string, Sym>& values) const {
  std::vector<View> views = views_;
  auto replace = [&](SymShape& sizes) {
    for (Sym& size : sizes) size = size.substitute(values);
  };
  for (View& view : views) {
    replace(view.shape);
    replace(view.strides);
    view.offset = view.offset.substitute(values);
    if (view.mask) {
      for (auto& [begin, end] : *view.mask) {
        begin = begin.substitute(values);
        end = end.substitute(values);
      }
    }
  }
  return ShapeTracker(std::move(views));
}

std::string ShapeTracker::to_string() const {
  std::string text = "ShapeTracker(";
  for (size_t index = 0; index < views_.size(); ++index) {
    if (index > 0) text += ", ";
    text += views_[index].to_string();
  }
  return text + ")";
}

std::vector<int64_t> shape_values(const SymShape& shape) {
  std::vector<int64_t> values;
  for (const Sym& size : shape) values.push_back(size.has_unbound() ? size.vmax() : size.eval());
  return values;
}

std::vector<Sym> unravel_index(const Sym& flat, const SymShape& shape) {
  std::vector<Sym> index(shape.size(), Sym(0));
  for (const Sym& size : shape) {
    if (size.vmax() <= 0) return index;  // an empty shape has no element to index
  }
  // A symbolic size that may be 0 divides as at least 1: at 0 there is no element to index.
  auto divisor = [](const Sym& size) { return size.vmin() >= 1 ? size : sym_max(size, Sym(1)); };
  Sym stride(1);
  for (size_t dim = shape.size(); dim-- > 0;) {
    if (!is_one(shape[dim])) {
      const Sym quotient = floordiv(flat, stride);
      // The outermost index needs no modulo: a flat index is always inside the shape.
      index[dim] = dim == 0 ? quotient : mod(quotient, divisor(shape[dim]));
    }
    stride = stride * divisor(shape[dim]);
  }
  return index;
}

std::vector<Sym> reshape_index(const std::vector<Sym>& index, const SymShape& from_shape,
                               const SymShape& to_shape) {
  std::vector<Sym> result(to_shape.size(), Sym(0));
  std::vector<size_t> from_dims, to_dims;  // the dimensions of size other than 1
  for (size_t dim = 0; dim < from_shape.size(); ++dim) {
    if (!is_one(from_shape[dim])) from_dims.push_back(dim);
  }
  for (size_t dim = 0; dim < to_shape.size(); ++dim) {
    if (!is_one(to_shape[dim])) to_dims.push_back(dim);
  }
  auto flat_of = [&](size_t first, size_t end) {  // a run of from_dims, flattened
    Sym flat(0);
    for (size_t at = first; at < end; ++at)
      flat = flat * from_shape[from_dims[at]] + index[from_dims[at]];
    return flat;
  };
  // A shape that holds fewer elements than the other (a View over a prefix of the one below)
  // is no reshape: its row-major position is read from the start of the other.
  if (sym_prod(from_shape) != sym_prod(to_shape))
    return unravel_index(flat_of(0, from_dims.size()), to_shape);
  size_t from_at = 0, to_at = 0;
  while (from_at < from_dims.size() && to_at < to_dims.size()) {
    Sym from_product = from_shape[from_dims[from_at]], to_product = to_shape[to_dims[to_at]];
    size_t from_end = from_at + 1, to_end = to_at + 1;
    while (from_product != to_product) {
      if (grows_first(from_product, to_product) && from_end < from_dims.size()) {
        from_product = from_product * from_shape[from_dims[from_end++]];
      } else if (to_end < to_dims.size()) {
        to_product = to_product * to_shape[to_dims[to_end++]];
      } else {
        // No common grouping is known: the whole rest as one run.
        from_end = from_dims.size();
        to_end = to_dims.size();
        break;
      }
    }
    SymShape run_shape;
    for (size_t at = to_at; at < to_end; ++at) run_shape.push_back(to_shape[to_dims[at]]);
    const std::vector<Sym> run_index = unravel_index(flat_of(from_at, from_end), run_shape);
    for (size_t at = to_at; at < to_end; ++at) result[to_dims[at]] = run_index[at - to_at];
    from_at = from_end;
    to_at = to_end;
  }
  if (from_at < from_dims.size() || to_at < to_dims.size())  // sizes not known to match
    return unravel_index(flat_of(0, from_dims.size()), to_shape);
  return result;
}

}  // namespace kiln

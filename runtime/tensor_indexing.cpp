// Indexing by tensors of indices: gather, take_along_axis, index_select and embedding. Each is one
// Gather node (core/uop.h): a kernel reads the element each index points at, so the work is
// proportional to the output; indices are checked in the kernel (codegen/lower_gather.cpp).

#include <kiln/error.h>
#include <kiln/tensor.h>

#include "runtime/autograd.h"
#include "runtime/tensor_internal.h"

namespace kiln {

namespace {

void check_index_dtype(const Tensor& source, const Tensor& index, const char* op) {
  if (!index.dtype().is_int())
    throw DTypeError(std::string("[") + op + "] the index must be an integer tensor, got " +
                     describe(index) + " for " + describe(source));
}

// out[p] = source[p with p[axis] = index[p]], where `index` has the source's rank and extents
// outside `axis` no larger than the source's (the source is cut to them).
Tensor gathered(const Tensor& source, int axis, const Tensor& index, const char* op) {
  const DimShape own = source.dims(), index_dims = index.dims();
  std::vector<std::pair<Dim, Dim>> extent;
  bool symbolic = false;
  for (size_t other = 0; other < own.size(); ++other) {
    extent.emplace_back(0, static_cast<int>(other) == axis ? own[other] : index_dims[other]);
    symbolic |= own[other].is_symbolic() || index_dims[other].is_symbolic();
  }
  if (!symbolic && index.numel() == 0)
    return Tensor::zeros(index.shape(), source.dtype(), source.device());
  const Dim& size = own[static_cast<size_t>(axis)];
  if (!size.is_symbolic() && size.value() == 0)
    throw IndexError(std::string("[") + op + "] every index is out of range: axis " +
                     std::to_string(axis) + " of " + describe(source) +
                     " is empty, and the index " + describe(index) + " is not");
  // Narrow integers are read as int32, which holds every value they take.
  Tensor position = index;
  if (index.dtype().itemsize() < 4) position = index.cast(dtypes::int32);
  Tensor gathered_values;
  {
    NoGradGuard recorded_below;  // the gather's own rule takes the gradient past the cut
    const Tensor cut = source.shrink(extent);
    gathered_values =
        make_tensor(UOp::make(Op::Gather, source.dtype(), {node_of(cut), node_of(position)},
                              GatherArg{axis, op}, index.shape()),
                    source.device());
  }
  // The gradient of a gather: each value's gradient added back where it was read.
  return recorded(
      std::move(gathered_values), "gather",
      [source, axis, position](const Tensor& gradient) {
        // Negative positions count from the end here too (scatter follows gather's rules).
        const Tensor zeros = Tensor::zeros(source.dims(), source.dtype(), source.device());
        return std::vector<Tensor>{zeros.scatter_add(axis, position, gradient)};
      },
      source);
}

}  // namespace

// The source's `axis` replaced by the index's axes (sizes as given: a bound variable stays one).
// One Gather along the last of the index's axes: the source is broadcast over the index's other
// axes, and the index over the source's other axes.
Tensor taken(const Tensor& source, int axis, const Tensor& index, const char* op) {
  const Tensor ids = index.ndim() == 0 ? index.reshape(Shape{1}) : index;
  const DimShape sizes = source.dims(), id_sizes = ids.dims();
  const size_t at = static_cast<size_t>(axis);
  DimShape out_shape(sizes.begin(), sizes.begin() + axis);
  out_shape.insert(out_shape.end(), id_sizes.begin(), id_sizes.end());
  out_shape.insert(out_shape.end(), sizes.begin() + axis + 1, sizes.end());
  const int gather_axis = axis + static_cast<int>(id_sizes.size()) - 1;
  DimShape source_view(sizes.begin(), sizes.begin() + axis);
  source_view.insert(source_view.end(), id_sizes.size() - 1, Dim(1));
  source_view.insert(source_view.end(), sizes.begin() + axis, sizes.end());
  DimShape source_shape = out_shape;
  source_shape[static_cast<size_t>(gather_axis)] = sizes[at];
  DimShape index_view(at, Dim(1));
  index_view.insert(index_view.end(), id_sizes.begin(), id_sizes.end());
  index_view.insert(index_view.end(), sizes.size() - at - 1, Dim(1));
  const Tensor rows = gathered(source.reshape(source_view).expand(source_shape), gather_axis,
                               ids.reshape(index_view).expand(out_shape), op);
  if (index.ndim() > 0) return rows;
  out_shape.erase(out_shape.begin() + axis);  // a scalar index drops the axis
  return rows.reshape(out_shape);
}

Tensor Tensor::gather(int64_t axis, const Tensor& index) const {
  const int dim = normalize_axis(axis, ndim(), "gather");
  check_same_device(*this, index, "gather");
  check_index_dtype(*this, index, "gather");
  if (index.ndim() != ndim())
    throw ShapeError("[gather] the index " + describe(index) + " needs the " +
                     std::to_string(ndim()) + " dimensions of " + describe(*this));
  for (int other = 0; other < ndim(); ++other) {
    if (other != dim && index.shape()[other] > shape()[other])
      throw ShapeError("[gather] the index " + describe(index) + " is larger than " +
                       describe(*this) + " along dimension " + std::to_string(other) +
                       " (only the gathered axis " + std::to_string(dim) + " may differ)");
  }
  return gathered(*this, dim, index, "gather");
}

Tensor Tensor::take_along_axis(const Tensor& index, int64_t axis) const {
  const int dim = normalize_axis(axis, ndim(), "take_along_axis");
  check_same_device(*this, index, "take_along_axis");
  check_index_dtype(*this, index, "take_along_axis");
  if (index.ndim() != ndim())
    throw ShapeError("[take_along_axis] the index " + describe(index) + " needs the " +
                     std::to_string(ndim()) + " dimensions of " + describe(*this));
  // Outside the axis the two broadcast against each other.
  const DimShape own = dims(), index_dims = index.dims();
  DimShape source_shape = own, index_shape = index_dims;
  for (int other = 0; other < ndim(); ++other) {
    if (other == dim) continue;
    const Dim& a = own[static_cast<size_t>(other)];
    const Dim& b = index_dims[static_cast<size_t>(other)];
    const bool a_one = a.sym() == Sym(1), b_one = b.sym() == Sym(1);
    if (!(a.sym() == b.sym()) && !a_one && !b_one)
      throw ShapeError("[take_along_axis] the index " + describe(index) + " and " +
                       describe(*this) + " do not broadcast along dimension " +
                       std::to_string(other) + " (sizes must be equal, or 1)");
    const Dim& wider = a_one ? b : a;
    source_shape[static_cast<size_t>(other)] = index_shape[static_cast<size_t>(other)] = wider;
  }
  return gathered(expand(source_shape), dim, index.expand(index_shape), "take_along_axis");
}

Tensor Tensor::index_select(int64_t axis, const Tensor& index) const {
  const int dim = normalize_axis(axis, ndim(), "index_select");
  check_same_device(*this, index, "index_select");
  check_index_dtype(*this, index, "index_select");
  if (index.ndim() != 1)
    throw ShapeError("[index_select] the index must be 1-dimensional, got " + describe(index) +
                     " for " + describe(*this));
  return taken(*this, dim, index, "index_select");
}

Tensor Tensor::take(const Tensor& index, int64_t axis) const {
  const int dim = normalize_axis(axis, ndim(), "take");
  check_same_device(*this, index, "take");
  check_index_dtype(*this, index, "take");
  return taken(*this, dim, index, "take");
}

Tensor embedding(const Tensor& indices, const Tensor& weight) {
  check_same_device(indices, weight, "embedding");
  if (weight.ndim() != 2)
    throw ShapeError("[embedding] the weight must be a [rows, features] table, got " +
                     describe(weight) + " for indices " + describe(indices));
  check_index_dtype(weight, indices, "embedding");
  return taken(weight, 0, indices, "embedding");
}

}  // namespace kiln

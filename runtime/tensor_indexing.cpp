// Indexing by tensors of indices: gather and index_select. Each output element compares its
// index with every position along the axis and keeps the match (tinygrad builds it the same way):
// one fused kernel of out.numel() * size steps, with no read of the indices on the host.

#include <kiln/error.h>
#include <kiln/tensor.h>

#include <limits>

#include "runtime/tensor_internal.h"

namespace kiln {

Tensor Tensor::gather(int64_t axis, const Tensor& index) const {
  const int dim = normalize_axis(axis, ndim(), "gather");
  check_same_device(*this, index, "gather");
  if (!index.dtype().is_int())
    throw DTypeError("[gather] the index must be an integer tensor, got " + describe(index) +
                     " for " + describe(*this));
  if (index.ndim() != ndim())
    throw ShapeError("[gather] the index " + describe(index) + " needs the " +
                     std::to_string(ndim()) + " dimensions of " + describe(*this));
  for (int other = 0; other < ndim(); ++other) {
    if (other != dim && index.shape()[other] > shape()[other])
      throw ShapeError("[gather] the index " + describe(index) + " is larger than " +
                       describe(*this) + " along dimension " + std::to_string(other) +
                       " (only the gathered axis " + std::to_string(dim) + " may differ)");
  }
  // Sizes as the user gave them: a bound variable stays one, so that one kernel serves every
  // value and a captured step replays at others (shape() would fix them at this value).
  const DimShape own = dims(), index_dims = index.dims();
  const Dim& size = own[static_cast<size_t>(dim)];
  bool symbolic = false;
  for (const DimShape* shape_of : {&own, &index_dims}) {
    for (const Dim& extent : *shape_of) symbolic |= extent.is_symbolic();
  }
  if (!symbolic && (size.value() == 0 || index.numel() == 0))
    return Tensor::zeros(index.shape(), dtype(), device());
  // Bool has no ordering to take a maximum in: gathered as uint8.
  if (dtype().is_bool()) return cast(dtypes::uint8).gather(axis, index).cast(dtypes::bool_);

  // x cut to the index's extent outside the axis, then every candidate along the axis on a new
  // last axis: candidates[..., k] is x at position k of the axis.
  std::vector<std::pair<Dim, Dim>> extent;
  std::vector<int64_t> axis_last;
  for (int other = 0; other < ndim(); ++other) {
    extent.emplace_back(0, other == dim ? size : index_dims[static_cast<size_t>(other)]);
    if (other != dim) axis_last.push_back(other);
  }
  axis_last.push_back(dim);
  DimShape candidates_shape = index_dims;
  candidates_shape.push_back(size);
  const Tensor candidates =
      shrink(extent).permute(axis_last).unsqueeze(dim).expand(candidates_shape);
  // Indices compare exactly in int32 where it holds every index and position, else in int64
  // (uint64 past 2^63 becomes negative there: out of range).
  const DType index_dtype = index.dtype();
  const bool narrow = size.sym().vmax() <= std::numeric_limits<int32_t>::max() &&
                      (index_dtype.itemsize() < 4 || index_dtype == dtypes::int32);
  const DType compare = narrow ? dtypes::int32 : dtypes::int64;
  const Tensor wanted = index.cast(compare);
  const Tensor positions = Tensor::arange(size, compare, device());
  const Tensor match = wanted.unsqueeze(-1) == positions;
  // The one match is the maximum over values that lose to everything (-0.0 and NaN stay as
  // they are); no match leaves 0.
  const double lowest =
      dtype().is_float() ? -std::numeric_limits<double>::infinity() : dtype().min_value();
  const Tensor picked = where(match, candidates, lowest).max({-1});
  // In range: a fixed size compares with the index; a variable one has no host value to compare
  // with, so whether some position matched is reduced beside the pick (the same kernel).
  const Tensor in_range = size.is_symbolic()
                              ? match.any({-1})
                              : (wanted >= 0.0) & (wanted < static_cast<double>(size.value()));
  return where(in_range, picked, 0.0);
}

Tensor Tensor::index_select(int64_t axis, const Tensor& index) const {
  const int dim = normalize_axis(axis, ndim(), "index_select");
  check_same_device(*this, index, "index_select");
  if (!index.dtype().is_int())
    throw DTypeError("[index_select] the index must be an integer tensor, got " + describe(index) +
                     " for " + describe(*this));
  if (index.ndim() != 1)
    throw ShapeError("[index_select] the index must be 1-dimensional, got " + describe(index) +
                     " for " + describe(*this));
  // The index along the axis, the same for every position of the other axes (sizes as given:
  // a bound variable stays one).
  const Dim positions = index.dims()[0];
  DimShape along(static_cast<size_t>(ndim()), Dim(1));
  along[static_cast<size_t>(dim)] = positions;
  DimShape out_shape = dims();
  out_shape[static_cast<size_t>(dim)] = positions;
  return gather(dim, index.reshape(along).expand(out_shape));
}

}  // namespace kiln

// References for loads from and stores to computed addresses: gather, index_select, scatter.

#include <stdexcept>

#include "tools/conformance/reference.h"

namespace kiln::conformance::ref {

int64_t index_position(int64_t index, int64_t size, DType dtype) {
  const bool negative = dtype.is_signed_int() && index < 0;
  const int64_t position = negative ? index + size : index;
  if (position < 0 || position >= size || (!dtype.is_signed_int() && index < 0))
    throw std::out_of_range("index " + std::to_string(index) + " outside an axis of " +
                            std::to_string(size));
  return position;
}

HostTensor gather(const HostTensor& x, int64_t axis, const HostTensor& index) {
  const int dim = normalize_axis(axis, x.shape.size());
  const int64_t size = x.shape[static_cast<size_t>(dim)];
  HostTensor result(x.dtype, index.shape);
  for (int64_t flat = 0; flat < index.numel(); ++flat) {
    const Scalar& at = index.data[static_cast<size_t>(flat)];
    const int64_t position = index_position(at.i, size, index.dtype);
    std::vector<int64_t> coords = unravel(flat, index.shape);
    coords[static_cast<size_t>(dim)] = position;
    result.data[static_cast<size_t>(flat)] = x.data[static_cast<size_t>(ravel(coords, x.shape))];
  }
  return result;
}

HostTensor index_select(const HostTensor& x, int64_t axis, const HostTensor& index) {
  const int dim = normalize_axis(axis, x.shape.size());
  const int64_t size = x.shape[static_cast<size_t>(dim)];
  Shape shape = x.shape;
  shape[static_cast<size_t>(dim)] = index.numel();
  HostTensor result(x.dtype, shape);
  for (int64_t flat = 0; flat < result.numel(); ++flat) {
    std::vector<int64_t> coords = unravel(flat, shape);
    const int64_t position = index_position(
        index.data[static_cast<size_t>(coords[static_cast<size_t>(dim)])].i, size, index.dtype);
    coords[static_cast<size_t>(dim)] = position;
    result.data[static_cast<size_t>(flat)] = x.data[static_cast<size_t>(ravel(coords, x.shape))];
  }
  return result;
}

HostTensor scatter(const HostTensor& x, int64_t axis, const HostTensor& index,
                   const HostTensor& src, std::optional<Binary> combine, bool include_self) {
  const int dim = normalize_axis(axis, x.shape.size());
  const int64_t size = x.shape[static_cast<size_t>(dim)];
  HostTensor result = x;
  std::vector<bool> written(x.data.size(), false);
  // Row-major over the index: along each line, ascending positions (the order kiln documents).
  for (int64_t flat = 0; flat < index.numel(); ++flat) {
    std::vector<int64_t> coords = unravel(flat, index.shape);
    const Scalar& value = src.data[static_cast<size_t>(ravel(coords, src.shape))];
    coords[static_cast<size_t>(dim)] =
        index_position(index.data[static_cast<size_t>(flat)].i, size, index.dtype);
    const size_t at = static_cast<size_t>(ravel(coords, x.shape));
    if (!combine) {
      result.data[at] = value;
    } else if (!include_self && !written[at]) {
      // The element starts from the identity (PyTorch's fill): a sum's 0 + -0 is +0.
      result.data[at] =
          *combine == Binary::Add ? binary_value(Binary::Add, x.dtype, Scalar{}, value) : value;
    } else {
      result.data[at] = binary_value(*combine, x.dtype, result.data[at], value);
    }
    written[at] = true;
  }
  return result;
}

}  // namespace kiln::conformance::ref

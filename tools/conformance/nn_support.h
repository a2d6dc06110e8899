#pragma once
// Helpers the nn conformance cases share (battery_nn.cpp, battery_nn_losses.cpp).

#include <vector>

#include "tools/conformance/battery.h"

namespace kiln::conformance::detail::nn_support {

// 64 eps for float32 and float64 times the scale of the terms that round; 8 for the 16-bit
// floats, whose eps is large enough that 64 would pass a wrong formula.
inline Tolerance nn_tolerance(DType dtype) {
  return tolerance_for(dtype, 1, dtype.is_half() ? 8 : 64);
}

inline std::vector<double> as_doubles(const HostTensor& tensor) {
  const HostTensor wide = cast(tensor, dtypes::float64);
  std::vector<double> values;
  for (const Scalar& item : wide.data) values.push_back(item.f);
  return values;
}

// `values` rounded into `dtype`, with the scales of their rounding errors.
inline Expected result_of(DType dtype, const Shape& shape, const std::vector<double>& values,
                          std::vector<double> scale) {
  HostTensor result(dtype, shape);
  for (size_t index = 0; index < values.size(); ++index)
    result.data[index] = make_scalar(dtype, values[index]);
  return Expected(result, std::move(scale));
}

}  // namespace kiln::conformance::detail::nn_support

#pragma once
// What convolution, pooling and resampling (kiln/conv.h) share: per-axis arguments, the batch
// axis PyTorch lets a caller leave out, padding that may crop, and the sliding-window view.

#include <kiln/conv.h>
#include <kiln/tensor.h>

#include <string>
#include <vector>

namespace kiln::nn::detail {

// The spatial input of a (N, C, *spatial) or (C, *spatial) tensor, always with the batch axis.
struct SpatialInput {
  Tensor batched;
  bool unbatched = false;  // the caller's input had no batch axis: drop it from the result
  Tensor result(const Tensor& batched_result) const {
    return unbatched ? batched_result.squeeze(0) : batched_result;
  }
};
// A ShapeError unless input is float, (N, C, *spatial) or (C, *spatial) with `spatial` axes of
// fixed sizes.
SpatialInput spatial_input(const Tensor& input, size_t spatial, const char* op);

// `values` for `count` axes: one for all, or one per axis; `name` in the error.
std::vector<int64_t> per_axis(const AxisValues& values, size_t count, const char* op,
                              const char* name);
// A ShapeError unless every value is >= minimum.
void check_at_least(const std::vector<int64_t>& values, int64_t minimum, const char* op,
                    const char* name);
std::string list_of(const std::vector<int64_t>& values);

// x padded on its last before.size() axes by `before` and `after` with `value`, a negative
// amount cropping instead.
Tensor pad_trailing(const Tensor& x, const std::vector<int64_t>& before,
                    const std::vector<int64_t>& after, double value);

// The sliding windows of x (..., in_1, ..., in_n): (..., out_1, ..., out_n, k_1, ..., k_n) with
// out[..., o, k] = x[..., o * stride + k * dilation] and out_i = (in_i - dilation_i (k_i - 1) -
// 1) / stride_i + 1, a view (no data moves). Every window must fit (the caller checks).
Tensor sliding_windows(const Tensor& x, const std::vector<int64_t>& kernel,
                       const std::vector<int64_t>& stride, const std::vector<int64_t>& dilation);

}  // namespace kiln::nn::detail

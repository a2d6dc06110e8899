#pragma once
// Convolution, pooling, resampling and padding modes, as PyTorch's torch.nn.functional defines
// them (same arguments, defaults and output sizes). Each is composed of kiln's movement ops and
// reductions: a sliding-window view of the (padded) input, read in place, multiplied and summed
// (convolution) or reduced (pooling), so it stays lazy and fuses with its neighbours.
//
// Inputs are float tensors (N, C, *spatial), or (C, *spatial) without the batch axis (the result
// drops it too); the spatial axes have fixed sizes. Per-axis arguments take one value for every
// spatial axis ({2}) or one per axis ({2, 1}). Bad arguments are a ShapeError (a DTypeError for a
// dtype) naming the function, the shapes and the rule broken; nothing is built then.

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <utility>
#include <vector>

#include <kiln/tensor.h>

namespace kiln::nn {

// One value for every spatial axis, or one per spatial axis.
using AxisValues = std::vector<int64_t>;

// A convolution's zero padding: numbers (each side of each axis gets its axis's number), or
// "same" (the output as large as the input, the extra element of an odd total on the far side;
// stride 1 only) or "valid" (none).
struct ConvPadding {
  ConvPadding(int64_t each = 0) : values{each} {}  // NOLINT: a number converts, as in PyTorch
  ConvPadding(std::initializer_list<int64_t> per_axis) : values(per_axis) {}
  ConvPadding(AxisValues per_axis) : values(std::move(per_axis)) {}  // NOLINT
  static ConvPadding same() {
    ConvPadding padding;
    padding.is_same = true;
    return padding;
  }
  static ConvPadding valid() { return ConvPadding(0); }

  AxisValues values;
  bool is_same = false;
};

struct ConvOptions {
  AxisValues stride = {1};    // >= 1
  ConvPadding padding = 0;    // >= 0
  AxisValues dilation = {1};  // >= 1
  int64_t groups = 1;         // divides the input and output channels
};

// out[n, co, o] = bias[co] + sum over the channels ci of co's group (c of them, the group's
// first at g c) and over k of
//   input[n, g c + ci, o * stride + k * dilation - padding] * weight[co, ci, k]
// input (N, Cin, *spatial), weight (Cout, Cin / groups, *kernel), bias (Cout). The output's size
// on each axis is (in + 2 padding - dilation (kernel - 1) - 1) / stride + 1, at least 1 (a kernel
// that does not fit the padded input is a ShapeError).
Tensor conv1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = {},
              const ConvOptions& options = {});
Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = {},
              const ConvOptions& options = {});
Tensor conv3d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = {},
              const ConvOptions& options = {});

struct ConvTransposeOptions {
  AxisValues stride = {1};          // >= 1
  AxisValues padding = {0};         // >= 0, taken off each side of the full output
  AxisValues output_padding = {0};  // added to the far side; smaller than stride or dilation
  AxisValues dilation = {1};        // >= 1
  int64_t groups = 1;
};

// The gradient of conv with respect to its input (a "deconvolution"): input (N, Cin, *spatial),
// weight (Cin, Cout / groups, *kernel), bias (Cout). Output size on each axis:
// (in - 1) stride - 2 padding + dilation (kernel - 1) + output_padding + 1, at least 1.
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight,
                        const std::optional<Tensor>& bias = {},
                        const ConvTransposeOptions& options = {});
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight,
                        const std::optional<Tensor>& bias = {},
                        const ConvTransposeOptions& options = {});
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight,
                        const std::optional<Tensor>& bias = {},
                        const ConvTransposeOptions& options = {});

struct PoolOptions {
  AxisValues kernel_size;         // >= 1; required
  AxisValues stride = {};         // >= 1; empty means kernel_size
  AxisValues padding = {0};       // implicit -inf (max) or 0 (average), at most half the kernel
  AxisValues dilation = {1};      // >= 1; max pooling only
  bool ceil_mode = false;         // round the output size up: a last window that starts inside the
                                  // input or the near padding is kept, partly outside
  bool count_include_pad = true;  // average pooling: divide by the window's size including
                                  // padding (never the ceil_mode overhang) or by the inputs in it
};

// The largest input in each window (NaN where the window holds one). The windows' sizes are
// those of conv with the same kernel, stride, padding and dilation, rounded up under ceil_mode.
Tensor max_pool1d(const Tensor& input, const PoolOptions& options);
Tensor max_pool2d(const Tensor& input, const PoolOptions& options);
Tensor max_pool3d(const Tensor& input, const PoolOptions& options);
// The maximum and where it is: the flat position in the input's spatial axes (int64, row-major
// over them), the first such position where several hold it, and as PyTorch the last NaN where
// the window holds some.
std::pair<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, const PoolOptions& options);
std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, const PoolOptions& options);
std::pair<Tensor, Tensor> max_pool3d_with_indices(const Tensor& input, const PoolOptions& options);
// The mean of each window (dilation 1).
Tensor avg_pool1d(const Tensor& input, const PoolOptions& options);
Tensor avg_pool2d(const Tensor& input, const PoolOptions& options);
Tensor avg_pool3d(const Tensor& input, const PoolOptions& options);

// The mean over window i of [floor(i in / out), ceil((i + 1) in / out)) on each spatial axis,
// for an output of `output_size` (each >= 1).
Tensor adaptive_avg_pool1d(const Tensor& input, const AxisValues& output_size);
Tensor adaptive_avg_pool2d(const Tensor& input, const AxisValues& output_size);
Tensor adaptive_avg_pool3d(const Tensor& input, const AxisValues& output_size);

enum class InterpolateMode {
  Nearest,  // the input at floor(out_position * in / out), PyTorch's "nearest"
  Linear,   // linear along each spatial axis: bilinear in 2-d, trilinear in 3-d
};

struct InterpolateOptions {
  AxisValues size = {};                   // the output's spatial sizes (>= 1), or
  std::vector<double> scale_factor = {};  // out = floor(in * scale), positions mapped by 1 / scale
  InterpolateMode mode = InterpolateMode::Nearest;
  bool align_corners = false;  // Linear only: the corner samples of input and output coincide
};

// input (N, C, *spatial) with 1-3 spatial axes resampled to a new spatial size: exactly one of
// size and scale_factor given.
Tensor interpolate(const Tensor& input, const InterpolateOptions& options);

enum class PadMode {
  Constant,   // `value` outside
  Reflect,    // mirrored about the edge element, which is not repeated (pad < size)
  Replicate,  // the edge element repeated (size >= 1)
  Circular,   // wrapped around (pad <= size)
};

// PyTorch's F.pad: `pads` holds (before, after) pairs starting from the LAST axis: {1, 1} pads
// the last axis by one on each side, {1, 1, 2, 0} also the axis before it by two in front.
// Negative pads crop (Constant only). Any dtype in Constant mode; the other modes copy elements,
// so any dtype too.
Tensor pad(const Tensor& input, const AxisValues& pads, PadMode mode = PadMode::Constant,
           double value = 0);

}  // namespace kiln::nn

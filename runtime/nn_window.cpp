// Per-axis arguments, optional batch axes, cropping pads and sliding windows (runtime/nn_window.h).

#include "runtime/nn_window.h"

#include <algorithm>
#include <cstddef>

#include "runtime/nn_checks.h"
#include "runtime/tensor_internal.h"

namespace kiln::nn::detail {

std::string list_of(const std::vector<int64_t>& values) {
  std::string text = "{";
  for (size_t at = 0; at < values.size(); ++at)
    text += (at ? ", " : "") + std::to_string(values[at]);
  return text + "}";
}

SpatialInput spatial_input(const Tensor& input, size_t spatial, const char* op) {
  check_float(input, op, "the input");
  const size_t rank = static_cast<size_t>(input.ndim());
  if (rank != spatial + 1 && rank != spatial + 2)
    shape_error(op, "the input must be (N, C, *spatial) or (C, *spatial) with " +
                        std::to_string(spatial) + " spatial axes, got " + input.shape_string());
  SpatialInput result{rank == spatial + 1 ? input.unsqueeze(0) : input, rank == spatial + 1};
  const DimShape& dims = result.batched.dims();
  for (size_t axis = 1; axis < dims.size(); ++axis)
    if (dims[axis].is_symbolic())
      shape_error(
          op, "the channel and spatial axes must have fixed sizes, got " + input.shape_string());
  return result;
}

std::vector<int64_t> per_axis(const AxisValues& values, size_t count, const char* op,
                              const char* name) {
  if (values.size() == 1) return std::vector<int64_t>(count, values[0]);
  if (values.size() != count)
    shape_error(op, std::string(name) + " " + list_of(values) +
                        " must hold one value or one per "
                        "spatial axis (" +
                        std::to_string(count) + ")");
  return values;
}

void check_at_least(const std::vector<int64_t>& values, int64_t minimum, const char* op,
                    const char* name) {
  for (int64_t value : values)
    if (value < minimum)
      shape_error(
          op, std::string(name) + " " + list_of(values) + " must be >= " + std::to_string(minimum));
}

Tensor pad_trailing(const Tensor& x, const std::vector<int64_t>& before,
                    const std::vector<int64_t>& after, double value) {
  const DimShape& dims = x.dims();
  const size_t lead = dims.size() - before.size();
  std::vector<std::pair<Dim, Dim>> pads, ranges;
  bool pads_any = false, crops_any = false;
  for (size_t axis = 0; axis < dims.size(); ++axis) {
    if (axis < lead) {
      pads.emplace_back(0, 0);
      ranges.emplace_back(0, dims[axis]);
      continue;
    }
    const int64_t front = before[axis - lead], back = after[axis - lead];
    pads.emplace_back(std::max<int64_t>(front, 0), std::max<int64_t>(back, 0));
    pads_any = pads_any || front > 0 || back > 0;
    crops_any = crops_any || front < 0 || back < 0;
  }
  Tensor result = pads_any ? x.pad(pads, value) : x;
  if (!crops_any) return result;
  for (size_t axis = lead; axis < dims.size(); ++axis) {
    const int64_t size = result.shape()[axis];
    ranges.emplace_back(std::max<int64_t>(-before[axis - lead], 0),
                        size - std::max<int64_t>(-after[axis - lead], 0));
  }
  return result.shrink(ranges);
}

Tensor sliding_windows(const Tensor& x, const std::vector<int64_t>& kernel,
                       const std::vector<int64_t>& stride, const std::vector<int64_t>& dilation) {
  const size_t count = kernel.size();
  const DimShape& dims = x.dims();
  const size_t lead = dims.size() - count;
  const DimShape prefix(dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(lead));
  std::vector<std::pair<Dim, Dim>> whole_prefix;
  for (const Dim& size : prefix) whole_prefix.emplace_back(0, size);
  std::vector<int64_t> in(count), out(count);
  bool disjoint = true;
  for (size_t axis = 0; axis < count; ++axis) {
    in[axis] = x.shape()[lead + axis];
    out[axis] = (in[axis] - dilation[axis] * (kernel[axis] - 1) - 1) / stride[axis] + 1;
    disjoint = disjoint && kernel[axis] <= stride[axis] && dilation[axis] == 1;
  }
  auto shape_of = [&](const std::vector<int64_t>& tail) {
    DimShape shape = prefix;
    for (int64_t size : tail) shape.emplace_back(size);
    return shape;
  };
  auto ranges_of = [&](const std::vector<int64_t>& ends) {
    std::vector<std::pair<Dim, Dim>> ranges = whole_prefix;
    for (int64_t end : ends) ranges.emplace_back(0, end);
    return ranges;
  };
  Tensor windows = x;
  // Where the axes end up: out_i and k_i at these positions after `lead`.
  std::vector<int64_t> out_at(count), kernel_at(count);
  if (disjoint) {
    // Windows that do not overlap: each axis cut to out * stride, split into (out, stride), and
    // the first `kernel` of each stride kept.
    std::vector<int64_t> zeros(count, 0), extra(count), split, keep;
    for (size_t axis = 0; axis < count; ++axis) {
      extra[axis] = out[axis] * stride[axis] - in[axis];
      split.insert(split.end(), {out[axis], stride[axis]});
      keep.insert(keep.end(), {out[axis], kernel[axis]});
      out_at[axis] = static_cast<int64_t>(2 * axis);
      kernel_at[axis] = static_cast<int64_t>(2 * axis + 1);
    }
    windows =
        pad_trailing(windows, zeros, extra, 0).reshape(shape_of(split)).shrink(ranges_of(keep));
  } else {
    // Overlapping windows (tinygrad's pooling view): each axis repeated so that row k of a
    // (kernel, in * f + dilation) reshape starts at element k * dilation; then each row's
    // elements at multiples of the stride are its windows' k-th elements.
    std::vector<int64_t> spread, expanded, merged, rows_end, rows, strided_end, strided, first_end,
        windowed;
    for (size_t axis = 0; axis < count; ++axis) {
      const int64_t k = kernel[axis], o = out[axis], s = stride[axis], d = dilation[axis];
      // A row must hold the o windows' starts (o * s <= row) and a multiple of `in` plus d.
      const int64_t copies = std::max<int64_t>(1, (o * s - d + in[axis] - 1) / in[axis]);
      const int64_t row = in[axis] * copies + d;
      const int64_t repeats = (k * row + in[axis] - 1) / in[axis];
      spread.insert(spread.end(), {1, in[axis]});
      expanded.insert(expanded.end(), {repeats, in[axis]});
      merged.push_back(repeats * in[axis]);
      rows_end.push_back(k * row);
      rows.insert(rows.end(), {k, row});
      strided_end.insert(strided_end.end(), {k, o * s});
      strided.insert(strided.end(), {k, o, s});
      first_end.insert(first_end.end(), {k, o, 1});
      windowed.insert(windowed.end(), {k, o});
      kernel_at[axis] = static_cast<int64_t>(2 * axis);
      out_at[axis] = static_cast<int64_t>(2 * axis + 1);
    }
    windows = windows.reshape(shape_of(spread))
                  .expand(shape_of(expanded))
                  .reshape(shape_of(merged))
                  .shrink(ranges_of(rows_end))
                  .reshape(shape_of(rows))
                  .shrink(ranges_of(strided_end))
                  .reshape(shape_of(strided))
                  .shrink(ranges_of(first_end))
                  .reshape(shape_of(windowed));
  }
  std::vector<int64_t> order;
  for (size_t axis = 0; axis < lead; ++axis) order.push_back(static_cast<int64_t>(axis));
  for (int64_t at : out_at) order.push_back(static_cast<int64_t>(lead) + at);
  for (int64_t at : kernel_at) order.push_back(static_cast<int64_t>(lead) + at);
  return windows.permute(order);
}

}  // namespace kiln::nn::detail

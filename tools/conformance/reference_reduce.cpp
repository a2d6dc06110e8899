// The reference for reductions: sum, prod, max, min, mean, var, std, argmax / argmin, softmax,
// log_softmax, logsumexp, cumsum and matmul, by explicit loops over host tensors.

#include <algorithm>
#include <cmath>

#include "tools/conformance/reference.h"

namespace kiln::conformance::ref {
// ---------------------------------------------------------------------------------------------
// reductions

Expected any_all(bool is_any, const HostTensor& x, std::vector<int64_t> axes, bool keepdim) {
  const size_t ndim = x.shape.size();
  std::vector<bool> reduced(ndim, axes.empty());
  for (int64_t axis : axes) reduced[normalize_axis(axis, ndim)] = true;
  Shape kept_shape, out_shape;
  for (size_t dim = 0; dim < ndim; ++dim) {
    kept_shape.push_back(reduced[dim] ? 1 : x.shape[dim]);
    if (!reduced[dim] || keepdim) out_shape.push_back(reduced[dim] ? 1 : x.shape[dim]);
  }
  // Start from the answer over no elements; one deciding element flips it.
  std::vector<bool> answer(static_cast<size_t>(numel_of(kept_shape)), !is_any);
  for (int64_t index = 0; index < x.numel(); ++index) {
    const Scalar& item = x.data[static_cast<size_t>(index)];
    const bool nonzero = x.dtype.is_float() ? !(item.f == 0) : item.i != 0;  // NaN is non-zero
    if (nonzero != is_any) continue;
    std::vector<int64_t> coords = unravel(index, x.shape);
    for (size_t dim = 0; dim < ndim; ++dim) {
      if (reduced[dim]) coords[dim] = 0;
    }
    answer[static_cast<size_t>(ravel(coords, kept_shape))] = is_any;
  }
  HostTensor result(dtypes::bool_, out_shape);
  for (size_t out = 0; out < answer.size(); ++out)
    result.data[out] = make_scalar(dtypes::bool_, answer[out] ? 1 : 0);
  return result;
}

Expected reduce(Reduce op, const HostTensor& x, std::vector<int64_t> axes, bool keepdim,
                int64_t correction) {
  const size_t ndim = x.shape.size();
  std::vector<bool> reduced(ndim, axes.empty());
  for (int64_t axis : axes) reduced[normalize_axis(axis, ndim)] = true;
  Shape kept_shape, out_shape;
  int64_t count = 1;
  for (size_t dim = 0; dim < ndim; ++dim) {
    kept_shape.push_back(reduced[dim] ? 1 : x.shape[dim]);
    if (!reduced[dim] || keepdim) out_shape.push_back(reduced[dim] ? 1 : x.shape[dim]);
    if (reduced[dim]) count *= x.shape[dim];
  }
  const bool is_float_math = op == Reduce::Mean || op == Reduce::Var || op == Reduce::Std;
  const DType in_dtype = is_float_math                               ? float_for(x.dtype)
                         : (op == Reduce::Sum || op == Reduce::Prod) ? accumulate_dtype(x.dtype)
                                                                     : x.dtype;
  const HostTensor input = cast(x, in_dtype);
  const int64_t outputs = numel_of(kept_shape);
  std::vector<std::vector<Scalar>> groups(static_cast<size_t>(outputs));
  for (int64_t index = 0; index < input.numel(); ++index) {
    std::vector<int64_t> coords = unravel(index, x.shape);
    for (size_t dim = 0; dim < ndim; ++dim) {
      if (reduced[dim]) coords[dim] = 0;
    }
    groups[ravel(coords, kept_shape)].push_back(input.data[index]);
  }
  HostTensor result(in_dtype, out_shape);
  std::vector<double> scale(static_cast<size_t>(outputs));
  for (int64_t out = 0; out < outputs; ++out) {
    const std::vector<Scalar>& group = groups[out];
    Scalar& value = result.data[out];
    if (!in_dtype.is_float()) {
      uint64_t acc = op == Reduce::Prod ? 1 : 0;
      if (op == Reduce::Max || op == Reduce::Min) {
        value = group.at(0);
        for (const Scalar& item : group) {
          if (op == Reduce::Max ? int_less(in_dtype, value.i, item.i)
                                : int_less(in_dtype, item.i, value.i))
            value = item;
        }
        continue;
      }
      for (const Scalar& item : group)
        acc = op == Reduce::Prod ? acc * static_cast<uint64_t>(item.i)
                                 : acc + static_cast<uint64_t>(item.i);
      value.i = wrap(in_dtype, acc);
      continue;
    }
    double sum = 0, magnitude = 0, product = 1, squares = 0;
    bool has_nan = false;
    double extreme = op == Reduce::Max ? -INFINITY : INFINITY;
    for (const Scalar& item : group) {
      sum += item.f;
      magnitude += std::fabs(item.f);
      product *= item.f;
      has_nan |= std::isnan(item.f);
      extreme = op == Reduce::Max ? std::max(extreme, item.f) : std::min(extreme, item.f);
    }
    const double n = static_cast<double>(group.size());
    const double mean = sum / n;
    for (const Scalar& item : group) squares += (item.f - mean) * (item.f - mean);
    const double divisor = std::max(n - static_cast<double>(correction), 0.0);
    double squares_scale = 0;
    for (const Scalar& item : group) squares_scale += item.f * item.f;
    switch (op) {
      case Reduce::Sum:
        value.f = sum;
        scale[out] = magnitude;
        break;
      case Reduce::Prod:
        value.f = product;
        scale[out] = std::fabs(product) * n;
        break;
      case Reduce::Max:
      case Reduce::Min:
        value.f = has_nan ? NAN : extreme;
        scale[out] = std::fabs(value.f);
        break;
      case Reduce::Mean:
        value.f = mean;
        scale[out] = magnitude / n;
        break;
      case Reduce::Var:
        value.f = squares / divisor;
        scale[out] = squares_scale / std::max(divisor, 1.0);
        break;
      case Reduce::Std:
        value.f = std::sqrt(squares / divisor);
        scale[out] = std::sqrt(squares_scale / std::max(divisor, 1.0));
        break;
    }
  }
  return Expected(std::move(result), std::move(scale));
}

Expected arg_extreme(bool is_max, const HostTensor& x, int64_t axis, bool keepdim) {
  const int dim = normalize_axis(axis, x.shape.size());
  Shape out_shape = x.shape;
  if (keepdim) {
    out_shape[dim] = 1;
  } else {
    out_shape.erase(out_shape.begin() + dim);
  }
  HostTensor result(dtypes::int32, out_shape);
  for_each_line(x.shape, dim, [&](const std::vector<int64_t>& offsets, int64_t line) {
    int64_t best = 0;
    for (int64_t k = 0; k < static_cast<int64_t>(offsets.size()); ++k) {
      const Scalar& item = x.data[offsets[k]];
      const Scalar& current = x.data[offsets[best]];
      if (x.dtype.is_float()) {
        if (std::isnan(current.f)) break;
        if (std::isnan(item.f) || (is_max ? item.f > current.f : item.f < current.f)) best = k;
      } else if (is_max ? int_less(x.dtype, current.i, item.i)
                        : int_less(x.dtype, item.i, current.i)) {
        best = k;
      }
    }
    result.data[line].i = best;
  });
  return result;
}

Expected softmax(Softmax kind, const HostTensor& x, int64_t axis, bool keepdim) {
  const DType dtype = float_for(x.dtype);
  const HostTensor input = cast(x, dtype);
  const int dim = normalize_axis(axis, x.shape.size());
  Shape out_shape = x.shape;
  if (kind == Softmax::LogSumExp) {
    if (keepdim) {
      out_shape[dim] = 1;
    } else if (!out_shape.empty()) {
      out_shape.erase(out_shape.begin() + dim);
    }
  }
  HostTensor result(dtype, out_shape);
  std::vector<double> scale(result.data.size());
  for_each_line(x.shape, dim, [&](const std::vector<int64_t>& offsets, int64_t line) {
    double peak = -INFINITY;
    bool has_nan = false;
    for (int64_t offset : offsets) {
      peak = std::max(peak, input.data[offset].f);
      has_nan |= std::isnan(input.data[offset].f);
    }
    if (has_nan) peak = NAN;
    const double shift = kind == Softmax::LogSumExp && std::isinf(peak) ? 0.0 : peak;
    double total = 0;
    for (int64_t offset : offsets) total += std::exp(input.data[offset].f - shift);
    const double spread = std::log2(static_cast<double>(offsets.size()) + 1) + 4;
    if (kind == Softmax::LogSumExp) {
      result.data[line].f = std::log(total) + shift;
      scale[line] = std::fabs(shift) + std::fabs(std::log(total)) + spread;
      return;
    }
    for (int64_t offset : offsets) {
      const double shifted = input.data[offset].f - shift;
      if (kind == Softmax::Softmax) {
        result.data[offset].f = std::exp(shifted) / total;
        scale[offset] = std::fabs(result.data[offset].f) * (std::fabs(shifted) + spread);
      } else {
        result.data[offset].f = shifted - std::log(total);
        scale[offset] = std::fabs(shifted) + std::fabs(std::log(total)) + spread;
      }
    }
  });
  return Expected(std::move(result), std::move(scale));
}

Expected cumsum(const HostTensor& x, int64_t axis) {
  const DType dtype = accumulate_dtype(x.dtype);
  const HostTensor input = cast(x, dtype);
  HostTensor result(dtype, x.shape);
  std::vector<double> scale(result.data.size());
  for_each_line(x.shape, normalize_axis(axis, x.shape.size()),
                [&](const std::vector<int64_t>& offsets, int64_t) {
                  double sum = 0, magnitude = 0;
                  uint64_t acc = 0;
                  for (int64_t offset : offsets) {
                    if (dtype.is_float()) {
                      sum += input.data[offset].f;
                      magnitude += std::fabs(input.data[offset].f);
                      result.data[offset].f = sum;
                      scale[offset] = magnitude;
                    } else {
                      acc += static_cast<uint64_t>(input.data[offset].i);
                      result.data[offset].i = wrap(dtype, acc);
                    }
                  }
                });
  return Expected(std::move(result), std::move(scale));
}

Expected matmul(const HostTensor& a, const HostTensor& b) {
  const DType dtype = promote(a.dtype, b.dtype);
  HostTensor left = cast(a, dtype), right = cast(b, dtype);
  if (left.shape.size() == 1) left.shape.insert(left.shape.begin(), 1);
  if (right.shape.size() == 1) right.shape.push_back(1);
  const int64_t m = left.shape[left.shape.size() - 2], k = left.shape.back(),
                n = right.shape.back();
  const Shape left_batch(left.shape.begin(), left.shape.end() - 2);
  const Shape right_batch(right.shape.begin(), right.shape.end() - 2);
  const Shape batch = broadcast_shape(left_batch, right_batch);
  Shape left_full = batch, right_full = batch;
  left_full.insert(left_full.end(), {m, k});
  right_full.insert(right_full.end(), {k, n});
  left = broadcast_to(left, left_full);
  right = broadcast_to(right, right_full);
  Shape out_shape = batch;
  out_shape.insert(out_shape.end(), {m, n});
  HostTensor result(dtype, out_shape);
  std::vector<double> scale(result.data.size());
  const int64_t batches = numel_of(batch);
  for (int64_t p = 0; p < batches; ++p) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0, magnitude = 0;
        uint64_t acc = 0;
        bool any = false;
        for (int64_t q = 0; q < k; ++q) {
          const Scalar& x = left.data[(p * m + i) * k + q];
          const Scalar& y = right.data[(p * k + q) * n + j];
          if (dtype.is_float()) {
            sum += x.f * y.f;
            magnitude += std::fabs(x.f * y.f);
          } else if (dtype.is_bool()) {
            any |= x.i && y.i;
          } else {
            acc += static_cast<uint64_t>(x.i) * static_cast<uint64_t>(y.i);
          }
        }
        Scalar& out = result.data[(p * m + i) * n + j];
        if (dtype.is_float()) {
          out.f = sum;
        } else {
          out.i = dtype.is_bool() ? any : wrap(dtype, acc);
        }
        scale[(p * m + i) * n + j] = magnitude;
      }
    }
  }
  Shape final_shape = out_shape;
  if (b.shape.size() == 1) final_shape.pop_back();
  if (a.shape.size() == 1) final_shape.erase(final_shape.end() - (b.shape.size() == 1 ? 1 : 2));
  result.shape = final_shape;
  return Expected(std::move(result), std::move(scale));
}

}  // namespace kiln::conformance::ref

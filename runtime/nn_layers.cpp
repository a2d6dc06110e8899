// Linear layers, normalizations, attention and one_hot (kiln/nn.h).

#include <kiln/nn.h>
#include <kiln/shape_ops.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "runtime/autograd.h"
#include "runtime/nn_attention_backward.h"
#include "runtime/nn_checks.h"
#include "runtime/tensor_internal.h"

namespace kiln::nn {
namespace detail {

void check_float(const Tensor& tensor, const char* op, const char* role) {
  if (!tensor.dtype().is_float())
    throw DTypeError(std::string("[") + op + "] " + role + " must be a float tensor, got " +
                     describe(tensor) + "; cast it first, e.g. x.cast(dtypes::float32)");
}

void check_integer(const Tensor& tensor, const char* op, const char* role) {
  if (tensor.dtype().is_float() || tensor.dtype().is_bool())
    throw DTypeError(std::string("[") + op + "] " + role + " must be an integer tensor, got " +
                     describe(tensor));
}

void shape_error(const char* op, const std::string& what) {
  throw ShapeError(std::string("[") + op + "] " + what);
}

std::vector<int64_t> last_axes(size_t count) {
  std::vector<int64_t> axes;
  for (size_t axis = count; axis > 0; --axis) axes.push_back(-static_cast<int64_t>(axis));
  return axes;
}

Tensor widened(const Tensor& x) {
  return x.dtype().is_half() ? x.cast(dtypes::float32) : x;
}

}  // namespace detail

namespace {

using detail::check_float;
using detail::last_axes;
using detail::shape_error;
using detail::widened;

void check_trailing_shape(const Tensor& x, const Shape& normalized_shape, const char* op) {
  const Shape& shape = x.shape();
  bool matches = !normalized_shape.empty() && normalized_shape.size() <= shape.size();
  for (size_t index = 0; matches && index < normalized_shape.size(); ++index)
    matches = shape[shape.size() - normalized_shape.size() + index] == normalized_shape[index];
  if (!matches)
    shape_error(op, "normalized_shape " + shape_string(normalized_shape) +
                        " must be the last axes of the input's shape " + x.shape_string() +
                        " (and name at least one)");
}

void check_affine(const std::optional<Tensor>& parameter, const Shape& shape, const char* op,
                  const char* role) {
  if (!parameter) return;
  if (parameter->shape() != shape)
    shape_error(op, std::string(role) + " has shape " + parameter->shape_string() + ", expected " +
                        shape_string(shape));
}

// weight * x + bias where given.
Tensor affine(Tensor x, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias) {
  if (weight) x = x * *weight;
  if (bias) x = x + *bias;
  return x;
}

double machine_epsilon(DType dtype) {
  if (dtype == dtypes::float64) return std::numeric_limits<double>::epsilon();
  return std::numeric_limits<float>::epsilon();
}

// (1, C, 1, ...) for a per-channel parameter of x (N, C, ...).
Shape channel_shape(const Tensor& x) {
  Shape shape(x.shape().size(), 1);
  shape[1] = x.shape()[1];
  return shape;
}

void check_channels(const Tensor& x, const char* op) {
  if (x.ndim() < 2) shape_error(op, "the input must be (N, C, ...), got " + x.shape_string());
}

}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias) {
  check_float(x, "linear", "the input");
  if (weight.ndim() != 2 || x.ndim() < 1 || x.shape().back() != weight.shape()[1])
    shape_error("linear", "the input (..., in) and weight (out, in) do not match: got " +
                              x.shape_string() + " and " + weight.shape_string());
  check_affine(bias, {weight.shape()[0]}, "linear", "bias");
  Tensor result = matmul(x, weight.transpose(0, 1));
  return bias ? result + *bias : result;
}

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape,
                  const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                  double eps) {
  check_float(x, "layer_norm", "the input");
  check_trailing_shape(x, normalized_shape, "layer_norm");
  check_affine(weight, normalized_shape, "layer_norm", "weight");
  check_affine(bias, normalized_shape, "layer_norm", "bias");
  const std::vector<int64_t> axes = last_axes(normalized_shape.size());
  const Tensor value = widened(x);
  const Tensor centered = value - value.mean(axes, true);
  const Tensor variance = (centered * centered).mean(axes, true);
  const Tensor normalized = (centered * (variance + eps).rsqrt()).cast(x.dtype());
  return affine(normalized, weight, bias);
}

Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const std::optional<Tensor>& weight,
                std::optional<double> eps) {
  check_float(x, "rms_norm", "the input");
  check_trailing_shape(x, normalized_shape, "rms_norm");
  check_affine(weight, normalized_shape, "rms_norm", "weight");
  const std::vector<int64_t> axes = last_axes(normalized_shape.size());
  const Tensor value = widened(x);
  const double epsilon = eps ? *eps : machine_epsilon(value.dtype());
  const Tensor normalized =
      (value * ((value * value).mean(axes, true) + epsilon).rsqrt()).cast(x.dtype());
  return affine(normalized, weight, {});
}

Tensor group_norm(const Tensor& x, int64_t num_groups, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, double eps) {
  check_float(x, "group_norm", "the input");
  check_channels(x, "group_norm");
  const int64_t channels = x.shape()[1];
  if (num_groups < 1 || channels % num_groups != 0)
    shape_error("group_norm", "num_groups " + std::to_string(num_groups) +
                                  " must divide the channels (" + std::to_string(channels) +
                                  ") of " + x.shape_string());
  check_affine(weight, {channels}, "group_norm", "weight");
  check_affine(bias, {channels}, "group_norm", "bias");
  const Tensor grouped = widened(x).reshape({x.shape()[0], num_groups, -1});
  const Tensor centered = grouped - grouped.mean(2, true);
  const Tensor variance = (centered * centered).mean(2, true);
  const Tensor normalized =
      (centered * (variance + eps).rsqrt()).reshape(x.shape()).cast(x.dtype());
  const Shape per_channel = channel_shape(x);
  return affine(normalized, weight ? std::optional<Tensor>(weight->reshape(per_channel)) : weight,
                bias ? std::optional<Tensor>(bias->reshape(per_channel)) : bias);
}

Tensor batch_norm(const Tensor& x, Tensor* running_mean, Tensor* running_var,
                  const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                  bool training, double momentum, double eps) {
  check_float(x, "batch_norm", "the input");
  check_channels(x, "batch_norm");
  const int64_t channels = x.shape()[1];
  for (Tensor* running : {running_mean, running_var}) {
    if (!running) continue;
    check_affine(*running, {channels}, "batch_norm", "a running statistic");
    check_float(*running, "batch_norm", "a running statistic");
    check_same_device(x, *running, "batch_norm");
  }
  check_affine(weight, {channels}, "batch_norm", "weight");
  check_affine(bias, {channels}, "batch_norm", "bias");
  const Shape per_channel = channel_shape(x);
  const Tensor value = widened(x);
  Tensor mean, variance;
  if (training) {
    std::vector<int64_t> axes = {0};
    for (int64_t axis = 2; axis < x.ndim(); ++axis) axes.push_back(axis);
    const int64_t count = x.numel() / std::max<int64_t>(channels, 1);
    if (count < 2)
      throw ValueError("[batch_norm] training needs more than one value per channel, got " +
                       x.shape_string());
    mean = value.mean(axes, true);
    variance = value.var(axes, true, 0);
    // Both statistics or neither: the mean's old contents are kept until the variance is written.
    // The running statistics take no gradient.
    NoGradGuard statistics;
    std::optional<Tensor> old_mean;
    if (running_mean) {
      old_mean = running_mean->contiguous().realize();
      running_mean->assign(*running_mean * (1 - momentum) +
                           mean.reshape({channels}).cast(running_mean->dtype()) * momentum);
    }
    if (running_var) {
      const double unbiased = static_cast<double>(count) / static_cast<double>(count - 1);
      try {
        running_var->assign(*running_var * (1 - momentum) +
                            (variance.reshape({channels}) * unbiased).cast(running_var->dtype()) *
                                momentum);
      } catch (...) {
        if (old_mean) running_mean->assign(*old_mean);
        throw;
      }
    }
  } else {
    if (!running_mean || !running_var)
      throw ValueError(
          "[batch_norm] evaluation (training = false) normalizes by the running "
          "statistics: pass running_mean and running_var (C), or training = true");
    mean = running_mean->cast(value.dtype()).reshape(per_channel);
    variance = running_var->cast(value.dtype()).reshape(per_channel);
  }
  const Tensor normalized = ((value - mean) * (variance + eps).rsqrt()).cast(x.dtype());
  return affine(normalized, weight ? std::optional<Tensor>(weight->reshape(per_channel)) : weight,
                bias ? std::optional<Tensor>(bias->reshape(per_channel)) : bias);
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const std::optional<Tensor>& mask, bool is_causal,
                                    std::optional<double> scale) {
  const char* op = "scaled_dot_product_attention";
  for (const Tensor* tensor : {&q, &k, &v}) check_float(*tensor, op, "q, k and v");
  const auto describe_all = [&] {
    return "q " + q.shape_string() + ", k " + k.shape_string() + ", v " + v.shape_string();
  };
  if (q.ndim() < 2 || k.ndim() != q.ndim() || v.ndim() != q.ndim())
    shape_error(op, "q, k and v need the same number of axes, at least 2: " + describe_all());
  const int64_t rank = q.ndim();
  const Shape &qs = q.shape(), &ks = k.shape(), &vs = v.shape();
  if (qs[rank - 1] != ks[rank - 1] || ks[rank - 2] != vs[rank - 2])
    shape_error(op, "q and k need one size E last, k and v one length S: " + describe_all());
  Tensor keys = k, values = v;
  if (rank >= 3 && qs[rank - 3] != ks[rank - 3]) {
    const int64_t query_heads = qs[rank - 3], kv_heads = ks[rank - 3];
    if (kv_heads < 1 || query_heads % kv_heads != 0 || vs[rank - 3] != kv_heads)
      shape_error(
          op, "the query heads must be a multiple of the key and value heads: " + describe_all());
    keys = repeat_interleave(k, query_heads / kv_heads, rank - 3);
    values = repeat_interleave(v, query_heads / kv_heads, rank - 3);
  } else if (rank >= 3 && vs[rank - 3] != ks[rank - 3]) {
    shape_error(op, "k and v need the same heads: " + describe_all());
  }
  if (mask && is_causal)
    throw ValueError(std::string("[") + op + "] is_causal and an explicit mask are exclusive");
  const double factor = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(qs[rank - 1]));
  Tensor mask_value;
  if (mask) {
    if (!mask->dtype().is_bool() && !mask->dtype().is_float())
      throw DTypeError(std::string("[") + op + "] the mask must be bool (true keeps a score) or " +
                       "float (added to the scores), got " + describe(*mask));
    if (mask->ndim() > rank)
      shape_error(op, "the mask " + mask->shape_string() + " has more axes than the scores (" +
                          std::to_string(rank) + ")");
    mask_value = *mask;
    while (mask_value.ndim() < rank) mask_value = mask_value.unsqueeze(0);
    check_same_device(q, mask_value, op);
  }
  for (const Tensor* tensor : {&k, &v}) check_same_device(q, *tensor, op);
  // Every source expanded to the leading sizes they broadcast to (a size of 1 repeats).
  Shape lead(qs.begin(), qs.end() - 2);
  const auto leading = [&](const Tensor& tensor) {
    return Shape(tensor.shape().begin(), tensor.shape().end() - 2);
  };
  lead = broadcast_shapes(lead, leading(keys), op);
  lead = broadcast_shapes(lead, leading(values), op);
  if (mask) lead = broadcast_shapes(lead, leading(mask_value), op);
  const auto expanded = [&](const Tensor& tensor, const Dim& row, const Dim& column) {
    DimShape shape;
    const DimShape dims = tensor.dims();
    for (size_t axis = 0; axis < lead.size(); ++axis) {
      // A size the sources share keeps its Dim (a bound variable stays symbolic).
      Dim size(lead[axis]);
      for (const Tensor* source : std::initializer_list<const Tensor*>{&q, &keys, &values}) {
        if (source->shape()[axis] == lead[axis]) {
          size = source->dims()[axis];
          break;
        }
      }
      shape.push_back(size);
    }
    shape.push_back(row);
    shape.push_back(column);
    for (size_t axis = 0; axis < shape.size(); ++axis) {
      if (!(dims[axis].sym() == shape[axis].sym())) return tensor.expand(shape);
    }
    return tensor;
  };
  const DType dtype = promote_types(promote_types(q.dtype(), k.dtype()), v.dtype());
  const DimShape q_dims = q.dims(), k_dims = keys.dims(), v_dims = values.dims();
  const Dim length = q_dims[rank - 2], keys_length = k_dims[rank - 2];
  std::vector<Tensor> operands = {expanded(q.cast(dtype), length, q_dims[rank - 1]),
                                  expanded(keys.cast(dtype), keys_length, k_dims[rank - 1]),
                                  expanded(values.cast(dtype), keys_length, v_dims[rank - 1])};
  if (mask) {
    const DimShape mask_dims = mask_value.dims();
    // A plain 1 broadcasts; any other size (a variable bound to 1 too) must be the scores'.
    const auto fits = [](const Dim& given, const Dim& wanted) {
      return (!given.is_symbolic() && given.value() == 1) || given.sym() == wanted.sym();
    };
    const auto sized = [](const Dim& given, const Dim& wanted) {
      return given.is_symbolic() || given.value() != 1 ? given : wanted;
    };
    if (!fits(mask_dims[rank - 2], length) || !fits(mask_dims[rank - 1], keys_length))
      shape_error(op, "the mask " + mask->shape_string() + " must broadcast to the scores (L " +
                          length.to_string() + ", S " + keys_length.to_string() +
                          "): " + describe_all());
    operands.push_back(expanded(mask_value, sized(mask_dims[rank - 2], length),
                                sized(mask_dims[rank - 1], keys_length)));
  }
  std::vector<UOpRef> sources;
  for (const Tensor& operand : operands) sources.push_back(node_of(operand));
  // One Attention node: a device with workgroups computes it in one kernel, the scores never
  // stored; the CPU as two products and a softmax (codegen/unfused_attention.h).
  Shape out_shape = lead;
  out_shape.push_back(qs[rank - 2]);
  out_shape.push_back(vs[rank - 1]);
  Tensor attended = make_tensor(UOp::make(Op::Attention, dtype, std::move(sources),
                                          AttentionArg{factor, is_causal}, out_shape),
                                q.device());
  const Tensor none;
  return recorded(
      std::move(attended), op,
      [operands, factor, is_causal](const Tensor& gradient) {
        return detail::attention_gradients(operands, factor, is_causal, gradient);
      },
      operands[0], operands[1], operands[2], operands.size() > 3 ? operands[3] : none);
}

Tensor one_hot(const Tensor& indices, int64_t num_classes) {
  detail::check_integer(indices, "one_hot", "indices");
  if (num_classes < 1)
    throw ValueError("[one_hot] num_classes must be at least 1, got " +
                     std::to_string(num_classes));
  // A negative index is out of range here (PyTorch's error), not counted from the end.
  const Tensor wide = indices.cast(dtypes::int64);
  const Tensor positions = where(wide < 0.0, static_cast<double>(num_classes), wide);
  return embedding(positions, Tensor::eye(num_classes, dtypes::int64, indices.device()));
}

}  // namespace kiln::nn

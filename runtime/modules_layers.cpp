// The layers of include/kiln/modules.h but attention: each makes its parameters as PyTorch's
// does and forwards to the function of kiln/nn.h or kiln/conv.h that computes it.

#include <kiln/autograd.h>
#include <kiln/error.h>
#include <kiln/modules.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <utility>

#include "runtime/tensor_internal.h"

namespace kiln::nn {
namespace {

void check_size(int64_t value, const char* layer, const char* name, int64_t at_least = 0) {
  if (value < at_least) {
    throw ValueError(std::string("[") + layer + "] " + name +
                     " must be >= " + std::to_string(at_least) + ", got " + std::to_string(value));
  }
}

int64_t product(const AxisValues& values) {
  int64_t result = 1;
  for (int64_t value : values) result *= value;
  return result;
}

ConvOptions conv_options(const ConvLayerOptions& conv) {
  return ConvOptions{conv.stride, conv.padding, conv.dilation, conv.groups};
}

}  // namespace

Linear::Linear(int64_t in_features, int64_t out_features, bool with_bias,
               const LayerOptions& options) {
  check_size(in_features, "Linear", "in_features");
  check_size(out_features, "Linear", "out_features");
  // PyTorch's kaiming_uniform_(a = sqrt(5)): bound 1 / sqrt(fan_in), the bias's the same.
  const double bound = in_features > 0 ? 1.0 / std::sqrt(static_cast<double>(in_features)) : 0;
  weight = make_parameter({out_features, in_features}, bound, options);
  register_parameter("weight", &weight);
  if (with_bias) {
    bias = make_parameter({out_features}, bound, options);
    register_parameter("bias", &bias);
  }
}

Tensor Linear::forward(const Tensor& input) {
  return linear(input, weight, bias.defined() ? std::optional<Tensor>(bias) : std::nullopt);
}

namespace {

// A convolution layer's weight (out, in / groups, *kernel) and bias, PyTorch's initialisation.
void make_conv_parameters(const char* name, int64_t in_channels, int64_t out_channels,
                          const AxisValues& kernel, const ConvLayerOptions& conv, Tensor& weight,
                          Tensor& bias, const std::function<Tensor(const Shape&, double)>& make) {
  check_size(in_channels, name, "in_channels", 1);
  check_size(out_channels, name, "out_channels", 1);
  check_size(conv.groups, name, "groups", 1);
  if (in_channels % conv.groups != 0 || out_channels % conv.groups != 0) {
    throw ValueError(std::string("[") + name + "] groups (" + std::to_string(conv.groups) +
                     ") must divide in_channels (" + std::to_string(in_channels) +
                     ") and out_channels (" + std::to_string(out_channels) + ")");
  }
  for (int64_t size : kernel) check_size(size, name, "kernel_size", 1);
  Shape shape = {out_channels, in_channels / conv.groups};
  shape.insert(shape.end(), kernel.begin(), kernel.end());
  const double bound = 1.0 / std::sqrt(static_cast<double>(in_channels / conv.groups) *
                                       static_cast<double>(product(kernel)));
  weight = make(shape, bound);
  if (conv.bias) bias = make({out_channels}, bound);
}

}  // namespace

Conv1d::Conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
               const ConvLayerOptions& conv_options_, const LayerOptions& options)
    : conv(conv_options_) {
  make_conv_parameters(
      "Conv1d", in_channels, out_channels, {kernel_size}, conv, weight, bias,
      [&](const Shape& shape, double bound) { return make_parameter(shape, bound, options); });
  register_parameter("weight", &weight);
  if (bias.defined()) register_parameter("bias", &bias);
}

Tensor Conv1d::forward(const Tensor& input) {
  return conv1d(input, weight, bias.defined() ? std::optional<Tensor>(bias) : std::nullopt,
                conv_options(conv));
}

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, AxisValues kernel_size,
               const ConvLayerOptions& conv_options_, const LayerOptions& options)
    : conv(conv_options_) {
  if (kernel_size.size() == 1) kernel_size.push_back(kernel_size.front());
  if (kernel_size.size() != 2) {
    throw ValueError("[Conv2d] kernel_size is one size or {height, width}, got " +
                     std::to_string(kernel_size.size()) + " values");
  }
  make_conv_parameters(
      "Conv2d", in_channels, out_channels, kernel_size, conv, weight, bias,
      [&](const Shape& shape, double bound) { return make_parameter(shape, bound, options); });
  register_parameter("weight", &weight);
  if (bias.defined()) register_parameter("bias", &bias);
}

Tensor Conv2d::forward(const Tensor& input) {
  return conv2d(input, weight, bias.defined() ? std::optional<Tensor>(bias) : std::nullopt,
                conv_options(conv));
}

Embedding::Embedding(int64_t num_embeddings, int64_t embedding_dim,
                     std::optional<int64_t> padding_idx_, const LayerOptions& options)
    : padding_idx(padding_idx_) {
  check_size(num_embeddings, "Embedding", "num_embeddings");
  check_size(embedding_dim, "Embedding", "embedding_dim");
  if (padding_idx) {
    if (*padding_idx < -num_embeddings || *padding_idx >= num_embeddings) {
      throw ValueError("[Embedding] padding_idx " + std::to_string(*padding_idx) +
                       " must be in [-num_embeddings, num_embeddings) = [" +
                       std::to_string(-num_embeddings) + ", " + std::to_string(num_embeddings) +
                       ")");
    }
    if (*padding_idx < 0) *padding_idx += num_embeddings;
  }
  if (!options.dtype.is_float()) {
    throw DTypeError(std::string("[Embedding] parameters are float: LayerOptions::dtype is ") +
                     options.dtype.name());
  }
  Generator generator = layer_generator(options, "Embedding");
  Tensor initial =
      random::normal(generator, {num_embeddings, embedding_dim}, 0.0, 1.0, options.dtype);
  if (padding_idx) {
    Tensor row = Tensor::arange(num_embeddings, options.device).unsqueeze(1);
    initial = where(row == static_cast<double>(*padding_idx), 0.0, initial);
  }
  weight = make_parameter(initial);
  register_parameter("weight", &weight);
}

Tensor Embedding::forward(const Tensor& indices) {
  Tensor rows = embedding(indices, weight);
  if (!padding_idx) return rows;
  // The padding row's value as it is, but no gradient into it (PyTorch's).
  return where((indices != static_cast<double>(*padding_idx)).unsqueeze(-1), rows, rows.detach());
}

LayerNorm::LayerNorm(Shape normalized_shape_, double eps_, bool elementwise_affine, bool with_bias,
                     const LayerOptions& options)
    : normalized_shape(std::move(normalized_shape_)), eps(eps_) {
  for (int64_t size : normalized_shape) check_size(size, "LayerNorm", "normalized_shape");
  if (elementwise_affine) {
    weight = make_parameter(Tensor::ones(normalized_shape, options.dtype, options.device));
    register_parameter("weight", &weight);
    if (with_bias) {
      bias = make_parameter(Tensor::zeros(normalized_shape, options.dtype, options.device));
      register_parameter("bias", &bias);
    }
  }
}

Tensor LayerNorm::forward(const Tensor& input) {
  return layer_norm(input, normalized_shape,
                    weight.defined() ? std::optional<Tensor>(weight) : std::nullopt,
                    bias.defined() ? std::optional<Tensor>(bias) : std::nullopt, eps);
}

RMSNorm::RMSNorm(Shape normalized_shape_, std::optional<double> eps_, bool elementwise_affine,
                 const LayerOptions& options)
    : normalized_shape(std::move(normalized_shape_)), eps(eps_) {
  for (int64_t size : normalized_shape) check_size(size, "RMSNorm", "normalized_shape");
  if (elementwise_affine) {
    weight = make_parameter(Tensor::ones(normalized_shape, options.dtype, options.device));
    register_parameter("weight", &weight);
  }
}

Tensor RMSNorm::forward(const Tensor& input) {
  return rms_norm(input, normalized_shape,
                  weight.defined() ? std::optional<Tensor>(weight) : std::nullopt, eps);
}

GroupNorm::GroupNorm(int64_t num_groups_, int64_t num_channels, double eps_, bool affine,
                     const LayerOptions& options)
    : num_groups(num_groups_), eps(eps_) {
  check_size(num_groups, "GroupNorm", "num_groups", 1);
  check_size(num_channels, "GroupNorm", "num_channels", 1);
  if (num_channels % num_groups != 0) {
    throw ValueError("[GroupNorm] num_groups (" + std::to_string(num_groups) +
                     ") must divide num_channels (" + std::to_string(num_channels) + ")");
  }
  if (affine) {
    weight = make_parameter(Tensor::ones({num_channels}, options.dtype, options.device));
    bias = make_parameter(Tensor::zeros({num_channels}, options.dtype, options.device));
    register_parameter("weight", &weight);
    register_parameter("bias", &bias);
  }
}

Tensor GroupNorm::forward(const Tensor& input) {
  return group_norm(input, num_groups,
                    weight.defined() ? std::optional<Tensor>(weight) : std::nullopt,
                    bias.defined() ? std::optional<Tensor>(bias) : std::nullopt, eps);
}

BatchNorm::BatchNorm(const std::string& layer, std::vector<size_t> input_ranks,
                     std::string input_layout, int64_t num_features, double eps_,
                     std::optional<double> momentum_, bool affine, bool track_running_stats,
                     const LayerOptions& options)
    : eps(eps_),
      momentum(momentum_),
      input_ranks_(std::move(input_ranks)),
      input_layout_(std::move(input_layout)) {
  check_size(num_features, layer.c_str(), "num_features", 1);
  if (momentum && !(*momentum >= 0 && *momentum <= 1)) {
    throw ValueError("[" + layer +
                     "] momentum must be in [0, 1] (or empty for a cumulative average), got " +
                     std::to_string(*momentum));
  }
  if (affine) {
    weight = make_parameter(Tensor::ones({num_features}, options.dtype, options.device));
    bias = make_parameter(Tensor::zeros({num_features}, options.dtype, options.device));
    register_parameter("weight", &weight);
    register_parameter("bias", &bias);
  }
  if (track_running_stats) {
    // Buffers: made like parameters (their own memory) but taking no gradient.
    running_mean = make_parameter(Tensor::zeros({num_features}, options.dtype, options.device));
    running_var = make_parameter(Tensor::ones({num_features}, options.dtype, options.device));
    running_mean.requires_grad_(false);
    running_var.requires_grad_(false);
    num_batches_tracked = Tensor::from_vector(std::vector<int64_t>{0}, {}, options.device);
    register_buffer("running_mean", &running_mean);
    register_buffer("running_var", &running_var);
    register_buffer("num_batches_tracked", &num_batches_tracked);
  }
}

Tensor BatchNorm::forward(const Tensor& input) {
  const std::string layer = type_name();
  check_defined(input, layer.c_str());
  if (std::find(input_ranks_.begin(), input_ranks_.end(), static_cast<size_t>(input.ndim())) ==
      input_ranks_.end()) {
    throw ShapeError("[" + layer + "] expects input " + input_layout_ + ", got " +
                     input.shape_string());
  }
  const std::optional<Tensor> affine_weight =
      weight.defined() ? std::optional<Tensor>(weight) : std::nullopt;
  const std::optional<Tensor> affine_bias =
      bias.defined() ? std::optional<Tensor>(bias) : std::nullopt;
  if (!running_mean.defined()) {
    return batch_norm(input, nullptr, nullptr, affine_weight, affine_bias, true, 0.0, eps);
  }
  if (!training()) {
    return batch_norm(input, &running_mean, &running_var, affine_weight, affine_bias, false, 0.0,
                      eps);
  }
  // PyTorch's momentum = None: the cumulative average, 1 / (batches seen including this one).
  const double factor =
      momentum ? *momentum : 1.0 / static_cast<double>(num_batches_tracked.item<int64_t>() + 1);
  Tensor result =
      batch_norm(input, &running_mean, &running_var, affine_weight, affine_bias, true, factor, eps);
  NoGradGuard counting;
  num_batches_tracked.assign(num_batches_tracked + 1.0);
  return result;
}

Dropout::Dropout(double p_, std::optional<Generator> generator)
    : p(p_), generator_(std::move(generator)) {
  if (!(p >= 0 && p <= 1)) {
    throw ValueError("[Dropout] p must be in [0, 1], got " + std::to_string(p));
  }
}

Tensor Dropout::forward(const Tensor& input) {
  check_defined(input, "Dropout");
  if (!training() || p == 0) return input;
  Generator generator = generator_ ? *generator_ : default_generator(input.device());
  return random::dropout(generator, input, p, true);
}

}  // namespace kiln::nn

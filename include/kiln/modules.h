#pragma once
// Layers that own their parameters, as PyTorch's torch.nn modules: the same constructor arguments,
// defaults, initialisation and parameter names, so a checkpoint's names match PyTorch's
// state_dict and a model ports line by line.
//
//   kiln::nn::Sequential model;
//   model.push_back(std::make_shared<kiln::nn::Linear>(784, 64));
//   model.push_back(std::make_shared<kiln::nn::ReLU>());
//   model.push_back(std::make_shared<kiln::nn::Linear>(64, 10));
//   kiln::optim::AdamW optimizer(model.parameters(), {.lr = 1e-3});
//   kiln::Tensor loss = kiln::nn::cross_entropy(model(images), labels);
//   loss.backward();
//   optimizer.step({loss});
//   kiln::save_safetensors("model.safetensors", model.state_dict());
//
// A module's parameters are float leaves that require gradients, each a buffer of its own on
// LayerOptions::device, drawn from LayerOptions::generator (the device's default generator,
// kiln::manual_seed's, when none is given). Buffers (BatchNorm's running statistics) are named
// state that is saved and loaded but takes no gradient. A module is in training mode when made;
// eval() switches it and its children (Dropout then passes its input through, BatchNorm uses
// its running statistics).
//
// Modules are not copied: hold them by std::shared_ptr (Sequential does), and register a module
// of your own's children with register_module. A child is registered as the object it is when
// registered: replacing a member's shared_ptr afterwards (MultiheadAttention::out_proj) leaves
// the registered one in the state; change its weight and bias instead. The forward functions only
// build lazy tensors; they are safe to call from several threads at once while nobody changes the
// module (BatchNorm in training mode updates its running statistics, so it is not).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <kiln/conv.h>
#include <kiln/nn.h>
#include <kiln/random.h>
#include <kiln/safetensors.h>
#include <kiln/tensor.h>

namespace kiln::nn {

// Where and how a layer makes its parameters.
struct LayerOptions {
  DType dtype = dtypes::float32;  // a float dtype
  std::string device;             // "" for the default device
  // Draws the initial values; the default generator of `device` when empty.
  std::optional<Generator> generator = std::nullopt;
};

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The module's function of one input. Modules of more inputs (MultiheadAttention) have their
  // own forward; called with one, they throw a ValueError naming the module.
  virtual Tensor forward(const Tensor& input);
  Tensor operator()(const Tensor& input) { return forward(input); }
  // The module's type as PyTorch names it ("Linear"), for errors and printing.
  virtual std::string type_name() const = 0;

  // This module's parameters and its children's, in registration order, named by their path
  // ("0.weight", "out_proj.bias"), as PyTorch's named_parameters: a parameter shared by two
  // modules (tied weights) is listed once, under its first name.
  NamedTensors named_parameters() const;
  std::vector<Tensor> parameters() const;
  // Buffers: state that is saved but takes no gradient (running statistics).
  NamedTensors named_buffers() const;
  // Parameters and buffers together, each module's parameters before its buffers (PyTorch's
  // state_dict order); a shared tensor under each of its names.
  NamedTensors state_dict() const;
  // Writes `state` into the module's parameters and buffers in place (values copied to each
  // one's device). Every tensor of the module must be given with its shape and dtype, and no
  // other (unless not `strict`, which skips missing and unknown names): otherwise a ValueError
  // (a missing or unknown name), ShapeError or DTypeError naming the tensor, and nothing is
  // written.
  void load_state_dict(const NamedTensors& state, bool strict = true);

  // Training mode (the default) or evaluation mode, for this module and its children.
  void train(bool on = true);
  void eval() { train(false); }
  bool training() const { return training_; }

  // Direct children, named as registered.
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children() const {
    return children_;
  }

 protected:
  // Registration, in the constructor of a module of your own: the tensors are members of the
  // module (registered by address, so assigning a new value to the member is what is saved).
  void register_parameter(const std::string& name, Tensor* parameter);
  void register_buffer(const std::string& name, Tensor* buffer);
  void register_module(const std::string& name, std::shared_ptr<Module> child);
  // A parameter of `shape`: uniform in [-bound, bound) (bound > 0), its own buffer.
  static Tensor make_parameter(const Shape& shape, double bound, const LayerOptions& options);
  // A parameter holding `value` (its own buffer), requiring a gradient.
  static Tensor make_parameter(const Tensor& value);
  // options.generator, or the default generator of options.device; a DeviceError naming `layer`
  // when the given generator is on another device.
  static Generator layer_generator(const LayerOptions& options, const std::string& layer);

 private:
  void collect(const std::string& prefix, bool parameters, bool buffers, NamedTensors& out) const;
  void collect_slots(const std::string& prefix, std::vector<std::pair<std::string, Tensor*>>& out);

  std::vector<std::pair<std::string, Tensor*>> parameters_;
  std::vector<std::pair<std::string, Tensor*>> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

// y = x weight^T + bias: weight (out, in), bias (out), both uniform in +-1/sqrt(in) (PyTorch's).
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true,
         const LayerOptions& options = {});
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "Linear"; }

  Tensor weight;
  Tensor bias;  // empty without a bias
};

// nn::conv1d / conv2d with owned weight (out, in / groups, *kernel) and bias (out), uniform in
// +-1/sqrt(in / groups * kernel elements).
struct ConvLayerOptions {
  AxisValues stride = {1};
  ConvPadding padding = 0;
  AxisValues dilation = {1};
  int64_t groups = 1;
  bool bias = true;
};
class Conv1d : public Module {
 public:
  Conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
         const ConvLayerOptions& conv = {}, const LayerOptions& options = {});
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "Conv1d"; }

  Tensor weight;
  Tensor bias;
  ConvLayerOptions conv;
};
class Conv2d : public Module {
 public:
  // kernel_size: one size for both axes, or {height, width}.
  Conv2d(int64_t in_channels, int64_t out_channels, AxisValues kernel_size,
         const ConvLayerOptions& conv = {}, const LayerOptions& options = {});
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
         const ConvLayerOptions& conv = {}, const LayerOptions& options = {})
      : Conv2d(in_channels, out_channels, AxisValues{kernel_size}, conv, options) {}
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "Conv2d"; }

  Tensor weight;
  Tensor bias;
  ConvLayerOptions conv;
};

// Rows of weight (num_embeddings, embedding_dim), drawn from the standard normal. A
// padding_idx row starts at zero and gets no gradient (its rows of the output are 0 and stay 0).
class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim,
            std::optional<int64_t> padding_idx = std::nullopt, const LayerOptions& options = {});
  Tensor forward(const Tensor& indices) override;
  std::string type_name() const override { return "Embedding"; }

  Tensor weight;
  std::optional<int64_t> padding_idx;
};

// nn::layer_norm over the last normalized_shape axes; weight 1 and bias 0 when affine.
class LayerNorm : public Module {
 public:
  explicit LayerNorm(Shape normalized_shape, double eps = 1e-5, bool elementwise_affine = true,
                     bool bias = true, const LayerOptions& options = {});
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "LayerNorm"; }

  Tensor weight;
  Tensor bias;
  Shape normalized_shape;
  double eps;
};

// nn::rms_norm; weight 1 when affine. eps defaults to the dtype's machine epsilon.
class RMSNorm : public Module {
 public:
  explicit RMSNorm(Shape normalized_shape, std::optional<double> eps = std::nullopt,
                   bool elementwise_affine = true, const LayerOptions& options = {});
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "RMSNorm"; }

  Tensor weight;
  Shape normalized_shape;
  std::optional<double> eps;
};

// nn::group_norm: num_groups divides num_channels; weight 1 and bias 0 (C) when affine.
class GroupNorm : public Module {
 public:
  GroupNorm(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true,
            const LayerOptions& options = {});
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "GroupNorm"; }

  Tensor weight;
  Tensor bias;
  int64_t num_groups;
  double eps;
};

// nn::batch_norm per channel of (N, C, ...): in training mode by the batch's statistics,
// updating the buffers running_mean (0), running_var (1) and num_batches_tracked (int64, counts
// the updates); in eval mode by the running statistics. momentum empty: the running statistics
// are the cumulative average (1 / num_batches_tracked), as PyTorch's momentum=None: it reads the
// count on the host each step, so a CapturedStep would keep the factor of its capture (give a
// momentum there).
// track_running_stats false: no buffers, and the batch's statistics in both modes.
// BatchNorm1d takes (N, C) or (N, C, L), BatchNorm2d (N, C, H, W), BatchNorm3d (N, C, D, H, W).
class BatchNorm : public Module {
 public:
  Tensor forward(const Tensor& input) override;

  Tensor weight;
  Tensor bias;
  Tensor running_mean;
  Tensor running_var;
  Tensor num_batches_tracked;
  double eps;
  std::optional<double> momentum;

 protected:
  // `layer` names it in errors; `input_ranks` are the ranks it takes, `input_layout` how they
  // read ("(N, C, H, W)").
  BatchNorm(const std::string& layer, std::vector<size_t> input_ranks, std::string input_layout,
            int64_t num_features, double eps, std::optional<double> momentum, bool affine,
            bool track_running_stats, const LayerOptions& options);

 private:
  std::vector<size_t> input_ranks_;
  std::string input_layout_;
};

class BatchNorm1d : public BatchNorm {
 public:
  explicit BatchNorm1d(int64_t num_features, double eps = 1e-5,
                       std::optional<double> momentum = 0.1, bool affine = true,
                       bool track_running_stats = true, const LayerOptions& options = {})
      : BatchNorm("BatchNorm1d", {2, 3}, "(N, C) or (N, C, L)", num_features, eps, momentum, affine,
                  track_running_stats, options) {}
  std::string type_name() const override { return "BatchNorm1d"; }
};

class BatchNorm2d : public BatchNorm {
 public:
  explicit BatchNorm2d(int64_t num_features, double eps = 1e-5,
                       std::optional<double> momentum = 0.1, bool affine = true,
                       bool track_running_stats = true, const LayerOptions& options = {})
      : BatchNorm("BatchNorm2d", {4}, "(N, C, H, W)", num_features, eps, momentum, affine,
                  track_running_stats, options) {}
  std::string type_name() const override { return "BatchNorm2d"; }
};

class BatchNorm3d : public BatchNorm {
 public:
  explicit BatchNorm3d(int64_t num_features, double eps = 1e-5,
                       std::optional<double> momentum = 0.1, bool affine = true,
                       bool track_running_stats = true, const LayerOptions& options = {})
      : BatchNorm("BatchNorm3d", {5}, "(N, C, D, H, W)", num_features, eps, momentum, affine,
                  track_running_stats, options) {}
  std::string type_name() const override { return "BatchNorm3d"; }
};

// random::dropout with probability p in training mode; the input itself in eval mode.
class Dropout : public Module {
 public:
  // generator: the device's default generator when empty.
  explicit Dropout(double p = 0.5, std::optional<Generator> generator = std::nullopt);
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "Dropout"; }

  double p;

 private:
  std::optional<Generator> generator_;
};

// Attention over embed_dim features in num_heads heads (embed_dim divisible by num_heads), as
// PyTorch's nn.MultiheadAttention with kdim = vdim = embed_dim: in_proj_weight (3 E, E) (Xavier
// uniform), in_proj_bias (3 E) zero, out_proj a Linear (E, E) with zero bias. Inputs (L, N, E),
// or (N, L, E) with batch_first, or unbatched (L, E). The weights of the heads are not returned
// (call nn::scaled_dot_product_attention on the projections for those). Dropout on the attention
// weights with probability `dropout` in training mode.
struct MultiheadAttentionOptions {
  double dropout = 0.0;
  bool bias = true;
  bool batch_first = false;
  std::optional<Generator> generator =
      std::nullopt;  // for the dropout; the device's default when empty
};
class MultiheadAttention : public Module {
 public:
  MultiheadAttention(int64_t embed_dim, int64_t num_heads,
                     const MultiheadAttentionOptions& attention = {},
                     const LayerOptions& options = {});
  // PyTorch's masks: attn_mask (L, S) or (N * num_heads, L, S), bool (true marks a score that
  // is dropped: the opposite of scaled_dot_product_attention's bool mask, in PyTorch as here) or
  // float (added); key_padding_mask (N, S) or (S) for unbatched input, bool (true drops that
  // key) or float (added). is_causal lets query i see keys j <= i. A query whose keys are all
  // dropped gives 0 (PyTorch gives NaN).
  Tensor forward(const Tensor& query, const Tensor& key, const Tensor& value,
                 const std::optional<Tensor>& attn_mask = {},
                 const std::optional<Tensor>& key_padding_mask = {}, bool is_causal = false);
  // Self-attention: forward(x, x, x).
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "MultiheadAttention"; }

  Tensor in_proj_weight;
  Tensor in_proj_bias;
  std::shared_ptr<Linear> out_proj;
  int64_t embed_dim;
  int64_t num_heads;
  MultiheadAttentionOptions attention;
};

// Elementwise activations as modules, for Sequential.
class ReLU : public Module {
 public:
  Tensor forward(const Tensor& input) override { return input.relu(); }
  std::string type_name() const override { return "ReLU"; }
};
class GELU : public Module {
 public:
  // approximate_tanh: PyTorch's approximate="tanh".
  explicit GELU(bool approximate_tanh = false) : approximate_tanh(approximate_tanh) {}
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "GELU"; }
  bool approximate_tanh;
};
class SiLU : public Module {
 public:
  Tensor forward(const Tensor& input) override { return input.silu(); }
  std::string type_name() const override { return "SiLU"; }
};
class Tanh : public Module {
 public:
  Tensor forward(const Tensor& input) override { return input.tanh(); }
  std::string type_name() const override { return "Tanh"; }
};
class Sigmoid : public Module {
 public:
  Tensor forward(const Tensor& input) override { return input.sigmoid(); }
  std::string type_name() const override { return "Sigmoid"; }
};

// Children applied in order, named "0", "1", ... (PyTorch's).
class Sequential : public Module {
 public:
  Sequential() = default;
  explicit Sequential(std::vector<std::shared_ptr<Module>> modules);
  void push_back(std::shared_ptr<Module> module);
  size_t size() const { return children().size(); }
  Module& operator[](size_t index) const { return *children().at(index).second; }
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "Sequential"; }
};

// Children held in order, named "0", "1", ... (PyTorch's): their parameters and state are the
// list's; a module of your own calls them as it needs (the list has no forward of its own).
class ModuleList : public Module {
 public:
  ModuleList() = default;
  explicit ModuleList(std::vector<std::shared_ptr<Module>> modules);
  void push_back(std::shared_ptr<Module> module);
  size_t size() const { return children().size(); }
  Module& operator[](size_t index) const { return *children().at(index).second; }
  std::string type_name() const override { return "ModuleList"; }
};

}  // namespace kiln::nn

// nn::MultiheadAttention (include/kiln/modules.h): PyTorch's projections, head split and masks
// around scaled_dot_product_attention, or an unfused softmax when its weights take dropout.

#include <kiln/error.h>
#include <kiln/modules.h>

#include <cmath>
#include <limits>
#include <string>

#include "runtime/tensor_internal.h"

namespace kiln::nn {
namespace {

constexpr const char* kOp = "[MultiheadAttention] ";

// The masks PyTorch's module takes, in the form scaled_dot_product_attention takes: one bool
// mask that keeps a score where true, or one float mask that is added (a bool part adding -inf
// where it drops).
struct AttentionMask {
  std::optional<Tensor> keep;
  std::optional<Tensor> add;

  void drop_where(const Tensor& dropped) { keep_where(dropped.logical_not()); }
  void keep_where(const Tensor& kept) { keep = keep ? (*keep & kept) : kept; }
  void add_values(const Tensor& values) { add = add ? (*add + values) : values; }

  std::optional<Tensor> combined() const {
    if (!add) return keep;
    if (!keep) return add;
    return where(*keep, *add, -std::numeric_limits<double>::infinity());
  }
};

Tensor projected(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t part,
                 int64_t embed_dim) {
  const Tensor part_weight = weight.slice(0, part * embed_dim, (part + 1) * embed_dim);
  if (!bias.defined()) return linear(input, part_weight);
  return linear(input, part_weight, bias.slice(0, part * embed_dim, (part + 1) * embed_dim));
}

// (N, L, E) -> (N, H, L, E / H), the sequence length kept as given (a Variable stays one).
Tensor split_heads(const Tensor& x, int64_t heads) {
  const DimShape dims = x.dims();
  const int64_t features = x.shape()[2];
  return x.reshape(DimShape{dims[0], dims[1], Dim(heads), Dim(features / heads)}).transpose(1, 2);
}

}  // namespace

MultiheadAttention::MultiheadAttention(int64_t embed_dim_, int64_t num_heads_,
                                       const MultiheadAttentionOptions& attention_,
                                       const LayerOptions& options)
    : embed_dim(embed_dim_), num_heads(num_heads_), attention(attention_) {
  if (embed_dim < 1 || num_heads < 1 || embed_dim % num_heads != 0) {
    throw ValueError(std::string(kOp) + "embed_dim (" + std::to_string(embed_dim) +
                     ") must be a positive multiple of num_heads (" + std::to_string(num_heads) +
                     ")");
  }
  if (!(attention.dropout >= 0 && attention.dropout <= 1)) {
    throw ValueError(std::string(kOp) + "dropout must be in [0, 1], got " +
                     std::to_string(attention.dropout));
  }
  // Xavier uniform over the stacked (3 E, E) matrix, as PyTorch's _reset_parameters.
  const double bound = std::sqrt(6.0 / static_cast<double>(embed_dim + 3 * embed_dim));
  in_proj_weight = make_parameter({3 * embed_dim, embed_dim}, bound, options);
  register_parameter("in_proj_weight", &in_proj_weight);
  if (attention.bias) {
    in_proj_bias = make_parameter(Tensor::zeros({3 * embed_dim}, options.dtype, options.device));
    register_parameter("in_proj_bias", &in_proj_bias);
  }
  out_proj = std::make_shared<Linear>(embed_dim, embed_dim, attention.bias, options);
  if (attention.bias) {
    out_proj->bias = make_parameter(Tensor::zeros({embed_dim}, options.dtype, options.device));
  }
  register_module("out_proj", out_proj);
}

Tensor MultiheadAttention::forward(const Tensor& input) {
  return forward(input, input, input);
}

Tensor MultiheadAttention::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                   const std::optional<Tensor>& attn_mask,
                                   const std::optional<Tensor>& key_padding_mask, bool is_causal) {
  for (const Tensor* input : {&query, &key, &value}) check_defined(*input, "MultiheadAttention");
  const int64_t rank = query.ndim();
  if ((rank != 2 && rank != 3) || key.ndim() != rank || value.ndim() != rank) {
    throw ShapeError(std::string(kOp) +
                     "query, key and value are (L, N, E) (batch_first: (N, L, E)) or unbatched "
                     "(L, E), all of one rank; got " +
                     query.shape_string() + ", " + key.shape_string() + ", " +
                     value.shape_string());
  }
  for (const Tensor* input : {&query, &key, &value}) {
    if (input->shape().back() != embed_dim) {
      throw ShapeError(std::string(kOp) + "inputs end in embed_dim = " + std::to_string(embed_dim) +
                       " features; got query " + query.shape_string() + ", key " +
                       key.shape_string() + ", value " + value.shape_string());
    }
  }
  if (key.shape() != value.shape()) {
    throw ShapeError(std::string(kOp) + "key and value must have one shape; got " +
                     key.shape_string() + " and " + value.shape_string());
  }
  const bool batched = rank == 3;
  // To (N, L, E).
  auto to_batch_first = [&](const Tensor& x) {
    if (!batched) return x.unsqueeze(0);
    return attention.batch_first ? x : x.transpose(0, 1);
  };
  const Tensor q_in = to_batch_first(query);
  const Tensor k_in = to_batch_first(key);
  const Tensor v_in = to_batch_first(value);
  if (q_in.shape()[0] != k_in.shape()[0] || k_in.shape()[0] != v_in.shape()[0]) {
    throw ShapeError(std::string(kOp) + "query, key and value must have one batch size; got " +
                     query.shape_string() + ", " + key.shape_string() + " and " +
                     value.shape_string());
  }
  const Tensor q =
      split_heads(projected(q_in, in_proj_weight, in_proj_bias, 0, embed_dim), num_heads);
  const Tensor k =
      split_heads(projected(k_in, in_proj_weight, in_proj_bias, 1, embed_dim), num_heads);
  const Tensor v =
      split_heads(projected(v_in, in_proj_weight, in_proj_bias, 2, embed_dim), num_heads);

  const DimShape q_dims = q.dims();  // (N, H, L, hd)
  const DimShape k_dims = k.dims();  // (N, H, S, hd)
  AttentionMask mask;
  if (attn_mask) {
    Tensor scores_mask = *attn_mask;
    if (scores_mask.ndim() == 3) {
      if (scores_mask.shape()[0] != q.shape()[0] * num_heads) {
        throw ShapeError(std::string(kOp) + "a 3-D attn_mask is (N * num_heads, L, S) = (" +
                         std::to_string(q.shape()[0] * num_heads) + ", L, S); got " +
                         scores_mask.shape_string());
      }
      scores_mask = scores_mask.reshape(
          DimShape{q_dims[0], Dim(num_heads), scores_mask.dims()[1], scores_mask.dims()[2]});
    } else if (scores_mask.ndim() != 2) {
      throw ShapeError(std::string(kOp) + "attn_mask is (L, S) or (N * num_heads, L, S); got " +
                       scores_mask.shape_string());
    }
    if (scores_mask.dtype().is_bool()) {
      mask.drop_where(scores_mask);
    } else {
      mask.add_values(scores_mask);
    }
  }
  if (key_padding_mask) {
    const Tensor& padding = *key_padding_mask;
    if (padding.ndim() != (batched ? 2 : 1)) {
      throw ShapeError(std::string(kOp) + "key_padding_mask is (N, S) (unbatched: (S)); got " +
                       padding.shape_string() + " for key " + key.shape_string());
    }
    const DimShape padding_dims = padding.dims();
    const Tensor per_key = padding.reshape(
        DimShape{batched ? padding_dims[0] : Dim(1), Dim(1), Dim(1), padding_dims.back()});
    if (padding.dtype().is_bool()) {
      mask.drop_where(per_key);
    } else {
      mask.add_values(per_key);
    }
  }
  const bool dropping = training() && attention.dropout > 0;
  const bool causal_in_mask = is_causal && (mask.keep || mask.add || dropping);
  if (causal_in_mask) {
    const Tensor rows = Tensor::arange(q_dims[2], dtypes::int64, q.device()).unsqueeze(1);
    const Tensor columns = Tensor::arange(k_dims[2], dtypes::int64, q.device()).unsqueeze(0);
    mask.keep_where(rows >= columns);
  }
  const std::optional<Tensor> combined = mask.combined();

  Tensor heads;
  if (dropping) {
    // The weights themselves are dropped, so they are computed: no fused kernel.
    const double scale = 1.0 / std::sqrt(static_cast<double>(embed_dim / num_heads));
    Tensor scores = q.matmul(k.transpose(-2, -1)) * scale;
    if (combined) {
      scores = combined->dtype().is_bool()
                   ? where(*combined, scores, -std::numeric_limits<double>::infinity())
                   : scores + *combined;
    }
    Generator generator =
        attention.generator ? *attention.generator : default_generator(q.device());
    // A query whose every key is dropped gets 0, as scaled_dot_product_attention gives it (a
    // softmax over nothing but -inf is NaN).
    const Tensor has_key = (scores > -std::numeric_limits<double>::infinity()).any({-1}, true);
    const Tensor weights = where(has_key, scores.softmax(-1), 0.0);
    heads = random::dropout(generator, weights, attention.dropout).matmul(v);
  } else {
    heads = scaled_dot_product_attention(q, k, v, combined, is_causal && !causal_in_mask);
  }
  const DimShape head_dims = heads.dims();
  Tensor merged =
      heads.transpose(1, 2).reshape(DimShape{head_dims[0], head_dims[2], Dim(embed_dim)});
  Tensor out = out_proj->forward(merged);
  if (!batched) return out.squeeze(0);
  return attention.batch_first ? out : out.transpose(0, 1);
}

}  // namespace kiln::nn

#pragma once
// The gradient of scaled_dot_product_attention (runtime/nn_layers.cpp).

#include <kiln/tensor.h>

#include <vector>

namespace kiln::nn::detail {

// The gradients of q, k and v (and of a float mask; none for a bool mask) of one Attention
// node, whose `operands` are its sources (q, k, v and the mask, expanded to the scores' leading
// sizes). The scores are computed again, as the unfused forward pass computes them: the backward
// pass holds L x S values per head that the fused forward pass never stores.
std::vector<Tensor> attention_gradients(const std::vector<Tensor>& operands, double scale,
                                        bool causal, const Tensor& gradient);

}  // namespace kiln::nn::detail

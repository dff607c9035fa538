#pragma once
/// \file layers.h
/// The three parameterised layers a GPT needs: Linear, Embedding, LayerNorm. Each is a thin Module
/// around one differentiable op from autograd/functions.h.
///
/// \code
///   using namespace minitorch;
///   Generator gen(1337);
///   nn::Linear fc(768, 3072, /*bias=*/true, gen);      // weight (3072, 768) ~ N(0, 0.02), bias 0
///   nn::Embedding wte(65, 128, gen);                    // weight (65, 128) ~ N(0, 0.02)
///   nn::LayerNorm ln(128);                              // weight 1, bias 0
///   Tensor idx = Tensor::from_ints({1, 2, 3}, {1, 3});  // (B=1, T=3)
///   Tensor x = ln.forward(wte.forward(idx));            // (1, 3, 128)
/// \endcode
///
/// Weights are drawn from the caller's Generator when the layer is constructed, so the order of
/// construction fixes the weights (GPT documents its order).
#include <cstdint>

#include "minitorch/random.h"
#include "nn/module.h"

namespace minitorch::nn {

/// nanoGPT's init: N(0, 0.02) for Linear and Embedding weights.
inline constexpr float kInitStd = 0.02f;

/// y = x W^T + b, like torch.nn.Linear. Parameters: `weight` (out, in), `bias` (out) if bias.
class Linear : public Module {
 public:
  /// weight ~ N(0, init_std²) from `gen`, bias = 0.
  Linear(std::int64_t in_features, std::int64_t out_features, bool bias, Generator& gen, float init_std = kInitStd);
  /// A Linear over existing tensors (a tied weight: the GPT's lm_head uses the token embedding).
  /// `bias` may be undefined.
  explicit Linear(Tensor weight, Tensor bias = Tensor());

  /// x: (..., in) -> (..., out)
  Tensor forward(const Tensor& x) const;

  std::int64_t in_features() const { return weight.size(1); }
  std::int64_t out_features() const { return weight.size(0); }

  Tensor weight;  // (out, in)
  Tensor bias;    // (out), or undefined
};

/// Row lookup, like torch.nn.Embedding. Parameter: `weight` (num_embeddings, dim).
class Embedding : public Module {
 public:
  /// weight ~ N(0, init_std²) from `gen`.
  Embedding(std::int64_t num_embeddings, std::int64_t embedding_dim, Generator& gen, float init_std = kInitStd);
  /// An Embedding over an existing (num_embeddings, dim) tensor (a copy another model hands over).
  explicit Embedding(Tensor weight);

  /// idx: (...) i32 in [0, num_embeddings) -> (..., dim)
  Tensor forward(const Tensor& idx) const;

  std::int64_t num_embeddings() const { return weight.size(0); }
  std::int64_t embedding_dim() const { return weight.size(1); }

  Tensor weight;  // (num_embeddings, dim)
};

/// LayerNorm over the last dimension, like torch.nn.LayerNorm (nanoGPT's, with optional bias).
/// Parameters: `weight` (C) = 1, `bias` (C) = 0 if bias.
class LayerNorm : public Module {
 public:
  explicit LayerNorm(std::int64_t dim, bool bias = true, float eps = 1e-5f);

  /// x: (..., C) -> (..., C)
  Tensor forward(const Tensor& x) const;

  Tensor weight;  // (C)
  Tensor bias;    // (C), or undefined without bias
  float eps;
};

}  // namespace minitorch::nn

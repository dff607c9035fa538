#include "nn/layers.h"

#include <stdexcept>
#include <string>

#include "autograd/functions.h"
#include "minitorch/allocator.h"

namespace minitorch::nn {

namespace {
void check_positive(std::int64_t n, const char* layer, const char* what) {
  if (n <= 0)
    throw std::invalid_argument(std::string(layer) + ": " + what + " must be positive, got " + std::to_string(n));
}
}  // namespace

// ---------------- Linear ----------------
Linear::Linear(std::int64_t in_features, std::int64_t out_features, bool has_bias, Generator& gen, float init_std) {
  check_positive(in_features, "Linear", "in_features");
  check_positive(out_features, "Linear", "out_features");
  TagScope scope(MemTag::param);
  weight = register_parameter("weight", Tensor::randn({out_features, in_features}, gen, 0.f, init_std));
  if (has_bias) bias = register_parameter("bias", Tensor::zeros({out_features}));
}

Linear::Linear(Tensor w, Tensor b) {
  if (!w.defined() || w.dim() != 2) throw std::invalid_argument("Linear: weight must be a 2-D (out, in) tensor");
  if (b.defined() && (b.dim() != 1 || b.size(0) != w.size(0)))
    throw std::invalid_argument("Linear: bias " + shape_str(b.shape()) + " does not match weight " +
                                shape_str(w.shape()));
  weight = register_parameter("weight", w);
  if (b.defined()) bias = register_parameter("bias", b);
}

// x: (..., in) -> (..., out)
Tensor Linear::forward(const Tensor& x) const {
  return call({x}, [&] { return autograd::linear(x, weight, bias); });
}

// ---------------- Embedding ----------------
Embedding::Embedding(std::int64_t num_embeddings, std::int64_t embedding_dim, Generator& gen, float init_std) {
  check_positive(num_embeddings, "Embedding", "num_embeddings");
  check_positive(embedding_dim, "Embedding", "embedding_dim");
  TagScope scope(MemTag::param);
  weight = register_parameter("weight", Tensor::randn({num_embeddings, embedding_dim}, gen, 0.f, init_std));
}

Embedding::Embedding(Tensor w) {
  if (!w.defined() || w.dim() != 2)
    throw std::invalid_argument("Embedding: weight must be a 2-D (num_embeddings, dim) tensor");
  weight = register_parameter("weight", w);
}

// idx: (...) i32 -> (..., C)
Tensor Embedding::forward(const Tensor& idx) const {
  return call({idx}, [&] { return autograd::embedding(weight, idx); });
}

// ---------------- LayerNorm ----------------
LayerNorm::LayerNorm(std::int64_t dim, bool has_bias, float eps_) : eps(eps_) {
  check_positive(dim, "LayerNorm", "dim");
  TagScope scope(MemTag::param);
  weight = register_parameter("weight", Tensor::ones({dim}));
  if (has_bias) bias = register_parameter("bias", Tensor::zeros({dim}));
}

// x: (..., C) -> (..., C), normalised over C, then * weight + bias
Tensor LayerNorm::forward(const Tensor& x) const {
  return call({x}, [&] {
    if (bias.defined()) return autograd::layernorm(x, weight, bias, eps);
    // Without bias: ops::layernorm requires a bias tensor, so pass zeros that are not a parameter
    // (C elements per call, freed on return; no gradient is asked for them).
    Tensor zero_bias = Tensor::zeros(weight.shape(), weight.dtype(), weight.device());
    return autograd::layernorm(x, weight, zero_bias, eps);
  });
}

}  // namespace minitorch::nn

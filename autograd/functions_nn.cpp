// Matmul, linear and the neural-net ops, with their backward passes.
#include "autograd/functions.h"
#include "minitorch/not_implemented.h"

namespace minitorch::autograd {

namespace {
/// Sums a batched gradient (..., R, C) down to the 2-D shape (R, C) of a shared matrix.
Tensor sum_batches(const Tensor& g, const Tensor& like) {
  if (g.dim() == like.dim()) return g;
  std::vector<std::int64_t> lead;
  for (std::int64_t d = 0; d < g.dim() - like.dim(); ++d) lead.push_back(d);
  return ops::sum(g, lead);
}

struct MatmulBackward : Node {
  SavedTensor a_saved, b_saved;
  bool ta, tb;
  const char* name() const override { return "MatmulBackward"; }
  // out = op(a) @ op(b), op = transpose if flagged:
  //   C = A B      =>  dA = dC B^T,    dB = A^T dC
  //   C = A^T B    =>  dA = B dC^T,    dB = A dC
  //   C = A B^T    =>  dA = dC B,      dB = dC^T A
  //   C = A^T B^T  =>  dA = B^T dC^T,  dB = dC^T A^T
  std::vector<Tensor> backward(const Tensor& g) override {
    const Tensor &a = a_saved.get(), &b = b_saved.get();
    Tensor ga, gb;
    if (next_edges[0].defined()) {
      if (!ta) ga = ops::matmul(g, b, false, !tb);
      else if (b.dim() == 2 && g.dim() > 2)  // b shared by all batches: ops::matmul takes a 2-D b only on
        ga = ops::matmul(g, b, false, !tb).transpose(-1, -2).contiguous();  // the right, so dA = (dC op(B)^T)^T
      else ga = ops::matmul(b, g, tb, true);
    }
    if (next_edges[1].defined()) {
      if (!tb) gb = ops::matmul(a, g, !ta, false);
      else gb = ops::matmul(g, a, true, ta);
      gb = sum_batches(gb, b);
    }
    return {ga, gb};
  }
  void release_saved() override { a_saved.reset(), b_saved.reset(); }
};

struct LinearBackward : Node {
  SavedTensor x, w;  // x: (N, in) flattened, or the (..., in) parameter itself; W (out, in)
  bool has_bias;
  const char* name() const override { return "LinearBackward"; }
  // y = x W^T + b   =>   dx = dy W,  dW = dy^T x,  db = sum_rows(dy)
  std::vector<Tensor> backward(const Tensor& g) override {
    // BEGIN SOLUTION L02.2
    const Tensor& wv = w.get();
    Tensor dy = g.reshape({-1, wv.size(0)});
    Tensor dx, dw, db;
    if (next_edges[0].defined()) {
      Shape xs = next_edges[0].shape;
      dx = ops::matmul(dy, wv).view(xs);
    }
    if (next_edges[1].defined()) {
      const Tensor& xv = x.get();
      dw = ops::matmul(dy, xv.dim() == 2 ? xv : xv.reshape({-1, xv.size(-1)}), true, false);
    }
    if (has_bias && next_edges[2].defined()) db = ops::sum(dy, {0});
    return {dx, dw, db};
    // END SOLUTION
  }
  void release_saved() override { x.reset(), w.reset(); }
};

struct SoftmaxBackward : Node {
  Tensor y;
  float scale;
  bool causal;
  const char* name() const override { return causal ? "CausalSoftmaxBackward" : "SoftmaxBackward"; }
  // y = softmax(scale * x)   =>   dx = scale * y * (dy - sum(dy * y))
  std::vector<Tensor> backward(const Tensor& g) override {
    return {causal ? ops::causal_softmax_backward(y, g, scale) : ops::softmax_backward(y, g)};
  }
  void release_saved() override { y = Tensor(); }
};

struct LayerNormBackward : Node {
  SavedTensor x, weight;
  Tensor mean, rstd;
  const char* name() const override { return "LayerNormBackward"; }
  // y = (x - mean) * rstd * w + b   (per row)
  std::vector<Tensor> backward(const Tensor& g) override {
    auto r = ops::layernorm_backward(g, x.get(), weight.get(), mean, rstd);
    return {r.dx, r.dweight, r.dbias};
  }
  void release_saved() override { x.reset(), weight.reset(), mean = rstd = Tensor(); }
};

struct GeluBackward : Node {
  SavedTensor x;
  const char* name() const override { return "GeluBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override { return {ops::gelu_backward(x.get(), g)}; }
  void release_saved() override { x.reset(); }
};

struct EmbeddingBackward : Node {
  Tensor idx;
  std::int64_t num_embeddings;
  const char* name() const override { return "EmbeddingBackward"; }
  // out[..] = weight[idx[..]]   =>   dweight[v] = sum over positions with idx == v of dout
  std::vector<Tensor> backward(const Tensor& g) override {
    return {ops::embedding_backward(g, idx, num_embeddings), Tensor()};
  }
  void release_saved() override { idx = Tensor(); }
};

struct CrossEntropyBackward : Node {
  Tensor probs, targets;
  std::int64_t count;
  std::int32_t ignore_index;
  const char* name() const override { return "CrossEntropyBackward"; }
  // loss = mean_i(logsumexp(z_i) - z_i[t_i])   =>   dz_i = dloss * (softmax(z_i) - onehot(t_i)) / count
  std::vector<Tensor> backward(const Tensor& g) override {
    return {ops::cross_entropy_backward(probs, targets, g, count, ignore_index), Tensor()};
  }
  void release_saved() override { probs = targets = Tensor(); }
};
}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  Tensor out = ops::matmul(a, b, trans_a, trans_b);
  if (!grad_enabled() || !(needs_grad(a) || needs_grad(b))) return out;
  auto node = std::make_shared<MatmulBackward>();
  node->a_saved = a;
  node->b_saved = b;
  node->ta = trans_a;
  node->tb = trans_b;
  return record(out, node, {a, b});
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (x.size(-1) != weight.size(1))
    throw std::invalid_argument("linear: input " + shape_str(x.shape()) + " does not match weight " +
                                shape_str(weight.shape()) + " (expected last dim " + std::to_string(weight.size(1)) + ")");
  Tensor x2 = x.reshape({-1, x.size(-1)});
  Tensor y = ops::matmul(x2, weight, false, true);  // (N, out)
  if (bias.defined()) y = ops::add(y, bias);
  Shape ys = x.shape();
  ys.back() = weight.size(0);
  y = y.view(ys);
  if (!grad_enabled() || !(needs_grad(x) || needs_grad(weight) || needs_grad(bias))) return y;
  auto node = std::make_shared<LinearBackward>();
  node->x = x.is_leaf() && x.requires_grad() ? x : x2;  // a parameter by reference, an activation as (N, in)
  node->w = weight;
  node->has_bias = bias.defined();
  return record(y, node, {x, weight, bias});
}

Tensor softmax(const Tensor& x) {
  Tensor y = ops::softmax(x);
  if (!grad_enabled() || !needs_grad(x)) return y;
  auto node = std::make_shared<SoftmaxBackward>();
  node->y = y.detach();
  node->scale = 1.f;
  node->causal = false;
  return record(y, node, {x});
}

Tensor causal_softmax(const Tensor& x, float scale) {
  Tensor y = ops::causal_softmax(x, scale);
  if (!grad_enabled() || !needs_grad(x)) return y;
  auto node = std::make_shared<SoftmaxBackward>();
  node->y = y.detach();
  node->scale = scale;
  node->causal = true;
  return record(y, node, {x});
}

Tensor layernorm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps) {
  auto r = ops::layernorm(x, weight, bias, eps);
  if (!grad_enabled() || !(needs_grad(x) || needs_grad(weight) || needs_grad(bias))) return r.y;
  auto node = std::make_shared<LayerNormBackward>();
  node->x = x;
  node->weight = weight;
  node->mean = r.mean;
  node->rstd = r.rstd;
  return record(r.y, node, {x, weight, bias});
}

Tensor gelu(const Tensor& x) {
  Tensor y = ops::gelu(x);
  if (!grad_enabled() || !needs_grad(x)) return y;
  auto node = std::make_shared<GeluBackward>();
  node->x = x;
  return record(y, node, {x});
}

Tensor embedding(const Tensor& weight, const Tensor& idx) {
  Tensor y = ops::embedding(weight, idx);
  if (!grad_enabled() || !needs_grad(weight)) return y;
  auto node = std::make_shared<EmbeddingBackward>();
  node->idx = idx;
  node->num_embeddings = weight.size(0);
  return record(y, node, {weight, idx});
}

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, std::int32_t ignore_index) {
  auto r = ops::cross_entropy(logits, targets, ignore_index);
  if (!grad_enabled() || !needs_grad(logits)) return r.loss;
  auto node = std::make_shared<CrossEntropyBackward>();
  node->probs = r.probs;
  node->targets = targets;
  node->count = r.count;
  node->ignore_index = ignore_index;
  return record(r.loss, node, {logits, targets});
}

}  // namespace minitorch::autograd

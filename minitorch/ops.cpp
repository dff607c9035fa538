// ops::*: check the arguments once (one std::invalid_argument naming the op and the shapes), then
// call the kernels of the inputs' device (minitorch/backend.h).
#include "minitorch/ops.h"

#include <algorithm>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include "minitorch/backend.h"

namespace minitorch::ops {

namespace {
[[noreturn]] void fail(const char* op, const std::string& what) {
  throw std::invalid_argument(std::string(op) + ": " + what);
}
std::string desc(const char* name, const Tensor& t) { return std::string(name) + " " + shape_str(t.shape()); }

/// All arguments defined and on one device; returns that device's kernels.
Backend& kernels(const char* op, std::initializer_list<const Tensor*> ts) {
  const Tensor* first = nullptr;
  for (const Tensor* t : ts) {
    if (!t->defined()) fail(op, "an argument is an undefined tensor");
    if (first && t->device() != first->device())
      fail(op, "tensors on different devices: " + first->describe() + " and " + t->describe());
    if (!first) first = t;
  }
  return backend(first->device());
}
void need_float(const char* op, const char* name, const Tensor& t) {
  if (t.dtype() == DType::i32) fail(op, std::string(name) + " must be f32, bf16 or f16, got i32 " + shape_str(t.shape()));
}
void need_int(const char* op, const char* name, const Tensor& t) {
  if (t.dtype() != DType::i32)
    fail(op, std::string(name) + " must be i32, got " + dtype_name(t.dtype()) + " " + shape_str(t.shape()));
}
void need_same_shape(const char* op, const char* na, const Tensor& a, const char* nb, const Tensor& b) {
  if (a.shape() != b.shape()) fail(op, "shapes differ: " + desc(na, a) + ", " + desc(nb, b));
}
Shape broadcast_for(const char* op, const Shape& a, const Shape& b) {
  const std::size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    std::int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1)
      fail(op, "shapes " + shape_str(a) + " and " + shape_str(b) + " cannot be broadcast together");
    out[i] = x == 1 ? y : x;
  }
  return out;
}
Tensor binary(const char* op, BinaryOp kind, const Tensor& a, const Tensor& b) {
  Backend& k = kernels(op, {&a, &b});
  need_float(op, "a", a);
  need_float(op, "b", b);
  return k.binary(kind, a, b, broadcast_for(op, a.shape(), b.shape()));
}
Tensor unary(const char* op, UnaryOp kind, const Tensor& a, float p0 = 0.f, float p1 = 0.f) {
  Backend& k = kernels(op, {&a});
  need_float(op, "x", a);
  return k.unary(kind, a, p0, p1);
}
/// Wrapped, sorted, unique dims; empty means all.
std::vector<std::int64_t> reduce_dims(const char* op, const Tensor& x, const std::vector<std::int64_t>& dims) {
  std::vector<std::int64_t> out;
  const std::int64_t nd = x.dim();
  if (dims.empty())
    for (std::int64_t d = 0; d < nd; ++d) out.push_back(d);
  for (std::int64_t d : dims) {
    const std::int64_t w = d < 0 ? d + nd : d;
    if (w < 0 || w >= nd) fail(op, "dim " + std::to_string(d) + " out of range for x " + shape_str(x.shape()));
    if (std::find(out.begin(), out.end(), w) != out.end())
      fail(op, "dim " + std::to_string(d) + " given twice for x " + shape_str(x.shape()));
    out.push_back(w);
  }
  std::sort(out.begin(), out.end());
  return out;
}
}  // namespace

// ---------------- elementwise ----------------
Shape broadcast_shapes(const Shape& a, const Shape& b) { return broadcast_for("broadcast_shapes", a, b); }

Tensor add(const Tensor& a, const Tensor& b) { return binary("add", BinaryOp::add, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary("sub", BinaryOp::sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary("mul", BinaryOp::mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary("div", BinaryOp::div, a, b); }
Tensor affine(const Tensor& a, float s, float t) { return unary("affine", UnaryOp::affine, a, s, t); }
Tensor neg(const Tensor& a) { return unary("neg", UnaryOp::neg, a); }
Tensor exp(const Tensor& a) { return unary("exp", UnaryOp::exp, a); }
Tensor log(const Tensor& a) { return unary("log", UnaryOp::log, a); }
Tensor tanh(const Tensor& a) { return unary("tanh", UnaryOp::tanh, a); }
Tensor sqrt(const Tensor& a) { return unary("sqrt", UnaryOp::sqrt, a); }
Tensor pow(const Tensor& a, float exponent) { return unary("pow", UnaryOp::pow, a, exponent); }

Tensor sum_to(const Tensor& g, const Shape& shape) {
  Backend& k = kernels("sum_to", {&g});
  need_float("sum_to", "g", g);
  const Shape& gs = g.shape();
  if (shape.size() > gs.size() || broadcast_for("sum_to", shape, gs) != gs)
    fail("sum_to", "cannot sum g " + shape_str(gs) + " down to " + shape_str(shape));
  const std::size_t lead = gs.size() - shape.size();
  std::vector<std::int64_t> dims;
  for (std::size_t d = 0; d < gs.size(); ++d)
    if (d < lead || (shape[d - lead] == 1 && gs[d] != 1)) dims.push_back(static_cast<std::int64_t>(d));
  return k.sum(g, dims, true).view(shape);
}

// ---------------- in place ----------------
void add_(Tensor& dst, const Tensor& src, float alpha) {
  Backend& k = kernels("add_", {&dst, &src});
  need_float("add_", "dst", dst);
  need_float("add_", "src", src);
  need_same_shape("add_", "dst", dst, "src", src);
  if (!dst.is_contiguous()) fail("add_", "dst " + shape_str(dst.shape()) + " must be contiguous");
  k.add_(dst, src, alpha);
}

void scale_(Tensor& dst, float s) {
  Backend& k = kernels("scale_", {&dst});
  need_float("scale_", "dst", dst);
  if (!dst.is_contiguous()) fail("scale_", "dst " + shape_str(dst.shape()) + " must be contiguous");
  k.scale_(dst, s);
}

// ---------------- reductions ----------------
Tensor sum(const Tensor& x, const std::vector<std::int64_t>& dims, bool keepdim) {
  Backend& k = kernels("sum", {&x});
  need_float("sum", "x", x);
  return k.sum(x, reduce_dims("sum", x, dims), keepdim);
}

Tensor mean(const Tensor& x, const std::vector<std::int64_t>& dims, bool keepdim) {
  Backend& k = kernels("mean", {&x});
  need_float("mean", "x", x);
  auto d = reduce_dims("mean", x, dims);
  std::int64_t count = 1;
  for (auto i : d) count *= x.shape()[i];
  Tensor out = k.sum(x, d, keepdim);
  k.scale_(out, 1.f / static_cast<float>(count));
  return out;
}

Tensor max_last(const Tensor& x) {
  Backend& k = kernels("max_last", {&x});
  need_float("max_last", "x", x);
  if (x.dim() < 1 || x.shape().back() < 1) fail("max_last", "x " + shape_str(x.shape()) + " has no last dimension to reduce");
  return k.max_last(x);
}

double sum_squares(const Tensor& x) {
  Backend& k = kernels("sum_squares", {&x});
  need_float("sum_squares", "x", x);
  return k.sum_squares(x);
}

// ---------------- matmul ----------------
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  Backend& k = kernels("matmul", {&a, &b});
  need_float("matmul", "a", a);
  need_float("matmul", "b", b);
  auto show = [&] {
    return "a " + shape_str(a.shape()) + (trans_a ? "^T" : "") + " @ b " + shape_str(b.shape()) + (trans_b ? "^T" : "");
  };
  if (a.dim() < 2 || b.dim() < 2) fail("matmul", "operands must have at least 2 dims: " + show());
  if (b.dim() != 2 && (b.dim() != a.dim() || !std::equal(a.shape().begin(), a.shape().end() - 2, b.shape().begin())))
    fail("matmul", "batch dimensions differ (b must be 2-D or have a's batch dims): " + show());
  const std::int64_t ka = trans_a ? a.size(-2) : a.size(-1), kb = trans_b ? b.size(-1) : b.size(-2);
  if (ka != kb) fail("matmul", "inner dimensions differ: " + show());
  return k.matmul(a, b, trans_a, trans_b);
}

// ---------------- neural-net kernels ----------------
Tensor softmax(const Tensor& x) {
  Backend& k = kernels("softmax", {&x});
  need_float("softmax", "x", x);
  if (x.dim() < 1) fail("softmax", "x " + shape_str(x.shape()) + " has no last dimension");
  return k.softmax(x);
}

Tensor softmax_backward(const Tensor& y, const Tensor& dy) {
  Backend& k = kernels("softmax_backward", {&y, &dy});
  need_float("softmax_backward", "y", y);
  need_float("softmax_backward", "dy", dy);
  need_same_shape("softmax_backward", "y", y, "dy", dy);
  if (y.dim() < 1) fail("softmax_backward", "y " + shape_str(y.shape()) + " has no last dimension");
  return k.softmax_backward(y, dy);
}

namespace {
void need_square(const char* op, const char* name, const Tensor& x) {
  if (x.dim() < 2 || x.size(-1) != x.size(-2))
    fail(op, std::string(name) + " " + shape_str(x.shape()) + " must be (..., T, T)");
}
}  // namespace

Tensor causal_softmax(const Tensor& x, float scale) {
  Backend& k = kernels("causal_softmax", {&x});
  need_float("causal_softmax", "x", x);
  need_square("causal_softmax", "x", x);
  return k.causal_softmax(x, scale);
}

Tensor causal_softmax_backward(const Tensor& y, const Tensor& dy, float scale) {
  Backend& k = kernels("causal_softmax_backward", {&y, &dy});
  need_float("causal_softmax_backward", "y", y);
  need_float("causal_softmax_backward", "dy", dy);
  need_square("causal_softmax_backward", "y", y);
  need_same_shape("causal_softmax_backward", "y", y, "dy", dy);
  return k.causal_softmax_backward(y, dy, scale);
}

LayerNormOut layernorm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps) {
  Backend& k = kernels("layernorm", {&x, &weight, &bias});
  for (auto [n, t] : {std::pair{"x", &x}, {"weight", &weight}, {"bias", &bias}}) need_float("layernorm", n, *t);
  if (x.dim() < 1 || weight.shape() != Shape{x.size(-1)} || bias.shape() != Shape{x.size(-1)})
    fail("layernorm", "expected x (..., C), weight (C), bias (C); got " + desc("x", x) + ", " + desc("weight", weight) +
                          ", " + desc("bias", bias));
  return k.layernorm(x, weight, bias, eps);
}

LayerNormGrads layernorm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight, const Tensor& mean,
                                  const Tensor& rstd) {
  const char* op = "layernorm_backward";
  Backend& k = kernels(op, {&dy, &x, &weight, &mean, &rstd});
  for (auto [n, t] : {std::pair{"dy", &dy}, {"x", &x}, {"weight", &weight}, {"mean", &mean}, {"rstd", &rstd}})
    need_float(op, n, *t);
  need_same_shape(op, "dy", dy, "x", x);
  const Shape rows = x.dim() ? Shape(x.shape().begin(), x.shape().end() - 1) : Shape{};
  if (x.dim() < 1 || weight.shape() != Shape{x.size(-1)} || mean.shape() != rows || rstd.shape() != rows)
    fail(op, "expected x (..., C), weight (C), mean and rstd (...); got " + desc("x", x) + ", " + desc("weight", weight) +
                 ", " + desc("mean", mean) + ", " + desc("rstd", rstd));
  return k.layernorm_backward(dy, x, weight, mean, rstd);
}

Tensor gelu(const Tensor& x) {
  Backend& k = kernels("gelu", {&x});
  need_float("gelu", "x", x);
  return k.gelu(x);
}

Tensor gelu_backward(const Tensor& x, const Tensor& dy) {
  Backend& k = kernels("gelu_backward", {&x, &dy});
  need_float("gelu_backward", "x", x);
  need_float("gelu_backward", "dy", dy);
  need_same_shape("gelu_backward", "x", x, "dy", dy);
  return k.gelu_backward(x, dy);
}

Tensor embedding(const Tensor& weight, const Tensor& idx) {
  Backend& k = kernels("embedding", {&weight, &idx});
  need_float("embedding", "weight", weight);
  need_int("embedding", "idx", idx);
  if (weight.dim() != 2) fail("embedding", "weight must be (V, C), got " + shape_str(weight.shape()));
  return k.embedding(weight, idx);
}

Tensor embedding_backward(const Tensor& dy, const Tensor& idx, std::int64_t num_embeddings) {
  Backend& k = kernels("embedding_backward", {&dy, &idx});
  need_float("embedding_backward", "dy", dy);
  need_int("embedding_backward", "idx", idx);
  Shape expect = idx.shape();
  expect.push_back(dy.dim() ? dy.size(-1) : 0);
  if (dy.dim() != idx.dim() + 1 || dy.shape() != expect)
    fail("embedding_backward", "expected dy (..., C) and idx (...); got " + desc("dy", dy) + ", " + desc("idx", idx));
  if (num_embeddings < 1) fail("embedding_backward", "num_embeddings must be >= 1, got " + std::to_string(num_embeddings));
  return k.embedding_backward(dy, idx, num_embeddings);
}

CrossEntropyOut cross_entropy(const Tensor& logits, const Tensor& targets, std::int32_t ignore_index) {
  Backend& k = kernels("cross_entropy", {&logits, &targets});
  need_float("cross_entropy", "logits", logits);
  need_int("cross_entropy", "targets", targets);
  if (logits.dim() != 2 || targets.shape() != Shape{logits.size(0)} || logits.size(1) < 1)
    fail("cross_entropy", "expected logits (N, V) and targets (N); got " + desc("logits", logits) + ", " +
                              desc("targets", targets));
  return k.cross_entropy(logits, targets, ignore_index);
}

Tensor cross_entropy_backward(const Tensor& probs, const Tensor& targets, const Tensor& dloss, std::int64_t count,
                              std::int32_t ignore_index) {
  const char* op = "cross_entropy_backward";
  Backend& k = kernels(op, {&probs, &targets, &dloss});
  need_float(op, "probs", probs);
  need_int(op, "targets", targets);
  need_float(op, "dloss", dloss);
  if (probs.dim() != 2 || targets.shape() != Shape{probs.size(0)} || dloss.numel() != 1)
    fail(op, "expected probs (N, V), targets (N), dloss (one element); got " + desc("probs", probs) + ", " +
                 desc("targets", targets) + ", " + desc("dloss", dloss));
  if (count < 0) fail(op, "count must be >= 0, got " + std::to_string(count));
  return k.cross_entropy_backward(probs, targets, dloss, count, ignore_index);
}

// ---------------- optimizer ----------------
void adamw_step(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const AdamWParams& hp) {
  const char* op = "adamw_step";
  Backend& k = kernels(op, {&param, &grad, &m, &v});
  need_float(op, "param", param);
  need_float(op, "grad", grad);
  if (m.dtype() != DType::f32 || v.dtype() != DType::f32)
    fail(op, std::string("m and v must be f32, got ") + dtype_name(m.dtype()) + " and " + dtype_name(v.dtype()));
  need_same_shape(op, "param", param, "grad", grad);
  need_same_shape(op, "param", param, "m", m);
  need_same_shape(op, "param", param, "v", v);
  if (!param.is_contiguous() || !m.is_contiguous() || !v.is_contiguous())
    fail(op, "param, m and v must be contiguous (param " + shape_str(param.shape()) + ")");
  if (hp.step < 1) fail(op, "step counts from 1, got " + std::to_string(hp.step));
  k.adamw_step(param, grad, m, v, hp);
}

}  // namespace minitorch::ops

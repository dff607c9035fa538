// Elementwise ops, reductions and views, with their backward passes.
#include <cmath>

#include "autograd/functions.h"
#include "minitorch/not_implemented.h"

namespace minitorch::autograd {

namespace {
/// Backward of a broadcasting binary op: each input's gradient is summed back to its shape.
Tensor reduce_to(const Tensor& g, const Edge& input) {
  return g.shape() == input.shape ? g : ops::sum_to(g, input.shape);
}

struct AddBackward : Node {
  float sign_b;  // +1 for add, -1 for sub
  explicit AddBackward(float s) : sign_b(s) {}
  const char* name() const override { return sign_b > 0 ? "AddBackward" : "SubBackward"; }
  // out = a + sign_b * b   =>   da = dout, db = sign_b * dout
  std::vector<Tensor> backward(const Tensor& g) override {
    Tensor ga, gb;
    if (next_edges[0].defined()) ga = reduce_to(g, next_edges[0]);
    if (next_edges[1].defined()) gb = reduce_to(sign_b > 0 ? g : ops::neg(g), next_edges[1]);
    return {ga, gb};
  }
};

struct MulBackward : Node {
  SavedTensor a, b;  // saved inputs (detached activations or parameters: no graph cycles)
  const char* name() const override { return "MulBackward"; }
  // out = a * b   =>   da = dout * b, db = dout * a
  std::vector<Tensor> backward(const Tensor& g) override {
    Tensor ga, gb;
    if (next_edges[0].defined()) ga = reduce_to(ops::mul(g, b.get()), next_edges[0]);
    if (next_edges[1].defined()) gb = reduce_to(ops::mul(g, a.get()), next_edges[1]);
    return {ga, gb};
  }
  void release_saved() override { a.reset(), b.reset(); }
};

struct DivBackward : Node {
  SavedTensor a, b;
  const char* name() const override { return "DivBackward"; }
  // out = a / b   =>   da = dout / b, db = -dout * a / b²
  std::vector<Tensor> backward(const Tensor& g) override {
    const Tensor &av = a.get(), &bv = b.get();
    Tensor ga, gb;
    if (next_edges[0].defined()) ga = reduce_to(ops::div(g, bv), next_edges[0]);
    if (next_edges[1].defined()) gb = reduce_to(ops::neg(ops::div(ops::mul(g, av), ops::mul(bv, bv))), next_edges[1]);
    return {ga, gb};
  }
  void release_saved() override { a.reset(), b.reset(); }
};

/// Unary op whose derivative is a function of the saved input x and/or output y.
struct UnaryBackward : Node {
  enum Kind { Affine, Exp, Log, Tanh, Pow } kind;
  SavedTensor x;  // the input (Log, Pow)
  Tensor y;       // the output (Exp, Tanh)
  float s = 1.f, p = 1.f;
  explicit UnaryBackward(Kind k) : kind(k) {}
  const char* name() const override {
    static const char* names[] = {"AffineBackward", "ExpBackward", "LogBackward", "TanhBackward", "PowBackward"};
    return names[kind];
  }
  std::vector<Tensor> backward(const Tensor& g) override {
    switch (kind) {
      case Affine: return {ops::affine(g, s)};                                 // y = s x + t
      case Exp: return {ops::mul(g, y)};                                       // y = e^x
      case Log: return {ops::div(g, x.get())};                                 // y = log x
      case Tanh:  // y = tanh x: dy/dx = 1 - y², from the saved output
        // BEGIN SOLUTION L02.2
        return {ops::mul(g, ops::affine(ops::mul(y, y), -1.f, 1.f))};
        // END SOLUTION
      case Pow: return {ops::mul(g, ops::affine(ops::pow(x.get(), p - 1.f), p))};  // y = x^p: p x^(p-1)
    }
    return {Tensor()};
  }
  void release_saved() override { x.reset(), y = Tensor(); }
};

Tensor unary(UnaryBackward::Kind kind, const Tensor& a, Tensor out, float s = 1.f, float p = 1.f) {
  if (!grad_enabled() || !needs_grad(a)) return out;
  auto node = std::make_shared<UnaryBackward>(kind);
  node->s = s;
  node->p = p;
  if (kind == UnaryBackward::Log || kind == UnaryBackward::Pow) node->x = a;
  if (kind == UnaryBackward::Exp || kind == UnaryBackward::Tanh) node->y = out.detach();
  return record(out, node, {a});
}

struct SumBackward : Node {
  Shape input_shape;
  std::vector<std::int64_t> dims;
  bool keepdim;
  float scale;  // 1 for sum, 1/count for mean
  const char* name() const override { return scale == 1.f ? "SumBackward" : "MeanBackward"; }
  // out = sum_dims(x)   =>   dx = dout broadcast back over the summed dims
  std::vector<Tensor> backward(const Tensor& g) override {
    Tensor gk = g;
    if (!keepdim) {  // put the reduced dims back as size 1
      Shape shape = input_shape;
      std::int64_t nd = static_cast<std::int64_t>(input_shape.size());
      if (dims.empty())
        for (auto& s : shape) s = 1;
      for (auto d : dims) shape[d < 0 ? d + nd : d] = 1;
      gk = g.contiguous().view(shape);
    }
    return {ops::affine(gk, scale).expand(input_shape).contiguous()};
  }
};

Tensor reduce(const Tensor& x, const std::vector<std::int64_t>& dims, bool keepdim, bool is_mean) {
  Tensor out = is_mean ? ops::mean(x, dims, keepdim) : ops::sum(x, dims, keepdim);
  if (!grad_enabled() || !needs_grad(x)) return out;
  auto node = std::make_shared<SumBackward>();
  node->input_shape = x.shape();
  node->dims = dims;
  node->keepdim = keepdim;
  node->scale = is_mean ? static_cast<float>(out.numel()) / static_cast<float>(x.numel()) : 1.f;
  return record(out, node, {x});
}

/// Backward of a view: a function from the output gradient to the input gradient.
struct ViewBackward : Node {
  const char* label;
  std::function<Tensor(const Tensor&)> fn;
  ViewBackward(const char* l, std::function<Tensor(const Tensor&)> f) : label(l), fn(std::move(f)) {}
  const char* name() const override { return label; }
  std::vector<Tensor> backward(const Tensor& g) override { return {fn(g)}; }
};

Tensor view_op(const Tensor& x, Tensor out, const char* label, std::function<Tensor(const Tensor&)> back) {
  if (!grad_enabled() || !needs_grad(x)) return out;
  return record(out.detach(), std::make_shared<ViewBackward>(label, std::move(back)), {x});
}
}  // namespace

Tensor add(const Tensor& a, const Tensor& b) { return record(ops::add(a, b), std::make_shared<AddBackward>(1.f), {a, b}); }
Tensor sub(const Tensor& a, const Tensor& b) { return record(ops::sub(a, b), std::make_shared<AddBackward>(-1.f), {a, b}); }

Tensor mul(const Tensor& a, const Tensor& b) {
  auto node = std::make_shared<MulBackward>();
  Tensor out = ops::mul(a, b);
  if (grad_enabled() && (needs_grad(a) || needs_grad(b))) node->a = a, node->b = b;
  return record(out, node, {a, b});
}

Tensor div(const Tensor& a, const Tensor& b) {
  auto node = std::make_shared<DivBackward>();
  Tensor out = ops::div(a, b);
  if (grad_enabled() && (needs_grad(a) || needs_grad(b))) node->a = a, node->b = b;
  return record(out, node, {a, b});
}

Tensor affine(const Tensor& a, float s, float t) { return unary(UnaryBackward::Affine, a, ops::affine(a, s, t), s); }
Tensor neg(const Tensor& a) { return affine(a, -1.f); }
Tensor exp(const Tensor& a) { return unary(UnaryBackward::Exp, a, ops::exp(a)); }
Tensor log(const Tensor& a) { return unary(UnaryBackward::Log, a, ops::log(a)); }
Tensor tanh(const Tensor& a) { return unary(UnaryBackward::Tanh, a, ops::tanh(a)); }
Tensor pow(const Tensor& a, float p) { return unary(UnaryBackward::Pow, a, ops::pow(a, p), 1.f, p); }

Tensor sum(const Tensor& x, const std::vector<std::int64_t>& dims, bool keepdim) { return reduce(x, dims, keepdim, false); }
Tensor mean(const Tensor& x, const std::vector<std::int64_t>& dims, bool keepdim) { return reduce(x, dims, keepdim, true); }

Tensor reshape(const Tensor& x, const Shape& shape) {
  Shape in = x.shape();
  return view_op(x, x.reshape(shape), "ReshapeBackward", [in](const Tensor& g) { return g.reshape(in); });
}

Tensor transpose(const Tensor& x, std::int64_t d0, std::int64_t d1) {
  return view_op(x, x.transpose(d0, d1), "TransposeBackward", [d0, d1](const Tensor& g) { return g.transpose(d0, d1); });
}

Tensor permute(const Tensor& x, const Shape& dims) {
  Shape inverse(dims.size());
  for (std::size_t i = 0; i < dims.size(); ++i)
    inverse[static_cast<std::size_t>(dims[i] < 0 ? dims[i] + x.dim() : dims[i])] = static_cast<std::int64_t>(i);
  return view_op(x, x.permute(dims), "PermuteBackward", [inverse](const Tensor& g) { return g.permute(inverse); });
}

Tensor narrow(const Tensor& x, std::int64_t dim, std::int64_t start, std::int64_t length) {
  Shape in = x.shape();
  // out = x[.., start:start+length, ..]   =>   dx = zeros with dout written into that slice
  return view_op(x, x.narrow(dim, start, length), "NarrowBackward", [in, dim, start, length](const Tensor& g) {
    Tensor dx = Tensor::zeros(in, g.dtype(), g.device());
    Tensor slice = dx.narrow(dim, start, length);
    slice.copy_(g);
    return dx;
  });
}

Tensor contiguous(const Tensor& x) {
  if (x.is_contiguous()) return x;
  return view_op(x, x.contiguous(), "ContiguousBackward", [](const Tensor& g) { return g; });
}

Tensor to_dtype(const Tensor& x, DType dtype) {
  if (x.dtype() == dtype) return x;
  DType from = x.dtype();
  return view_op(x, x.to(dtype), "ToDTypeBackward", [from](const Tensor& g) { return g.to(from); });
}

}  // namespace minitorch::autograd

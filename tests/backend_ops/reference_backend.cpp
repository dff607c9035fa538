// The naive reference kernels (reference_backend.h): one loop per formula, in double.
#include "reference_backend.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "minitorch/dtype.h"

namespace backend_ops {

namespace {

// The element offsets of every element of t (row-major over its shape), walked through the strides.
std::vector<std::int64_t> element_offsets(const Tensor& t) {
  const Shape& shape = t.shape();
  const std::int64_t n = t.numel();
  std::vector<std::int64_t> out(static_cast<std::size_t>(n));
  Shape index(shape.size(), 0);
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t off = 0;
    for (std::size_t d = 0; d < shape.size(); ++d) off += index[d] * t.strides()[d];
    out[static_cast<std::size_t>(i)] = off;
    for (std::size_t d = shape.size(); d-- > 0;) {  // the odometer: the last dim moves fastest
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

double load(const Tensor& t, std::int64_t off) {
  switch (t.dtype()) {
    case DType::f32: return static_cast<const float*>(t.raw_data())[off];
    case DType::i32: return static_cast<const std::int32_t*>(t.raw_data())[off];
    default: return minitorch::half_to_f32(t.dtype(), static_cast<const std::uint16_t*>(t.raw_data())[off]);
  }
}

void store(const Tensor& t, std::int64_t off, double v) {
  switch (t.dtype()) {
    case DType::f32: static_cast<float*>(t.raw_data())[off] = static_cast<float>(v); break;
    case DType::i32: static_cast<std::int32_t*>(t.raw_data())[off] = static_cast<std::int32_t>(v); break;
    default:
      static_cast<std::uint16_t*>(t.raw_data())[off] = minitorch::f32_to_half(t.dtype(), static_cast<float>(v));
  }
}

// Writes values (row-major over t's shape) through t's strides.
void write(const Tensor& t, const std::vector<double>& values) {
  const auto offs = element_offsets(t);
  for (std::size_t i = 0; i < offs.size(); ++i) store(t, offs[i], values[i]);
}

std::vector<std::int32_t> read_ids(const Tensor& t) {
  std::vector<std::int32_t> out;
  for (double v : read(t)) out.push_back(static_cast<std::int32_t>(v));
  return out;
}

void check_id(const char* op, const char* what, std::int32_t id, std::size_t pos, std::int64_t V) {
  if (id < 0 || id >= V)
    throw std::invalid_argument(std::string(op) + ": " + what + " " + std::to_string(id) + " at " +
                                std::to_string(pos) + " is out of range [0, " + std::to_string(V) + ")");
}

// Softmax of one row of n values (scaled), in double.
std::vector<double> softmax_row(const double* x, std::int64_t n, double scale) {
  double mx = -std::numeric_limits<double>::infinity();
  for (std::int64_t j = 0; j < n; ++j) mx = std::max(mx, scale * x[j]);
  std::vector<double> y(static_cast<std::size_t>(n));
  double z = 0;
  for (std::int64_t j = 0; j < n; ++j) z += (y[j] = std::exp(scale * x[j] - mx));
  for (double& v : y) v /= z;
  return y;
}

constexpr double kGeluScale = 0.7978845608028654;  // sqrt(2 / pi)

}  // namespace

std::vector<double> read(const Tensor& t) {
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(t.numel()));
  if (t.numel() == 0) return out;
  for (std::int64_t off : element_offsets(t)) out.push_back(load(t, off));
  return out;
}

Tensor make(const std::vector<double>& values, const Shape& shape, DType dtype) {
  Tensor t = Tensor::empty(shape, dtype);
  if (t.numel()) write(t, values);
  return t;
}

void ReferenceBackend::copy_(Tensor& dst, const Tensor& src) { write(dst, read(src)); }

void ReferenceBackend::fill_(Tensor& t, float value) {
  write(t, std::vector<double>(static_cast<std::size_t>(t.numel()), value));
}

// out[i] = a[i'] op b[i''], where i' and i'' are i with the broadcast dims of a and b pinned to 0.
Tensor ReferenceBackend::binary(BinaryOp op, const Tensor& a, const Tensor& b, const Shape& out_shape) {
  const auto va = read(a), vb = read(b);
  const std::int64_t n = minitorch::shape_numel(out_shape), nd = static_cast<std::int64_t>(out_shape.size());
  auto source = [&](const Tensor& t, std::int64_t i) {  // row-major index into t of output element i
    std::int64_t idx = 0, mul = 1;
    for (std::int64_t d = nd - 1, dt = t.dim() - 1; d >= 0; --d, --dt) {
      const std::int64_t coord = i % out_shape[d];
      i /= out_shape[d];
      if (dt < 0) continue;
      if (t.shape()[dt] != 1) idx += coord * mul;
      mul *= t.shape()[dt];
    }
    return idx;
  };
  std::vector<double> out(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const double x = va[source(a, i)], y = vb[source(b, i)];
    out[i] = op == BinaryOp::add ? x + y : op == BinaryOp::sub ? x - y : op == BinaryOp::mul ? x * y : x / y;
  }
  return make(out, out_shape, a.dtype());
}

Tensor ReferenceBackend::unary(UnaryOp op, const Tensor& a, float p0, float p1) {
  auto v = read(a);
  for (double& x : v) {
    switch (op) {
      case UnaryOp::affine: x = x * p0 + p1; break;
      case UnaryOp::neg: x = -x; break;
      case UnaryOp::exp: x = std::exp(x); break;
      case UnaryOp::log: x = std::log(x); break;
      case UnaryOp::tanh: x = std::tanh(x); break;
      case UnaryOp::sqrt: x = std::sqrt(x); break;
      case UnaryOp::pow: x = std::pow(x, static_cast<double>(p0)); break;
    }
  }
  return make(v, a.shape(), a.dtype());
}

void ReferenceBackend::add_(Tensor& dst, const Tensor& src, float alpha) {
  auto d = read(dst);
  const auto s = read(src);
  for (std::size_t i = 0; i < d.size(); ++i) d[i] += alpha * s[i];
  write(dst, d);
}

void ReferenceBackend::scale_(Tensor& dst, float s) {
  auto d = read(dst);
  for (double& x : d) x *= s;
  write(dst, d);
}

// Each input element adds into the output element whose index is its own with the summed dims dropped
// (or set to 0 with keepdim).
Tensor ReferenceBackend::sum(const Tensor& x, const std::vector<std::int64_t>& dims, bool keepdim) {
  const Shape& s = x.shape();
  auto summed = [&](std::size_t d) { return std::find(dims.begin(), dims.end(), static_cast<std::int64_t>(d)) != dims.end(); };
  Shape out_shape, kept;  // kept: the output's shape with keepdim (1 where summed)
  for (std::size_t d = 0; d < s.size(); ++d) {
    kept.push_back(summed(d) ? 1 : s[d]);
    if (!summed(d) || keepdim) out_shape.push_back(kept.back());
  }
  std::vector<double> out(static_cast<std::size_t>(minitorch::shape_numel(out_shape)), 0.0);
  const auto v = read(x);
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    std::int64_t rest = i, o = 0, mul = 1;
    for (std::size_t d = s.size(); d-- > 0;) {
      const std::int64_t coord = rest % s[d];
      rest /= s[d];
      if (!summed(d)) o += coord * mul;
      mul *= kept[d];
    }
    out[o] += v[i];
  }
  return make(out, out_shape, x.dtype());
}

Tensor ReferenceBackend::max_last(const Tensor& x) {
  const auto v = read(x);
  const std::int64_t N = x.shape().back(), rows = x.numel() / N;
  std::vector<double> out(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r) out[r] = *std::max_element(v.begin() + r * N, v.begin() + (r + 1) * N);
  return make(out, Shape(x.shape().begin(), x.shape().end() - 1), x.dtype());
}

double ReferenceBackend::sum_squares(const Tensor& x) {
  double s = 0;
  for (double v : read(x)) s += v * v;
  return s;
}

// out[b, i, j] = sum_k A[b, i, k] * B[b, k, j], A = a or aᵀ, B = b or bᵀ (b 2-D: the same for every batch).
Tensor ReferenceBackend::matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  const std::int64_t ra = a.dim(), rb = b.dim();
  const std::int64_t M = trans_a ? a.shape()[ra - 1] : a.shape()[ra - 2], K = trans_a ? a.shape()[ra - 2] : a.shape()[ra - 1];
  const std::int64_t N = trans_b ? b.shape()[rb - 2] : b.shape()[rb - 1];
  const std::int64_t batches = a.numel() / (M * K);
  const bool shared_b = rb == 2;
  const auto va = read(a), vb = read(b);
  Shape out_shape(a.shape().begin(), a.shape().end() - 2);
  out_shape.push_back(M);
  out_shape.push_back(N);
  std::vector<double> out(static_cast<std::size_t>(batches * M * N));
  for (std::int64_t bt = 0; bt < batches; ++bt) {
    const double* A = va.data() + bt * M * K;
    const double* B = vb.data() + (shared_b ? 0 : bt * K * N);
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (std::int64_t k = 0; k < K; ++k)
          acc += (trans_a ? A[k * M + i] : A[i * K + k]) * (trans_b ? B[j * K + k] : B[k * N + j]);
        out[(bt * M + i) * N + j] = acc;
      }
  }
  return make(out, out_shape, a.dtype());
}

Tensor ReferenceBackend::softmax(const Tensor& x) {
  const auto v = read(x);
  const std::int64_t N = x.shape().back(), rows = N ? x.numel() / N : 0;
  std::vector<double> out;
  for (std::int64_t r = 0; r < rows; ++r) {
    const auto y = softmax_row(v.data() + r * N, N, 1.0);
    out.insert(out.end(), y.begin(), y.end());
  }
  return make(out, x.shape(), x.dtype());
}

// dx = y * (dy - sum(dy * y)) per row
Tensor ReferenceBackend::softmax_backward(const Tensor& y, const Tensor& dy) {
  const auto vy = read(y), vg = read(dy);
  const std::int64_t N = y.shape().back(), rows = N ? y.numel() / N : 0;
  std::vector<double> out(vy.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    double dot = 0;
    for (std::int64_t j = 0; j < N; ++j) dot += vg[r * N + j] * vy[r * N + j];
    for (std::int64_t j = 0; j < N; ++j) out[r * N + j] = vy[r * N + j] * (vg[r * N + j] - dot);
  }
  return make(out, y.shape(), dy.dtype());
}

// y[.., i, j] = softmax_j(scale * x[.., i, j]) over j <= i, 0 for j > i
Tensor ReferenceBackend::causal_softmax(const Tensor& x, float scale) {
  const auto v = read(x);
  const std::int64_t T = x.shape().back(), rows = x.numel() / T;
  std::vector<double> out(v.size(), 0.0);
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t i = r % T;
    const auto y = softmax_row(v.data() + r * T, i + 1, scale);
    std::copy(y.begin(), y.end(), out.begin() + r * T);
  }
  return make(out, x.shape(), x.dtype());
}

// dx = scale * y * (dy - sum_j(dy * y)), zero above the diagonal
Tensor ReferenceBackend::causal_softmax_backward(const Tensor& y, const Tensor& dy, float scale) {
  const auto vy = read(y), vg = read(dy);
  const std::int64_t T = y.shape().back(), rows = y.numel() / T;
  std::vector<double> out(vy.size(), 0.0);
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t i = r % T;
    double dot = 0;
    for (std::int64_t j = 0; j <= i; ++j) dot += vg[r * T + j] * vy[r * T + j];
    for (std::int64_t j = 0; j <= i; ++j) out[r * T + j] = scale * vy[r * T + j] * (vg[r * T + j] - dot);
  }
  return make(out, y.shape(), dy.dtype());
}

// mean = sum(x) / C; var = sum((x - mean)²) / C; rstd = 1 / sqrt(var + eps); y = (x - mean) * rstd * w + b
ops::LayerNormOut ReferenceBackend::layernorm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps) {
  const auto vx = read(x), w = read(weight), b = read(bias);
  const std::int64_t C = x.shape().back(), rows = C ? x.numel() / C : 0;
  std::vector<double> y(vx.size()), mean(static_cast<std::size_t>(rows)), rstd(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r) {
    double m = 0, var = 0;
    for (std::int64_t j = 0; j < C; ++j) m += vx[r * C + j];
    m /= static_cast<double>(C);
    for (std::int64_t j = 0; j < C; ++j) var += (vx[r * C + j] - m) * (vx[r * C + j] - m);
    const double s = 1.0 / std::sqrt(var / static_cast<double>(C) + eps);
    for (std::int64_t j = 0; j < C; ++j) y[r * C + j] = (vx[r * C + j] - m) * s * w[j] + b[j];
    mean[r] = m;
    rstd[r] = s;
  }
  const Shape rows_shape(x.shape().begin(), x.shape().end() - 1);
  return {make(y, x.shape(), x.dtype()), make(mean, rows_shape, DType::f32), make(rstd, rows_shape, DType::f32)};
}

// norm = (x - mean) * rstd; dnorm = dy * w; dx = rstd * (dnorm - mean(dnorm) - norm * mean(dnorm * norm));
// dw = sum_rows(dy * norm); db = sum_rows(dy)
ops::LayerNormGrads ReferenceBackend::layernorm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                                         const Tensor& mean, const Tensor& rstd) {
  const auto g = read(dy), vx = read(x), w = read(weight), m = read(mean), s = read(rstd);
  const std::int64_t C = x.shape().back(), rows = C ? x.numel() / C : 0;
  std::vector<double> dx(vx.size()), dw(static_cast<std::size_t>(C), 0.0), db(static_cast<std::size_t>(C), 0.0);
  for (std::int64_t r = 0; r < rows; ++r) {
    double mean_dn = 0, mean_dn_n = 0;
    for (std::int64_t j = 0; j < C; ++j) {
      const double norm = (vx[r * C + j] - m[r]) * s[r], dn = g[r * C + j] * w[j];
      mean_dn += dn / static_cast<double>(C);
      mean_dn_n += dn * norm / static_cast<double>(C);
      dw[j] += g[r * C + j] * norm;
      db[j] += g[r * C + j];
    }
    for (std::int64_t j = 0; j < C; ++j) {
      const double norm = (vx[r * C + j] - m[r]) * s[r], dn = g[r * C + j] * w[j];
      dx[r * C + j] = s[r] * (dn - mean_dn - norm * mean_dn_n);
    }
  }
  return {make(dx, x.shape(), dy.dtype()), make(dw, weight.shape(), weight.dtype()),
          make(db, weight.shape(), weight.dtype())};
}

// y = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x³)
Tensor ReferenceBackend::gelu(const Tensor& x) {
  auto v = read(x);
  for (double& a : v) a = 0.5 * a * (1 + std::tanh(kGeluScale * (a + 0.044715 * a * a * a)));
  return make(v, x.shape(), x.dtype());
}

// dx = dy * (0.5 (1 + tanh u) + 0.5 x (1 - tanh² u) sqrt(2/pi) (1 + 3 * 0.044715 x²))
Tensor ReferenceBackend::gelu_backward(const Tensor& x, const Tensor& dy) {
  const auto v = read(x), g = read(dy);
  std::vector<double> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double a = v[i], t = std::tanh(kGeluScale * (a + 0.044715 * a * a * a));
    out[i] = g[i] * (0.5 * (1 + t) + 0.5 * a * (1 - t * t) * kGeluScale * (1 + 3 * 0.044715 * a * a));
  }
  return make(out, x.shape(), dy.dtype());
}

// out[n, :] = weight[idx[n], :]
Tensor ReferenceBackend::embedding(const Tensor& weight, const Tensor& idx) {
  const auto w = read(weight);
  const auto ids = read_ids(idx);
  const std::int64_t V = weight.shape()[0], C = weight.shape()[1];
  std::vector<double> out;
  for (std::size_t n = 0; n < ids.size(); ++n) {
    check_id("embedding", "id", ids[n], n, V);
    out.insert(out.end(), w.begin() + ids[n] * C, w.begin() + (ids[n] + 1) * C);
  }
  Shape shape = idx.shape();
  shape.push_back(C);
  return make(out, shape, weight.dtype());
}

// dweight[v, :] = sum over n with idx[n] == v of dy[n, :]
Tensor ReferenceBackend::embedding_backward(const Tensor& dy, const Tensor& idx, std::int64_t V) {
  const auto g = read(dy);
  const auto ids = read_ids(idx);
  const std::int64_t C = dy.shape().back();
  std::vector<double> dw(static_cast<std::size_t>(V * C), 0.0);
  for (std::size_t n = 0; n < ids.size(); ++n) {
    check_id("embedding_backward", "id", ids[n], n, V);
    for (std::int64_t c = 0; c < C; ++c) dw[ids[n] * C + c] += g[n * C + c];
  }
  return make(dw, {V, C}, dy.dtype());
}

// loss = mean over counted rows of (logsumexp(x_r) - x[r, t_r]); probs = softmax(x) (every row)
ops::CrossEntropyOut ReferenceBackend::cross_entropy(const Tensor& logits, const Tensor& targets,
                                                     std::int32_t ignore_index) {
  const auto x = read(logits);
  const auto t = read_ids(targets);
  const std::int64_t N = logits.shape()[0], V = logits.shape()[1];
  std::vector<double> probs;
  double total = 0;
  std::int64_t count = 0;
  for (std::int64_t r = 0; r < N; ++r) {
    const auto p = softmax_row(x.data() + r * V, V, 1.0);
    probs.insert(probs.end(), p.begin(), p.end());
    if (t[r] == ignore_index) continue;
    check_id("cross_entropy", "target", t[r], static_cast<std::size_t>(r), V);
    total -= std::log(p[t[r]]);
    ++count;
  }
  ops::CrossEntropyOut out;
  out.loss = make({count ? total / static_cast<double>(count) : std::numeric_limits<double>::quiet_NaN()}, {},
                  DType::f32);
  out.probs = make(probs, {N, V}, DType::f32);
  out.count = count;
  return out;
}

// dx[r, :] = dloss * (probs[r, :] - onehot(t_r)) / count, 0 for ignored rows
Tensor ReferenceBackend::cross_entropy_backward(const Tensor& probs, const Tensor& targets, const Tensor& dloss,
                                                std::int64_t count, std::int32_t ignore_index) {
  const auto p = read(probs);
  const auto t = read_ids(targets);
  const double g = read(dloss)[0];
  const std::int64_t N = probs.shape()[0], V = probs.shape()[1];
  std::vector<double> dx(p.size(), 0.0);
  for (std::int64_t r = 0; r < N; ++r) {
    if (t[r] == ignore_index) continue;
    check_id("cross_entropy_backward", "target", t[r], static_cast<std::size_t>(r), V);
    if (count == 0) continue;
    for (std::int64_t j = 0; j < V; ++j)
      dx[r * V + j] = g * (p[r * V + j] - (j == t[r] ? 1.0 : 0.0)) / static_cast<double>(count);
  }
  return make(dx, {N, V}, DType::f32);
}

// m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g²;  p -= lr ((m / bc1) / (sqrt(v / bc2) + eps) + wd p)
void ReferenceBackend::adamw_step(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v,
                                  const ops::AdamWParams& hp) {
  auto p = read(param), vm = read(m), vv = read(v);
  const auto g = read(grad);
  const double bc1 = 1 - std::pow(static_cast<double>(hp.beta1), static_cast<double>(hp.step));
  const double bc2 = 1 - std::pow(static_cast<double>(hp.beta2), static_cast<double>(hp.step));
  for (std::size_t i = 0; i < p.size(); ++i) {
    vm[i] = hp.beta1 * vm[i] + (1 - static_cast<double>(hp.beta1)) * g[i];
    vv[i] = hp.beta2 * vv[i] + (1 - static_cast<double>(hp.beta2)) * g[i] * g[i];
    p[i] -= hp.lr * ((vm[i] / bc1) / (std::sqrt(vv[i] / bc2) + hp.eps) + hp.weight_decay * p[i]);
  }
  write(param, p);
  write(m, vm);
  write(v, vv);
}

}  // namespace backend_ops

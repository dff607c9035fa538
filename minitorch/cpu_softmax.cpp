// Softmax-family CPU kernels: softmax, causal (masked, scaled) softmax, cross-entropy, and their
// backwards. Every row subtracts its max before exp (stable) and sums in double.
#include "minitorch/cpu_eigen.h"
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "minitorch/cpu_backend.h"
#include "minitorch/cpu_util.h"
#include "minitorch/parallel.h"
#include "minitorch/not_implemented.h"

namespace minitorch::cpu {

namespace {
using ArrMap = Eigen::Map<Eigen::ArrayXf>;
using CArrMap = Eigen::Map<const Eigen::ArrayXf>;

// sum_j a[j] b[j] in double
double dot_double(const float* a, const float* b, std::int64_t n) {
  double acc = 0.0;
#pragma omp simd reduction(+ : acc)
  for (std::int64_t j = 0; j < n; ++j) acc += static_cast<double>(a[j]) * static_cast<double>(b[j]);
  return acc;
}

// y[j] = exp(scale x[j] - m) / sum_k exp(scale x[k] - m),  m = max_k scale x[k]     x, y: (n), n >= 1
// Returns log(sum_k exp(scale x[k])) (the log-sum-exp), which cross-entropy needs.
double softmax_row(const float* x, float* y, std::int64_t n, float scale) {
  // BEGIN SOLUTION L03.1
  CArrMap xr(x, n);
  ArrMap yr(y, n);
  const float m = scale >= 0.f ? scale * xr.maxCoeff() : scale * xr.minCoeff();
  yr = (xr * scale - m).exp();
  const double s = sum_double(y, n);
  yr *= static_cast<float>(1.0 / s);
  return static_cast<double>(m) + std::log(s);
  // END SOLUTION
}

// forward: y = softmax(scale x) over n entries  =>  dx = scale * y * (dy - sum_k dy[k] y[k])
//   y, dy, dx: (n)
void softmax_backward_row(const float* y, const float* dy, float* dx, std::int64_t n, float scale) {
  // BEGIN SOLUTION L03.2
  const float s = static_cast<float>(dot_double(dy, y, n));
  for (std::int64_t j = 0; j < n; ++j) dx[j] = scale * y[j] * (dy[j] - s);
  // END SOLUTION
}

}  // namespace

// x: (..., N) -> y: (..., N), dtype of x
Tensor CpuBackend::softmax(const Tensor& x) {
  Tensor xf = f32_contiguous(x);
  Tensor y = f32_empty(x.shape(), x.device());
  const std::int64_t N = x.shape().back(), rows = N ? x.numel() / N : 0;
  const float* in = cfp(xf);
  float* out = fp(y);
  parallel_for(rows, row_grain(N), [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) softmax_row(in + r * N, out + r * N, N, 1.f);
  });
  return f32_to(y, x.dtype());
}

// forward: y = softmax(x)  =>  dx = y * (dy - sum(dy * y))     y, dy: (..., N) -> dx: (..., N), dtype of dy
Tensor CpuBackend::softmax_backward(const Tensor& y, const Tensor& dy) {
  Tensor yf = f32_contiguous(y), gf = f32_contiguous(dy);
  Tensor dx = f32_empty(y.shape(), y.device());
  const std::int64_t N = y.shape().back(), rows = N ? y.numel() / N : 0;
  const float *py = cfp(yf), *pg = cfp(gf);
  float* pd = fp(dx);
  parallel_for(rows, row_grain(N), [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      softmax_backward_row(py + r * N, pg + r * N, pd + r * N, N, 1.f);
    }
  });
  return f32_to(dx, dy.dtype());
}

// x: (..., T, T) -> y: (..., T, T); row i: softmax over j <= i of scale * x, 0 for j > i
Tensor CpuBackend::causal_softmax(const Tensor& x, float scale) {
  Tensor xf = f32_contiguous(x);
  Tensor y = f32_empty(x.shape(), x.device());
  const std::int64_t T = x.shape().back(), rows = T ? x.numel() / T : 0;
  const float* in = cfp(xf);
  float* out = fp(y);
  parallel_for(rows, row_grain(T), [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::int64_t i = r % T;
      softmax_row(in + r * T, out + r * T, i + 1, scale);
      std::fill(out + r * T + i + 1, out + (r + 1) * T, 0.f);
    }
  });
  return f32_to(y, x.dtype());
}

// forward: y = softmax_j<=i(scale * x)  =>  dx = scale * y * (dy - sum_j<=i(dy * y)), 0 for j > i
Tensor CpuBackend::causal_softmax_backward(const Tensor& y, const Tensor& dy, float scale) {
  Tensor yf = f32_contiguous(y), gf = f32_contiguous(dy);
  Tensor dx = f32_empty(y.shape(), y.device());
  const std::int64_t T = y.shape().back(), rows = T ? y.numel() / T : 0;
  const float *py = cfp(yf), *pg = cfp(gf);
  float* pd = fp(dx);
  parallel_for(rows, row_grain(T), [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::int64_t n = r % T + 1;
      float* dr = pd + r * T;
      softmax_backward_row(py + r * T, pg + r * T, dr, n, scale);  // the masked entries j > i: 0
      std::fill(dr + n, dr + T, 0.f);
    }
  });
  return f32_to(dx, dy.dtype());
}

// logits: (N, V), targets: (N) i32  ->  probs (N, V) f32, loss = mean over counted rows of
// (logsumexp(logits[r]) - logits[r, targets[r]])
ops::CrossEntropyOut CpuBackend::cross_entropy(const Tensor& logits, const Tensor& targets, std::int32_t ignore_index) {
  const std::int64_t N = logits.shape()[0], V = logits.shape()[1];
  Tensor tc = targets.contiguous();
  const std::int32_t* tg = ip(tc);
  std::int64_t count = 0;
  for (std::int64_t r = 0; r < N; ++r) {
    if (tg[r] == ignore_index) continue;
    if (tg[r] < 0 || tg[r] >= V)
      throw std::invalid_argument("cross_entropy: target " + std::to_string(tg[r]) + " at row " + std::to_string(r) +
                                  " is out of range [0, " + std::to_string(V) + ") (ignore_index " +
                                  std::to_string(ignore_index) + ")");
    ++count;
  }
  Tensor xf = f32_contiguous(logits);
  Tensor probs = f32_empty({N, V}, logits.device());
  std::vector<double> row_loss(static_cast<std::size_t>(N), 0.0);
  const float* in = cfp(xf);
  float* pp = fp(probs);
  parallel_for(N, row_grain(V), [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      const double lse = softmax_row(in + r * V, pp + r * V, V, 1.f);
      if (tg[r] == ignore_index) continue;
      // BEGIN SOLUTION L03.3
      row_loss[r] = lse - static_cast<double>(in[r * V + tg[r]]);  // -log softmax(x)[t] = lse - x[t]
      // END SOLUTION
    }
  });
  double total = 0.0;
  for (double l : row_loss) total += l;  // fixed order: same result on any number of threads
  ops::CrossEntropyOut out;
  out.loss = Tensor::full({}, count ? static_cast<float>(total / static_cast<double>(count))
                                    : std::numeric_limits<float>::quiet_NaN(),  // PyTorch: mean of nothing is nan
                         DType::f32, logits.device());
  out.probs = probs;
  out.count = count;
  return out;
}

// forward: loss = mean_r (lse_r - x[r, t_r])  =>  dx[r, :] = dloss * (probs[r, :] - onehot(t_r)) / count
Tensor CpuBackend::cross_entropy_backward(const Tensor& probs, const Tensor& targets, const Tensor& dloss,
                                          std::int64_t count, std::int32_t ignore_index) {
  const std::int64_t N = probs.shape()[0], V = probs.shape()[1];
  Tensor pf = f32_contiguous(probs), tc = targets.contiguous();
  const float g = f32_contiguous(dloss).item();
  const float s = count > 0 ? g / static_cast<float>(count) : 0.f;
  Tensor dx = f32_empty({N, V}, probs.device());
  const float* pp = cfp(pf);
  const std::int32_t* tg = ip(tc);
  float* pd = fp(dx);
  for (std::int64_t r = 0; r < N; ++r)
    if (tg[r] != ignore_index && (tg[r] < 0 || tg[r] >= V))
      throw std::invalid_argument("cross_entropy_backward: target " + std::to_string(tg[r]) + " at row " +
                                  std::to_string(r) + " is out of range [0, " + std::to_string(V) + ")");
  parallel_for(N, row_grain(V), [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      float* dr = pd + r * V;
      if (tg[r] == ignore_index || count == 0) {
        std::fill(dr, dr + V, 0.f);
        continue;
      }
      const float* pr = pp + r * V;
      // BEGIN SOLUTION L03.3
      for (std::int64_t j = 0; j < V; ++j) dr[j] = s * pr[j];
      dr[tg[r]] = s * (pr[tg[r]] - 1.f);
      // END SOLUTION
    }
  });
  return dx;
}

}  // namespace minitorch::cpu

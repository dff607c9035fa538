// Reduction CPU kernels: sum over dims (with double accumulators), max over the last dim, sum of
// squares. Partial sums are taken over fixed blocks and added in a fixed order, so results do not
// depend on the number of threads.
#include "minitorch/cpu_eigen.h"
#include <algorithm>
#include <vector>

#include "minitorch/cpu_backend.h"
#include "minitorch/reduce_plan.h"
#include "minitorch/cpu_util.h"
#include "minitorch/parallel.h"

namespace minitorch::cpu {

namespace {
constexpr std::int64_t kBlock = 1 << 14;  // elements per partial sum of a long row
constexpr std::int64_t kCols = 256;       // columns per task in a column sum

// in: (O, R, I) contiguous f32  ->  out: (O, I), out[o, i] = sum_r in[o, r, i] (double accumulators)
void reduce_ori(const float* in, std::int64_t O, std::int64_t R, std::int64_t I, float* out) {
  if (I == 1) {  // row sums, long rows split into fixed blocks
    const std::int64_t nb = (R + kBlock - 1) / kBlock;
    std::vector<double> part(static_cast<std::size_t>(O * nb));
    parallel_for(O * nb, std::max<std::int64_t>(1, kGrainElems / std::min(R, kBlock)), [&](std::int64_t t0, std::int64_t t1) {
      for (std::int64_t t = t0; t < t1; ++t) {
        const std::int64_t o = t / nb, blk = t % nb, s = blk * kBlock, e = std::min(R, s + kBlock);
        part[t] = sum_double(in + o * R + s, e - s);
      }
    });
    for (std::int64_t o = 0; o < O; ++o) {
      double acc = 0.0;
      for (std::int64_t blk = 0; blk < nb; ++blk) acc += part[o * nb + blk];
      out[o] = static_cast<float>(acc);
    }
    return;
  }
  // column sums: one task per (o, block of kCols columns)
  const std::int64_t nc = (I + kCols - 1) / kCols;
  parallel_for(O * nc, std::max<std::int64_t>(1, kGrainElems / (R * std::min(I, kCols))), [&](std::int64_t t0, std::int64_t t1) {
    double acc[kCols];
    for (std::int64_t t = t0; t < t1; ++t) {
      const std::int64_t o = t / nc, c0 = (t % nc) * kCols, w = std::min(I, c0 + kCols) - c0;
      std::fill(acc, acc + w, 0.0);
      for (std::int64_t r = 0; r < R; ++r) {
        const float* row = in + (o * R + r) * I + c0;
        for (std::int64_t j = 0; j < w; ++j) acc[j] += static_cast<double>(row[j]);
      }
      for (std::int64_t j = 0; j < w; ++j) out[o * I + c0 + j] = static_cast<float>(acc[j]);
    }
  });
}
}  // namespace

// x: (d0, ..., dn) -> the dims in `dims` summed (removed, or kept as 1 with keepdim)
Tensor CpuBackend::sum(const Tensor& x, const std::vector<std::int64_t>& dims, bool keepdim) {
  const ReducePlan plan = plan_sum(x.shape(), dims, keepdim);
  if (x.numel() == 0) {
    Tensor z = f32_empty(plan.out_shape, x.device());
    std::fill(fp(z), fp(z) + z.numel(), 0.f);
    return f32_to(z, x.dtype());
  }
  Tensor cur = f32_contiguous(x);
  for (const auto& st : plan.steps) {  // (O, R, I) -> (O, I)
    Tensor next = f32_empty({st.outer * st.inner}, x.device());
    reduce_ori(cfp(cur), st.outer, st.reduced, st.inner, fp(next));
    cur = next;
  }
  Tensor out = plan.steps.empty() ? cur.clone().view(plan.out_shape) : cur.view(plan.out_shape);
  return f32_to(out, x.dtype());
}

// x: (..., N) -> (...)
Tensor CpuBackend::max_last(const Tensor& x) {
  Tensor xf = f32_contiguous(x);
  const std::int64_t N = x.shape().back(), rows = x.numel() / N;
  Shape out_shape(x.shape().begin(), x.shape().end() - 1);
  Tensor out = f32_empty(out_shape, x.device());
  const float* in = cfp(xf);
  float* o = fp(out);
  parallel_for(rows, std::max<std::int64_t>(1, kGrainElems / N), [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) o[r] = Eigen::Map<const Eigen::ArrayXf>(in + r * N, N).maxCoeff();
  });
  return f32_to(out, x.dtype());
}

// x: any shape -> sum of x² in double
double CpuBackend::sum_squares(const Tensor& x) {
  Tensor xf = f32_contiguous(x);
  const float* p = cfp(xf);
  const std::int64_t n = x.numel(), nb = (n + kBlock - 1) / kBlock;
  std::vector<double> part(static_cast<std::size_t>(nb));
  parallel_for(nb, 2, [&](std::int64_t b0, std::int64_t b1) {
    for (std::int64_t blk = b0; blk < b1; ++blk) {
      const std::int64_t s = blk * kBlock, e = std::min(n, s + kBlock);
      part[blk] = sum_double_map(p + s, e - s, [](double x) { return x * x; });
    }
  });
  double total = 0.0;
  for (double v : part) total += v;
  return total;
}

}  // namespace minitorch::cpu

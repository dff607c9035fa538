// Elementwise CUDA kernels: broadcasting binary ops, unary maps, in-place axpy and scale, GELU.
// One thread per output element in a grid-stride loop; memory-bound, so the "fast" tricks are the
// flat path when no operand broadcasts (no index arithmetic at all), 32-bit index arithmetic when the
// sizes allow (a 64-bit division is emulated in tens of instructions), and reading bf16 as it is
// (templates on the element types: no widened f32 copy of an input, no rounding pass for the output).
#include <cstdint>
#include <stdexcept>

#include "cuda/common.cuh"

namespace minitorch::cuda {

namespace {
constexpr int kMaxDims = 8;
/// Broadcast strides of a and b (0 where they broadcast) over the output shape.
struct Bcast {
  int nd = 0;
  std::int64_t shape[kMaxDims], sa[kMaxDims], sb[kMaxDims];
};

__device__ inline float apply(BinaryOp op, float x, float y) {
  switch (op) {
    case BinaryOp::add: return x + y;
    case BinaryOp::sub: return x - y;
    case BinaryOp::mul: return x * y;
    case BinaryOp::div: return x / y;
  }
  return 0.f;
}

// out[i] = a[i] op b[i]    a, b, out: (n) contiguous, f32 or bf16 each (no broadcast)
template <typename TA, typename TB, typename TO>
__global__ void binary_flat_kernel(BinaryOp op, const TA* a, const TB* b, TO* out, std::int64_t n) {
  for (std::int64_t i = gtid(); i < n; i += gstride()) store(out, i, apply(op, load(a, i), load(b, i)));
}

// out[i] = a[ia(i)] op b[ib(i)]    a, b: contiguous, broadcast through zero strides in B; Index: the
// integer type of the index arithmetic (int32 when every index fits).
template <typename Index, typename TA, typename TB, typename TO>
__global__ void binary_bcast_kernel(BinaryOp op, const TA* a, const TB* b, TO* out, std::int64_t n, Bcast B) {
  for (std::int64_t i = gtid(); i < n; i += gstride()) {
    Index rest = static_cast<Index>(i), ia = 0, ib = 0;
    for (int d = B.nd - 1; d >= 0; --d) {
      const Index size = static_cast<Index>(B.shape[d]);
      const Index k = rest % size;
      rest /= size;
      ia += k * static_cast<Index>(B.sa[d]);
      ib += k * static_cast<Index>(B.sb[d]);
    }
    store(out, i, apply(op, load(a, ia), load(b, ib)));
  }
}

template <typename T>
__global__ void unary_kernel(UnaryOp op, const T* x, T* y, std::int64_t n, float p0, float p1) {
  for (std::int64_t i = gtid(); i < n; i += gstride()) {
    const float v = load(x, i);
    float r = 0.f;
    switch (op) {
      case UnaryOp::affine: r = v * p0 + p1; break;
      case UnaryOp::neg: r = -v; break;
      case UnaryOp::exp: r = expf(v); break;
      case UnaryOp::log: r = logf(v); break;
      case UnaryOp::tanh: r = tanhf(v); break;
      case UnaryOp::sqrt: r = sqrtf(v); break;
      case UnaryOp::pow: r = p0 == 2.f ? v * v : (p0 == 1.f ? v : powf(v, p0)); break;
    }
    store(y, i, r);
  }
}

// dst[i] += alpha * src[i]   dst, src: f32 or bf16 each (widened, added, rounded back)
template <typename T, typename TS>
__global__ void axpy_kernel(T* dst, const TS* src, float alpha, std::int64_t n) {
  for (std::int64_t i = gtid(); i < n; i += gstride()) store(dst, i, load(dst, i) + alpha * load(src, i));
}
template <typename T>
__global__ void scale_kernel(T* dst, float s, std::int64_t n) {
  for (std::int64_t i = gtid(); i < n; i += gstride()) store(dst, i, load(dst, i) * s);
}

constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)

// y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x³)))
template <typename T>
__global__ void gelu_kernel(const T* x, T* y, std::int64_t n) {
  for (std::int64_t i = gtid(); i < n; i += gstride()) {
    const float v = load(x, i);
    store(y, i, 0.5f * v * (1.f + tanhf(kGeluScale * (v + 0.044715f * v * v * v))));
  }
}

// forward: y = 0.5 x (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x³)
//   dx = dy * (0.5 (1 + tanh u) + 0.5 x (1 - tanh² u) sqrt(2/pi) (1 + 3 * 0.044715 x²))
template <typename TX, typename TG>
__global__ void gelu_backward_kernel(const TX* x, const TG* dy, TG* dx, std::int64_t n) {
  for (std::int64_t i = gtid(); i < n; i += gstride()) {
    const float v = load(x, i);
    const float t = tanhf(kGeluScale * (v + 0.044715f * v * v * v));
    store(dx, i, load(dy, i) * (0.5f * (1.f + t) + 0.5f * v * (1.f - t * t) * kGeluScale * (1.f + 3.f * 0.044715f * v * v)));
  }
}

// Strides of a contiguous tensor of shape `s` as seen from a broadcast to `out` (right-aligned, 0 on
// new and size-1 dims).
void bcast_strides(const Shape& s, const Shape& out, std::int64_t* st) {
  const std::size_t lead = out.size() - s.size();
  std::int64_t acc = 1;
  for (std::size_t d = out.size(); d-- > 0;) {
    if (d < lead) { st[d] = 0; continue; }
    const std::int64_t n = s[d - lead];
    st[d] = n == 1 ? 0 : acc;
    acc *= n;
  }
}
}  // namespace

// a, b: broadcastable to out_shape (any view / dtype)  ->  out: (out_shape), dtype of a
Tensor CudaBackend::binary(BinaryOp op, const Tensor& a, const Tensor& b, const Shape& out_shape) {
  use_device(a);
  Tensor ar = readable(a), br = readable(b);
  // out in a's dtype when a is read as it is; else computed in f32 and rounded to a's dtype at the end
  Tensor out = Tensor::empty(out_shape, ar.dtype(), a.device());
  const std::int64_t n = out.numel();
  if (n == 0) return f32_to(out, a.dtype());
  const bool flat = a.numel() == n && b.numel() == n;
  Bcast B;
  if (!flat) {
    if (out_shape.size() > kMaxDims) throw std::invalid_argument("cuda binary: more than 8 dims");
    B.nd = static_cast<int>(out_shape.size());
    for (int d = 0; d < B.nd; ++d) B.shape[d] = out_shape[d];
    bcast_strides(a.shape(), out_shape, B.sa);
    bcast_strides(b.shape(), out_shape, B.sb);
  }
  const bool small = n <= INT32_MAX;  // every index and offset < n (contiguous operands, out of n elements)
  with_elems(ar, br, [&](auto ta, auto tb) {
    using TA = decltype(ta);
    using TB = decltype(tb);
    if (flat)
      binary_flat_kernel<<<grid_for(n), kThreads>>>(op, cptr<TA>(ar), cptr<TB>(br), ptr<TA>(out), n);
    else if (small)
      binary_bcast_kernel<std::int32_t><<<grid_for(n), kThreads>>>(op, cptr<TA>(ar), cptr<TB>(br), ptr<TA>(out), n, B);
    else
      binary_bcast_kernel<std::int64_t><<<grid_for(n), kThreads>>>(op, cptr<TA>(ar), cptr<TB>(br), ptr<TA>(out), n, B);
  });
  MT_CUDA_CHECK_LAUNCH();
  return f32_to(out, a.dtype());
}

// a: any shape  ->  out: same shape, dtype of a
Tensor CudaBackend::unary(UnaryOp op, const Tensor& a, float p0, float p1) {
  use_device(a);
  Tensor ar = readable(a);
  Tensor out = Tensor::empty(a.shape(), ar.dtype(), a.device());
  const std::int64_t n = a.numel();
  if (n) {
    with_elem(ar, [&](auto t) {
      using T = decltype(t);
      unary_kernel<<<grid_for(n), kThreads>>>(op, cptr<T>(ar), ptr<T>(out), n, p0, p1);
    });
    MT_CUDA_CHECK_LAUNCH();
  }
  return f32_to(out, a.dtype());
}

// dst += alpha * src     dst: contiguous f32/bf16, src: same shape, any view / dtype
void CudaBackend::add_(Tensor& dst, const Tensor& src, float alpha) {
  use_device(dst);
  Tensor sr = readable(src);
  const std::int64_t n = dst.numel();
  if (n == 0) return;
  with_elems(dst, sr, [&](auto td, auto ts) {
    using TD = decltype(td);
    using TS = decltype(ts);
    axpy_kernel<<<grid_for(n), kThreads>>>(ptr<TD>(dst), cptr<TS>(sr), alpha, n);
  });
  MT_CUDA_CHECK_LAUNCH();
}

// dst *= s     dst: contiguous f32/bf16
void CudaBackend::scale_(Tensor& dst, float s) {
  use_device(dst);
  const std::int64_t n = dst.numel();
  if (n == 0) return;
  if (dst.dtype() == DType::f32)
    scale_kernel<<<grid_for(n), kThreads>>>(fp(dst), s, n);
  else
    scale_kernel<<<grid_for(n), kThreads>>>(bp(dst), s, n);
  MT_CUDA_CHECK_LAUNCH();
}

// x: any shape -> y: same shape, dtype of x
Tensor CudaBackend::gelu(const Tensor& x) {
  use_device(x);
  Tensor xr = readable(x);
  Tensor y = Tensor::empty(x.shape(), xr.dtype(), x.device());
  const std::int64_t n = x.numel();
  if (n) {
    with_elem(xr, [&](auto t) {
      using T = decltype(t);
      gelu_kernel<<<grid_for(n), kThreads>>>(cptr<T>(xr), ptr<T>(y), n);
    });
    MT_CUDA_CHECK_LAUNCH();
  }
  return f32_to(y, x.dtype());
}

// x, dy: same shape -> dx: dtype of dy
Tensor CudaBackend::gelu_backward(const Tensor& x, const Tensor& dy) {
  use_device(x);
  Tensor xr = readable(x), gr = readable(dy);
  Tensor dx = Tensor::empty(x.shape(), gr.dtype(), x.device());
  const std::int64_t n = x.numel();
  if (n) {
    with_elems(xr, gr, [&](auto tx, auto tg) {
      using TX = decltype(tx);
      using TG = decltype(tg);
      gelu_backward_kernel<<<grid_for(n), kThreads>>>(cptr<TX>(xr), cptr<TG>(gr), ptr<TG>(dx), n);
    });
    MT_CUDA_CHECK_LAUNCH();
  }
  return f32_to(dx, dy.dtype());
}

}  // namespace minitorch::cuda

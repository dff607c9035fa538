// Elementwise CPU kernels: broadcasting binary ops, unary maps, in-place axpy and scale.
#include "minitorch/cpu_eigen.h"
#include <algorithm>
#include <cmath>

#include "minitorch/cpu_backend.h"
#include "minitorch/cpu_util.h"
#include "minitorch/parallel.h"

namespace minitorch::cpu {

namespace {
struct Add { float operator()(float x, float y) const { return x + y; } };
struct Sub { float operator()(float x, float y) const { return x - y; } };
struct Mul { float operator()(float x, float y) const { return x * y; } };
struct Div { float operator()(float x, float y) const { return x / y; } };

/// o[j] = f(a[j * sa], b[j * sb]) for j < n; the unit/zero-stride cases are plain loops the
/// compiler vectorises (same-shape, bias-add, scalar operands).
template <typename F>
inline void binary_row(F f, const float* a, std::int64_t sa, const float* b, std::int64_t sb, float* o,
                       std::int64_t n) {
  if (sa == 1 && sb == 1) {
    for (std::int64_t j = 0; j < n; ++j) o[j] = f(a[j], b[j]);
  } else if (sa == 1 && sb == 0) {
    const float bv = b[0];
    for (std::int64_t j = 0; j < n; ++j) o[j] = f(a[j], bv);
  } else if (sa == 0 && sb == 1) {
    const float av = a[0];
    for (std::int64_t j = 0; j < n; ++j) o[j] = f(av, b[j]);
  } else {
    for (std::int64_t j = 0; j < n; ++j) o[j] = f(a[j * sa], b[j * sb]);
  }
}

// a, b: f32 contiguous, broadcastable to out_shape;  out: (out_shape) f32
template <typename F>
void binary_kernel(F f, const Tensor& a, const Tensor& b, Tensor& out) {
  const Shape& shape = out.shape();
  const float *pa = cfp(a), *pb = cfp(b);
  float* po = fp(out);
  const std::int64_t n = out.numel();
  if (a.numel() == n && b.numel() == n) {  // same shape: one flat loop
    parallel_for(n, kGrainElems, [&](std::int64_t s, std::int64_t e) { binary_row(f, pa + s, 1, pb + s, 1, po + s, e - s); });
    return;
  }
  if (a.numel() == n && b.numel() == 1) {
    parallel_for(n, kGrainElems, [&](std::int64_t s, std::int64_t e) { binary_row(f, pa + s, 1, pb, 0, po + s, e - s); });
    return;
  }
  RowLayout L = make_row_layout(shape, {contiguous_strides(shape), broadcast_strides(a, shape), broadcast_strides(b, shape)});
  const std::int64_t grain = std::max<std::int64_t>(1, kGrainElems / std::max<std::int64_t>(L.inner, 1));
  parallel_for(L.rows, grain, [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r)
      binary_row(f, pa + L.row_offset(1, r), L.inner_stride[1], pb + L.row_offset(2, r), L.inner_stride[2],
                 po + L.row_offset(0, r), L.inner);
  });
}
}  // namespace

// a, b: broadcastable to out_shape (any view / dtype)  ->  out: (out_shape), dtype of a
Tensor CpuBackend::binary(BinaryOp op, const Tensor& a, const Tensor& b, const Shape& out_shape) {
  Tensor af = f32_contiguous(a), bf = f32_contiguous(b);
  Tensor out = f32_empty(out_shape, a.device());
  switch (op) {
    case BinaryOp::add: binary_kernel(Add{}, af, bf, out); break;
    case BinaryOp::sub: binary_kernel(Sub{}, af, bf, out); break;
    case BinaryOp::mul: binary_kernel(Mul{}, af, bf, out); break;
    case BinaryOp::div: binary_kernel(Div{}, af, bf, out); break;
  }
  return f32_to(out, a.dtype());
}

// a: any shape  ->  out: same shape, dtype of a. Eigen's array functions are vectorised (exp, log, tanh).
Tensor CpuBackend::unary(UnaryOp op, const Tensor& a, float p0, float p1) {
  Tensor af = f32_contiguous(a);
  Tensor out = f32_empty(a.shape(), a.device());
  const float* in = cfp(af);
  float* o = fp(out);
  parallel_for(a.numel(), kGrainElems, [&](std::int64_t s, std::int64_t e) {
    Eigen::Map<const Eigen::ArrayXf> x(in + s, e - s);
    Eigen::Map<Eigen::ArrayXf> y(o + s, e - s);
    switch (op) {
      case UnaryOp::affine: y = x * p0 + p1; break;
      case UnaryOp::neg: y = -x; break;
      case UnaryOp::exp: y = x.exp(); break;
      case UnaryOp::log: y = x.log(); break;
      case UnaryOp::tanh: y = x.tanh(); break;
      case UnaryOp::sqrt: y = x.sqrt(); break;
      case UnaryOp::pow:
        if (p0 == 2.f)
          y = x.square();
        else if (p0 == 1.f)
          y = x;
        else
          for (std::int64_t i = 0; i < e - s; ++i) y[i] = std::pow(x[i], p0);
        break;
    }
  });
  return f32_to(out, a.dtype());
}

// dst += alpha * src     dst: (shape) contiguous f32/bf16/f16, src: (shape) any view / dtype
void CpuBackend::add_(Tensor& dst, const Tensor& src, float alpha) {
  const std::int64_t n = dst.numel();
  if (dst.dtype() == DType::f32 && is_half(src.dtype()) && src.is_contiguous()) {  // bf16 / f16 grads into f32
    float* d = fp(dst);
    const auto* s = static_cast<const std::uint16_t*>(src.raw_data());
    const DType t = src.dtype();
    parallel_for(n, kGrainElems, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i) d[i] += alpha * half_to_f32(t, s[i]);
    });
    return;
  }
  Tensor sf = f32_contiguous(src);
  const float* s = cfp(sf);
  if (dst.dtype() == DType::f32) {
    float* d = fp(dst);
    parallel_for(n, kGrainElems, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i) d[i] += alpha * s[i];
    });
  } else {  // bf16 / f16 destination: widen, add, round back
    auto* d = static_cast<std::uint16_t*>(dst.raw_data());
    const DType t = dst.dtype();
    parallel_for(n, kGrainElems, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i) d[i] = f32_to_half(t, half_to_f32(t, d[i]) + alpha * s[i]);
    });
  }
}

// dst *= s     dst: contiguous f32/bf16/f16
void CpuBackend::scale_(Tensor& dst, float s) {
  const std::int64_t n = dst.numel();
  if (dst.dtype() == DType::f32) {
    float* d = fp(dst);
    parallel_for(n, kGrainElems, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i) d[i] *= s;
    });
  } else {
    auto* d = static_cast<std::uint16_t*>(dst.raw_data());
    const DType t = dst.dtype();
    parallel_for(n, kGrainElems, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i) d[i] = f32_to_half(t, half_to_f32(t, d[i]) * s);
    });
  }
}

}  // namespace minitorch::cpu

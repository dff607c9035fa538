#include "minitorch/cpu_util.h"

#include <algorithm>

#include "minitorch/parallel.h"
#include "minitorch/not_implemented.h"

namespace minitorch::cpu {

Tensor f32_empty(const Shape& shape, Device device) { return Tensor::empty(shape, DType::f32, device); }

void widen_bf16(const std::uint16_t* in, float* out, std::int64_t n) {
  parallel_for(n, kGrainElems, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) out[i] = bf16_to_f32(in[i]);
  });
}

void narrow_bf16(const float* in, std::uint16_t* out, std::int64_t n) {
  parallel_for(n, kGrainElems, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) out[i] = f32_to_bf16(in[i]);
  });
}

void widen_half(DType t, const std::uint16_t* in, float* out, std::int64_t n) {
  if (t == DType::bf16) return widen_bf16(in, out, n);
  parallel_for(n, kGrainElems, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) out[i] = f16_to_f32(in[i]);
  });
}

void narrow_half(DType t, const float* in, std::uint16_t* out, std::int64_t n) {
  if (t == DType::bf16) return narrow_bf16(in, out, n);
  parallel_for(n, kGrainElems, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) out[i] = f32_to_f16(in[i]);
  });
}

namespace {
template <typename T, typename Cvt>
void gather_rows(const Tensor& x, float* out, Cvt cvt) {
  RowLayout L = make_row_layout(x.shape(), {x.strides()});
  const T* base = static_cast<const T*>(x.raw_data());
  const std::int64_t n = L.inner, s = L.inner_stride[0];
  parallel_for(L.rows, std::max<std::int64_t>(1, kGrainElems / std::max<std::int64_t>(n, 1)),
               [&](std::int64_t r0, std::int64_t r1) {
                 for (std::int64_t r = r0; r < r1; ++r) {
                   const T* src = base + L.row_offset(0, r);
                   float* dst = out + r * n;
                   for (std::int64_t j = 0; j < n; ++j) dst[j] = cvt(src[j * s]);
                 }
               });
}
}  // namespace

void gather_f32(const Tensor& x, float* o) {
  if (x.numel() == 0) return;
  switch (x.dtype()) {
    case DType::bf16:
      if (x.is_contiguous())
        widen_bf16(static_cast<const std::uint16_t*>(x.raw_data()), o, x.numel());
      else
        gather_rows<std::uint16_t>(x, o, [](std::uint16_t h) { return bf16_to_f32(h); });
      break;
    case DType::f16:
      if (x.is_contiguous())
        widen_half(DType::f16, static_cast<const std::uint16_t*>(x.raw_data()), o, x.numel());
      else
        gather_rows<std::uint16_t>(x, o, [](std::uint16_t h) { return f16_to_f32(h); });
      break;
    case DType::f32:
      gather_rows<float>(x, o, [](float f) { return f; });
      break;
    case DType::i32:
      gather_rows<std::int32_t>(x, o, [](std::int32_t i) { return static_cast<float>(i); });
      break;
  }
}

Tensor f32_contiguous(const Tensor& x) {
  if (x.dtype() == DType::f32 && x.is_contiguous()) return x;
  Tensor out = f32_empty(x.shape(), x.device());
  gather_f32(x, fp(out));
  return out;
}

Tensor f32_to(const Tensor& t, DType dtype) {
  if (dtype == DType::f32) return t;
  Tensor out = Tensor::empty(t.shape(), dtype, t.device());
  if (is_half(dtype)) {
    narrow_half(dtype, cfp(t), static_cast<std::uint16_t*>(out.raw_data()), t.numel());
  } else {
    out.copy_(t);
  }
  return out;
}

// Row r of the outer (all-but-last) dims -> operand k's element offset: r's digits in the mixed radix of
// `outer` (last dim fastest), each times its stride. outer, outer_strides[k]: (D) -> offset
std::int64_t RowLayout::row_offset(std::size_t k, std::int64_t r) const {
  // BEGIN SOLUTION L01.3
  std::int64_t off = 0;
  const Shape& st = outer_strides[k];
  for (std::size_t d = outer.size(); d-- > 0;) {
    std::int64_t i = r % outer[d];
    r /= outer[d];
    off += i * st[d];
  }
  return off;
  // END SOLUTION
}

RowLayout make_row_layout(const Shape& shape, const std::vector<Shape>& strides) {
  const std::size_t K = strides.size();
  // Drop size-1 dims, then merge dim d into the previous kept one when every operand allows it.
  Shape sz;
  std::vector<Shape> st(K);
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = !sz.empty();
    for (std::size_t k = 0; k < K && merge; ++k) merge = st[k].back() == strides[k][d] * shape[d];
    if (merge) {
      sz.back() *= shape[d];
      for (std::size_t k = 0; k < K; ++k) st[k].back() = strides[k][d];
    } else {
      sz.push_back(shape[d]);
      for (std::size_t k = 0; k < K; ++k) st[k].push_back(strides[k][d]);
    }
  }
  RowLayout L;
  L.inner_stride.assign(K, 1);
  L.outer_strides.resize(K);
  if (shape_numel(shape) == 0) {
    L.inner = 0;
    L.rows = 0;
    return L;
  }
  if (!sz.empty()) {
    L.inner = sz.back();
    for (std::size_t k = 0; k < K; ++k) {
      L.inner_stride[k] = st[k].back();
      L.outer_strides[k].assign(st[k].begin(), st[k].end() - 1);
    }
    L.outer.assign(sz.begin(), sz.end() - 1);
  }
  L.rows = shape_numel(L.outer);
  return L;
}

Shape broadcast_strides(const Tensor& t, const Shape& shape) {
  Shape st(shape.size(), 0);
  const std::size_t lead = shape.size() - t.shape().size();
  for (std::size_t i = 0; i < t.shape().size(); ++i)
    if (t.shape()[i] != 1) st[lead + i] = t.strides()[i];
  return st;
}

}  // namespace minitorch::cpu

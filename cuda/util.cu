// Layout and dtype conversions on the device: the strided gather every kernel uses to make its
// inputs contiguous, f32 <-> bf16, fill, and the id range check for embedding and cross-entropy.
#include <climits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "cuda/allocator.h"
#include "cuda/common.cuh"
#include "minitorch/not_implemented.h"

namespace minitorch::cuda {

namespace {
constexpr int kMaxDims = 8;
/// A source view: element with row-major linear index i lives at sum_d idx_d(i) * stride[d].
struct Layout {
  int nd = 0;
  std::int64_t shape[kMaxDims];
  std::int64_t stride[kMaxDims];
};

// Merges neighbouring dims that are one run in memory ((a, b) with stride_a == b * stride_b) and
// drops size-1 dims: a transposed (B, T, H, D) view becomes 3 or 4 dims, a contiguous one 1.
Layout make_layout(const Tensor& t) {
  Layout L;
  for (std::int64_t d = 0; d < t.dim(); ++d) {
    const std::int64_t n = t.shape()[d], s = t.strides()[d];
    if (n == 1) continue;
    if (L.nd > 0 && L.stride[L.nd - 1] == n * s) {
      L.shape[L.nd - 1] *= n;
      L.stride[L.nd - 1] = s;
      continue;
    }
    if (L.nd == kMaxDims) throw std::invalid_argument("cuda: a view of " + t.describe() + " has more than 8 strided dims");
    L.shape[L.nd] = n;
    L.stride[L.nd] = s;
    ++L.nd;
  }
  return L;
}

template <typename T> __device__ inline float to_f(T v) { return static_cast<float>(v); }
template <> __device__ inline float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ inline T from_f(float v) { return static_cast<T>(v); }
template <> __device__ inline __nv_bfloat16 from_f(float v) { return __float2bfloat16_rn(v); }
template <typename Tin, typename Tout> __device__ inline Tout convert(Tin v) {
  if constexpr (std::is_same_v<Tin, Tout>) return v; else return from_f<Tout>(to_f(v));
}

// Whether every index and offset of the view fits 32-bit arithmetic (a 64-bit division is emulated in
// tens of instructions: the index math, not the memory, would bound a transposing copy).
bool fits_int32(const Layout& L, std::int64_t n) {
  std::int64_t last = 0;  // the largest offset (strides are non-negative)
  for (int d = 0; d < L.nd; ++d) last += (L.shape[d] - 1) * L.stride[d];
  return n <= INT_MAX && last <= INT_MAX;
}

// The element offset of the view's element with row-major index i, in Index arithmetic.
template <typename Index>
__device__ inline Index offset_of(Index i, const Layout& L) {
  Index off = 0;
  for (int d = L.nd - 1; d >= 0; --d) {
    const Index size = static_cast<Index>(L.shape[d]);
    off += (i % size) * static_cast<Index>(L.stride[d]);
    i /= size;
  }
  return off;
}

// out[i] = convert(in[offset(i)])   in: any view described by L, out: (n) contiguous
template <typename Index, typename Tin, typename Tout>
__global__ void gather_kernel(const Tin* in, Layout L, Tout* out, std::int64_t n) {
  for (std::int64_t i = gtid(); i < n; i += gstride())
    out[i] = convert<Tin, Tout>(in[offset_of<Index>(static_cast<Index>(i), L)]);
}

// out[offset(i)] = in[i]   in: (n) contiguous, out: any view described by L (a destination view: no
// element appears twice, so the writes never race)
template <typename Index, typename T>
__global__ void scatter_kernel(const T* in, Layout L, T* out, std::int64_t n) {
  for (std::int64_t i = gtid(); i < n; i += gstride()) out[offset_of<Index>(static_cast<Index>(i), L)] = in[i];
}

template <typename T>
__global__ void fill_kernel(T* out, std::int64_t n, T v) {
  for (std::int64_t i = gtid(); i < n; i += gstride()) out[i] = v;
}

// f16 tensors may travel to the device (Tensor::to copies bytes), but no kernel reads them yet.
void refuse_f16(const char* op, const Tensor& t) {
  if (t.dtype() == DType::f16)
    throw NotImplemented(std::string("CUDA ") + op + " of f16 " + t.describe() +
                         ": f16 kernels exist on the CPU only (use bf16 on the GPU)");
}

// Counts ids that are not ignored and keeps the first position of a bad one (atomicMin).
__global__ void check_ids_kernel(const std::int32_t* ids, std::int64_t n, std::int64_t V, bool has_ignore,
                                 std::int32_t ignore, unsigned long long* counted, long long* first_bad) {
  unsigned long long mine = 0;
  for (std::int64_t i = gtid(); i < n; i += gstride()) {
    const std::int32_t id = ids[i];
    if (has_ignore && id == ignore) continue;
    if (id < 0 || id >= V) atomicMin(first_bad, static_cast<long long>(i));
    ++mine;
  }
  if (mine) atomicAdd(counted, mine);
}

template <typename Tin, typename Tout>
void gather(const Tensor& src, void* dst) {
  const std::int64_t n = src.numel();
  if (n == 0) return;
  const Layout L = make_layout(src);
  if (fits_int32(L, n))
    gather_kernel<std::int32_t><<<grid_for(n), kThreads>>>(static_cast<const Tin*>(src.raw_data()), L,
                                                           static_cast<Tout*>(dst), n);
  else
    gather_kernel<std::int64_t><<<grid_for(n), kThreads>>>(static_cast<const Tin*>(src.raw_data()), L,
                                                           static_cast<Tout*>(dst), n);
  MT_CUDA_CHECK_LAUNCH();
}
}  // namespace

void use_device(const Tensor& t) { set_device(t.device().index); }

Tensor f32_empty(const Shape& shape, Device device) { return Tensor::empty(shape, DType::f32, device); }

void copy_into(Tensor& dst, const Tensor& src) {
  use_device(dst);
  refuse_f16("copy", src);
  refuse_f16("copy", dst);
  const DType di = src.dtype(), dout = dst.dtype();
  void* o = dst.raw_data();
  if (di == DType::i32 || dout == DType::i32) {
    if (di != dout) throw std::invalid_argument("cuda copy: " + src.describe() + " into " + dst.describe());
    gather<std::int32_t, std::int32_t>(src, o);
  } else if (di == DType::f32) {
    dout == DType::f32 ? gather<float, float>(src, o) : gather<float, __nv_bfloat16>(src, o);
  } else {
    dout == DType::f32 ? gather<__nv_bfloat16, float>(src, o) : gather<__nv_bfloat16, __nv_bfloat16>(src, o);
  }
}

Tensor f32_contiguous(const Tensor& x) {
  if (x.dtype() == DType::f32 && x.is_contiguous()) return x;
  Tensor out = f32_empty(x.shape(), x.device());
  copy_into(out, x);
  return out;
}

Tensor readable(const Tensor& x) {
  if ((x.dtype() == DType::f32 || x.dtype() == DType::bf16) && x.is_contiguous()) return x;
  return f32_contiguous(x);
}

Tensor contiguous(const Tensor& x) {
  if (x.is_contiguous()) return x;
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  copy_into(out, x);
  return out;
}

Tensor f32_to(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype) return t;
  Tensor out = Tensor::empty(t.shape(), dtype, t.device());
  copy_into(out, t);
  return out;
}

void fill(Tensor& dst, float value) {
  use_device(dst);
  const std::int64_t n = dst.numel();
  if (n == 0) return;
  switch (dst.dtype()) {
    case DType::f32: fill_kernel<<<grid_for(n), kThreads>>>(fp(dst), n, value); break;
    case DType::bf16: fill_kernel<<<grid_for(n), kThreads>>>(bp(dst), n, __float2bfloat16_rn(value)); break;
    case DType::i32:
      fill_kernel<<<grid_for(n), kThreads>>>(static_cast<std::int32_t*>(dst.raw_data()), n,
                                             static_cast<std::int32_t>(value));
      break;
    case DType::f16: refuse_f16("fill", dst);
  }
  MT_CUDA_CHECK_LAUNCH();
}

std::int64_t check_ids(const char* op, const char* what, const Tensor& ids, std::int64_t V, bool has_ignore,
                       std::int32_t ignore) {
  const std::int64_t n = ids.numel();
  if (n == 0) return 0;
  use_device(ids);
  struct Result { unsigned long long counted; long long first_bad; };
  Result host{0, LLONG_MAX};
  Result* dev = nullptr;
  // Two words of scratch through the caching allocator (no cudaMalloc in the steady state).
  void* raw = caching_allocator().allocate(sizeof(Result), ids.device().index);
  dev = static_cast<Result*>(raw);
  try {
    MT_CUDA_CHECK(cudaMemcpy(dev, &host, sizeof(Result), cudaMemcpyHostToDevice));
    check_ids_kernel<<<grid_for(n), kThreads>>>(cip(ids), n, V, has_ignore, ignore, &dev->counted, &dev->first_bad);
    MT_CUDA_CHECK_LAUNCH();
    MT_CUDA_CHECK(cudaMemcpy(&host, dev, sizeof(Result), cudaMemcpyDeviceToHost));
  } catch (...) {
    caching_allocator().deallocate(raw, sizeof(Result), ids.device().index);
    throw;
  }
  caching_allocator().deallocate(raw, sizeof(Result), ids.device().index);
  if (host.first_bad != LLONG_MAX) {
    std::int32_t bad = 0;
    MT_CUDA_CHECK(cudaMemcpy(&bad, cip(ids) + host.first_bad, sizeof(bad), cudaMemcpyDeviceToHost));
    const std::string where = std::string(what) == "id" ? " at position " : " at row ";
    throw std::invalid_argument(std::string(op) + ": " + what + " " + std::to_string(bad) + where +
                                std::to_string(host.first_bad) + " is out of range [0, " + std::to_string(V) + ")" +
                                (has_ignore ? " (ignore_index " + std::to_string(ignore) + ")" : ""));
  }
  return static_cast<std::int64_t>(host.counted);
}

// Tensor::copy_ / fill_ on the GPU. A strided destination (autograd's NarrowBackward writes a block of a
// larger gradient; a transposed view) is written in two passes: src gathered into a contiguous buffer of
// dst's dtype, then scattered through dst's strides.
void CudaBackend::copy_(Tensor& dst, const Tensor& src) {
  if (dst.is_contiguous()) return copy_into(dst, src);
  refuse_f16("copy", dst);
  Tensor packed = Tensor::empty(dst.shape(), dst.dtype(), dst.device());
  copy_into(packed, src);
  scatter(packed, dst);
}

void CudaBackend::fill_(Tensor& t, float value) {
  if (t.is_contiguous()) return fill(t, value);
  refuse_f16("fill", t);
  Tensor packed = Tensor::empty(t.shape(), t.dtype(), t.device());
  fill(packed, value);
  scatter(packed, t);
}

void scatter(const Tensor& packed, Tensor& dst) {
  use_device(dst);
  const std::int64_t n = dst.numel();
  if (n == 0) return;
  const Layout L = make_layout(dst);
  auto run = [&](auto index) {
    using Index = decltype(index);
    if (dtype_size(dst.dtype()) == 4)
      scatter_kernel<Index><<<grid_for(n), kThreads>>>(static_cast<const std::uint32_t*>(packed.raw_data()), L,
                                                       static_cast<std::uint32_t*>(dst.raw_data()), n);
    else
      scatter_kernel<Index><<<grid_for(n), kThreads>>>(static_cast<const std::uint16_t*>(packed.raw_data()), L,
                                                       static_cast<std::uint16_t*>(dst.raw_data()), n);
  };
  if (fits_int32(L, n)) run(std::int32_t{}); else run(std::int64_t{});
  MT_CUDA_CHECK_LAUNCH();
}

}  // namespace minitorch::cuda

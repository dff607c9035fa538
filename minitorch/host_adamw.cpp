// The host AdamW of ZeRO-Offload (host_adamw.h): one pass over the shard, vectorised and on all threads.
//
// Bit equality with the lab kernel (cpu_adamw.cpp) is the contract, and that kernel's bits come from
// two places besides its formula, both mirrored here:
//
// 1. Fused products. GCC's default -ffp-contract=fast turns `b1 * m + (1 - b1) * g` into
//    fma(1 - b1, g, b1 * m) where the CPU has FMA (objdump of cpu_adamw.cpp, scalar and vector code
//    alike: the second product is fused, the first rounded), and `p - lr * (u + wd * p)` into
//    fma(-lr, fma(wd, p, u), p). clang's default (-ffp-contract=on) fuses only within one C
//    expression, and Eigen's functors split these, so under clang (make sanitize) nothing is fused.
//    madd() below does what the compiler did, and this file is compiled with -ffp-contract=off
//    (CMakeLists.txt) so that nothing else is fused.
// 2. The sqrt. Where Eigen vectorises, its packet sqrt is rsqrt plus one Newton step (EIGEN_FAST_MATH),
//    which differs from the IEEE sqrt in the last bit for many inputs; its scalar prologue and tail
//    use the IEEE sqrt. Which elements are which follows from the lab kernel's loop: parallel_for's
//    split, chunks of 1024 from each thread's start, and in each chunk a scalar prologue up to the
//    first packet-aligned address of the param, whole packets, a scalar tail. run_like_lab() walks
//    the same regions and the vector body calls Eigen's own psqrt, so the bits match by construction.
#include "minitorch/host_adamw.h"

#include "minitorch/cpu_eigen.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "minitorch/cpu_util.h"
#include "minitorch/parallel.h"

#if defined(__AVX512F__) && defined(__FMA__)
#define MT_HOST_ADAMW_LANES 16
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define MT_HOST_ADAMW_LANES 8
#else
#define MT_HOST_ADAMW_LANES 0
#endif
#if MT_HOST_ADAMW_LANES
#include <immintrin.h>
#endif

// Eigen's packets are vector types with attributes (alignment), which a template argument drops:
// harmless here, where only their traits and Eigen's own functions see them.
#pragma GCC diagnostic ignored "-Wignored-attributes"

namespace minitorch {
namespace {

#if defined(__FMA__) && defined(__GNUC__) && !defined(__clang__)
constexpr bool kLabFuses = true;  // see 1. above
#else
constexpr bool kLabFuses = false;
#endif

// a * b + c, rounded as the lab kernel's compiled code rounds it (1. above).
inline float madd(float a, float b, float c) {
  if constexpr (kLabFuses) return std::fma(a, b, c);
  const float ab = a * b;
  return ab + c;
}

// Eigen's packet as the lab kernel's assignments use it: its lanes (1: Eigen does not vectorise the
// update, every element takes the scalar path) and the alignment its prologue reaches for.
using Packet = Eigen::internal::packet_traits<float>::type;
using EigenTraits = Eigen::internal::packet_traits<float>;
constexpr int kEigenLanes = (EigenTraits::Vectorizable != 0 && EigenTraits::HasSqrt != 0 && EigenTraits::HasDiv != 0)
                                ? Eigen::internal::unpacket_traits<Packet>::size
                                : 1;
constexpr int kEigenAlign = Eigen::internal::unpacket_traits<Packet>::alignment;
constexpr std::int64_t kLabChunk = 1024;  // cpu_adamw.cpp's kChunk
static_assert(MT_HOST_ADAMW_LANES == 0 || MT_HOST_ADAMW_LANES == kEigenLanes,
              "the vector path must use Eigen's packet width, or the sqrt regions differ from the lab kernel's");

enum class Copy { none, bf16, f16 };

// One step's arrays and constants (the lab kernel's, computed the same way). p, m, v: n f32; g: n
// elements of the gradient's dtype; c: null or n 16-bit elements. c1 = 1 - b1, c2 = 1 - b2, ibc1 and
// ibc2 the inverse bias corrections 1 / (1 - b^t).
struct Args {
  float* p;
  const void* g;
  float* m;
  float* v;
  std::uint16_t* c;
  float b1, b2, c1, c2, lr, eps, wd, ibc1, ibc2;
};

template <DType G>
inline float grad_at(const void* g, std::int64_t i) {
  if constexpr (G == DType::f32) return static_cast<const float*>(g)[i];
  else return half_to_f32(G, static_cast<const std::uint16_t*>(g)[i]);
}
template <Copy C>
inline void copy_at(std::uint16_t* c, std::int64_t i, float p) {
  if constexpr (C == Copy::bf16) c[i] = f32_to_bf16(p);
  if constexpr (C == Copy::f16) c[i] = f32_to_f16(p);
}
// The moments, then the parameter from sqrt(v-hat) `s`: the formula of host_adamw.h, in the lab's order.
inline void moments(float g, float& m, float& v, const Args& a) {
  m = madd(a.c1, g, a.b1 * m);
  v = madd(a.c2, g * g, a.b2 * v);
}
inline float param(float p, float m, float s, const Args& a) {
  const float u = (m * a.ibc1) / (s + a.eps);
  return madd(-a.lr, madd(a.wd, p, u), p);
}

// The naive scalar step of elements [i0, i1), IEEE sqrt: what Eigen's scalar prologue and tail compute.
template <DType G, Copy C>
void scalar_steps(const Args& a, std::int64_t i0, std::int64_t i1) {
  for (std::int64_t i = i0; i < i1; ++i) {
    moments(grad_at<G>(a.g, i), a.m[i], a.v[i], a);
    a.p[i] = param(a.p[i], a.m[i], std::sqrt(a.v[i] * a.ibc2), a);
    copy_at<C>(a.c, i, a.p[i]);
  }
}

// The portable body: scalar code, with Eigen's packet sqrt over each group of kEigenLanes (what the
// lab kernel's packets compute). [i0, i1) is a whole number of groups.
template <DType G, Copy C>
void portable_steps(const Args& a, std::int64_t i0, std::int64_t i1) {
  constexpr int L = kEigenLanes;
  if constexpr (L == 1) {
    scalar_steps<G, C>(a, i0, i1);
  } else {
    alignas(64) float vh[L], s[L];
    for (std::int64_t i = i0; i < i1; i += L) {
      for (int l = 0; l < L; ++l) {
        moments(grad_at<G>(a.g, i + l), a.m[i + l], a.v[i + l], a);
        vh[l] = a.v[i + l] * a.ibc2;
      }
      Eigen::internal::pstore(s, Eigen::internal::psqrt(Eigen::internal::pload<Packet>(vh)));
      for (int l = 0; l < L; ++l) {
        a.p[i + l] = param(a.p[i + l], a.m[i + l], s[l], a);
        copy_at<C>(a.c, i + l, a.p[i + l]);
      }
    }
  }
}

#if MT_HOST_ADAMW_LANES == 16
// AVX-512: 16 floats a register. f32 -> bf16 is integer arithmetic (the hardware's vcvtneps2bf16
// flushes denormals to zero, dtype.h's rounding does not); f32 <-> f16 is the hardware's, which rounds
// like dtype.h (the tests compare every edge).
struct Vec {
  using F = __m512;
  static F set1(float x) { return _mm512_set1_ps(x); }
  static F load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, F x) { _mm512_storeu_ps(p, x); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static F div(F a, F b) { return _mm512_div_ps(a, b); }
  static F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static F load_bf16(const std::uint16_t* p) {
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
  }
  static F load_f16(const std::uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static void store_bf16(std::uint16_t* p, F x) {
    const __m512i u = _mm512_castps_si512(x);
    const __m512i hi = _mm512_srli_epi32(u, 16);
    const __m512i bias = _mm512_add_epi32(_mm512_set1_epi32(0x7fff), _mm512_and_si512(hi, _mm512_set1_epi32(1)));
    const __m512i rne = _mm512_srli_epi32(_mm512_add_epi32(u, bias), 16);
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                  _mm512_set1_epi32(0x7f800000));
    const __m512i r = _mm512_mask_mov_epi32(rne, nan, _mm512_or_si512(hi, _mm512_set1_epi32(0x40)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(r));
  }
  static void store_f16(std::uint16_t* p, F x) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
};
#elif MT_HOST_ADAMW_LANES == 8
// AVX2 + FMA + F16C: 8 floats a register, the same operations.
struct Vec {
  using F = __m256;
  static F set1(float x) { return _mm256_set1_ps(x); }
  static F load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, F x) { _mm256_storeu_ps(p, x); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static F div(F a, F b) { return _mm256_div_ps(a, b); }
  static F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static F load_bf16(const std::uint16_t* p) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
  }
  static F load_f16(const std::uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static void store_bf16(std::uint16_t* p, F x) {
    const __m256i u = _mm256_castps_si256(x);
    const __m256i hi = _mm256_srli_epi32(u, 16);
    const __m256i bias = _mm256_add_epi32(_mm256_set1_epi32(0x7fff), _mm256_and_si256(hi, _mm256_set1_epi32(1)));
    const __m256i rne = _mm256_srli_epi32(_mm256_add_epi32(u, bias), 16);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
    const __m256i r = _mm256_blendv_epi8(rne, _mm256_or_si256(hi, _mm256_set1_epi32(0x40)), nan);
    // Each 32-bit lane holds a value below 2^16: packus keeps it exactly.
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1)));
  }
  static void store_f16(std::uint16_t* p, F x) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
  }
};
#endif

#if MT_HOST_ADAMW_LANES
// The vector body: the same operations as moments() and param(), a register of elements at a time,
// the sqrt Eigen's (2. above). [i0, i1) is a whole number of registers.
template <DType G, Copy C>
void vector_steps(const Args& a, std::int64_t i0, std::int64_t i1) {
  using F = Vec::F;
  constexpr int L = MT_HOST_ADAMW_LANES;
  const F b1 = Vec::set1(a.b1), b2 = Vec::set1(a.b2), c1 = Vec::set1(a.c1), c2 = Vec::set1(a.c2);
  const F neg_lr = Vec::set1(-a.lr), eps = Vec::set1(a.eps), wd = Vec::set1(a.wd);
  const F ibc1 = Vec::set1(a.ibc1), ibc2 = Vec::set1(a.ibc2);
  auto vmadd = [](F x, F y, F z) {
    if constexpr (kLabFuses) return Vec::fma(x, y, z);
    else return Vec::add(Vec::mul(x, y), z);
  };
  for (std::int64_t i = i0; i < i1; i += L) {
    F g;
    if constexpr (G == DType::f32) g = Vec::load(static_cast<const float*>(a.g) + i);
    if constexpr (G == DType::bf16) g = Vec::load_bf16(static_cast<const std::uint16_t*>(a.g) + i);
    if constexpr (G == DType::f16) g = Vec::load_f16(static_cast<const std::uint16_t*>(a.g) + i);
    const F m = vmadd(c1, g, Vec::mul(b1, Vec::load(a.m + i)));
    const F v = vmadd(c2, Vec::mul(g, g), Vec::mul(b2, Vec::load(a.v + i)));
    const F s = Eigen::internal::psqrt(Vec::mul(v, ibc2));
    const F u = Vec::div(Vec::mul(m, ibc1), Vec::add(s, eps));
    const F p0 = Vec::load(a.p + i);
    const F p = vmadd(neg_lr, vmadd(wd, p0, u), p0);
    Vec::store(a.m + i, m);
    Vec::store(a.v + i, v);
    Vec::store(a.p + i, p);
    if constexpr (C == Copy::bf16) Vec::store_bf16(a.c + i, p);
    if constexpr (C == Copy::f16) Vec::store_f16(a.c + i, p);
  }
}
#endif

// The lab kernel's regions (2. above): per thread range, chunks of kLabChunk; per chunk the scalar
// prologue up to Eigen's first aligned param address, whole packets `body`, the scalar tail.
template <DType G, Copy C, class Body>
void run_like_lab(const Args& a, std::int64_t n, Body body) {
  parallel_for(n, cpu::kGrainElems, [&](std::int64_t s, std::int64_t e) {
    for (std::int64_t c0 = s; c0 < e; c0 += kLabChunk) {
      const std::int64_t len = std::min(kLabChunk, e - c0);
      const std::int64_t head = kEigenLanes == 1 ? len : Eigen::internal::first_aligned<kEigenAlign>(a.p + c0, len);
      const std::int64_t body_end = head + (len - head) / kEigenLanes * kEigenLanes;
      scalar_steps<G, C>(a, c0, c0 + head);
      body(a, c0 + head, c0 + body_end);
      scalar_steps<G, C>(a, c0 + body_end, c0 + len);
    }
  });
}

[[noreturn]] void fail(const std::string& what) { throw std::invalid_argument("host_adamw_step: " + what); }

Args make_args(float* master, const void* grad, DType gt, float* m, float* v, std::int64_t n,
               const ops::AdamWParams& hp, std::uint16_t* copy16, DType ct) {
  if (gt != DType::f32 && !is_half(gt)) fail(std::string("grad must be f32, bf16 or f16, got ") + dtype_name(gt));
  if (copy16 && !is_half(ct)) fail(std::string("the copy must be bf16 or f16, got ") + dtype_name(ct));
  if (n < 0) fail("n must be >= 0, got " + std::to_string(n));
  if (n > 0 && (!master || !grad || !m || !v)) fail("master, grad, m and v must not be null");
  if (hp.step < 1) fail("step counts from 1, got " + std::to_string(hp.step));
  const float b1 = hp.beta1, b2 = hp.beta2;
  const float ibc1 = static_cast<float>(1.0 / (1.0 - std::pow(static_cast<double>(b1), static_cast<double>(hp.step))));
  const float ibc2 = static_cast<float>(1.0 / (1.0 - std::pow(static_cast<double>(b2), static_cast<double>(hp.step))));
  return {master, grad, m, v, copy16, b1, b2, 1.f - b1, 1.f - b2, hp.lr, hp.eps, hp.weight_decay, ibc1, ibc2};
}

// Calls f(G, C) with the gradient's dtype and the copy's kind as compile-time constants.
template <class F>
void with_kinds(DType gt, const std::uint16_t* copy16, DType ct, F&& f) {
  auto on_copy = [&](auto g) {
    if (!copy16) f(g, std::integral_constant<Copy, Copy::none>{});
    else if (ct == DType::bf16) f(g, std::integral_constant<Copy, Copy::bf16>{});
    else f(g, std::integral_constant<Copy, Copy::f16>{});
  };
  if (gt == DType::f32) on_copy(std::integral_constant<DType, DType::f32>{});
  else if (gt == DType::bf16) on_copy(std::integral_constant<DType, DType::bf16>{});
  else on_copy(std::integral_constant<DType, DType::f16>{});
}

}  // namespace

void host_adamw_step(float* master, const void* grad, DType grad_dtype, float* m, float* v, std::int64_t n,
                     const ops::AdamWParams& hp, std::uint16_t* copy16, DType copy_dtype) {
#if MT_HOST_ADAMW_LANES
  const Args a = make_args(master, grad, grad_dtype, m, v, n, hp, copy16, copy_dtype);
  with_kinds(grad_dtype, copy16, copy_dtype, [&](auto g, auto c) {
    constexpr DType G = decltype(g)::value;
    constexpr Copy C = decltype(c)::value;
    run_like_lab<G, C>(a, n, vector_steps<G, C>);
  });
#else
  host_adamw_step_portable(master, grad, grad_dtype, m, v, n, hp, copy16, copy_dtype);
#endif
}

void host_adamw_step_portable(float* master, const void* grad, DType grad_dtype, float* m, float* v, std::int64_t n,
                              const ops::AdamWParams& hp, std::uint16_t* copy16, DType copy_dtype) {
  const Args a = make_args(master, grad, grad_dtype, m, v, n, hp, copy16, copy_dtype);
  with_kinds(grad_dtype, copy16, copy_dtype, [&](auto g, auto c) {
    constexpr DType G = decltype(g)::value;
    constexpr Copy C = decltype(c)::value;
    run_like_lab<G, C>(a, n, portable_steps<G, C>);
  });
}

int host_adamw_vector_lanes() { return MT_HOST_ADAMW_LANES; }

void host_adamw_step(Tensor& master, const Tensor& grad, Tensor& m, Tensor& v, const ops::AdamWParams& hp,
                     Tensor* copy16) {
  const std::int64_t n = master.numel();
  auto need = [&](const Tensor& t, const char* name, bool dtype_ok, const char* dtypes) {
    if (!t.defined()) fail(std::string(name) + " is undefined");
    if (!t.device().is_cpu() || !t.is_contiguous() || !dtype_ok || t.numel() != n)
      fail(std::string(name) + " must be a contiguous " + dtypes + " CPU tensor of " + std::to_string(n) +
           " elements (master's), got " + t.describe());
  };
  need(master, "master", master.dtype() == DType::f32, "f32");
  need(m, "m", m.dtype() == DType::f32, "f32");
  need(v, "v", v.dtype() == DType::f32, "f32");
  need(grad, "grad", grad.dtype() == DType::f32 || is_half(grad.dtype()), "f32, bf16 or f16");
  if (copy16) need(*copy16, "copy16", is_half(copy16->dtype()), "bf16 or f16");
  host_adamw_step(static_cast<float*>(master.raw_data()), grad.raw_data(), grad.dtype(),
                  static_cast<float*>(m.raw_data()), static_cast<float*>(v.raw_data()), n, hp,
                  copy16 ? static_cast<std::uint16_t*>(copy16->raw_data()) : nullptr,
                  copy16 ? copy16->dtype() : DType::bf16);
}

}  // namespace minitorch

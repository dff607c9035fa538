// The host AdamW of ZeRO-Offload (minitorch/host_adamw.h) against the lab kernel, ops::adamw_step: bit for
// bit over sizes that leave tails and split across threads, masters at addresses that are not 64-byte
// aligned, several steps, with and without weight decay; the 16-bit copy against Tensor::to's rounding
// over edge values; the portable path against the vector path.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>

#include "minitorch/host_adamw.h"
#include "test_ops_util.h"

using namespace ops_test;
using minitorch::host_adamw_step;
using minitorch::host_adamw_step_portable;

namespace {

std::uint32_t bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
float from_bits(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

// Bit for bit, except that any two NaNs are equal (the payload an FMA passes on depends on its operand order).
::testing::AssertionResult same_bits(const float* got, const float* want, std::int64_t n, const char* what) {
  std::int64_t bad = 0, first = -1;
  for (std::int64_t i = 0; i < n; ++i)
    if (bits(got[i]) != bits(want[i]) && !(std::isnan(got[i]) && std::isnan(want[i]))) {
      if (first < 0) first = i;
      ++bad;
    }
  if (!bad) return ::testing::AssertionSuccess();
  char buf[160];
  std::snprintf(buf, sizeof buf, "[%lld] %.9g (0x%08x) vs %.9g (0x%08x)", static_cast<long long>(first), got[first],
                bits(got[first]), want[first], bits(want[first]));
  return ::testing::AssertionFailure() << what << ": " << bad << " of " << n << " elements differ, first " << buf;
}

// Gradients over many magnitudes (so that v spans many binades and the sqrt sees every kind of input).
std::vector<float> wide_values(std::int64_t n, Generator& g) {
  std::vector<float> x(n);
  for (auto& e : x) e = g.next_normal() * std::ldexp(1.f, static_cast<int>(g.next_below(24)) - 12);
  return x;
}

// The same n elements as a (n) view at element `off` of a fresh 64-byte aligned buffer: the lab kernel and
// the host step must see masters at the same address modulo 64 bytes.
Tensor at_offset(const std::vector<float>& x, std::int64_t off) {
  Tensor base = Tensor::zeros({static_cast<std::int64_t>(x.size()) + off});
  if (!x.empty()) std::memcpy(static_cast<float*>(base.raw_data()) + off, x.data(), x.size() * 4);
  return base.narrow(0, off, static_cast<std::int64_t>(x.size()));
}
float* f(const Tensor& t) { return static_cast<float*>(t.raw_data()); }

// Runs `steps` steps of the lab kernel and of host_adamw_step on the same inputs; expects the same bits.
void expect_lab_bits(std::int64_t n, std::int64_t off, int threads, DType grad_dtype, float wd, int steps,
                     std::uint64_t seed) {
  SCOPED_TRACE("n " + std::to_string(n) + ", offset " + std::to_string(off) + ", threads " +
               std::to_string(threads) + ", grad " + minitorch::dtype_name(grad_dtype) + ", wd " + std::to_string(wd));
  Threads t(threads);
  Generator g(seed);
  const auto p0 = wide_values(n, g);
  Tensor lp = at_offset(p0, off), lm = at_offset(std::vector<float>(n), off), lv = at_offset(std::vector<float>(n), off);
  Tensor hp = at_offset(p0, off), hm = at_offset(std::vector<float>(n), off), hv = at_offset(std::vector<float>(n), off);
  for (int s = 1; s <= steps; ++s) {
    Tensor grad = Tensor::from_vector(wide_values(n, g), {n}).to(grad_dtype);
    const ops::AdamWParams hps{1e-2f, 0.9f, 0.95f, 1e-8f, wd, s};
    ops::adamw_step(lp, grad, lm, lv, hps);
    host_adamw_step(f(hp), grad.raw_data(), grad_dtype, f(hm), f(hv), n, hps);
  }
  EXPECT_TRUE(same_bits(f(hp), f(lp), n, "master"));
  EXPECT_TRUE(same_bits(f(hm), f(lm), n, "m"));
  EXPECT_TRUE(same_bits(f(hv), f(lv), n, "v"));
}

// Every edge of the 16-bit roundings: zeros, f32 denormals, bf16 and f16 ties (to even, both ways), the
// largest finite values and the first that round to inf, inf, quiet and signalling NaNs with payloads.
std::vector<float> edge_values() {
  const std::uint32_t u[] = {
      0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x00008000, 0x00018000, 0x007fffff, 0x00800000,
      0x3f800000, 0x3f808000, 0x3f818000, 0x3f808001, 0x3f80ffff, 0xbf808000, 0x7f7f8000, 0x7f7f7fff,
      0x7f7fffff, 0xff7fffff, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7f800001, 0xff800001,
      0x7fa00000, 0x7fbfffff, 0x7fc0abcd, 0x477fe000, 0x477fefff, 0x477ff000, 0x477fffff, 0x47800000,
      0x33000000, 0x33000001, 0x33800000, 0x33c00000, 0x38800000, 0x387fc000, 0x387fe000, 0x3f801000,
      0x3f803000, 0x3f802fff, 0x3f803001, 0x3a800000, 0x3a801000, 0xb3400000, 0xc77ff000, 0x38000000};
  std::vector<float> x;
  for (std::uint32_t b : u) x.push_back(from_bits(b));
  for (std::uint32_t i = 0; i < (1u << 18); ++i) x.push_back(from_bits(i * 16411u));  // every exponent, sparsely
  return x;
}

}  // namespace

TEST(L10_HostAdamW, F32MatchesLabKernelBitForBit) {
  std::uint64_t seed = 1000;
  for (std::int64_t n : {0, 1, 7, 33, (1 << 16) + 5})
    for (std::int64_t off : {0, 3})
      for (int threads : {1, 2, 3})
        for (float wd : {0.f, 0.1f}) expect_lab_bits(n, off, threads, DType::f32, wd, 3, ++seed);
}

TEST(L10_HostAdamW, HalfGradsMatchLabKernelBitForBit) {
  for (DType gt : {DType::bf16, DType::f16})
    for (std::int64_t off : {0, 5}) expect_lab_bits((1 << 16) + 5, off, 2, gt, 0.1f, 2, 77);
  // Every 16-bit pattern as a gradient (subnormals, infinities and NaNs of both types included).
  const std::int64_t n = 1 << 16;
  for (DType gt : {DType::bf16, DType::f16}) {
    Tensor grad = Tensor::zeros({n}, gt);
    for (std::int64_t i = 0; i < n; ++i) static_cast<std::uint16_t*>(grad.raw_data())[i] = static_cast<std::uint16_t>(i);
    Generator g(3);
    const auto p0 = wide_values(n, g);
    Tensor lp = at_offset(p0, 1), lm = Tensor::zeros({n}), lv = Tensor::zeros({n});
    Tensor hp = at_offset(p0, 1), hm = Tensor::zeros({n}), hv = Tensor::zeros({n});
    const ops::AdamWParams hps{1e-3f, 0.9f, 0.999f, 1e-8f, 0.1f, 1};
    ops::adamw_step(lp, grad, lm, lv, hps);
    host_adamw_step(hp, grad, hm, hv, hps);
    EXPECT_TRUE(same_bits(f(hp), f(lp), n, "master")) << minitorch::dtype_name(gt);
    EXPECT_TRUE(same_bits(f(hm), f(lm), n, "m")) << minitorch::dtype_name(gt);
    EXPECT_TRUE(same_bits(f(hv), f(lv), n, "v")) << minitorch::dtype_name(gt);
  }
}

TEST(L10_HostAdamW, NonFiniteGradsPropagateLikeLabKernel) {
  // inf and NaN gradients (an fp16 overflow the loss scaler has not caught yet) make NaN where the lab's do.
  const std::int64_t n = 1000;
  Generator g(5);
  std::vector<float> gv = wide_values(n, g);
  for (std::int64_t i = 0; i < n; i += 37) gv[i] = i % 2 ? std::numeric_limits<float>::infinity() : std::nanf("");
  const auto p0 = wide_values(n, g);
  Tensor lp = at_offset(p0, 1), lm = Tensor::zeros({n}), lv = Tensor::zeros({n});
  Tensor hp = at_offset(p0, 1), hm = Tensor::zeros({n}), hv = Tensor::zeros({n});
  Tensor grad = Tensor::from_vector(gv, {n});
  const ops::AdamWParams hps{1e-3f, 0.9f, 0.999f, 1e-8f, 0.1f, 1};
  ops::adamw_step(lp, grad, lm, lv, hps);
  host_adamw_step(hp, grad, hm, hv, hps);
  EXPECT_TRUE(same_bits(f(hp), f(lp), n, "master"));
  EXPECT_TRUE(same_bits(f(hm), f(lm), n, "m"));
  EXPECT_TRUE(same_bits(f(hv), f(lv), n, "v"));
}

TEST(L10_HostAdamW, CopyIsMasterRoundedLikeTensorTo) {
  // lr = 0, wd = 0, grad = 0: every finite master stays what it was, so the copy sees every edge value.
  const auto x = edge_values();
  const std::int64_t n = static_cast<std::int64_t>(x.size());
  for (DType ct : {DType::bf16, DType::f16})
    for (int threads : {1, 2}) {
      SCOPED_TRACE(std::string(minitorch::dtype_name(ct)) + ", threads " + std::to_string(threads));
      Threads t(threads);
      Tensor p = at_offset(x, 3), m = Tensor::zeros({n}), v = Tensor::zeros({n}), grad = Tensor::zeros({n});
      Tensor copy = Tensor::zeros({n}, ct);
      host_adamw_step(p, grad, m, v, {0.f, 0.9f, 0.999f, 1e-8f, 0.f, 1}, &copy);
      const Tensor want = p.to(ct);
      const auto* got = static_cast<const std::uint16_t*>(copy.raw_data());
      const auto* ref = static_cast<const std::uint16_t*>(want.raw_data());
      std::int64_t bad = 0, moved = 0, nan = 0, inf = 0, tiny = 0;
      for (std::int64_t i = 0; i < n; ++i) {
        const float pi = f(p)[i];
        if (got[i] != ref[i] && bad++ < 5)
          ADD_FAILURE() << "[" << i << "] master 0x" << std::hex << bits(pi) << ": copy 0x" << got[i] << ", Tensor::to 0x"
                        << ref[i];
        moved += std::isfinite(x[i]) && bits(pi) != bits(x[i]);
        nan += std::isnan(pi);
        const float back = minitorch::half_to_f32(ct, got[i]);
        inf += std::isinf(back);
        tiny += back != 0 && std::fabs(back) < (ct == DType::bf16 ? 1.1754944e-38f : 6.1035156e-5f);
      }
      EXPECT_EQ(bad, 0);
      // The edges really were there: finite masters unchanged, NaNs, infinities and subnormal copies.
      EXPECT_EQ(moved, 0) << "a finite master changed: the copy did not see the edge values";
      EXPECT_GT(nan, 100);
      EXPECT_GT(inf, 4);
      EXPECT_GT(tiny, 4);
    }
}

TEST(L10_HostAdamW, CopyAfterRealStepsEqualsMasterRounded) {
  const std::int64_t n = (1 << 16) + 5;
  Generator g(9);
  for (DType ct : {DType::bf16, DType::f16}) {
    Threads t(2);
    Tensor p = at_offset(wide_values(n, g), 1), m = Tensor::zeros({n}), v = Tensor::zeros({n});
    Tensor copy = Tensor::zeros({n}, ct);
    for (int s = 1; s <= 2; ++s) {
      Tensor grad = Tensor::from_vector(wide_values(n, g), {n}).to(DType::bf16);
      host_adamw_step(p, grad, m, v, {1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, s}, &copy);
    }
    const Tensor want = p.to(ct);
    EXPECT_EQ(std::memcmp(copy.raw_data(), want.raw_data(), n * 2), 0) << minitorch::dtype_name(ct);
  }
}

TEST(L10_HostAdamW, PortablePathEqualsVectorPath) {
  // The portable path is what a NATIVE=0 build runs; here both are compiled, so compare them directly.
  std::printf("host_adamw_step's vector path: %d lanes\n", minitorch::host_adamw_vector_lanes());
  Generator g(21);
  for (std::int64_t n : {0, 1, 7, 33, 1029, (1 << 16) + 5})
    for (DType gt : {DType::f32, DType::bf16, DType::f16})
      for (DType ct : {DType::f32, DType::bf16, DType::f16}) {  // f32: no copy
        SCOPED_TRACE("n " + std::to_string(n) + ", grad " + minitorch::dtype_name(gt) + ", copy " + minitorch::dtype_name(ct));
        Threads t(2);
        const auto p0 = wide_values(n, g), m0 = wide_values(n, g);
        std::vector<float> v0 = wide_values(n, g);
        for (auto& e : v0) e = e * e;
        Tensor grad = Tensor::from_vector(wide_values(n, g), {n}).to(gt);
        Tensor ap = at_offset(p0, 2), am = at_offset(m0, 2), av = at_offset(v0, 2);
        Tensor bp = at_offset(p0, 2), bm = at_offset(m0, 2), bv = at_offset(v0, 2);
        std::vector<std::uint16_t> ac(n + 1, 7), bc(n + 1, 9);  // one past the end: must stay untouched
        const ops::AdamWParams hps{1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 4};
        std::uint16_t* acp = ct == DType::f32 ? nullptr : ac.data();
        std::uint16_t* bcp = ct == DType::f32 ? nullptr : bc.data();
        host_adamw_step(f(ap), grad.raw_data(), gt, f(am), f(av), n, hps, acp, ct);
        host_adamw_step_portable(f(bp), grad.raw_data(), gt, f(bm), f(bv), n, hps, bcp, ct);
        EXPECT_TRUE(same_bits(f(ap), f(bp), n, "master"));
        EXPECT_TRUE(same_bits(f(am), f(bm), n, "m"));
        EXPECT_TRUE(same_bits(f(av), f(bv), n, "v"));
        if (acp) {
          EXPECT_TRUE(std::equal(ac.begin(), ac.begin() + n, bc.begin()));
          EXPECT_EQ(ac[n], 7);
          EXPECT_EQ(bc[n], 9);
        }
      }
}

TEST(L10_HostAdamW, BadArguments) {
  Tensor p = Tensor::zeros({4}), m = Tensor::zeros({4}), v = Tensor::zeros({4});
  const ops::AdamWParams hps{1e-3f, 0.9f, 0.999f, 1e-8f, 0.f, 1};
  EXPECT_INVALID_ARG(host_adamw_step(p, Tensor::zeros({5}), m, v, hps), "host_adamw_step", "grad", "4");
  Tensor mh = Tensor::zeros({4}, DType::bf16);
  EXPECT_INVALID_ARG(host_adamw_step(p, Tensor::zeros({4}), mh, v, hps), "host_adamw_step", "m", "f32");
  EXPECT_INVALID_ARG(host_adamw_step(p, Tensor::zeros({1}).expand({4}), m, v, hps), "grad", "contiguous");
  Tensor c32 = Tensor::zeros({4});
  EXPECT_INVALID_ARG(host_adamw_step(p, Tensor::zeros({4}), m, v, hps, &c32), "copy16", "bf16 or f16");
  Tensor ints = Tensor::from_ints({1, 2, 3, 4}, {4});
  EXPECT_INVALID_ARG(host_adamw_step(p, ints, m, v, hps), "grad", "f32, bf16 or f16");
  EXPECT_INVALID_ARG(host_adamw_step(p, Tensor::zeros({4}), m, v, {1e-3f, 0.9f, 0.999f, 1e-8f, 0.f, 0}), "step");
  EXPECT_INVALID_ARG(host_adamw_step(f(p), f(p), DType::f32, nullptr, f(v), 4, hps), "null");
  EXPECT_INVALID_ARG(host_adamw_step(f(p), f(p), DType::f32, f(m), f(v), -1, hps), "n must be");
  host_adamw_step(nullptr, nullptr, DType::f32, nullptr, nullptr, 0, hps);  // nothing to do
}

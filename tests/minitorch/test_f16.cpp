// f16 (IEEE binary16) as a storage type, like bf16: the conversions against known bit patterns
// (round-to-nearest-even, overflow to inf, subnormals, NaN), and the kernels that widen f16 to f32,
// compute and round back once (elementwise, matmul), copies, safetensors. AdamW: tests/optim/test_adamw_f16.cpp.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <unistd.h>

#include "minitorch/safetensors.h"
#include "test_ops_util.h"

using namespace ops_test;
using namespace minitorch;

namespace {
float round_f16(float x) { return f16_to_f32(f32_to_f16(x)); }
float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace

TEST(L01_F16, ConversionMatchesKnownBitPatterns) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3C00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xC000);
  EXPECT_EQ(f32_to_f16(0.5f), 0x3800);
  EXPECT_EQ(f32_to_f16(0.0f), 0x0000);
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16(65504.f), 0x7BFF);                 // the largest finite f16
  EXPECT_EQ(f32_to_f16(65519.f), 0x7BFF);                 // below the midpoint to 2^16: rounds down
  EXPECT_EQ(f32_to_f16(65520.f), 0x7C00);                 // the midpoint ties to even: inf
  EXPECT_EQ(f32_to_f16(1e6f), 0x7C00);
  EXPECT_EQ(f32_to_f16(-1e6f), 0xFC00);
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.f, -14)), 0x0400);   // the smallest normal
  EXPECT_EQ(f32_to_f16(std::ldexp(1.f, -24)), 0x0001);   // the smallest subnormal
  EXPECT_EQ(f32_to_f16(std::ldexp(1.f, -25)), 0x0000);   // half of it: ties to even (0)
  EXPECT_EQ(f32_to_f16(std::ldexp(1.5f, -25)), 0x0001);  // above the tie: up
  EXPECT_EQ(f32_to_f16(std::ldexp(3.f, -25)), 0x0002);   // 1.5 units: tie to even (2)
  EXPECT_EQ(f32_to_f16(std::ldexp(1023.f, -24)), 0x03FF); // the largest subnormal
  EXPECT_EQ(f32_to_f16(1.f + std::ldexp(1.f, -11)), 0x3C00);      // tie between 1 and 1+2^-10: even (1)
  EXPECT_EQ(f32_to_f16(1.f + 3 * std::ldexp(1.f, -11)), 0x3C02);  // tie: even (1 + 2^-9)
  EXPECT_EQ(f32_to_f16(from_bits(0x3F800001)), 0x3C00);           // just above 1: down
  EXPECT_EQ(f32_to_f16(std::ldexp(2047.f, -11)), 0x3BFF);         // 1 - 2^-11: exact
  EXPECT_EQ(f32_to_f16(std::ldexp(4095.f, -12)), 0x3C00);         // 1 - 2^-12: a tie, up into the next binade
  const std::uint16_t nan = f32_to_f16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x03FF, 0) << "NaN must stay NaN, not become inf";
}

TEST(L01_F16, WideningIsExactAndRoundTrips) {
  EXPECT_EQ(f16_to_f32(0x3C00), 1.f);
  EXPECT_EQ(f16_to_f32(0x7BFF), 65504.f);
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.f, -24));
  EXPECT_EQ(f16_to_f32(0x03FF), std::ldexp(1023.f, -24));
  EXPECT_EQ(f16_to_f32(0x8000), -0.f);
  EXPECT_TRUE(std::signbit(f16_to_f32(0x8000)));
  EXPECT_TRUE(std::isinf(f16_to_f32(0x7C00)));
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7E00)));
  for (std::uint32_t h = 0; h < 0x10000; ++h) {  // every finite f16 survives the round trip
    const auto b = static_cast<std::uint16_t>(h);
    if ((b & 0x7C00) == 0x7C00) continue;
    ASSERT_EQ(f32_to_f16(f16_to_f32(b)), b) << std::hex << h;
  }
}

TEST(L01_F16, DtypeNameSizeAndParse) {
  EXPECT_EQ(dtype_size(DType::f16), 2u);
  EXPECT_STREQ(dtype_name(DType::f16), "f16");
  EXPECT_EQ(parse_dtype("float16"), DType::f16);
  EXPECT_TRUE(is_half(DType::f16) && is_half(DType::bf16) && !is_half(DType::f32));
}

TEST(L01_F16, KernelsComputeInF32AndRoundOnce) {
  Generator g(4);
  Tensor a = randn({9, 33}, g, DType::f16), b = randn({33}, g, DType::f32);
  EXPECT_EQ(a.dtype(), DType::f16);
  Tensor out = ops::add(a, b);
  EXPECT_EQ(out.dtype(), DType::f16);
  auto av = a.to_vector(), bv = b.to_vector();
  std::vector<float> ref(av.size());
  for (std::size_t i = 0; i < ref.size(); ++i) ref[i] = round_f16(av[i] + bv[i % 33]);
  EXPECT_TRUE(all_close(out, ref, 0, 0));

  Tensor x = randn({13, 21}, g, DType::f16), w = randn({21, 7}, g, DType::f16);
  Tensor y = ops::matmul(x, w);
  EXPECT_EQ(y.dtype(), DType::f16);
  Tensor yf = ops::matmul(x.to(DType::f32), w.to(DType::f32));
  std::vector<float> yr = yf.to_vector();
  for (float& v : yr) v = round_f16(v);
  EXPECT_TRUE(all_close(y, yr, 0, 0));

  Tensor acc = Tensor::zeros({40}, DType::f32);
  Tensor gh = randn({40}, g, DType::f16);
  ops::add_(acc, gh, 2.f);  // f16 gradients into an f32 accumulator
  auto gv = gh.to_vector();
  for (std::size_t i = 0; i < gv.size(); ++i) gv[i] *= 2.f;
  EXPECT_TRUE(all_close(acc, gv, 0, 0));
  ops::scale_(gh, 4096.f);  // scaled in place, rounded to f16 (large values overflow to inf)
  auto sv = gh.to_vector();
  for (std::size_t i = 0; i < sv.size(); ++i) EXPECT_EQ(sv[i], round_f16(gv[i] / 2.f * 4096.f));
}

TEST(L01_F16, StridedCopiesAndConversions) {
  Generator g(5);
  Tensor x = randn({6, 5}, g);
  Tensor h = x.to(DType::f16);
  Tensor ht = h.transpose(0, 1).contiguous();  // strided f16 read, f16 write
  auto xv = x.to_vector(), tv = ht.to_vector();
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 5; ++j) EXPECT_EQ(tv[j * 6 + i], round_f16(xv[i * 5 + j]));
  Tensor b = h.to(DType::bf16);  // f16 -> bf16 through f32
  EXPECT_EQ(b.to_vector()[3], round_bf16(round_f16(xv[3])));
}

TEST(L01_F16, SafetensorsSavesAndLoadsF16) {
  const std::string path = (std::filesystem::temp_directory_path() / ("f16_" + std::to_string(::getpid()) + ".safetensors")).string();
  Tensor h = Tensor::from_vector({1.f, -2.f, 65504.f, std::ldexp(1.f, -24)}, {4}, DType::f16);
  save_safetensors(path, {{"h", h}});
  SafetensorsFile f = load_safetensors(path);
  std::filesystem::remove(path);
  EXPECT_STREQ(safetensors_dtype_name(DType::f16), "F16");
  const Tensor& back = f.get("h");
  EXPECT_EQ(back.dtype(), DType::f16);
  EXPECT_EQ(back.to_vector(), h.to_vector());
}

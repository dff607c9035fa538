// L01 — the Tensor handle: views that share storage, strides and offsets, copies only when
// needed, dtype conversions (bf16 round-to-nearest-even, i32 exact), and clear errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "minitorch/allocator.h"
#include "minitorch/dtype.h"
#include "minitorch/random.h"
#include "minitorch/strided.h"
#include "minitorch/tensor.h"

using namespace minitorch;

namespace {

/// 0, 1, 2, ... as an f32 tensor of `shape`.
Tensor iota(const Shape& shape, DType dtype = DType::f32) {
  std::vector<float> v(static_cast<std::size_t>(shape_numel(shape)));
  std::iota(v.begin(), v.end(), 0.f);
  return Tensor::from_vector(v, shape, dtype);
}

std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float float_of(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// Expects `fn` to throw E with a message containing every one of `parts`.
template <typename E, typename F>
void expect_throw_with(F&& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "expected an exception";
  } catch (const E& e) {
    std::string msg = e.what();
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "message: " << msg << "\nmissing: " << p;
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Creation and metadata
// ---------------------------------------------------------------------------------------------

TEST(L01_TensorCreate, ShapeStridesAndDescribe) {
  Tensor t = Tensor::zeros({2, 3, 4});
  EXPECT_EQ(t.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(t.strides(), (Shape{12, 4, 1}));
  EXPECT_EQ(t.offset(), 0);
  EXPECT_EQ(t.dim(), 3);
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.nbytes(), 96u);
  EXPECT_EQ(t.size(-1), 4);
  EXPECT_EQ(t.size(0), 2);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.describe(), "Tensor(2, 3, 4) f32 cpu");
  EXPECT_EQ(Tensor::empty({5}, DType::bf16).nbytes(), 10u);
  EXPECT_EQ(Tensor().describe(), "Tensor(undefined)");
  EXPECT_FALSE(Tensor().defined());
  EXPECT_THROW(t.size(3), std::invalid_argument);
  EXPECT_THROW(t.size(-4), std::invalid_argument);
}

TEST(L01_TensorCreate, FillValuesAndScalar) {
  for (float v : Tensor::ones({2, 2}).to_vector()) EXPECT_EQ(v, 1.f);
  for (float v : Tensor::full({3}, -2.5f, DType::bf16).to_vector()) EXPECT_EQ(v, -2.5f);
  Tensor s = Tensor::scalar(4.f);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.item(), 4.f);
  EXPECT_EQ(s.describe(), "Tensor() f32 cpu");
  EXPECT_THROW(Tensor::ones({2}).item(), std::invalid_argument);
  EXPECT_EQ(Tensor::arange(4).to_int_vector(), (std::vector<std::int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(Tensor::arange(4).dtype(), DType::i32);
}

TEST(L01_TensorCreate, ZeroSizedTensor) {
  Tensor t = Tensor::empty({0, 3});
  EXPECT_EQ(t.numel(), 0);
  EXPECT_TRUE(t.to_vector().empty());
  EXPECT_EQ(t.transpose(0, 1).contiguous().shape(), (Shape{3, 0}));
}

TEST(L01_TensorCreate, NegativeSizeThrows) {
  EXPECT_THROW(Tensor::empty({2, -1}), std::invalid_argument);
}

TEST(L01_TensorCreate, FromVectorSizeMismatchThrows) {
  expect_throw_with<std::invalid_argument>([] { Tensor::from_vector({1, 2, 3}, {2, 2}); },
                                           {"from_vector", "3 values", "(2, 2)"});
  expect_throw_with<std::invalid_argument>([] { Tensor::from_ints({1, 2, 3}, {4}); }, {"from_ints", "(4)"});
  EXPECT_NO_THROW(Tensor::from_vector({1, 2, 3, 4}, {2, 2}));
}

TEST(L01_TensorCreate, RandnIsSeededAndScaled) {
  Generator g1(3), g2(3);
  Tensor a = Tensor::randn({64}, g1, 5.f, 0.f);  // std 0 -> exactly the mean
  for (float v : a.to_vector()) EXPECT_EQ(v, 5.f);
  Tensor b = Tensor::randn({2, 8}, g1), c = Tensor::randn({2, 8}, g2);
  EXPECT_NE(b.to_vector(), c.to_vector());  // g1 had already advanced
  Generator g3(3);
  Tensor::randn({64}, g3);
  EXPECT_EQ(Tensor::randn({2, 8}, g3).to_vector(), b.to_vector());
}

// ---------------------------------------------------------------------------------------------
// Element access
// ---------------------------------------------------------------------------------------------

TEST(L01_TensorAccess, AtReadsThroughStridesAndOffset) {
  Tensor x = iota({3, 4});
  EXPECT_EQ(x.at({2, 1}), 9.f);
  Tensor v = x.transpose(0, 1).narrow(0, 1, 2);  // rows 1..2 of x^T: offset 1, strides {1, 4}
  EXPECT_EQ(v.offset(), 1);
  EXPECT_EQ(v.at({0, 0}), 1.f);
  EXPECT_EQ(v.at({1, 2}), 10.f);
  EXPECT_EQ(v.to_vector(), (std::vector<float>{1, 5, 9, 2, 6, 10}));
}

TEST(L01_TensorAccess, AtOutOfBoundsThrows) {
  Tensor x = iota({2, 3});
  expect_throw_with<std::out_of_range>([&] { x.at({0, 3}); }, {"Tensor::at", "index 3", "dim 1"});
  expect_throw_with<std::out_of_range>([&] { x.at({2, 0}); }, {"index 2", "dim 0"});
  EXPECT_THROW(x.at({-1, 0}), std::out_of_range);
  expect_throw_with<std::invalid_argument>([&] { x.at({1}); }, {"1 indices"});
  EXPECT_THROW(x.at({0, 0, 0}), std::invalid_argument);
  EXPECT_EQ(x.at({1, 2}), 5.f);
}

TEST(L01_TensorAccess, DataTypeMismatchThrows) {
  Tensor f = Tensor::zeros({2});
  EXPECT_NO_THROW(f.data<float>());
  EXPECT_THROW(f.data<std::int32_t>(), std::invalid_argument);
  Tensor i = Tensor::arange(3);
  EXPECT_THROW(i.data<float>(), std::invalid_argument);
  Tensor h = Tensor::zeros({2}, DType::bf16);
  EXPECT_NO_THROW(h.data<std::uint16_t>());
  EXPECT_THROW(h.data<float>(), std::invalid_argument);
  EXPECT_THROW(f.to_int_vector(), std::invalid_argument);
}

TEST(L01_TensorAccess, DataPointsAtTheOffset) {
  Tensor x = iota({4, 3});
  Tensor rows = x.narrow(0, 2, 2);
  EXPECT_EQ(rows.data<float>(), x.data<float>() + 6);
  EXPECT_EQ(rows.data<float>()[0], 6.f);
}

// ---------------------------------------------------------------------------------------------
// Views share storage: write through one, read through another
// ---------------------------------------------------------------------------------------------

TEST(L01_T1_Views, TransposeSharesStorage) {
  Tensor x = iota({2, 3});
  Tensor t = x.transpose(0, 1);
  EXPECT_EQ(t.storage(), x.storage());
  EXPECT_EQ(t.shape(), (Shape{3, 2}));
  EXPECT_EQ(t.strides(), (Shape{1, 3}));
  EXPECT_EQ(t.offset(), 0);
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(t.to_vector(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  x.data<float>()[1] = 42.f;  // x[0, 1]
  EXPECT_EQ(t.at({1, 0}), 42.f);
  // Written through t's strides (not narrow's: that is task L01.2): t[2, 1] is x[1, 2].
  t.data<float>()[2 * t.strides()[0] + 1 * t.strides()[1]] = -1.f;
  EXPECT_EQ(x.at({1, 2}), -1.f);
  EXPECT_EQ(x.at({1, 1}), 4.f);
  Tensor tt = x.transpose(-1, -2);
  EXPECT_EQ(tt.strides(), (Shape{1, 3}));
}

TEST(L01_T1_Views, PermuteSharesStorage) {
  Tensor x = iota({2, 3, 4});
  Tensor p = x.permute({2, 0, 1});
  EXPECT_EQ(p.storage(), x.storage());
  EXPECT_EQ(p.shape(), (Shape{4, 2, 3}));
  EXPECT_EQ(p.strides(), (Shape{1, 12, 4}));
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t j = 0; j < 3; ++j)
      for (std::int64_t k = 0; k < 4; ++k) EXPECT_EQ(p.at({k, i, j}), x.at({i, j, k})) << "x[" << i << ", " << j << ", " << k << "]";
  // Written through p's strides (not narrow and copy_: tasks L01.2 and L01.3): p[3, 1, 2] is x[1, 2, 3].
  p.data<float>()[3 * p.strides()[0] + 1 * p.strides()[1] + 2 * p.strides()[2]] = 7.f;
  EXPECT_EQ(x.at({1, 2, 3}), 7.f);
  EXPECT_EQ(x.at({1, 2, 2}), 22.f);
  EXPECT_THROW(x.permute({0, 1}), std::invalid_argument);
  EXPECT_THROW(x.permute({0, 0, 1}), std::invalid_argument);
  EXPECT_EQ(x.permute({-1, 0, 1}).shape(), (Shape{4, 2, 3}));
}

TEST(L01_T2_Views, NarrowSharesStorageAndSetsOffset) {
  Tensor x = iota({4, 5});
  Tensor rows = x.narrow(0, 1, 2);
  EXPECT_EQ(rows.storage(), x.storage());
  EXPECT_EQ(rows.shape(), (Shape{2, 5}));
  EXPECT_EQ(rows.strides(), (Shape{5, 1}));
  EXPECT_EQ(rows.offset(), 5);
  EXPECT_TRUE(rows.is_contiguous());
  Tensor cols = x.narrow(-1, 2, 3);
  EXPECT_EQ(cols.offset(), 2);
  EXPECT_EQ(cols.strides(), (Shape{5, 1}));
  EXPECT_FALSE(cols.is_contiguous());
  Tensor both = rows.narrow(1, 2, 3);  // a narrow of a narrow adds offsets
  EXPECT_EQ(both.offset(), 7);
  EXPECT_EQ(both.to_vector(), (std::vector<float>{7, 8, 9, 12, 13, 14}));
  both.fill_(0.f);
  EXPECT_EQ(x.to_vector()[7], 0.f);
  EXPECT_EQ(x.to_vector()[14], 0.f);
  EXPECT_EQ(x.to_vector()[6], 6.f);
  EXPECT_EQ(x.to_vector()[15], 15.f);
  EXPECT_EQ(x.narrow(0, 4, 0).numel(), 0);
  expect_throw_with<std::invalid_argument>([&] { x.narrow(0, 3, 2); }, {"narrow", "[3, 5)"});
  EXPECT_THROW(x.narrow(0, -1, 2), std::invalid_argument);
  EXPECT_THROW(x.narrow(2, 0, 1), std::invalid_argument);
}

TEST(L01_T2_Views, UnsqueezeAndSqueezeShareStorage) {
  Tensor x = iota({2, 3});
  Tensor a = x.unsqueeze(0);
  EXPECT_EQ(a.shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(a.storage(), x.storage());
  EXPECT_TRUE(a.is_contiguous());
  Tensor b = x.unsqueeze(1);
  EXPECT_EQ(b.shape(), (Shape{2, 1, 3}));
  EXPECT_EQ(b.strides()[0], 3);
  EXPECT_EQ(b.strides()[2], 1);
  Tensor c = x.unsqueeze(-1);
  EXPECT_EQ(c.shape(), (Shape{2, 3, 1}));
  EXPECT_TRUE(c.is_contiguous());
  c.narrow(0, 1, 1).fill_(9.f);
  EXPECT_EQ(x.at({1, 0}), 9.f);
  Tensor s = c.squeeze(2);
  EXPECT_EQ(s.shape(), (Shape{2, 3}));
  EXPECT_EQ(s.strides(), (Shape{3, 1}));
  EXPECT_EQ(s.storage(), x.storage());
  EXPECT_THROW(x.squeeze(0), std::invalid_argument);
  EXPECT_THROW(x.unsqueeze(3), std::invalid_argument);
  // unsqueeze of a non-contiguous view (a narrow, not transpose: that is task L01.1) keeps element order
  Tensor cols = x.narrow(1, 1, 2);
  Tensor t = cols.unsqueeze(1);
  EXPECT_EQ(t.shape(), (Shape{2, 1, 2}));
  EXPECT_EQ(t.strides()[2], 1);
  EXPECT_EQ(t.to_vector(), cols.to_vector());
}

TEST(L01_TensorView, ExpandUsesStrideZero) {
  Tensor x = iota({3, 1});
  Tensor e = x.expand({2, 3, 4});
  EXPECT_EQ(e.storage(), x.storage());
  EXPECT_EQ(e.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(e.strides(), (Shape{0, 1, 0}));
  EXPECT_FALSE(e.is_contiguous());
  EXPECT_EQ(e.at({1, 2, 3}), 2.f);
  x.data<float>()[1] = 5.f;
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t k = 0; k < 4; ++k) EXPECT_EQ(e.at({i, 1, k}), 5.f);
  Tensor c = e.contiguous();
  EXPECT_NE(c.storage(), x.storage());
  EXPECT_EQ(c.numel(), 24);
  EXPECT_EQ(c.to_vector()[4], 5.f);
  expect_throw_with<std::invalid_argument>([&] { x.expand({3, 2, 2}); }, {"expand", "(3, 2, 2)"});
  EXPECT_THROW(x.expand({4}), std::invalid_argument);
  EXPECT_THROW(iota({2, 3}).expand({2, 4}), std::invalid_argument);
  // -1 keeps a size (as in PyTorch); other negative sizes are errors, never a negative shape
  Tensor k = x.expand({2, -1, 4});
  EXPECT_EQ(k.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(k.strides(), (Shape{0, 1, 0}));
  EXPECT_THROW(x.expand({-1, 3, 4}), std::invalid_argument);  // a new leading dim has no size to keep
  EXPECT_THROW(x.expand({3, -2}), std::invalid_argument);
  EXPECT_EQ(x.expand({-1, -1}).shape(), (Shape{3, 1}));
}

TEST(L01_TensorView, ViewOfContiguousSharesStorage) {
  Tensor x = iota({2, 6});
  Tensor v = x.view({3, 4});
  EXPECT_EQ(v.storage(), x.storage());
  EXPECT_EQ(v.strides(), (Shape{4, 1}));
  EXPECT_EQ(x.view({-1, 3}).shape(), (Shape{4, 3}));
  EXPECT_EQ(x.view({2, -1, 2}).shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(x.view({12}).to_vector(), x.to_vector());
  v.data<float>()[11] = -3.f;
  EXPECT_EQ(x.at({1, 5}), -3.f);
  // a contiguous narrow keeps its offset through view()
  Tensor rows = x.view({4, 3}).narrow(0, 2, 2);
  Tensor flat = rows.view({6});
  EXPECT_EQ(flat.offset(), 6);
  EXPECT_EQ(flat.at({0}), 6.f);
}

TEST(L01_TensorView, ViewBadShapesThrow) {
  Tensor x = iota({2, 6});
  EXPECT_THROW(x.view({5, 2}), std::invalid_argument);
  EXPECT_THROW(x.view({-1, -1}), std::invalid_argument);
  EXPECT_THROW(x.view({-1, 5}), std::invalid_argument);
  EXPECT_THROW(x.view({-2, -6}), std::invalid_argument);  // negative sizes other than -1
  EXPECT_THROW(x.view({-3, -4}), std::invalid_argument);
}

TEST(L01_TensorView, ViewOfNonContiguousThrowsClearly) {
  Tensor x = iota({2, 3});
  Tensor t = x.transpose(0, 1);
  expect_throw_with<std::invalid_argument>([&] { t.view({6}); }, {"view", "not contiguous", "reshape"});
  expect_throw_with<std::invalid_argument>([&] { x.narrow(1, 0, 2).view({4}); }, {"not contiguous"});
}

TEST(L01_T3_Copy, ReshapeCopiesOnlyWhenNeeded) {
  Tensor x = iota({2, 3});
  Tensor r = x.reshape({3, 2});
  EXPECT_EQ(r.storage(), x.storage());
  Tensor t = x.transpose(0, 1);
  auto before = memory_stats().current_total;
  Tensor rt = t.reshape({6});
  EXPECT_EQ(memory_stats().current_total - before, 24);  // exactly one copy
  EXPECT_NE(rt.storage(), x.storage());
  EXPECT_TRUE(rt.is_contiguous());
  EXPECT_EQ(rt.to_vector(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  rt.fill_(0.f);  // the copy is independent
  EXPECT_EQ(x.at({0, 1}), 1.f);
  // size-1 dims with odd strides still count as contiguous: no copy
  Tensor u = x.unsqueeze(1).transpose(0, 1);  // (1, 2, 3)
  EXPECT_EQ(u.reshape({6}).storage(), x.storage());
}

TEST(L01_T3_Copy, ContiguousReturnsSameWhenAlreadyContiguous) {
  Tensor x = iota({3, 4});
  Tensor c = x.contiguous();
  EXPECT_TRUE(c.same(x));
  EXPECT_EQ(c.storage(), x.storage());
  Tensor t = x.transpose(0, 1);
  Tensor tc = t.contiguous();
  EXPECT_NE(tc.storage(), x.storage());
  EXPECT_TRUE(tc.is_contiguous());
  EXPECT_EQ(tc.strides(), (Shape{3, 1}));
  EXPECT_EQ(tc.to_vector(), t.to_vector());
  Tensor cl = x.clone();  // clone always copies
  EXPECT_NE(cl.storage(), x.storage());
  EXPECT_EQ(cl.to_vector(), x.to_vector());
}

TEST(L01_TensorView, DetachSharesStorageWithoutGraph) {
  Tensor w = iota({2, 2});
  w.set_requires_grad();
  Tensor d = w.detach();
  EXPECT_EQ(d.storage(), w.storage());
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(w.requires_grad());
  EXPECT_FALSE(d.same(w));
}

TEST(L01_T3_Copy, CopyIntoViewAndShapeMismatch) {
  Tensor x = Tensor::zeros({3, 3});
  Tensor diag_block = x.narrow(0, 1, 2).narrow(1, 1, 2);
  diag_block.copy_(Tensor::from_vector({1, 2, 3, 4}, {2, 2}));
  EXPECT_EQ(x.to_vector(), (std::vector<float>{0, 0, 0, 0, 1, 2, 0, 3, 4}));
  x.transpose(0, 1).copy_(iota({3, 3}));  // write transposed
  EXPECT_EQ(x.at({0, 1}), 3.f);
  EXPECT_EQ(x.at({1, 0}), 1.f);
  expect_throw_with<std::invalid_argument>([&] { x.copy_(iota({9})); }, {"copy_", "(9)"});
}

// ---------------------------------------------------------------------------------------------
// dtype conversions
// ---------------------------------------------------------------------------------------------

TEST(L01_TensorDType, Bf16RoundsToNearestEven) {
  struct Case {
    std::uint32_t f32;
    std::uint16_t bf16;
  };
  const Case cases[] = {
      {0x3F800000u, 0x3F80},  // 1.0 exact
      {0x3F807FFFu, 0x3F80},  // just below half an ulp: down
      {0x3F808000u, 0x3F80},  // exactly half, even below: down (to even)
      {0x3F808001u, 0x3F81},  // just above half: up
      {0x3F818000u, 0x3F82},  // exactly half, odd below: up (to even)
      {0xBF808000u, 0xBF80},  // negative tie: to even
      {0xBF818000u, 0xBF82},
      {0x3FFFFFFFu, 0x4000},  // carry into the exponent
      {0x7F7FFFFFu, 0x7F80},  // largest f32 rounds to +inf, as in PyTorch
      {0x7F800000u, 0x7F80},  // +inf
      {0xFF800000u, 0xFF80},  // -inf
      {0x00000001u, 0x0000},  // tiny subnormal rounds to +0
      {0x80000000u, 0x8000},  // -0 keeps its sign
  };
  for (const auto& c : cases) EXPECT_EQ(f32_to_bf16(float_of(c.f32)), c.bf16) << std::hex << c.f32;

  // The same through a tensor conversion (bits read back raw).
  std::vector<float> vals;
  for (const auto& c : cases) vals.push_back(float_of(c.f32));
  Tensor h = Tensor::from_vector(vals, {static_cast<std::int64_t>(vals.size())}).to(DType::bf16);
  ASSERT_EQ(h.dtype(), DType::bf16);
  const std::uint16_t* p = h.data<std::uint16_t>();
  for (std::size_t i = 0; i < vals.size(); ++i) EXPECT_EQ(p[i], cases[i].bf16) << i;
}

TEST(L01_TensorDType, Bf16NaNStaysNaN) {
  const float qnan = std::numeric_limits<float>::quiet_NaN();
  const float snan = float_of(0x7F800001u);  // would round to inf if NaN were not special-cased
  for (float f : {qnan, snan, -qnan}) {
    std::uint16_t h = f32_to_bf16(f);
    EXPECT_EQ(h & 0x7F80, 0x7F80);
    EXPECT_NE(h & 0x007F, 0);
    EXPECT_TRUE(std::isnan(bf16_to_f32(h)));
  }
  EXPECT_TRUE(std::isnan(Tensor::full({1}, qnan, DType::bf16).item()));
}

TEST(L01_TensorDType, Bf16ToF32IsExact) {
  EXPECT_EQ(bf16_to_f32(0x4049), 3.140625f);
  EXPECT_EQ(bits_of(bf16_to_f32(0xC2F7)), 0xC2F70000u);
  // values with 8 significant bits survive a round trip unchanged
  std::vector<float> exact = {0.5f, -2.f, 3.140625f, 256.f, -0.0078125f, 1.f / 1024, 65280.f};
  Tensor back = Tensor::from_vector(exact, {7}).to(DType::bf16).to(DType::f32);
  EXPECT_EQ(back.dtype(), DType::f32);
  EXPECT_EQ(back.to_vector(), exact);
  // and one that does not: 1 + 2^-9 rounds to 1
  EXPECT_EQ(Tensor::from_vector({1.f + 1.f / 512}, {1}, DType::bf16).item(), 1.f);
  EXPECT_EQ(Tensor::from_vector({3.14159265f}, {1}, DType::bf16).item(), 3.140625f);
}

TEST(L01_TensorDType, StridedBf16ReadAndWrite) {
  Tensor h = iota({3, 4}, DType::bf16);
  Tensor t = h.transpose(0, 1);
  EXPECT_EQ(t.to_vector(), (std::vector<float>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
  EXPECT_EQ(t.at({3, 2}), 11.f);
  t.narrow(0, 0, 1).fill_(1.5f);  // column 0 of h
  EXPECT_EQ(h.at({2, 0}), 1.5f);
  Tensor f = t.to(DType::f32);  // strided bf16 -> contiguous f32
  EXPECT_TRUE(f.is_contiguous());
  EXPECT_EQ(f.to_vector(), t.to_vector());
  Tensor back = Tensor::empty({4, 3}, DType::bf16);
  back.copy_(f);
  EXPECT_EQ(back.to_vector(), f.to_vector());
}

TEST(L01_TensorDType, ToSameDtypeReturnsSameTensor) {
  Tensor x = iota({2});
  EXPECT_TRUE(x.to(DType::f32).same(x));
  EXPECT_TRUE(x.to(Device::cpu()).same(x));
  Tensor h = x.to(DType::bf16);
  EXPECT_NE(h.storage(), x.storage());
  EXPECT_EQ(h.nbytes(), 4u);
}

TEST(L01_TensorDType, FloatToI32TruncatesTowardZero) {
  Tensor i = Tensor::from_vector({1.9f, -1.9f, 3.f, -0.5f, 100.f}, {5}, DType::i32);
  EXPECT_EQ(i.to_int_vector(), (std::vector<std::int32_t>{1, -1, 3, 0, 100}));
  Tensor i2 = Tensor::from_vector({2.7f, -7.2f}, {2}).to(DType::i32);
  EXPECT_EQ(i2.to_int_vector(), (std::vector<std::int32_t>{2, -7}));
}

TEST(L01_TensorDType, I32CopiesAreExact) {
  // 16777217 = 2^24 + 1 is not representable in f32: an i32 copy must not go through float.
  const std::vector<std::int32_t> v = {16777217, 2147483647, -2147483647 - 1, -16777217, 5, 6};
  Tensor a = Tensor::from_ints(v, {2, 3});
  EXPECT_EQ(a.clone().to_int_vector(), v);
  Tensor t = a.transpose(0, 1).contiguous();  // strided i32 -> i32
  EXPECT_EQ(t.to_int_vector(), (std::vector<std::int32_t>{16777217, -16777217, 2147483647, 5, -2147483647 - 1, 6}));
  Tensor dst = Tensor::zeros({3, 2}, DType::i32);
  dst.transpose(0, 1).copy_(a);
  EXPECT_EQ(dst.to_int_vector(), t.to_int_vector());
  EXPECT_EQ(a.transpose(0, 1).to_int_vector(), t.to_int_vector());
  // i32 -> f32 converts the value (rounding to the nearest float)
  EXPECT_EQ(Tensor::from_ints({-3, 16777217}, {2}).to(DType::f32).to_vector(), (std::vector<float>{-3.f, 16777216.f}));
  EXPECT_EQ(Tensor::from_ints({7}, {1}).at({0}), 7.f);
}

TEST(L01_TensorDType, IntegerTensorsCannotRequireGrad) {
  Tensor i = Tensor::arange(3);
  EXPECT_THROW(i.set_requires_grad(), std::invalid_argument);
  Tensor h = Tensor::zeros({2}, DType::bf16);
  EXPECT_NO_THROW(h.set_requires_grad());
}

TEST(L01_TensorDType, ParseAndNames) {
  EXPECT_EQ(parse_dtype("bf16"), DType::bf16);
  EXPECT_EQ(parse_dtype("float32"), DType::f32);
  EXPECT_EQ(parse_dtype("int32"), DType::i32);
  expect_throw_with<std::invalid_argument>([] { parse_dtype("f64"); }, {"f64", "f32, bf16, f16, i32"});
  EXPECT_EQ(parse_dtype("f16"), DType::f16);
  EXPECT_STREQ(dtype_name(DType::bf16), "bf16");
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
  EXPECT_EQ(dtype_size(DType::i32), 4u);
}

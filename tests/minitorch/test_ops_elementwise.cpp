// Elementwise ops against plain-loop references: broadcasting, strided and bf16 inputs, in-place ops.
#include <functional>

#include "test_ops_util.h"

using namespace ops_test;

namespace {
// out[i] = f(a[ia], b[ib]) with NumPy broadcasting, by explicit index arithmetic.
std::vector<float> ref_broadcast(const std::vector<float>& a, const Shape& as, const std::vector<float>& b,
                                 const Shape& bs, const Shape& os, const std::function<float(float, float)>& f) {
  auto sa = strides_of(as), sb = strides_of(bs), so = strides_of(os);
  std::vector<float> out(static_cast<std::size_t>(minitorch::shape_numel(os)));
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::int64_t ia = 0, ib = 0;
    for (std::size_t d = 0; d < os.size(); ++d) {
      const std::int64_t idx = static_cast<std::int64_t>(i) / so[d] % os[d];
      const std::int64_t da = static_cast<std::int64_t>(d) - static_cast<std::int64_t>(os.size() - as.size());
      const std::int64_t db = static_cast<std::int64_t>(d) - static_cast<std::int64_t>(os.size() - bs.size());
      if (da >= 0 && as[da] != 1) ia += idx * sa[da];
      if (db >= 0 && bs[db] != 1) ib += idx * sb[db];
    }
    out[i] = f(a[ia], b[ib]);
  }
  return out;
}

struct Case {
  Shape a, b, out;
};
}  // namespace

TEST(L01_OpsElementwise, BroadcastingMatchesReference) {
  Generator g(1);
  const std::vector<Case> cases = {
      {{2, 3}, {2, 3}, {2, 3}},          {{4, 5}, {5}, {4, 5}},        {{4, 1}, {1, 5}, {4, 5}},
      {{3}, {2, 4, 3}, {2, 4, 3}},       {{2, 1, 3}, {4, 1}, {2, 4, 3}}, {{6, 7}, {}, {6, 7}},
      {{}, {6, 7}, {6, 7}},              {{300, 257}, {257}, {300, 257}}, {{5, 1, 1}, {1, 4, 3}, {5, 4, 3}},
  };
  const std::vector<std::pair<std::function<Tensor(const Tensor&, const Tensor&)>, std::function<float(float, float)>>> fns = {
      {[](auto& a, auto& b) { return ops::add(a, b); }, [](float x, float y) { return x + y; }},
      {[](auto& a, auto& b) { return ops::sub(a, b); }, [](float x, float y) { return x - y; }},
      {[](auto& a, auto& b) { return ops::mul(a, b); }, [](float x, float y) { return x * y; }},
      {[](auto& a, auto& b) { return ops::div(a, b); }, [](float x, float y) { return x / y; }},
  };
  for (const auto& c : cases) {
    Tensor a = randn(c.a, g), b = uniform(c.b, g, 0.5f, 2.f);
    EXPECT_EQ(ops::broadcast_shapes(c.a, c.b), c.out);
    for (const auto& [op, ref] : fns) {
      Tensor out = op(a, b);
      EXPECT_EQ(out.shape(), c.out);
      EXPECT_TRUE(out.is_contiguous());
      EXPECT_TRUE(all_close(out, ref_broadcast(a.to_vector(), c.a, b.to_vector(), c.b, c.out, ref), 1e-6f, 1e-6f))
          << minitorch::shape_str(c.a) << " with " << minitorch::shape_str(c.b);
    }
  }
}

TEST(L01_OpsElementwise, StridedAndExpandedInputs) {
  Generator g(2);
  Tensor base = randn({5, 7}, g);
  Tensor at = base.transpose(0, 1);             // (7, 5) strides (1, 7)
  Tensor b = randn({7, 5}, g);
  auto bt = b.to_vector();
  auto ref = at.contiguous().to_vector();
  for (std::size_t i = 0; i < ref.size(); ++i) ref[i] += bt[i];
  EXPECT_TRUE(all_close(ops::add(at, b), ref, 0, 0));

  Tensor narrow = base.narrow(1, 2, 3);         // (5, 3) with row stride 7
  Tensor col = randn({5, 1}, g);
  Tensor expanded = col.expand({5, 3});         // stride 0 along dim 1
  auto nv = narrow.contiguous().to_vector(), cv = col.to_vector();
  std::vector<float> r2(15);
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 3; ++j) r2[i * 3 + j] = nv[i * 3 + j] * cv[i];
  EXPECT_TRUE(all_close(ops::mul(narrow, expanded), r2, 0, 0));
  EXPECT_TRUE(all_close(ops::mul(expanded, narrow), r2, 0, 0));
}

TEST(L01_OpsElementwise, Bf16InputsComputeInF32AndKeepFirstDtype) {
  Generator g(3);
  Tensor a = randn({9, 33}, g, DType::bf16), b = randn({33}, g, DType::f32);
  Tensor out = ops::add(a, b);
  EXPECT_EQ(out.dtype(), DType::bf16);
  auto av = a.to_vector(), bv = b.to_vector();
  std::vector<float> ref(av.size());
  for (std::size_t i = 0; i < ref.size(); ++i) ref[i] = round_bf16(av[i] + bv[i % 33]);
  EXPECT_TRUE(all_close(out, ref, 0, 0));  // f32 sum rounded once to bf16
  Tensor out2 = ops::mul(b, a);            // f32 first: f32 result
  EXPECT_EQ(out2.dtype(), DType::f32);
  for (std::size_t i = 0; i < ref.size(); ++i) ref[i] = av[i] * bv[i % 33];
  EXPECT_TRUE(all_close(out2, ref, 0, 0));
}

TEST(L01_OpsElementwise, UnaryOpsMatchStd) {
  Generator g(4);
  Tensor x = uniform({1000, 3}, g, 0.05f, 4.f);  // positive: log, sqrt, pow defined
  Tensor xs = randn({1000, 3}, g, DType::f32);
  auto v = x.to_vector(), s = xs.to_vector();
  auto map = [](const std::vector<float>& in, float (*f)(float)) {
    std::vector<float> o(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) o[i] = f(in[i]);
    return o;
  };
  EXPECT_TRUE(all_close(ops::exp(xs), map(s, [](float a) { return std::exp(a); }), 1e-6f, 2e-6f));
  EXPECT_TRUE(all_close(ops::log(x), map(v, [](float a) { return std::log(a); }), 1e-6f, 2e-6f));
  EXPECT_TRUE(all_close(ops::tanh(xs), map(s, [](float a) { return std::tanh(a); }), 2e-6f, 2e-6f));
  EXPECT_TRUE(all_close(ops::sqrt(x), map(v, [](float a) { return std::sqrt(a); }), 0, 1e-6f));
  EXPECT_TRUE(all_close(ops::neg(xs), map(s, [](float a) { return -a; }), 0, 0));
  EXPECT_TRUE(all_close(ops::pow(x, 2.f), map(v, [](float a) { return a * a; }), 0, 1e-6f));
  EXPECT_TRUE(all_close(ops::pow(x, -1.5f), map(v, [](float a) { return std::pow(a, -1.5f); }), 0, 1e-6f));
  EXPECT_TRUE(all_close(ops::affine(xs, 3.f, -0.5f), map(s, [](float a) { return a * 3.f - 0.5f; }), 1e-6f, 1e-6f));
  EXPECT_TRUE(all_close(ops::affine(xs.transpose(0, 1), 2.f), [&] {
    auto t = xs.transpose(0, 1).contiguous().to_vector();
    for (auto& a : t) a *= 2.f;
    return t;
  }(), 0, 0));
  Tensor hb = xs.to(DType::bf16);
  Tensor eb = ops::exp(hb);
  EXPECT_EQ(eb.dtype(), DType::bf16);
  auto hv = hb.to_vector();
  EXPECT_TRUE(all_close(eb, map(hv, [](float a) { return round_bf16(std::exp(a)); }), 0, 8e-3f));
}

TEST(L01_OpsElementwise, SumToUndoesBroadcast) {
  Generator g(5);
  Tensor grad = randn({2, 3, 4}, g);
  auto v = grad.to_vector();
  // (2, 3, 4) -> (3, 1): sum over dim 0 and dim 2
  std::vector<float> ref(3, 0.f);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) ref[j] += v[(i * 3 + j) * 4 + k];
  Tensor s = ops::sum_to(grad, {3, 1});
  EXPECT_EQ(s.shape(), (Shape{3, 1}));
  EXPECT_TRUE(all_close(s, ref, 1e-5f, 1e-6f));
  // (2, 3, 4) -> (4)
  std::vector<float> r4(4, 0.f);
  for (std::size_t i = 0; i < v.size(); ++i) r4[i % 4] += v[i];
  EXPECT_TRUE(all_close(ops::sum_to(grad, {4}), r4, 1e-5f, 1e-6f));
  // same shape: a copy that does not alias
  Tensor same = ops::sum_to(grad, {2, 3, 4});
  EXPECT_TRUE(all_close(same, v, 0, 0));
  EXPECT_NE(same.raw_data(), grad.raw_data());
  // to a scalar
  double tot = 0;
  for (float x : v) tot += x;
  EXPECT_NEAR(ops::sum_to(grad, {}).item(), tot, 1e-4);
  EXPECT_INVALID_ARG(ops::sum_to(grad, {5}), "sum_to", "(2, 3, 4)", "(5)");
}

TEST(L01_OpsElementwise, InPlaceAddAndScale) {
  Generator g(6);
  Tensor dst = randn({40, 50}, g), src = randn({50, 40}, g);
  auto d0 = dst.to_vector();
  auto st = src.transpose(0, 1).contiguous().to_vector();
  ops::add_(dst, src.transpose(0, 1), 0.5f);  // strided source
  std::vector<float> ref(d0.size());
  for (std::size_t i = 0; i < ref.size(); ++i) ref[i] = d0[i] + 0.5f * st[i];
  EXPECT_TRUE(all_close(dst, ref, 1e-6f, 1e-6f));

  Tensor sb = randn({40, 50}, g, DType::bf16);  // bf16 gradients into an f32 accumulator
  auto sbv = sb.to_vector();
  ops::add_(dst, sb);
  for (std::size_t i = 0; i < ref.size(); ++i) ref[i] += sbv[i];
  EXPECT_TRUE(all_close(dst, ref, 1e-6f, 1e-6f));

  Tensor db = randn({40, 50}, g, DType::bf16);  // bf16 accumulator
  auto dbv = db.to_vector();
  ops::add_(db, dst, -1.f);
  auto dv = dst.to_vector();
  for (std::size_t i = 0; i < ref.size(); ++i) ref[i] = round_bf16(dbv[i] - dv[i]);
  EXPECT_TRUE(all_close(db, ref, 0, 0));

  ops::scale_(dst, -2.f);
  for (std::size_t i = 0; i < ref.size(); ++i) ref[i] = -2.f * dv[i];
  EXPECT_TRUE(all_close(dst, ref, 0, 0));

  EXPECT_INVALID_ARG(ops::add_(dst, randn({50, 40}, g)), "add_", "(40, 50)", "(50, 40)");
  Tensor view = dst.transpose(0, 1);
  EXPECT_INVALID_ARG(ops::scale_(view, 2.f), "scale_", "contiguous");
}

TEST(L01_OpsElementwise, BadArgumentsNameTheShapes) {
  Generator g(7);
  Tensor a = randn({2, 3}, g), b = randn({4}, g);
  EXPECT_INVALID_ARG(ops::add(a, b), "add", "(2, 3)", "(4)");
  EXPECT_INVALID_ARG(ops::mul(a, randn({3, 3}, g)), "mul", "(2, 3)", "(3, 3)");
  EXPECT_INVALID_ARG(ops::broadcast_shapes({2, 3}, {3, 2}), "(2, 3)", "(3, 2)");
  EXPECT_INVALID_ARG(ops::exp(Tensor::arange(4)), "exp", "i32");
  EXPECT_INVALID_ARG(ops::add(a, Tensor()), "add", "undefined");
}

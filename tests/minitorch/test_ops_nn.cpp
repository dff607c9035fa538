// LayerNorm, GELU and embedding (with their backwards) against double references.
#include <cmath>

#include "test_ops_util.h"

using namespace ops_test;

namespace {
struct LnRef {
  std::vector<float> y, mean, rstd;
};
LnRef ref_layernorm(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& b, std::int64_t C,
                    float eps = 1e-5f) {
  LnRef r;
  r.y.resize(x.size());
  for (std::size_t row = 0; row * C < x.size(); ++row) {
    double m = 0, v = 0;
    for (std::int64_t j = 0; j < C; ++j) m += x[row * C + j];
    m /= C;
    for (std::int64_t j = 0; j < C; ++j) v += (x[row * C + j] - m) * (x[row * C + j] - m);
    const double s = 1.0 / std::sqrt(v / C + eps);
    for (std::int64_t j = 0; j < C; ++j) r.y[row * C + j] = static_cast<float>((x[row * C + j] - m) * s * w[j] + b[j]);
    r.mean.push_back(static_cast<float>(m));
    r.rstd.push_back(static_cast<float>(s));
  }
  return r;
}
double ref_gelu(double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }
}  // namespace

TEST(L01_OpsNN, LayerNormMatchesReference) {
  Generator g(41);
  const std::int64_t C = 48;
  Tensor x = randn({3, 5, C}, g), w = randn({C}, g), b = randn({C}, g);
  // large common offset: the two-pass variance must not cancel catastrophically
  Tensor xo = ops::affine(x, 1.f, 1000.f);
  for (const Tensor& in : {x, xo}) {
    auto out = ops::layernorm(in, w, b);
    auto ref = ref_layernorm(in.to_vector(), w.to_vector(), b.to_vector(), C);
    EXPECT_EQ(out.mean.shape(), (Shape{3, 5}));
    EXPECT_EQ(out.rstd.dtype(), DType::f32);
    EXPECT_TRUE(all_close(out.y, ref.y, 2e-3f, 1e-4f));
    EXPECT_TRUE(all_close(out.mean, ref.mean, 0, 1e-6f));
    EXPECT_TRUE(all_close(out.rstd, ref.rstd, 0, 2e-4f));
  }
  auto tight = ops::layernorm(x, w, b);
  EXPECT_TRUE(all_close(tight.y, ref_layernorm(x.to_vector(), w.to_vector(), b.to_vector(), C).y, 1e-5f, 1e-5f));
  Tensor h = x.to(DType::bf16);
  auto oh = ops::layernorm(h, w, b);
  EXPECT_EQ(oh.y.dtype(), DType::bf16);
  EXPECT_TRUE(all_close(oh.y, ref_layernorm(h.to_vector(), w.to_vector(), b.to_vector(), C).y, 2e-2f, 8e-3f));
}

TEST(L01_OpsNN, LayerNormBackwardMatchesFiniteDifferences) {
  Generator g(42);
  const std::int64_t R = 70, C = 24;  // 70 rows: more than one block of partial dweight sums
  Tensor x = randn({R, C}, g), w = randn({C}, g), b = randn({C}, g), dy = randn({R, C}, g);
  auto fwd = ops::layernorm(x, w, b);
  auto grads = ops::layernorm_backward(dy, x, w, fwd.mean, fwd.rstd);
  auto xv = x.to_vector(), wv = w.to_vector(), bv = b.to_vector(), gv = dy.to_vector();
  auto dxv = grads.dx.to_vector(), dwv = grads.dweight.to_vector(), dbv = grads.dbias.to_vector();
  auto loss = [&](const std::vector<float>& xx, const std::vector<float>& ww, const std::vector<float>& bb) {
    auto y = ref_layernorm(xx, ww, bb, C).y;
    double l = 0;
    for (std::size_t i = 0; i < y.size(); ++i) l += static_cast<double>(gv[i]) * y[i];
    return l;
  };
  const float h = 1e-2f;
  for (std::int64_t i = 0; i < R * C; i += 97) {
    auto p = xv, m = xv;
    p[i] += h;
    m[i] -= h;
    EXPECT_NEAR(dxv[i], (loss(p, wv, bv) - loss(m, wv, bv)) / (p[i] - m[i]), 2e-3) << "dx " << i;
  }
  for (std::int64_t j = 0; j < C; j += 5) {
    auto p = wv, m = wv;
    p[j] += h;
    m[j] -= h;
    EXPECT_NEAR(dwv[j], (loss(xv, p, bv) - loss(xv, m, bv)) / (p[j] - m[j]), 2e-3) << "dweight " << j;
    double sb = 0;
    for (std::int64_t r = 0; r < R; ++r) sb += gv[r * C + j];
    EXPECT_NEAR(dbv[j], sb, 1e-4) << "dbias " << j;
  }
  EXPECT_INVALID_ARG(ops::layernorm_backward(dy, x, w, fwd.rstd.view({R, 1}), fwd.rstd), "layernorm_backward",
                     "(70, 1)");
}

TEST(L01_OpsNN, LayerNormBadShapes) {
  Generator g(43);
  EXPECT_INVALID_ARG(ops::layernorm(randn({4, 8}, g), randn({7}, g), randn({8}, g)), "layernorm", "(4, 8)", "(7)");
}

TEST(L01_OpsNN, GeluAndBackward) {
  Generator g(44);
  Tensor x = uniform({2000}, g, -6.f, 6.f), dy = randn({2000}, g);
  auto xv = x.to_vector(), gv = dy.to_vector();
  std::vector<float> ref(xv.size()), dref(xv.size());
  for (std::size_t i = 0; i < xv.size(); ++i) {
    ref[i] = static_cast<float>(ref_gelu(xv[i]));
    const double h = 1e-4;
    dref[i] = static_cast<float>(gv[i] * (ref_gelu(xv[i] + h) - ref_gelu(xv[i] - h)) / (2 * h));
  }
  EXPECT_TRUE(all_close(ops::gelu(x), ref, 1e-6f, 1e-5f));
  EXPECT_TRUE(all_close(ops::gelu_backward(x, dy), dref, 1e-5f, 1e-4f));
  Tensor x2 = randn({8, 6}, g);  // strided view
  auto r2 = x2.transpose(0, 1).contiguous().to_vector();
  for (auto& e : r2) e = static_cast<float>(ref_gelu(e));
  EXPECT_TRUE(all_close(ops::gelu(x2.transpose(0, 1)), r2, 1e-6f, 1e-5f));
  EXPECT_INVALID_ARG(ops::gelu_backward(x, randn({3}, g)), "gelu_backward", "(2000)", "(3)");
}

TEST(L01_OpsNN, EmbeddingGatherAndScatterAdd) {
  Generator g(45);
  const std::int64_t V = 10, C = 6;
  Tensor w = randn({V, C}, g);
  Tensor idx = Tensor::from_ints({3, 0, 9, 3, 3, 7}, {2, 3});
  Tensor out = ops::embedding(w, idx);
  EXPECT_EQ(out.shape(), (Shape{2, 3, C}));
  auto wv = w.to_vector();
  auto iv = idx.to_int_vector();
  std::vector<float> ref;
  for (int id : iv) ref.insert(ref.end(), wv.begin() + id * C, wv.begin() + (id + 1) * C);
  EXPECT_TRUE(all_close(out, ref, 0, 0));
  Tensor wb = w.to(DType::bf16);  // bf16 table: rows copied as they are
  Tensor ob = ops::embedding(wb, idx);
  EXPECT_EQ(ob.dtype(), DType::bf16);
  auto rb = ref;
  for (auto& e : rb) e = round_bf16(e);
  EXPECT_TRUE(all_close(ob, rb, 0, 0));

  Tensor dy = randn({2, 3, C}, g);
  Tensor dw = ops::embedding_backward(dy, idx, V);
  EXPECT_EQ(dw.shape(), (Shape{V, C}));
  auto gv = dy.to_vector();
  std::vector<float> dref(V * C, 0.f);
  for (std::size_t n = 0; n < iv.size(); ++n)
    for (int j = 0; j < C; ++j) dref[iv[n] * C + j] += gv[n * C + j];  // id 3 three times
  EXPECT_TRUE(all_close(dw, dref, 1e-6f, 1e-6f));
  Threads two(2);
  EXPECT_EQ(ops::embedding_backward(dy, idx, V).to_vector(), dw.to_vector());
}

TEST(L01_OpsNN, EmbeddingOutOfRangeIdIsAnError) {
  Generator g(46);
  Tensor w = randn({5, 3}, g);
  EXPECT_INVALID_ARG(ops::embedding(w, Tensor::from_ints({1, 5}, {2})), "embedding", "id 5", "[0, 5)");
  EXPECT_INVALID_ARG(ops::embedding(w, Tensor::from_ints({-1}, {1})), "embedding", "id -1");
  EXPECT_INVALID_ARG(ops::embedding_backward(randn({2, 3}, g), Tensor::from_ints({0, 4}, {2}), 4), "embedding_backward",
                     "id 4");
  EXPECT_INVALID_ARG(ops::embedding(w, Tensor::from_vector({1.f}, {1})), "embedding", "i32");
  EXPECT_INVALID_ARG(ops::embedding_backward(randn({2, 3}, g), Tensor::from_ints({0, 1, 2}, {3}), 4), "embedding_backward",
                     "(2, 3)", "(3)");
}

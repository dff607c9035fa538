// L03 Optim: AdamW against the scalar formula, parameter groups, state memory (K = 8 / 12),
// bf16 master weights, state save / restore, SGD, and a tiny GPT that learns.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "autograd/functions.h"
#include "minitorch/allocator.h"
#include "minitorch/random.h"
#include "nn/gpt.h"
#include "optim/adamw.h"
#include "optim/clip.h"
#include "optim/sgd.h"

using namespace minitorch;

namespace {
Tensor param(const std::vector<float>& v, const Shape& s, DType dt = DType::f32) {
  TagScope scope(MemTag::param);
  Tensor t = Tensor::from_vector(v, s, dt);
  t.set_requires_grad();
  return t;
}

/// Reference AdamW on doubles, the formula of torch.optim.AdamW.
struct RefAdamW {
  double lr, b1, b2, eps, wd;
  std::vector<double> p, m, v;
  int t = 0;
  void step(const std::vector<double>& g) {
    ++t;
    for (std::size_t i = 0; i < p.size(); ++i) {
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
      double mhat = m[i] / (1 - std::pow(b1, t)), vhat = v[i] / (1 - std::pow(b2, t));
      p[i] -= lr * (mhat / (std::sqrt(vhat) + eps) + wd * p[i]);
    }
  }
};

std::vector<double> as_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

Tensor random_tokens(std::int64_t B, std::int64_t T, std::int64_t V, Generator& gen) {
  std::vector<std::int32_t> ids(static_cast<std::size_t>(B * T));
  for (auto& i : ids) i = static_cast<std::int32_t>(gen.next_below(static_cast<std::uint64_t>(V)));
  return Tensor::from_ints(ids, {B, T});
}
}  // namespace

TEST(L03_Optim, AdamWDefaults) {
  optim::AdamWOptions o;
  EXPECT_FLOAT_EQ(o.beta1, 0.9f);
  EXPECT_FLOAT_EQ(o.beta2, 0.999f);
  EXPECT_FLOAT_EQ(o.eps, 1e-8f);
  EXPECT_FLOAT_EQ(o.weight_decay, 0.01f);
}

TEST(L03_Optim, AdamWGroupsSplitByDim) {
  Tensor w = param({1, 2, 3, 4}, {2, 2}), b = param({1, 2}, {2}), e = param({1, 2, 3, 4, 5, 6}, {3, 2});
  optim::AdamW opt({{"w", w}, {"b", b}, {"e", e}}, {.lr = 0.1f, .weight_decay = 0.5f});
  auto& groups = opt.param_groups();
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].name, "decay");
  EXPECT_FLOAT_EQ(groups[0].weight_decay, 0.5f);
  ASSERT_EQ(groups[0].params.size(), 2u);
  EXPECT_EQ(groups[0].params[0].first, "w");
  EXPECT_EQ(groups[0].params[1].first, "e");
  EXPECT_EQ(groups[1].name, "no_decay");
  EXPECT_FLOAT_EQ(groups[1].weight_decay, 0.f);
  ASSERT_EQ(groups[1].params.size(), 1u);
  EXPECT_EQ(groups[1].params[0].first, "b");
  EXPECT_EQ(opt.num_parameters(), 12);
  opt.set_lr(0.01f);
  EXPECT_FLOAT_EQ(groups[0].lr, 0.01f);
  EXPECT_FLOAT_EQ(groups[1].lr, 0.01f);
  // a tensor given twice (a tied weight passed under both names) is refused
  EXPECT_THROW(optim::AdamW({{"w", w}, {"w2", w}}), std::invalid_argument);
}

TEST(L03_Optim, AdamWMatchesScalarFormulaWithAndWithoutDecay) {
  const float lr = 0.1f, b1 = 0.9f, b2 = 0.95f, eps = 1e-8f, wd = 0.2f;
  std::vector<float> w0{0.5f, -1.0f, 2.0f, 0.25f}, b0{0.3f, -0.7f};
  Tensor w = param(w0, {2, 2}), b = param(b0, {2});
  optim::AdamW opt({{"w", w}, {"b", b}}, {.lr = lr, .beta1 = b1, .beta2 = b2, .eps = eps, .weight_decay = wd});
  RefAdamW rw{lr, b1, b2, eps, wd, as_double(w0), {0, 0, 0, 0}, {0, 0, 0, 0}};
  RefAdamW rb{lr, b1, b2, eps, 0.0, as_double(b0), {0, 0}, {0, 0}};  // 1-D: no decay
  const std::vector<std::vector<float>> gw{{0.1f, -0.2f, 0.3f, 0.0f}, {-0.05f, 0.4f, 0.1f, 1.0f}, {0.2f, 0.2f, -0.3f, 0.5f}};
  const std::vector<std::vector<float>> gb{{1.0f, -3.0f}, {0.5f, 0.5f}, {-2.0f, 0.1f}};
  for (int s = 0; s < 3; ++s) {
    w.set_grad(Tensor::from_vector(gw[s], {2, 2}));
    b.set_grad(Tensor::from_vector(gb[s], {2}));
    opt.step();
    rw.step(as_double(gw[s]));
    rb.step(as_double(gb[s]));
    auto pw = w.to_vector(), pb = b.to_vector();
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(pw[i], rw.p[i], 1e-6) << "w step " << s + 1 << " element " << i;
    for (int i = 0; i < 2; ++i) EXPECT_NEAR(pb[i], rb.p[i], 1e-6) << "b step " << s + 1 << " element " << i;
  }
  EXPECT_EQ(opt.step_count(), 3);
  // first step by hand: m̂ = g, v̂ = g², so the update is lr·sign(g) (+ decay)
  // w[0]: 0.5 − 0.1·(0.1/0.1 + 0.2·0.5) = 0.39 (checked through the reference above).
  RefAdamW one{lr, b1, b2, eps, wd, {0.5}, {0}, {0}};
  one.step({0.1});
  EXPECT_NEAR(one.p[0], 0.39, 1e-7);
}

TEST(L03_Optim, AdamWSkipsParametersWithoutGrad) {
  Tensor w = param({1, 2, 3, 4}, {2, 2}), b = param({1, 2}, {2});
  optim::AdamW opt({{"w", w}, {"b", b}});
  b.set_grad(Tensor::from_vector({1, 1}, {2}));
  opt.step();
  EXPECT_EQ(w.to_vector(), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_NE(b.to_vector(), (std::vector<float>{1, 2}));
  auto st = opt.state_tensors();
  ASSERT_EQ(st.size(), 2u) << "no state for a parameter never stepped";
  EXPECT_EQ(st[0].first, "exp_avg.b");
  EXPECT_EQ(st[1].first, "exp_avg_sq.b");
  opt.zero_grad();
  EXPECT_FALSE(b.grad().defined());
}

TEST(L03_Optim, AdamWStateIs8BytesPerF32Param) {
  Generator gen(1);
  auto c = nn::GPTConfig::named("baby");
  c.vocab_size = 65;
  nn::GPT model(c, gen);
  const std::int64_t psi = model.num_parameters();
  optim::AdamW opt(model.named_parameters());
  const std::int64_t before = memory_stats().current(MemTag::optim);
  EXPECT_EQ(opt.state_bytes(), 0) << "allocated lazily";
  Generator data(2);
  autograd::backward(model.loss(random_tokens(2, 16, 65, data), random_tokens(2, 16, 65, data)));
  opt.step();
  EXPECT_EQ(memory_stats().current(MemTag::optim) - before, 8 * psi) << "K = 8: m + v in f32";
  EXPECT_EQ(opt.state_bytes(), 8 * psi);
  opt.step();
  EXPECT_EQ(memory_stats().current(MemTag::optim) - before, 8 * psi) << "no growth on later steps";
}

TEST(L03_Optim, AdamWBf16ParamsKeepF32MasterAnd12Bytes) {
  const float lr = 0.01f, wd = 0.1f;
  std::vector<float> w0{0.5f, -1.0f, 2.0f, 0.25f, 1.5f, -0.125f};
  Tensor w = param(w0, {2, 3}, DType::bf16);
  std::vector<float> start = w.to_vector();  // the bf16 values
  const std::int64_t before = memory_stats().current(MemTag::optim);
  optim::AdamW opt({{"w", w}}, {.lr = lr, .weight_decay = wd});
  RefAdamW ref{lr, 0.9, 0.999, 1e-8, wd, as_double(start), std::vector<double>(6), std::vector<double>(6)};
  const std::vector<float> g{0.1f, -0.2f, 0.3f, 0.05f, -1.0f, 0.5f};
  for (int s = 0; s < 3; ++s) {
    w.set_grad(Tensor::from_vector(g, {2, 3}, DType::bf16));  // grads of bf16 params are bf16
    opt.step();
    ref.step(as_double(Tensor::from_vector(g, {6}, DType::bf16).to_vector()));
  }
  EXPECT_EQ(memory_stats().current(MemTag::optim) - before, 12 * 6) << "K = 12: master + m + v in f32";
  EXPECT_EQ(w.dtype(), DType::bf16);
  auto st = opt.state_tensors();
  ASSERT_EQ(st.size(), 3u);
  EXPECT_EQ(st[2].first, "master.w");
  Tensor master = st[2].second;
  EXPECT_EQ(master.dtype(), DType::f32);
  auto mv = master.to_vector(), pv = w.to_vector();
  for (int i = 0; i < 6; ++i) {
    EXPECT_NEAR(mv[i], ref.p[i], 1e-6) << "the master follows the f32 update, not the rounded one";
    EXPECT_EQ(pv[i], bf16_to_f32(f32_to_bf16(mv[i]))) << "the bf16 param is the rounded master";
  }
  // the small updates are visible in the master even where bf16 rounding hides them in the param
  EXPECT_NE(mv, std::vector<float>(pv.begin(), pv.end()));
}

TEST(L03_Optim, AdamWStateRoundTripIsExact) {
  auto c = nn::GPTConfig::named("baby");
  c.vocab_size = 11;
  c.n_layer = 1;
  Generator g1(3), g2(4);
  nn::GPT a(c, g1), b(c, g2);
  optim::AdamW opt_a(a.named_parameters(), {.lr = 1e-2f});
  Generator data(5);
  Tensor idx = random_tokens(2, 8, 11, data), tgt = random_tokens(2, 8, 11, data);
  auto train_step = [&](nn::GPT& m, optim::AdamW& o) {
    o.zero_grad();
    autograd::backward(m.loss(idx, tgt));
    o.step();
  };
  for (int s = 0; s < 3; ++s) train_step(a, opt_a);
  // "checkpoint" a into b
  b.load_state_dict(a.state_dict());
  optim::AdamW opt_b(b.named_parameters(), {.lr = 1e-2f});
  opt_b.load_state(opt_a.state_tensors(), opt_a.step_count());
  EXPECT_EQ(opt_b.step_count(), 3);
  train_step(a, opt_a);
  train_step(b, opt_b);
  auto pa = a.named_parameters(), pb = b.named_parameters();
  for (std::size_t i = 0; i < pa.size(); ++i)
    EXPECT_EQ(pa[i].second.to_vector(), pb[i].second.to_vector()) << pa[i].first;
}

TEST(L03_Optim, AdamWLoadStateErrors) {
  Tensor w = param({1, 2, 3, 4}, {2, 2});
  optim::AdamW opt({{"w", w}});
  try {
    opt.load_state({{"exp_avg.v", Tensor::zeros({2, 2})}}, 1);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("'exp_avg.v'"), std::string::npos) << e.what();
  }
  try {
    opt.load_state({{"exp_avg.w", Tensor::zeros({4})}, {"exp_avg_sq.w", Tensor::zeros({2, 2})}}, 1);
    FAIL();
  } catch (const std::runtime_error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("exp_avg.w"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(4)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(2, 2)"), std::string::npos) << msg;
  }
  EXPECT_THROW(opt.load_state({{"exp_avg.w", Tensor::zeros({2, 2})}}, 1), std::runtime_error) << "incomplete";
  EXPECT_THROW(opt.load_state({{"master.w", Tensor::zeros({2, 2})}}, 1), std::runtime_error) << "f32 has no master";
}

TEST(L03_Optim, AdamWLoadStateRefusesStatesThatAreNotF32) {
  // An .optim file whose header says I32 over float bytes loaded as integers converted to floats.
  Tensor w = param({1, 2, 3, 4}, {2, 2});
  optim::AdamW opt({{"w", w}});
  try {
    opt.load_state({{"exp_avg.w", Tensor::from_ints({1, 2, 3, 4}, {2, 2})}, {"exp_avg_sq.w", Tensor::zeros({2, 2})}}, 1);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "AdamW::load_state: 'exp_avg.w' is i32; optimizer states are f32");
  }
  EXPECT_THROW(opt.load_state({{"exp_avg.w", Tensor::zeros({2, 2}, DType::bf16)}, {"exp_avg_sq.w", Tensor::zeros({2, 2})}}, 1),
               std::runtime_error);
  EXPECT_EQ(opt.state_tensors().size(), 0u);  // nothing was loaded
}

TEST(L03_Optim, AdamWLoadStateQuotesAtMost80CharactersOfAKey) {
  // L03_Fuzz.OptimState: an .optim file whose key was mutated into 15 000 characters
  // ('exp_avg.transformer.h.0.ln_[1,1,1,...') gave an error message quoting all of them.
  Tensor w = param({1, 2, 3, 4}, {2, 2});
  optim::AdamW opt({{"w", w}});
  try {
    opt.load_state({{"exp_avg.w" + std::string(15000, '1'), Tensor::zeros({2, 2})}}, 1);
    FAIL();
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("AdamW::load_state: unexpected key 'exp_avg.w1111"), std::string::npos) << msg.substr(0, 300);
    EXPECT_LT(msg.size(), 300u);
  }
}

TEST(L03_Optim, SGDMomentumMatchesFormula) {
  const float lr = 0.1f, mu = 0.9f, wd = 0.01f;
  Tensor w = param({1.0f, -2.0f}, {2});
  optim::SGD opt({{"w", w}}, {.lr = lr, .momentum = mu, .weight_decay = wd});
  std::vector<double> p{1.0, -2.0}, buf{0, 0};
  const std::vector<std::vector<float>> gs{{0.5f, -1.0f}, {0.25f, 0.75f}, {-1.0f, 0.0f}};
  for (int s = 0; s < 3; ++s) {
    w.set_grad(Tensor::from_vector(gs[s], {2}));
    opt.step();
    for (int i = 0; i < 2; ++i) {
      double d = gs[s][i] + wd * p[i];
      buf[i] = s == 0 ? d : mu * buf[i] + d;
      p[i] -= lr * buf[i];
    }
    auto v = w.to_vector();
    for (int i = 0; i < 2; ++i) EXPECT_NEAR(v[i], p[i], 1e-6) << "step " << s + 1;
  }
  auto st = opt.state_tensors();
  ASSERT_EQ(st.size(), 1u);
  EXPECT_EQ(st[0].first, "momentum_buffer.w");
  EXPECT_EQ(st[0].second.storage()->tag(), MemTag::optim);
}

TEST(L03_Optim, AdamWTrainsTinyGPTOnAFixedBatch) {
  nn::GPTConfig c;
  c.n_layer = 1, c.n_head = 2, c.n_embd = 8, c.block_size = 4, c.vocab_size = 5;
  Generator gen(1337);
  nn::GPT model(c, gen);
  optim::AdamW opt(model.named_parameters(), {.lr = 1e-2f, .weight_decay = 0.1f});
  Generator data(7);
  Tensor idx = random_tokens(4, 4, 5, data), tgt = random_tokens(4, 4, 5, data);
  float first = 0, last = 0;
  for (int it = 0; it < 30; ++it) {
    opt.zero_grad();
    Tensor loss = model.loss(idx, tgt);
    if (it == 0) first = loss.item();
    last = loss.item();
    autograd::backward(loss);
    optim::clip_grad_norm(opt.parameters(), 1.0);
    opt.step();
  }
  EXPECT_NEAR(first, std::log(5.0), 0.1);
  EXPECT_LT(last, first - 0.3f) << "first " << first << " last " << last;
}

TEST(L03_Optim, AdamWTrainsBf16GPTWith12BytesPerParam) {
  nn::GPTConfig c;
  c.n_layer = 1, c.n_head = 2, c.n_embd = 8, c.block_size = 4, c.vocab_size = 5;
  Generator gen(1337);
  nn::GPT model(c, gen);
  model.to(DType::bf16);
  const std::int64_t psi = model.num_parameters();
  const std::int64_t before = memory_stats().current(MemTag::optim);
  optim::AdamW opt(model.named_parameters(), {.lr = 1e-2f, .weight_decay = 0.1f});
  Generator data(7);
  Tensor idx = random_tokens(4, 4, 5, data), tgt = random_tokens(4, 4, 5, data);
  float first = 0, last = 0;
  for (int it = 0; it < 30; ++it) {
    opt.zero_grad();
    Tensor loss = model.loss(idx, tgt);
    (it == 0 ? first : last) = loss.item();
    autograd::backward(loss);
    opt.step();
    if (it == 0) {
      EXPECT_EQ(memory_stats().current(MemTag::optim) - before, 12 * psi) << "K = 12";
    }
  }
  for (auto& p : model.parameters()) EXPECT_EQ(p.dtype(), DType::bf16);
  EXPECT_LT(last, first - 0.3f) << "first " << first << " last " << last;
}

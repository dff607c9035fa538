// Lesson 13 — the GPT split over a tensor group (tp/gpt.h) on 2 and 4 ranks against the same GPT on one:
// the loss, every gradient (a replicated parameter's whole, a split one's slice), six AdamW steps, and the
// tensor group's all-reduces per step counted to the element against the formula.
//
// Rule for this file: every collective is called on every rank whatever happened before (EXPECT_*, never
// ASSERT_* ahead of a collective).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "autograd/functions.h"
#include "dist/process_group.h"
#include "nn/gpt.h"
#include "optim/adamw.h"
#include "test_util.h"
#include "minitorch/allocator.h"
#include "tp/gpt.h"
#include "tp/memory.h"
#include "tp/state.h"
#include "tp_mpi/tp_test_util.h"

namespace ag = minitorch::autograd;
namespace dist = minitorch::dist;
namespace nn = minitorch::nn;
namespace tp = minitorch::tp;
namespace optim = minitorch::optim;
using minitorch::DType;
using minitorch::Generator;
using minitorch::Tensor;
using mt_tp::max_abs_diff;

namespace {
nn::GPTConfig tiny() {
  nn::GPTConfig c;
  c.n_layer = 2, c.n_head = 4, c.n_embd = 32, c.block_size = 16, c.vocab_size = 63;  // V as the KJV's characters
  return c;
}

std::vector<std::int32_t> tokens(Generator& gen, std::int64_t n, std::int64_t V) {
  std::vector<std::int32_t> out;
  for (std::int64_t i = 0; i < n; ++i) out.push_back(static_cast<std::int32_t>(gen.next_below(static_cast<std::uint64_t>(V))));
  return out;
}

/// The slice of the full gradient `g` that rank r of t holds for the parameter `name` of shape `local`.
Tensor full_slice(const std::string& name, const Tensor& g, const minitorch::Shape& local, int r, int t,
                  const tp::VocabSlice& vocab) {
  if (g.shape() == local) return g;  // replicated
  if (name.find("wte") != std::string::npos || name.find("lm_head") != std::string::npos) {
    Tensor out = Tensor::zeros(local);
    if (vocab.valid > 0) out.narrow(0, 0, vocab.valid).copy_(g.narrow(0, vocab.start, vocab.valid));
    return out;
  }
  if (name.find("c_attn") != std::string::npos) return tp::split_rows(g, r, t, 3, "test");
  if (name.find("attn.c_proj.weight") != std::string::npos || name.find("mlp.c_proj.weight") != std::string::npos)
    return g.narrow(1, r * local[1], local[1]).contiguous();
  return tp::split_rows(g, r, t, 1, "test");  // c_fc
}
}  // namespace

TEST(L13_TensorParallelGpt, LossGradientsAndSixStepsEqualOneRank) {
  auto& w = dist::world();
  const int t = w.size(), r = w.rank();
  const nn::GPTConfig cfg = tiny();
  const std::int64_t B = 2, T = 16, L = cfg.n_layer, C = cfg.n_embd;
  Generator init(7), data(9);
  nn::GPT full(cfg, init);                 // the 1-rank model, on every rank
  tp::TensorParallelGPT model(full, w);    // its slices
  // Per rank: wte's Vp/t rows, the replicated wpe, LayerNorms and row-layer biases whole, the rest a t-th.
  EXPECT_EQ(model.num_parameters(), tp::parameters_per_rank(cfg, t));
  EXPECT_EQ(tp::parameters_per_rank(cfg, 1), full.num_parameters());  // t = 1: Ψ
  optim::AdamW opt_full(full.named_parameters(), {.lr = 3e-3f, .weight_decay = 0.1f});
  optim::AdamW opt_tp(model.named_parameters(), {.lr = 3e-3f, .weight_decay = 0.1f});
  for (int step = 0; step < 6; ++step) {
    const Tensor x = Tensor::from_ints(tokens(data, B * T, cfg.vocab_size), {B, T});
    const Tensor y = Tensor::from_ints(tokens(data, B * T, cfg.vocab_size), {B, T});
    Tensor loss_full = full.loss(x, y);
    ag::backward(loss_full);
    w.stats().reset();
    Tensor loss = model.loss(x, y);
    // forward: the embedding's g, two g's per block, the loss's three all-reduces of B·T
    const std::int64_t btc = dist::all_reduce_volume(B * T * C, t, r), bt = dist::all_reduce_volume(B * T, t, r);
    EXPECT_EQ(w.stats().calls, 1 + 2 * L + 3);
    EXPECT_EQ(w.stats().elements, (1 + 2 * L) * btc + 3 * bt);
    ag::backward(loss);
    // backward: two f's per block and lm_head's f (the embedding's g passes the gradient back as it is)
    EXPECT_EQ(w.stats().calls, (1 + 2 * L + 3) + (2 * L + 1));
    EXPECT_EQ(w.stats().elements, (1 + 2 * L) * btc + 3 * bt + (2 * L + 1) * btc);
    EXPECT_LT(std::fabs(loss.item() - loss_full.item()), 1e-5 * std::fabs(loss_full.item())) << "step " << step;
    if (step == 0) {  // every gradient: the slice of the 1-rank model's
      std::map<std::string, Tensor> full_grads;
      for (const auto& [name, p] : full.named_parameters()) full_grads[name] = p.grad();
      for (const auto& [name, p] : model.named_parameters()) {
        ASSERT_TRUE(full_grads.count(name)) << name;
        const Tensor want = full_slice(name, full_grads[name], p.shape(), r, t, model.parallel_wte->slice);
        EXPECT_LT(max_abs_diff(p.grad(), want), 1e-6) << name;
      }
    }
    opt_full.step();
    opt_full.zero_grad();
    opt_tp.step();
    opt_tp.zero_grad();
  }
  // After six steps the slices gathered back are the 1-rank model's state_dict (names, shapes, values), and a
  // 1-rank GPT that loads them computes the same loss: the consolidated checkpoint's content.
  const nn::NamedTensors gathered = tp::full_state_dict(model), want = full.state_dict();
  EXPECT_EQ(gathered.size(), want.size());
  for (std::size_t i = 0; i < std::min(gathered.size(), want.size()); ++i) {
    EXPECT_EQ(gathered[i].first, want[i].first);
    EXPECT_EQ(gathered[i].second.shape(), want[i].second.shape()) << want[i].first;
    // 1e-4: six AdamW steps of lr 3e-3 divide by sqrt(v), so a rounding-level gradient difference on a weight
    // whose gradient is near zero moves it by up to ~1e-5
    EXPECT_LT(max_abs_diff(gathered[i].second, want[i].second), 1e-4) << want[i].first;
  }
  Generator other(99);
  nn::GPT reloaded(cfg, other);
  reloaded.load_state_dict(gathered);
  const Tensor x = Tensor::from_ints(tokens(data, B * T, cfg.vocab_size), {B, T});
  const Tensor y = Tensor::from_ints(tokens(data, B * T, cfg.vocab_size), {B, T});
  ag::NoGradGuard no_grad;
  EXPECT_LT(std::fabs(reloaded.loss(x, y).item() - full.loss(x, y).item()), 1e-5);
  w.stats().reset();
}

// One block's activations per rank, to the byte: the bytes the forward's graph holds with L = 2 blocks minus
// with L = 1 (embedding and head cancel) = tp::block_activation_bytes, in f32 and bf16; with t = 1 (each rank
// alone) lesson 08's count.
TEST(L13_TensorParallelGpt, OneBlocksActivationsPerRankAreTheFormulaToTheByte) {
  auto& w = dist::world();
  auto alone = w.split(w.rank(), 0);
  const std::int64_t B = 2, T = 16;
  for (dist::ProcessGroup* group : {&w, alone.get()}) {
    for (DType dtype : {DType::f32, DType::bf16}) {
      std::int64_t held[2] = {0, 0};
      for (int layers = 1; layers <= 2; ++layers) {
        nn::GPTConfig cfg = tiny();
        cfg.n_layer = layers;
        Generator init(3), data(5);
        nn::GPT full(cfg, init);
        tp::TensorParallelGPT model(full, *group);
        model.to(dtype);
        const Tensor x = Tensor::from_ints(tokens(data, B * T, cfg.vocab_size), {B, T});
        const Tensor y = Tensor::from_ints(tokens(data, B * T, cfg.vocab_size), {B, T});
        const std::int64_t before = minitorch::memory_stats().current(minitorch::MemTag::activation);
        minitorch::TagScope scope(minitorch::MemTag::activation);
        Tensor loss = model.loss(x, y);  // the graph keeps what backward needs
        held[layers - 1] = minitorch::memory_stats().current(minitorch::MemTag::activation) - before;
      }
      const int e = dtype == DType::f32 ? 4 : 2;
      EXPECT_EQ(held[1] - held[0], tp::block_activation_bytes(tiny(), B, T, group->size(), e))
          << "t " << group->size() << ", " << minitorch::dtype_name(dtype);
    }
  }
}

TEST(L13_TensorParallelGpt, ASizeThatDoesNotDivideTheHeadsIsOneClearError) {
  auto& w = dist::world();
  nn::GPTConfig cfg = tiny();
  cfg.n_head = 2 * w.size() + 1, cfg.n_embd = 4 * cfg.n_head;
  Generator init(1);
  nn::GPT full(cfg, init);
  const std::string e = mt_test::error_of([&] { tp::TensorParallelGPT bad(full, w); });
  EXPECT_TRUE(mt_test::contains(e, "a tensor-parallel size of " + std::to_string(w.size()) + " must divide n_head = " +
                                       std::to_string(cfg.n_head)))
      << e;
}

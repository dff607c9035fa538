// Data parallelism (lesson 05), run under `mpirun -np 2` and `-np 4`: DDP on N ranks equals one rank
// with gradient accumulation, moves exactly the ring all-reduce volume per step, is silent before the
// last micro-step, and starts its bucket all-reduces while backward is still running.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "autograd/engine.h"
#include "data/text_dataset.h"
#include "dist/ddp.h"
#include "dist/process_group.h"
#include "minitorch/allocator.h"
#include "optim/sgd.h"
#include "test_util.h"
#include "runtime/engine.h"
#include "zero/stage0.h"
#include "train_util.h"

using namespace minitorch;

namespace {
// A small GPT whose every parameter size is a multiple of C = 32, so Ψ and every bucket divide by N.
std::string config_json(int micro, int accum, int stage = 0, std::int64_t bucket = 3000) {
  return R"({"train_micro_batch_size_per_gpu": )" + std::to_string(micro) +
         R"(, "gradient_accumulation_steps": )" + std::to_string(accum) +
         R"(, "gradient_clipping": 1.0,
    "optimizer": {"type": "AdamW", "params": {"lr": 3e-3, "weight_decay": 0.1}},
    "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 0, "warmup_max_lr": 3e-3, "warmup_num_steps": 5}},
    "zero_optimization": {"stage": )" + std::to_string(stage) + R"(, "reduce_bucket_size": )" + std::to_string(bucket) + R"(},
    "model": {"name": "baby", "n_layer": 2, "n_head": 2, "n_embd": 32, "block_size": 16},
    "training": {"steps": 20, "seed": 11}})";
}

using DdpRun = mt_test::TrainRun;

double rel(double a, double b) { return std::abs(a - b) / std::max({std::abs(a), std::abs(b), 1e-12}); }

void expect_equivalent(int micro, int accum) {
  auto& world = dist::world();
  const int N = world.size();
  // Each rank starts from a different init: the engine must broadcast rank 0's weights.
  DdpRun ddp(config_json(micro, accum), &world, 11 + 1000 * static_cast<std::uint64_t>(world.rank()));
  DdpRun ref(config_json(micro, accum * N), nullptr, 11);  // one rank, batch N·micro·accum by accumulation
  ASSERT_EQ(ddp.cfg.train_batch_size, ref.cfg.train_batch_size);
  ASSERT_GT(ddp.engine->strategy_as<zero::Stage0>()->ddp()->buckets().size(), 2u);
  for (int s = 0; s < 20; ++s) {
    const float a = ddp.engine->train_batch(*ddp.sampler), b = ref.engine->train_batch(*ref.sampler);
    EXPECT_LT(rel(a, b), 1e-5) << "step " << s << ": DDP " << a << " vs 1 rank " << b;
  }
  auto pa = ddp.params(), pb = ref.params();
  ASSERT_EQ(pa.size(), pb.size());
  // Relative in the 2-norm over all parameters: AdamW divides by sqrt(v), so an element whose gradient
  // is nearly zero turns float summation-order noise into a visible step; the norm weighs it fairly.
  double diff2 = 0, norm2 = 0, worst = 0;
  for (std::size_t i = 0; i < pa.size(); ++i) {
    const double d = static_cast<double>(pa[i]) - static_cast<double>(pb[i]);
    diff2 += d * d;
    norm2 += static_cast<double>(pb[i]) * pb[i];
    worst = std::max(worst, std::abs(d));
  }
  EXPECT_LT(std::sqrt(diff2 / norm2), 1e-5) << "|DDP - 1 rank| / |1 rank| over all parameters";
  EXPECT_LT(worst, 1e-4) << "largest difference of one parameter element";
}
// Clipping off. The gradient check below sees a sum instead of a mean directly; the SGD step after it
// (torch.optim.SGD, no momentum, no weight decay: p - lr * g) turns that factor N into N times too far
// a step, which AdamW's normalisation and clipping hide in the training tests above. (The engine's
// own optimizer is AdamW; the SGD here is built over the same parameters.)
std::string unclipped_json(int accum) {
  return R"({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": )" + std::to_string(accum) +
         R"(, "gradient_clipping": 0,
    "zero_optimization": {"stage": 0, "reduce_bucket_size": 3000},
    "model": {"name": "baby", "n_layer": 2, "n_head": 2, "n_embd": 32, "block_size": 16},
    "training": {"steps": 1, "seed": 11}})";
}

/// Every parameter's gradient, flattened in named_parameters() order.   -> (Ψ,)
std::vector<float> grads(const nn::GPT& model) {
  std::vector<float> all;
  for (auto& [name, p] : model.named_parameters()) {
    auto g = p.grad().to_vector();
    all.insert(all.end(), g.begin(), g.end());
  }
  return all;
}

/// max |a - b| / max(|b|_inf, tiny): one scale for the whole vector, so near-zero elements do not blow up.
double max_rel(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0, scale = 1e-12;
  for (float x : b) scale = std::max(scale, static_cast<double>(std::abs(x)));
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]));
  return worst / scale;
}
}  // namespace

TEST(L05_T5_DDP, GradientsAfterReductionAreTheOneRankGradientsOfTheGlobalBatch) {
  auto& world = dist::world();
  const int N = world.size();
  DdpRun ddp(unclipped_json(1), &world, 11 + 1000 * static_cast<std::uint64_t>(world.rank()));
  DdpRun ref(unclipped_json(N), nullptr, 11);  // the global batch of N micro-batches, by accumulation on one rank
  // Reference: the gradient of the mean loss over the N micro-batches (the engine divides by N).
  for (int m = 0; m < N; ++m) {
    data::Batch b = ref.sampler->sample(0, 0, 1, m, N);
    ref.engine->backward(ref.engine->forward(b.x, b.y));
    if (m + 1 < N) ref.engine->step();  // counts the micro-step: no update, no zeroing before the last
  }
  const std::vector<float> want = grads(ref.engine->model());
  // DDP: this rank's micro-batch, then the bucket all-reduces backward started, finished.
  data::Batch b = ddp.sampler->sample(world.rank(), 0, N, 0, 1);
  ddp.engine->backward(ddp.engine->forward(b.x, b.y));
  ddp.engine->strategy().reduce_gradients();
  const std::vector<float> got = grads(ddp.engine->model());
  ASSERT_EQ(got.size(), want.size());
  EXPECT_LT(max_rel(got, want), 1e-5) << "rank " << world.rank() << ": reduced gradients differ from the 1-rank "
                                         "gradients of the global batch (a sum instead of a mean is off by "
                                      << N << "x, a mean taken twice by 1/" << N << ")";
  // One SGD step each: identical parameters.
  optim::SGD ddp_sgd(ddp.engine->model().named_parameters(), {.lr = 0.5f});
  optim::SGD ref_sgd(ref.engine->model().named_parameters(), {.lr = 0.5f});
  ddp_sgd.step();
  ref_sgd.step();
  EXPECT_LT(max_rel(ddp.params(), ref.params()), 1e-6) << "rank " << world.rank();
}

TEST(L05_T4_DDP, PlanBucketsInReverseOrderAndBigParametersAlone) {
  auto r = dist::plan_buckets({5, 3, 10, 2, 2}, 6);
  std::vector<std::pair<std::size_t, std::size_t>> want{{0, 1}, {1, 2}, {2, 3}, {3, 5}};
  EXPECT_EQ(r, want);
  EXPECT_EQ(dist::plan_buckets({1, 1, 1}, 100).size(), 1u);
  // 0 (DeepSpeed accepts it): every parameter alone.
  std::vector<std::pair<std::size_t, std::size_t>> alone{{0, 1}, {1, 2}, {2, 3}};
  EXPECT_EQ(dist::plan_buckets({5, 3, 10}, 0), alone);
  EXPECT_TRUE(mt_test::contains(mt_test::error_of([] { dist::plan_buckets({1}, -1); }), "reduce_bucket_size"));
}

TEST(L05_DDP, NRanksEqualOneRankWithGradientAccumulationOver20Steps) { expect_equivalent(2, 1); }

TEST(L05_DDP, NRanksWithAccumulationEqualOneRankOver20Steps) { expect_equivalent(2, 2); }

TEST(L05_T5_DDP, BytesPerStepAreTheRingAllReduceAndNothingMovesBeforeTheLastMicroStep) {
  auto& world = dist::world();
  const std::int64_t N = world.size();
  const std::int64_t comm_before = memory_stats().current(MemTag::comm);
  DdpRun run(config_json(2, 3), &world, 11);
  const std::int64_t psi = run.psi();
  ASSERT_EQ(psi % N, 0);
  // DDP's only extra memory: the flat bucket buffers, Ψ f32 elements.
  EXPECT_EQ(memory_stats().current(MemTag::comm) - comm_before, psi * 4);
  const std::int64_t G = run.cfg.gradient_accumulation_steps;
  for (std::int64_t s = 0; s < 3; ++s) {
    SCOPED_TRACE("step " + std::to_string(s));
    const dist::CommStats before = world.stats();
    for (std::int64_t m = 0; m < G; ++m) {
      data::Batch b = run.sampler->sample(world.rank(), s, N, m, G);
      Tensor loss = run.engine->forward(b.x, b.y);
      run.engine->backward(loss);
      run.engine->step();
      if (m + 1 < G) {
        EXPECT_EQ(world.stats().bytes, before.bytes) << "step " << s << " micro " << m << " sent gradients";
        EXPECT_EQ(world.stats().calls, before.calls) << "step " << s << " micro " << m;
      }
    }
    const std::int64_t bytes = world.stats().bytes - before.bytes;
    EXPECT_EQ(bytes, 2 * (N - 1) * psi * 4 / N) << "step " << s << ": Ψ = " << psi << ", N = " << N;
    EXPECT_EQ(world.stats().elements - before.elements, 2 * (N - 1) * psi / N);
    EXPECT_EQ(world.stats().calls - before.calls, static_cast<std::int64_t>(run.engine->strategy_as<zero::Stage0>()->ddp()->buckets().size()));
    for (std::size_t i = before.log.size(); i < world.stats().log.size(); ++i)
      EXPECT_EQ(world.stats().log[i].op, "all_reduce");
  }
  // train_batch averages the loss over the ranks without recording it: only gradients count.
  const std::int64_t b0 = world.stats().bytes;
  run.engine->train_batch(*run.sampler);
  EXPECT_EQ(world.stats().bytes - b0, 2 * (N - 1) * psi * 4 / N);
}

TEST(L05_T5_DDP, BucketsFireDuringBackwardLastLayerFirst) {
  auto& world = dist::world();
  DdpRun run(config_json(2, 1, 0, /*bucket=*/2000), &world, 11);
  const auto* ddp = run.engine->strategy_as<zero::Stage0>()->ddp();
  ASSERT_NE(ddp, nullptr);
  const auto& buckets = ddp->buckets();
  ASSERT_GE(buckets.size(), 4u) << "a small reduce_bucket_size gives several buckets";
  EXPECT_EQ(buckets.front().names.front(), "transformer.ln_f.bias");  // reverse of named_parameters()
  EXPECT_EQ(buckets.back().names.back(), "transformer.wte.weight");
  std::int64_t total = 0;
  for (const auto& b : buckets) {
    total += b.numel();
    EXPECT_TRUE(b.numel() <= 2000 || b.params.size() == 1) << "bucket of " << b.numel() << " elements";
  }
  EXPECT_EQ(total, run.psi());
  run.engine->train_batch(*run.sampler);
  const dist::DDPTiming& t = ddp->timing();
  int in_backward = 0;
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    const auto& b = buckets[i];
    EXPECT_GE(b.launch_order, 0);
    if (b.launched_in_backward) ++in_backward;
    EXPECT_LE(b.launched_ms, t.backward_ms) << "bucket " << i;
  }
  EXPECT_EQ(in_backward, static_cast<int>(buckets.size())) << "every bucket's hook fires during backward";
  // The first bucket (the last layer's gradients) starts before the last one (the embeddings).
  EXPECT_LT(buckets.front().launch_order, buckets.back().launch_order);
  EXPECT_LT(buckets.front().launched_ms, buckets.back().launched_ms);
  EXPECT_LT(buckets.front().launched_ms, t.backward_ms);
}

TEST(L05_DDP, RanksHoldIdenticalParametersAfterTraining) {
  auto& world = dist::world();
  DdpRun run(config_json(2, 1), &world, 11 + static_cast<std::uint64_t>(world.rank()));
  for (int s = 0; s < 3; ++s) run.engine->train_batch(*run.sampler);
  auto mine = run.params();
  Tensor p = Tensor::from_vector(mine, {static_cast<std::int64_t>(mine.size())});
  Tensor r0 = p.clone();
  world.broadcast(r0, 0);
  EXPECT_EQ(r0.to_vector(), mine) << "rank " << world.rank() << " drifted from rank 0";
}

TEST(L05_DDP, ConfigReadForAnotherWorldSizeFails) {
  auto& world = dist::world();
  runtime::Config cfg = runtime::Config::from_json(config_json(2, 1), 1);
  Generator gen(1);
  auto ds = data::TextDataset::from_text(mt_test::verse_corpus(), data::make_tokenizer("char", mt_test::verse_corpus()), cfg.model.block_size);
  auto model = std::make_shared<nn::GPT>(runtime::model_config(cfg, ds.tokenizer().vocab_size()), gen);
  std::string err = mt_test::error_of([&] { runtime::initialize(model, cfg, &world); });
  EXPECT_TRUE(mt_test::contains(err, "process group has " + std::to_string(world.size()) + " ranks")) << err;
}

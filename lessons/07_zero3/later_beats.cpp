#include "later_beats.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "data/batch_sampler.h"
#include "runtime/estimate.h"
#include "runtime/formulas.h"

using namespace minitorch;

namespace lesson07 {

void table_beats(lesson::Beats& beats, double flat, int N) {
  // ------------------------------------------------------------------------------------------
  beats.beat("the 7.5B model on 1 to 1024 GPUs (the ZeRO paper's Table 1)",
             "The same formulas for the paper's model: Ψ = 7.5B in mixed precision, P = 2, G = 2 (bf16) and\n"
             "K = 12 (fp32 master weights, Adam m, v). runtime/formulas.h, as `minitorch-estimate --table1`\n"
             "prints it; the paper's printed cell in brackets.");
  const runtime::BytesPerParameter mixed = runtime::bytes_per_parameter(/*bf16=*/true);
  std::printf("GB per rank, psi = 7.5B\n%6s %9s %16s %16s %16s\n", "N", "stage 0", "ZeRO-1", "ZeRO-2", "ZeRO-3");
  bool agree = true;
  for (const runtime::PaperTable1Row& row : runtime::paper_table1()) {
    if (row.psi != 7.5e9) continue;
    std::printf("%6d %9.2f", row.world, runtime::model_state_bytes(0, row.psi, row.world, mixed).total() / 1e9);
    for (int stage = 1; stage <= 3; ++stage) {
      const double gb = runtime::model_state_bytes(stage, row.psi, row.world, mixed).total() / 1e9;
      const char* printed = row.gb[static_cast<std::size_t>(stage - 1)];
      agree = agree && runtime::agrees_with_printed(gb, printed);
      std::string cell = "[";
      cell += printed;
      cell += ']';
      std::printf(" %8.2f %-7s", gb, cell.c_str());
    }
    std::printf("\n");
  }
  std::printf("every cell within the last printed digit of the paper's: %s\n", agree ? "yes" : "NO");
  std::printf("the baby GPT here (fp32, N = %d): 16 * %.0f / %d = %.0f B per rank, as measured in beat 1\n", N, flat, N,
              runtime::model_state_bytes(3, flat, N, runtime::bytes_per_parameter(false)).total());

  // ------------------------------------------------------------------------------------------
  beats.beat("PyTorch FSDP's sharding strategies",
             "FSDP names what it shards by a strategy (FSDP1's ShardingStrategy) or by when it reshards\n"
             "(FSDP2's fully_shard(reshard_after_forward=...)). Three strategies are ZeRO stages; the\n"
             "per-rank bytes below are the baby GPT's on these ranks, from the same formulas.");
  const runtime::BytesPerParameter fp32 = runtime::bytes_per_parameter(false);
  auto bytes = [&](int stage, int ranks) { return runtime::model_state_bytes(stage, flat, ranks, fp32).total(); };
  // Ψ is two bytes in UTF-8: printf's widths count bytes, so the formulas are padded by hand.
  auto cell = [](std::string s) {
    for (std::size_t shown = s.size() - static_cast<std::size_t>(std::count(s.begin(), s.end(), '\xce')); shown < 16;
         ++shown)
      s += ' ';
    return s;
  };
  std::printf("%-21s %-27s %11s   %s%s\n", "FSDP", "ZeRO", "B per rank", cell("model states").c_str(), "sent per step");
  std::printf("%-21s %-27s %11.0f   %s%s\n", "NO_SHARD", "stage 0 = DDP (lesson 05)", bytes(0, N), cell("(P+G+K)Ψ").c_str(),
              "2(N-1)/N Ψ: all-reduce");
  std::printf("%-21s %-27s %11.0f   %s%s\n", "(none)", "stage 1 (lesson 06)", bytes(1, N), cell("(P+G)Ψ + KΨ/N").c_str(),
              "2(N-1)/N Ψ");
  std::printf("%-21s %-27s %11.0f   %s%s\n", "SHARD_GRAD_OP", "stage 2 (lesson 06)", bytes(2, N), cell("PΨ + (G+K)Ψ/N").c_str(),
              "2(N-1)/N Ψ");
  std::printf("%-21s %-27s %11.0f   %s%s\n", "FULL_SHARD", "stage 3 (this lesson)", bytes(3, N), cell("(P+G+K)Ψ/N").c_str(),
              "3(N-1)/N Ψ");
  if (N % 2 == 0 && N > 2)
    std::printf("%-21s %-27s %11.0f   %s%s\n", ("HYBRID_SHARD " + std::to_string(N / 2) + "x2").c_str(),
                "stage 3 in each node of 2", bytes(3, 2), cell("(P+G+K)Ψ/2").c_str(), "3(2-1)/2 Ψ + all-reduce of Ψ/2");
  std::printf("where they differ:\n"
              "  ZeRO-1 has no FSDP strategy (PyTorch's ZeroRedundancyOptimizer beside DDP is one).\n"
              "  SHARD_GRAD_OP frees the parameters after backward and gathers them before the next forward;\n"
              "    ZeRO-2 keeps them whole and gathers the updated shards after the step: the same bytes.\n"
              "  FSDP1 flattens each wrapped module into one FlatParameter cut into N equal shards (our units);\n"
              "    FSDP2 shards every parameter on dim 0 (a DTensor, Shard(0)).\n"
              "  FSDP2 keeps the root module gathered after forward (reshard_after_forward=None); we release\n"
              "    the outer unit and gather it again first thing in backward.\n");
}

void train_beat(dist::ProcessGroup& world, std::int64_t steps, std::int64_t eval_iters, const data::TextDataset& ds,
                const std::function<std::unique_ptr<runtime::Engine>(int stage)>& make_engine) {
  const int N = world.size();
  // Both engines at once, one step each in turn: the curves come out side by side as they train.
  std::unique_ptr<runtime::Engine> engines[2] = {make_engine(3), make_engine(0)};  // ZeRO-3, lesson 05's DDP
  const runtime::Config& cfg = engines[0]->config();
  const std::int64_t T = cfg.model.block_size;
  data::BatchSampler sampler(ds.tokens_ptr(data::Split::train), cfg.train_micro_batch_size_per_gpu, T, cfg.training.seed);
  double worst = 0, ms[2] = {0, 0};
  std::printf("step    ZeRO-3       DDP   rel. diff\n");
  for (std::int64_t s = 1; s <= steps; ++s) {
    float loss[2];
    for (int e = 0; e < 2; ++e) {
      const auto t0 = std::chrono::steady_clock::now();
      loss[e] = engines[e]->train_batch(sampler);  // the mean over the ranks
      ms[e] += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
    const double rel = std::abs(loss[0] - loss[1]) / std::abs(loss[1]);
    worst = std::max(worst, rel);
    if (s % 20 == 0 || s == 1 || s == steps) {
      std::printf("%4lld  %8.4f  %8.4f   %.1e\n", static_cast<long long>(s), double(loss[0]), double(loss[1]), rel);
      std::fflush(stdout);
    }
  }
  data::BatchSampler train_eval(ds.tokens_ptr(data::Split::train), 32, T, cfg.training.seed + 2);  // lesson 05's
  data::BatchSampler val_eval(ds.tokens_ptr(data::Split::val), 32, T, cfg.training.seed + 1);
  float train[2], val[2];
  for (int e = 0; e < 2; ++e) train[e] = engines[e]->evaluate(train_eval, eval_iters), val[e] = engines[e]->evaluate(val_eval, eval_iters);
  std::printf("ZeRO-3 on %d ranks: train loss %.4f, val loss %.4f\n", N, double(train[0]), double(val[0]));
  std::printf("DDP on %d ranks (lesson 05): train loss %.4f, val loss %.4f\n", N, double(train[1]), double(val[1]));
  std::printf("largest relative loss difference over %lld steps: %.1e\n", static_cast<long long>(steps), worst);
  std::printf("%.0f ms/step at stage 3, %.0f ms/step with DDP (%d ranks sharing this machine's cores: noisy)\n",
              ms[0] / double(steps), ms[1] / double(steps), N);
}

}  // namespace lesson07

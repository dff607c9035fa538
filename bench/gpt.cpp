// bench-gpt: median time of one training step (forward + backward + AdamW) of the GPT on one rank,
// all cores, fp32, random token ids. Prints one line per model:
//   (a) baby  (L=4, H=4, C=128, T=64, V=65),  B=32
//   (b) gpt2  (L=12, H=12, C=768, V=50257) at B=4, T=64
// The PyTorch reference with the same shapes and step is bench/pytorch_gpt.py (make bench-pytorch);
// bench/README.md has the side-by-side figures.
// Usage: bench-gpt [--steps N] [--warmup W] [--only baby|gpt2] [--threads N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "tools/cli/cli.h"

#include "autograd/engine.h"
#include "minitorch/parallel.h"
#include "nn/gpt.h"
#include "optim/adamw.h"

using namespace minitorch;

namespace {
struct Result {
  double median_s, min_s;
};

Result bench(nn::GPTConfig cfg, std::int64_t B, std::int64_t T, int steps, int warmup) {
  Generator gen(1);
  std::shared_ptr<nn::GPT> model;
  {
    TagScope scope(MemTag::param);
    model = std::make_shared<nn::GPT>(cfg, gen);
  }
  optim::AdamW opt(optim::decay_groups(model->named_parameters(), 6e-4f, 0.1f), {.lr = 6e-4f, .weight_decay = 0.1f});
  std::vector<std::int32_t> ids(static_cast<std::size_t>(B * T)), tg(ids.size());
  for (auto& v : ids) v = static_cast<std::int32_t>(gen.next_below(static_cast<std::uint64_t>(cfg.vocab_size)));
  for (auto& v : tg) v = static_cast<std::int32_t>(gen.next_below(static_cast<std::uint64_t>(cfg.vocab_size)));
  Tensor x = Tensor::from_ints(ids, {B, T}), y = Tensor::from_ints(tg, {B, T});
  std::vector<double> times;
  for (int i = 0; i < warmup + steps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    {
      TagScope scope(MemTag::activation);
      autograd::backward(model->loss(x, y));
    }
    opt.step();
    opt.zero_grad();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (i >= warmup) times.push_back(s);
  }
  std::sort(times.begin(), times.end());
  return {times[times.size() / 2], times.front()};
}

void report(const char* label, const nn::GPTConfig& cfg, std::int64_t B, std::int64_t T, int steps, int warmup) {
  Result r = bench(cfg, B, T, steps, warmup);
  std::printf("%-6s %-44s B=%-3lld T=%-4lld params %8.2fM | median step %8.3f s (min %.3f, %d steps) | %9.0f tok/s\n",
              label, cfg.describe().c_str(), static_cast<long long>(B), static_cast<long long>(T),
              static_cast<double>(cfg.num_parameters()) / 1e6, r.median_s, r.min_s, steps,
              static_cast<double>(B * T) / r.median_s);
  std::fflush(stdout);
}
}  // namespace

int main(int argc, char** argv) {
  cli::Parser parser{"bench-gpt: one-rank training-step time of the baby and gpt2 GPTs"};
  int steps = 5, warmup = 1, threads = 0;
  std::string only;
  parser.option("--steps", steps, "timed steps (median reported)")->check(cli::positive_number());
  parser.option("--warmup", warmup, "untimed steps first")->check(cli::non_negative_number());
  parser.option("--only", only, "baby or gpt2")->check(cli::one_of({"baby", "gpt2"}));
  parser.option("--threads", threads, "threads (default: all cores)");
  if (int status = parser.parse(argc, argv); status >= 0) return status;
  if (threads > 0) set_num_threads(threads);
  std::printf("bench-gpt: fp32, %d threads, forward + backward + AdamW per step\n", num_threads());
  if (only.empty() || only == "baby") {
    auto cfg = nn::GPTConfig::named("baby");
    cfg.vocab_size = 65;
    report("baby", cfg, 32, 64, steps * 4, warmup);
  }
  if (only.empty() || only == "gpt2") report("gpt2", nn::GPTConfig::named("gpt2"), 4, 64, steps, warmup);
  return 0;
}

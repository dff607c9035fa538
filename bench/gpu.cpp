// bench-gpu: one training step (forward + backward + AdamW) of the GPT-2 124M shape on one GPU, bf16 weights
// with f32 master weights in AdamW, B x T = 8 x 1024 by default. Prints the median step time, tokens/s
// and MFU: model FLOPs per token (6 N + 12 L C T, nanoGPT's estimate_mfu) times tokens/s over the
// card's dense bf16 peak (--peak-tflops; 989 for an H100 or H200 SXM). PyTorch eager on the same shapes,
// and cuBLAS's own GEMM rate, come from bench/pytorch_gpu.py in the same GPU check (tools/gpu_check.sh).
// --profile N: then N more steps with every kernel timed (cuda/op_profile.h), the table per step.
// Usage: bench-gpu [--steps N] [--warmup W] [--batch B] [--seq T] [--fp32] [--peak-tflops P] [--profile N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "tools/cli/cli.h"

#include "autograd/engine.h"
#include "nn/gpt.h"
#include "optim/adamw.h"
#if MINITORCH_WITH_CUDA
#include "cuda/cuda.h"
#include "cuda/op_profile.h"
#endif

using namespace minitorch;

int main(int argc, char** argv) {
  cli::Parser parser{"bench-gpu: a GPT-2 124M training step on one GPU (bf16, f32 master weights)"};
  int steps = 10, warmup = 2, profile_steps = 0;
  std::int64_t B = 8, T = 1024;
  bool fp32 = false;
  double peak_tflops = 989.0;
  parser.option("--steps", steps, "timed steps (median reported)")->check(cli::positive_number());
  parser.option("--warmup", warmup, "untimed steps first")->check(cli::non_negative_number());
  parser.option("--batch", B, "micro-batch size B")->check(cli::positive_number());
  parser.option("--seq", T, "sequence length T (at most 1024)")->check(cli::range(1, 1024));
  parser.flag("--fp32", fp32, "f32 weights and activations instead of bf16");
  parser.option("--peak-tflops", peak_tflops, "the card's dense peak in TFLOP/s for the MFU")->check(cli::positive_number());
  parser.option("--profile", profile_steps, "then this many steps with every kernel timed")
      ->check(cli::non_negative_number());
  if (int status = parser.parse(argc, argv); status >= 0) return status;
#if !MINITORCH_WITH_CUDA
  std::fprintf(stderr, "bench-gpu: this build has no CUDA layer (nvcc not found, or -DMINITORCH_CUDA=OFF)\n");
  return 2;
#else
  std::string why;
  if (!cuda::init(&why)) {
    std::fprintf(stderr, "bench-gpu: no usable CUDA device: %s\n", why.c_str());
    return 2;
  }
  auto cfg = nn::GPTConfig::named("gpt2");
  cfg.vocab_size = 50304;  // nanoGPT's padded vocabulary (a multiple of 64), as bench/pytorch_gpu.py
  const DType dtype = fp32 ? DType::f32 : DType::bf16;
  Generator gen(1);
  nn::GPT model(cfg, gen);
  model.to(dtype);
  model.to(Device::cuda());
  optim::AdamW opt(optim::decay_groups(model.named_parameters(), 6e-4f, 0.1f), {.lr = 6e-4f, .weight_decay = 0.1f});
  std::vector<std::int32_t> ids(static_cast<std::size_t>(B * T)), tg(ids.size());
  for (auto& v : ids) v = static_cast<std::int32_t>(gen.next_below(50257));
  for (auto& v : tg) v = static_cast<std::int32_t>(gen.next_below(50257));
  Tensor x = Tensor::from_ints(ids, {B, T}).to(Device::cuda()), y = Tensor::from_ints(tg, {B, T}).to(Device::cuda());
  std::vector<double> times;
  float last_loss = 0;
  auto step = [&] {  // seconds of one training step, its loss in last_loss
    const auto t0 = std::chrono::steady_clock::now();
    Tensor loss = model.loss(x, y);
    autograd::backward(loss);
    opt.step();
    opt.zero_grad();
    last_loss = loss.to(Device::cpu()).to(DType::f32).item();  // waits for the step's kernels
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  for (int i = 0; i < warmup + steps; ++i) {
    const double s = step();
    if (i >= warmup) times.push_back(s);
  }
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2], tok_s = static_cast<double>(B * T) / median;
  const double N = static_cast<double>(cfg.num_parameters());
  const double flops_per_token = 6 * N + 12.0 * cfg.n_layer * cfg.n_embd * static_cast<double>(T);
  const double tflops = flops_per_token * tok_s / 1e12;
  std::printf("bench-gpu: minitorch %s, %s B=%lld T=%lld params %.2fM | median step %.4f s (min %.4f, %d steps) | "
              "%.0f tok/s | %.1f TFLOP/s | MFU %.2f%% of %.0f | loss %.4f | reserved %.2f GiB\n",
              dtype_name(dtype), cfg.describe().c_str(), static_cast<long long>(B), static_cast<long long>(T), N / 1e6,
              median, times.front(), steps, tok_s, tflops, 100 * tflops / peak_tflops, peak_tflops, last_loss,
              static_cast<double>(cuda::reserved_bytes()) / (1 << 30));
  if (profile_steps > 0) {
    double wall = 0;
    cuda::OpProfile prof;
    for (int i = 0; i < profile_steps; ++i) {
      wall += step();
      prof.collect();
    }
    std::printf("bench-gpu: profile of %d steps (every kernel between two CUDA events; the step %.1f ms with "
                "the events, %.1f ms without):\n",
                profile_steps, 1e3 * wall / profile_steps, 1e3 * median);
    prof.print(stdout, profile_steps);
  }
  return 0;
#endif
}

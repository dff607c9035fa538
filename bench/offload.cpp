// bench-offload: the host AdamW that ZeRO-Offload runs over a rank's shard (minitorch/host_adamw.h), in
// elements per second. build/bin/bench-offload [--elements N] [--rounds R] [--steps S] [--threads T]
// One shard of N elements (default 8M = 8 388 608), all cores; each round times S steps of every variant
// in turn (a busy moment of the shared machine hits them alike) and the line gives the median of R rounds:
//   minitorch f32        host_adamw_step, f32 master, m, v and gradient           28 B/element moved
//   minitorch f32+bf16   the same, and the bf16 copy of the new master written    30 B/element
//   lab kernel f32       ops::adamw_step (minitorch/cpu_adamw.cpp) on the same    28 B/element
//   lab kernel + copy    ops::adamw_step, then the bf16 copy as a second pass     30 B/element (what it needs)
//   memory, no math      p += g, m += g, v += g over 4 other arrays: the same 28 B/element without AdamW's
//                        arithmetic, what the memory allows this access pattern (the ceiling for the first)
// GB/s counts the bytes each element must move (read p, g, m, v; write p, m, v; write the copy), not the
// cache's extra traffic. bench/pytorch_adamw.py prints the same line for torch.optim.AdamW; make
// bench-offload runs both and prints the ratio (bench/README.md, "Offload").
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "minitorch/host_adamw.h"
#include "minitorch/ops.h"
#include "minitorch/parallel.h"
#include "minitorch/random.h"
#include "minitorch/tensor.h"

using namespace minitorch;

namespace {

struct Variant {
  std::string label;
  double bytes_per_element;
  std::function<void(std::int64_t step)> run;  // one optimizer step (t = step)
  std::vector<double> rates;                   // elements/s, one per round
};

}  // namespace

int main(int argc, char** argv) {
  const long long n = bench::arg(argc, argv, "--elements", 8LL << 20);
  const long long rounds = bench::arg(argc, argv, "--rounds", 3), steps = bench::arg(argc, argv, "--steps", 20);
  const long long threads = bench::arg(argc, argv, "--threads", std::thread::hardware_concurrency());
  set_num_threads(static_cast<int>(threads));

  // The shard: master weights N(0, 1), gradients N(0, 1); m and v from zero (the first step fills them).
  Generator gen(5);
  Tensor p = Tensor::randn({n}, gen), grad = Tensor::randn({n}, gen), m = Tensor::zeros({n}), v = Tensor::zeros({n});
  Tensor copy = Tensor::zeros({n}, DType::bf16);
  Tensor p2 = Tensor::zeros({n}), g2 = Tensor::randn({n}, gen), m2 = Tensor::zeros({n}), v2 = Tensor::zeros({n});
  // The hyper-parameters of bench/pytorch_adamw.py.
  auto hp = [](std::int64_t t) { return ops::AdamWParams{1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, t}; };
  std::vector<Variant> variants;
  variants.push_back({"minitorch f32", 28, [&](std::int64_t t) { host_adamw_step(p, grad, m, v, hp(t)); }, {}});
  variants.push_back({"minitorch f32+bf16", 30, [&](std::int64_t t) { host_adamw_step(p, grad, m, v, hp(t), &copy); }, {}});
  variants.push_back({"lab kernel f32", 28, [&](std::int64_t t) { ops::adamw_step(p, grad, m, v, hp(t)); }, {}});
  variants.push_back({"lab kernel + copy", 30, [&](std::int64_t t) {
    ops::adamw_step(p, grad, m, v, hp(t));
    copy.copy_(p);
  }, {}});
  variants.push_back({"memory, no math", 28, [&](std::int64_t) {
    float *pp = static_cast<float*>(p2.raw_data()), *pm = static_cast<float*>(m2.raw_data());
    float* pv = static_cast<float*>(v2.raw_data());
    const float* pg = static_cast<const float*>(g2.raw_data());
    parallel_for(n, 1 << 15, [&](std::int64_t s, std::int64_t e) {
      for (std::int64_t i = s; i < e; ++i) {
        pp[i] += pg[i];
        pm[i] += pg[i];
        pv[i] += pg[i];
      }
    });
  }, {}});

  std::int64_t t = 0;
  for (auto& var : variants) var.run(++t);  // warm-up: pages touched, m and v filled, threads started
  for (long long r = 0; r < rounds; ++r)
    for (auto& var : variants) {
      var.run(++t);
      const auto t0 = std::chrono::steady_clock::now();
      for (long long s = 0; s < steps; ++s) var.run(++t);
      const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      var.rates.push_back(static_cast<double>(n) * steps / sec);
    }

  std::printf("bench-offload: host AdamW over one shard of %lld elements, %lld threads, median of %lld rounds of "
              "%lld steps (host_adamw_step: %d-lane vector path)\n",
              n, threads, rounds, steps, host_adamw_vector_lanes());
  for (const auto& var : variants) {
    std::string each;
    for (double x : var.rates) each += (each.empty() ? "" : " / ") + std::to_string(static_cast<long long>(x / 1e6));
    const double med = bench::median(var.rates);
    std::printf("adamw  %-20s %10lld elements  median %8.1f Melem/s  (%s)  %6.1f GB/s at %.0f B/element\n",
                var.label.c_str(), n, med / 1e6, each.c_str(), med * var.bytes_per_element / 1e9,
                var.bytes_per_element);
  }
  return 0;
}

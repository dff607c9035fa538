// bench-matmul: GFLOP/s of the matrix products of one GPT-2 (124M) training step at B=4, T=64
// (M = B*T = 256 rows), on 1 and 2 threads, through ops::matmul (the path training takes).
//
//   build/bin/bench-matmul [--reps N] [--threads 1,2] [--splits]
//
// Each Linear y = x W^T (W: (out, in), as in nanoGPT) costs three products per step:
//   forward  y  = x  @ W^T   matmul(x, W, false, true)     (256, in)  x (out, in)^T
//   backward dx = dy @ W     matmul(dy, W)                 (256, out) x (out, in)
//   backward dW = dy^T @ x   matmul(dy, x, true, false)    (256, out)^T x (256, in)
// --splits also times the raw kernel (cpu::gemm) with each way of sharing one product between
// threads (Eigen's own split, column slices, row slices) - how GemmSplit::automatic was chosen.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "minitorch/cpu_backend.h"
#include "minitorch/ops.h"
#include "minitorch/parallel.h"
#include "minitorch/random.h"
#include "minitorch/tensor.h"

using namespace minitorch;

namespace {
double median_seconds(int reps, const std::function<void()>& fn) {
  fn();  // warm up (page faults, packing buffers)
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Product {
  std::string name;
  std::int64_t batch, M, K, N;
  bool ta, tb;
  int per_step;  // how many times one training step runs it
};

Tensor stored(Generator& g, std::int64_t batch, std::int64_t rows, std::int64_t cols, bool t) {
  Shape s;
  if (batch > 1) s.push_back(batch);
  s.push_back(t ? cols : rows);
  s.push_back(t ? rows : cols);
  return Tensor::randn(s, g);
}
}  // namespace

int main(int argc, char** argv) {
  int reps = 7;
  std::vector<int> threads = {1, 2};
  bool splits = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--threads" && i + 1 < argc) {
      threads.clear();
      for (char* p = std::strtok(argv[++i], ","); p; p = std::strtok(nullptr, ",")) threads.push_back(std::atoi(p));
    } else if (a == "--splits") {
      splits = true;
    } else {
      std::fprintf(stderr, "usage: %s [--reps N] [--threads 1,2] [--splits]\n", argv[0]);
      return 2;
    }
  }
  const std::int64_t BT = 256, C = 768, V = 50257, L = 12, H = 12, T = 64, hs = C / H;
  std::vector<Product> prods;
  for (auto [name, in, out] : {std::tuple{"attn.c_attn", C, 3 * C}, {"attn.c_proj", C, C}, {"mlp.c_fc", C, 4 * C},
                               {"mlp.c_proj", 4 * C, C}, {"lm_head", C, V}}) {
    const int n = std::string(name) == "lm_head" ? 1 : static_cast<int>(L);
    prods.push_back({std::string(name) + " fwd", 1, BT, in, out, false, true, n});
    prods.push_back({std::string(name) + " dx", 1, BT, out, in, false, false, n});
    prods.push_back({std::string(name) + " dW", 1, out, BT, in, true, false, n});
  }
  const std::int64_t BH = 4 * H;
  prods.push_back({"attn q@k^T", BH, T, hs, T, false, true, static_cast<int>(L)});       // fwd; dq, dk alike
  prods.push_back({"attn att@v", BH, T, T, hs, false, false, static_cast<int>(3 * L)});  // fwd, datt, dv

  std::printf("bench-matmul: f32 GFLOP/s (2*M*N*K / median of %d runs) through ops::matmul\n", reps);
  std::printf("%-20s %6s %6s %6s %6s", "product", "batch", "M", "K", "N");
  for (int t : threads) std::printf("  %2d thread%s", t, t == 1 ? " " : "s");
  std::printf("\n");
  Generator g(1);
  std::vector<double> step_seconds(threads.size(), 0.0);
  for (const auto& p : prods) {
    Tensor a = stored(g, p.batch, p.M, p.K, p.ta), b = stored(g, p.batch, p.K, p.N, p.tb);
    const double flop = 2.0 * p.batch * p.M * p.N * p.K;
    std::printf("%-20s %6lld %6lld %6lld %6lld", p.name.c_str(), (long long)p.batch, (long long)p.M, (long long)p.K,
                (long long)p.N);
    for (std::size_t ti = 0; ti < threads.size(); ++ti) {
      set_num_threads(threads[ti]);
      const double s = median_seconds(reps, [&] { ops::matmul(a, b, p.ta, p.tb); });
      step_seconds[ti] += s * p.per_step;
      std::printf("  %9.1f", flop / s / 1e9);
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  std::printf("matmul time of one training step (forward + backward):");
  for (std::size_t ti = 0; ti < threads.size(); ++ti) std::printf("  %.3f s (%d thread%s)", step_seconds[ti], threads[ti], threads[ti] == 1 ? "" : "s");
  std::printf("\n");

  if (splits) {
    std::printf("\nraw cpu::gemm, output preallocated, on %d threads: GFLOP/s per way of splitting one product\n",
                threads.back());
    std::printf("%-20s %9s %9s %9s %9s\n", "product", "automatic", "eigen", "cols", "rows");
    set_num_threads(threads.back());
    for (const auto& p : prods) {
      if (p.batch != 1) continue;
      Tensor a = stored(g, 1, p.M, p.K, p.ta), b = stored(g, 1, p.K, p.N, p.tb);
      std::vector<float> c(static_cast<std::size_t>(p.M * p.N));
      const std::int64_t a_rs = p.ta ? 1 : p.K, a_cs = p.ta ? p.M : 1, b_rs = p.tb ? 1 : p.N, b_cs = p.tb ? p.K : 1;
      std::printf("%-20s", p.name.c_str());
      for (auto split : {cpu::GemmSplit::automatic, cpu::GemmSplit::eigen, cpu::GemmSplit::cols, cpu::GemmSplit::rows}) {
        const double s = median_seconds(reps, [&] {
          cpu::gemm(p.M, p.N, p.K, a.data<float>(), a_rs, a_cs, b.data<float>(), b_rs, b_cs, c.data(), split);
        });
        std::printf(" %9.1f", 2.0 * p.M * p.N * p.K / s / 1e9);
      }
      std::printf("\n");
      std::fflush(stdout);
    }
  }
  return 0;
}

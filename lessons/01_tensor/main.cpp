// Lesson 01: the tensor. build/bin/lesson-01 [--auto] [--quick] [--beat N] (make lesson-01)
// A tensor is a handle: shared storage + shape + strides + offset + dtype. Views move no bytes,
// bf16 halves the bytes, every byte is accounted under a tag, and matmul is where the time goes.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <thread>
#include <vector>

#include "common/beat.h"
#include "minitorch/allocator.h"
#include "minitorch/ops.h"
#include "minitorch/parallel.h"
#include "minitorch/random.h"
#include "minitorch/tensor.h"

using namespace minitorch;

namespace {
// Prints a 2-D tensor element by element, through its strides.
void show(const char* name, const Tensor& t) {
  std::printf("%s = %s  strides %s  offset %lld  contiguous %s\n", name, t.describe().c_str(),
              shape_str(t.strides()).c_str(), static_cast<long long>(t.offset()), t.is_contiguous() ? "yes" : "no");
  for (std::int64_t i = 0; i < t.size(0); ++i) {
    std::printf("    [");
    for (std::int64_t j = 0; j < t.size(1); ++j) std::printf(" %5.1f", t.at({i, j}));
    std::printf(" ]\n");
  }
}
// The raw storage of an f32 tensor, in memory order.
void show_storage(const char* name, const Tensor& t) {
  const float* p = static_cast<const float*>(t.storage()->data());
  std::printf("%s storage (%zu bytes at %p):", name, t.storage()->nbytes(), t.storage()->data());
  for (std::size_t k = 0; k < t.storage()->nbytes() / sizeof(float); ++k) std::printf(" %g", p[k]);
  std::printf("\n");
}
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

// What the beats hand on: x and its transposed view, and the random stream.
struct State {
  Tensor x, xt;
  Generator gen{1337};
};

void storage_shape_strides_offset(lesson::Beats& beats, State& s) {
  beats.beat("storage, shape, strides, offset",
             "A tensor is a view onto a flat block of bytes. Element (i, j) lives at\n"
             "storage[offset + i*stride0 + j*stride1]. Row-major strides of (2, 3) are (3, 1).");
  s.x = Tensor::from_vector({0, 1, 2, 3, 4, 5}, {2, 3});  // (2, 3) f32
  const Tensor& x = s.x;
  show("x", x);
  show_storage("x", x);
  std::printf("x.at({1, 2}) = %g = storage[%lld + 1*%lld + 2*%lld]\n", x.at({1, 2}), static_cast<long long>(x.offset()),
              static_cast<long long>(x.strides()[0]), static_cast<long long>(x.strides()[1]));
}

void views_share_storage(lesson::Beats& beats, State& s) {
  beats.beat("views share storage",
             "transpose() swaps the strides and copies nothing; narrow() moves the offset.\n"
             "Writing through a view writes into the original.");
  const Tensor& x = s.x;
  s.xt = x.transpose(0, 1);  // (3, 2) view, strides (1, 3)
  const Tensor& xt = s.xt;
  show("xt = x.transpose(0, 1)", xt);
  std::printf("same storage as x: %s\n", xt.storage() == x.storage() ? "yes" : "no");
  Tensor row2 = xt.narrow(0, 2, 1);  // (1, 2): row 2 of xt = column 2 of x, offset 2
  show("row2 = xt.narrow(0, 2, 1)", row2);
  row2.fill_(-1.f);  // writes storage[2] and storage[5]
  std::printf("after row2.fill_(-1):\n");
  show("x", x);
  show_storage("x", x);
}

void contiguous_copies(lesson::Beats& beats, State& s) {
  beats.beat("contiguous() copies",
             "Ops want row-major memory. contiguous() of a transposed view allocates new storage\n"
             "and copies the elements in the view's order; view() refuses a non-contiguous tensor.");
  const Tensor &x = s.x, &xt = s.xt;
  Tensor c = xt.contiguous();  // (3, 2), strides (2, 1), new storage
  show("c = xt.contiguous()", c);
  show_storage("c", c);
  std::printf("same storage as x: %s\n", c.storage() == x.storage() ? "yes" : "no");
  try {
    xt.view({6});
  } catch (const std::invalid_argument& e) {
    std::printf("xt.view({6}) throws: %s\n", e.what());
  }
  std::printf("xt.reshape({6}) copies instead: %s, shares storage with x: %s\n", xt.reshape({6}).describe().c_str(),
              xt.reshape({6}).storage() == x.storage() ? "yes" : "no");
  std::printf("x.view({6}) is free (x is contiguous), shares storage with x: %s\n",
              x.view({6}).storage() == x.storage() ? "yes" : "no");
}

void bf16_is_a_storage_type(lesson::Beats& beats, State& s) {
  beats.beat("bf16 is a storage type",
             "bf16 keeps f32's 8 exponent bits and 7 of its 23 mantissa bits: the top half of an f32.\n"
             "8 significant bits: rounding to nearest even costs at most 2^-8 = 0.39% relative error.\n"
             "Bytes are halved; kernels widen bf16 to f32 to compute.");
  Tensor tenth = Tensor::scalar(0.1f);
  Tensor tenth16 = tenth.to(DType::bf16);
  std::printf("0.1 as f32  = %.12f\n", static_cast<double>(tenth.item()));
  std::printf("0.1 as bf16 = %.12f  (bits 0x%04x; relative error %.2e)\n", static_cast<double>(tenth16.item()),
              f32_to_bf16(0.1f), static_cast<double>((tenth16.item() - 0.1f) / 0.1f));
  Tensor big = Tensor::randn({1024, 1024}, s.gen);  // (1024, 1024) f32
  Tensor big16 = big.to(DType::bf16);             // same values, rounded
  std::vector<float> a = big.to_vector(), b = big16.to_vector();
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] != 0.f) worst = std::max(worst, std::abs(static_cast<double>(b[i] - a[i]) / a[i]));
  std::printf("randn (1024, 1024): f32 %zu bytes, bf16 %zu bytes; worst relative rounding error %.2e (bound 2^-8 = %.2e)\n",
              big.nbytes(), big16.nbytes(), worst, 1.0 / 256);
}  // the 6 MiB of big and big16 are freed here

void tagged_memory_accounting(lesson::Beats& beats) {
  beats.beat("tagged memory accounting",
             "Every allocation carries a tag (param, grad, optim, activation, comm, other); the allocator\n"
             "keeps current and peak bytes per tag. bytes = numel x dtype size, to the byte.");
  const MemoryStats before = memory_stats();
  Tensor w, bias, w16;
  {
    TagScope scope(MemTag::param);  // everything allocated in here is a "param"
    w = Tensor::zeros({768, 768});  // (768, 768) f32: 589,824 x 4 bytes
    bias = Tensor::zeros({768});    // (768) f32: 768 x 4 bytes
    w16 = w.to(DType::bf16);        // (768, 768) bf16: 589,824 x 2 bytes
  }
  const std::int64_t expect = w.numel() * 4 + bias.numel() * 4 + w16.numel() * 2;
  const std::int64_t got = memory_stats().current(MemTag::param) - before.current(MemTag::param);
  std::printf("param bytes: measured %lld, formula %lld x 4 + %lld x 4 + %lld x 2 = %lld  %s\n",
              static_cast<long long>(got), static_cast<long long>(w.numel()), static_cast<long long>(bias.numel()),
              static_cast<long long>(w16.numel()), static_cast<long long>(expect), got == expect ? "(exact)" : "(MISMATCH)");
  {
    TagScope scope(MemTag::activation);
    Tensor h = ops::matmul(Tensor::ones({64, 768}), w);  // (64, 768) activation, freed at the brace
  }
  Tensor wt = w.transpose(0, 1);  // (768, 768) view: no allocation
  std::printf("views allocate nothing: with wt = w.transpose(0, 1) alive, param is still %lld bytes\n",
              static_cast<long long>(memory_stats().current(MemTag::param) - before.current(MemTag::param)));
  std::printf("%s\n", memory_report().c_str());
  w = Tensor(), wt = Tensor(), bias = Tensor(), w16 = Tensor();  // the last handle goes: the storage is freed
  std::printf("after freeing: param current %lld bytes above the start, peak kept: %lld bytes\n",
              static_cast<long long>(memory_stats().current(MemTag::param) - before.current(MemTag::param)),
              static_cast<long long>(memory_stats().peak(MemTag::param)));
}

void matmul_through_eigen_and_threads(lesson::Beats& beats, State& s) {
  beats.beat("matmul through Eigen, and threads",
             "A (M, K) x (K, N) product costs 2*M*N*K flops. ops::matmul maps the operands as Eigen\n"
             "matrices (no copy, even for transposed views) and runs Eigen's blocked GEMM on\n"
             "num_threads() threads (MINITORCH_NUM_THREADS, default: cores / ranks on the node).");
  const std::int64_t n = 512;
  Tensor A = Tensor::randn({n, n}, s.gen), B = Tensor::randn({n, n}, s.gen);  // (512, 512) each
  Tensor C = ops::matmul(A, B);                                           // (512, 512)
  double dot = 0;
  for (std::int64_t k = 0; k < n; ++k) dot += static_cast<double>(A.at({3, k})) * B.at({k, 5});
  std::printf("C[3, 5] = %.5f, by hand (a dot product in double) %.5f\n", static_cast<double>(C.at({3, 5})), dot);
  const int default_threads = num_threads();
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<int> settings{1};
  if (cores > 1) settings.push_back(cores);
  const double flops = 2.0 * n * n * n;
  std::printf("one product: 2*%lld*%lld*%lld = %.0f flops (%.0f M)\n", static_cast<long long>(n), static_cast<long long>(n),
              static_cast<long long>(n), flops, flops / 1e6);
  for (int t : settings) {
    set_num_threads(t);
    ops::matmul(A, B);  // warm-up
    double best = 1e9;
    for (int rep = 0; rep < 10; ++rep) {
      auto t0 = std::chrono::steady_clock::now();
      Tensor out = ops::matmul(A, B);
      best = std::min(best, seconds_since(t0));
    }
    std::printf("threads %d: 512x512 matmul %.2f ms (best of 10) = %.1f GFLOP/s\n", t, best * 1e3, flops / best / 1e9);
  }
  set_num_threads(default_threads);
  std::printf("(this run's default: %d thread(s); %d core(s) on this machine)\n", default_threads, cores);
}

// The lesson: its six beats in order.
int run(lesson::Beats& beats) {
  State s;
  storage_shape_strides_offset(beats, s);
  views_share_storage(beats, s);
  contiguous_copies(beats, s);
  bf16_is_a_storage_type(beats, s);
  tagged_memory_accounting(beats);
  matmul_through_eigen_and_threads(beats, s);
  std::printf("\nLesson 01 done. Next: make lesson-02 (autograd).\n");
  return 0;
}

int main(int argc, char** argv) {
  return lesson::main_on_one_process(argc, argv, "Lesson 01: the tensor", 6, [](lesson::Beats&) {},
                                     [](lesson::Beats& beats) { return run(beats); });
}

// Lesson 04, beat 1 (host_and_device.h).
#include "host_and_device.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "copy_ledger.h"
#include "gpt_on_device.h"
#include "minitorch/allocator.h"
#include "minitorch/ops.h"
#include "minitorch/random.h"
#include "runtime/report.h"
#if MINITORCH_WITH_CUDA
#include "cuda/cuda.h"
#endif

namespace lesson04 {

using namespace minitorch;

namespace {
long long ll(std::int64_t v) { return static_cast<long long>(v); }

void print_counters(const char* what, const TransferStats& before, const CopyLedger& ledger) {
  const TransferStats now = transfer_stats();
  std::printf("%-34s minitorch counts h2d %8lld  d2h %8lld | the ledger h2d %8lld  d2h %8lld\n", what,
              ll(now.h2d - before.h2d), ll(now.d2h - before.d2h), ll(ledger.h2d), ll(ledger.d2h));
  if (now.h2d - before.h2d != ledger.h2d || now.d2h - before.d2h != ledger.d2h)
    throw std::runtime_error("the ledger (copy_ledger.cpp, L04.3) and minitorch's counters differ");
}

#if MINITORCH_WITH_CUDA
// Seconds of one copy of `t` to `to`, the median of 5 (a copy to the host waits for the device).
double copy_seconds(const Tensor& t, Device to) {
  std::vector<double> s;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    Tensor out = t.to(to);
    if (!to.is_cpu()) (void)out.narrow(0, 0, 1).to(Device::cpu());  // wait for the upload
    s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(s.begin(), s.end());
  return s[2];
}
#endif

void the_same_copies_on_a_gpu() {
#if MINITORCH_WITH_CUDA
  std::string why;
  if (!cuda::init(&why)) {
    std::printf("cuda: no usable GPU here (%s); on one, the same copies are timed over PCIe.\n", why.c_str());
    return;
  }
  Generator gen(2);
  const Tensor host = Tensor::randn({16, 1024, 1024}, gen);  // 64 MiB
  const Tensor dev = host.to(Device::cuda(0));
  const double up = copy_seconds(host, Device::cuda(0)), down = copy_seconds(dev, Device::cpu());
  const double gb = static_cast<double>(host.nbytes()) / 1e9;
  std::printf("cuda:0: 64 MiB up in %.2f ms (%.1f GB/s), down in %.2f ms (%.1f GB/s), pageable host memory\n", up * 1e3,
              gb / up, down * 1e3, gb / down);
#else
  std::printf("cuda: this build has no CUDA layer; on a GPU machine the same copies are timed over PCIe.\n");
#endif
}
}  // namespace

void copies_between_host_and_device() {
  const Device cpu = Device::cpu(), sim = Device::sim();
  const TransferStats before = transfer_stats();
  CopyLedger ledger;
  Generator gen(1);
  const std::int64_t on_sim_before = memory_stats(sim).current_total;
  Tensor x = Tensor::randn({256, 1024}, gen);  // x: (256, 1024) f32 on the host
  std::printf("x = randn(256, 1024) on %s: %lld B\n", x.device().str().c_str(), ll(static_cast<std::int64_t>(x.nbytes())));
  print_counters("", before, ledger);

  Tensor y = x.to(sim);  // the bytes cross: counted h2d
  ledger.add(cpu, sim, static_cast<std::int64_t>(x.nbytes()), false);
  std::printf("y = x.to(sim): the sim pool holds %lld B more\n", ll(memory_stats(sim).current_total - on_sim_before));
  print_counters("", before, ledger);

  Tensor z = ops::gelu(y);  // a kernel runs where its inputs are: z is on sim, nothing crosses
  ledger.add(sim, sim, static_cast<std::int64_t>(z.nbytes()), false);  // (a device to itself: counts nothing)
  std::printf("z = gelu(y) runs on %s; z lives there too (the sim pool: %lld B more)\n", z.device().str().c_str(),
              ll(memory_stats(sim).current_total - on_sim_before));
  print_counters("", before, ledger);

  Tensor back = z.to(cpu);  // down: counted d2h
  ledger.add(sim, cpu, static_cast<std::int64_t>(z.nbytes()), false);
  std::printf("z.to(cpu): its %lld B come down\n", ll(static_cast<std::int64_t>(back.nbytes())));
  print_counters("", before, ledger);
  std::printf("the ledger (copy_ledger.cpp) keeps minitorch::copy_between's rule: equal after every copy\n");
  the_same_copies_on_a_gpu();
}

void a_forgotten_copy() {
  Generator gen(3);
  const Tensor a = Tensor::randn({4, 8}, gen), b = Tensor::randn({4, 8}, gen).to(Device::sim());
  try {
    (void)ops::add(a, b);
    throw std::logic_error("an op on a host tensor and a sim tensor ran: it must refuse");
  } catch (const std::invalid_argument& e) {
    std::printf("a forgotten copy, add(a on cpu, b on sim): refused, no silent copy:\n  %s\n", e.what());
  }
}

void a_training_steps_copies(const runtime::Config& cfg, std::int64_t V, const data::BatchSampler& sampler) {
  std::unique_ptr<runtime::Engine> engine = baby_engine(cfg, V, "sim");
  runtime::RunReport report(*engine, nullptr);
  {
    events::Attach listen(report);
    engine->train_batch(sampler);
  }
  const auto t = report.rank_json()["transfers_last_step"];
  const std::int64_t B = cfg.train_micro_batch_size_per_gpu, T = cfg.model.block_size, A = cfg.gradient_accumulation_steps;
  const StepIo want = step_io_bytes(B, T, A);
  const std::int64_t io_h2d = t["io_h2d"], io_d2h = t["io_d2h"], h2d = t["h2d"], d2h = t["d2h"];
  std::printf("one training step of the baby GPT on sim (B = %lld, T = %lld, A = %lld), the report's transfers_last_step:\n",
              ll(B), ll(T), ll(A));
  std::printf("  io_h2d %lld B: x, y and the positions, A·(2·B·T + T)·4 = %lld %s\n", ll(io_h2d), ll(want.h2d),
              io_h2d == want.h2d ? "(equal)" : "(DIFFERENT)");
  std::printf("  io_d2h %lld B: the loss, A·4 = %lld %s\n", ll(io_d2h), ll(want.d2h), io_d2h == want.d2h ? "(equal)" : "(DIFFERENT)");
  std::printf("  h2d %lld B, d2h %lld B: the model's states never cross (no offload: they live on the device)\n", ll(h2d), ll(d2h));
  if (io_h2d != want.h2d || io_d2h != want.d2h)
    throw std::runtime_error("the step's input and output bytes differ from step_io_bytes (copy_ledger.cpp, L04.3)");
  std::printf("  the positions (T·4 = %lld B) go up every micro-step though they never change: a copy made once on\n"
              "  the device would save them. On a GPU each copy also waits for the device (the loss's 4 B most of all).\n",
              ll(4 * T));
}

}  // namespace lesson04

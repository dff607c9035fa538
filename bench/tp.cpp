// bench-tp: what tensor parallelism costs and what it saves. mpirun -np t build/bin/bench-tp [--steps N]
// [--micro B] — bench/tp.py runs it for t = 1, 2, 3 and prints the table (`make bench-tp`).
// The small GPT (L6 H6 C384 T256, V 65: six heads, so t = 1, 2 or 3 ranks each compute whole heads), the world
// one tensor group (tp/gpt.h), 1 thread per rank, the same batches on every rank, AdamW. Rank 0 prints one
// line: the median step; the time inside the tensor group's all-reduces (from the collectives' begin/end
// events) and its share of the step; the rank's parameter bytes (the allocator's param tag, and
// tp::parameters_per_rank's formula) and activation peak (the activation tag); the elements its all-reduces
// sent per step against tp::tensor_traffic_per_micro_batch (tp/memory.h):
//   forward (1 + 2L)·v(BTC) + 3·v(BT), backward (2L + 1)·v(BTC),   v(n) = 2(t−1)/t·n (dist/process_group.h).
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "autograd/engine.h"
#include "dist/process_group.h"
#include "minitorch/allocator.h"
#include "minitorch/events.h"
#include "minitorch/parallel.h"
#include "minitorch/random.h"
#include "nn/gpt.h"
#include "optim/adamw.h"
#include "tp/gpt.h"
#include "tp/memory.h"
#include "bench_util.h"

using namespace minitorch;

namespace {
/// Sums the time between each collective's begin and end event on this rank.
class CommClock : public events::Sink {
 public:
  void on_event(const events::Event& e) override {
    if (e.category != events::Category::comm) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (e.kind == events::Kind::begin) started_[e.id] = e.time_us;
    if (e.kind == events::Kind::end && started_.count(e.id)) {
      total_us_ += e.time_us - started_[e.id];
      started_.erase(e.id);
    }
  }
  double take_seconds() {
    std::lock_guard<std::mutex> lock(mu_);
    const double s = total_us_ * 1e-6;
    total_us_ = 0;
    return s;
  }

 private:
  std::mutex mu_;
  std::map<std::uint64_t, double> started_;
  double total_us_ = 0;
};
}  // namespace

int main(int argc, char** argv) {
  dist::ProcessGroup& world = dist::init(&argc, &argv);
  const long long steps = bench::arg(argc, argv, "--steps", 6), micro = bench::arg(argc, argv, "--micro", 4);
  set_num_threads(1);
  const int t = world.size(), r = world.rank();
  nn::GPTConfig cfg = nn::GPTConfig::named("small");
  cfg.vocab_size = 65;
  const std::int64_t B = micro, T = cfg.block_size;

  std::unique_ptr<tp::TensorParallelGPT> model;
  {
    Generator init(1337);
    nn::GPT full(cfg, init);  // every rank draws the 1-rank model, keeps its slices, drops the rest
    model = std::make_unique<tp::TensorParallelGPT>(full, world);
  }
  const std::int64_t param_bytes = memory_stats().current(MemTag::param);
  optim::AdamW opt(model->named_parameters(), {.lr = 1e-3f, .weight_decay = 0.1f});
  Generator data(7);
  auto batch = [&] {
    std::vector<std::int32_t> ids(static_cast<std::size_t>(B * T));
    for (auto& v : ids) v = static_cast<std::int32_t>(data.next_below(65));
    return Tensor::from_ints(ids, {B, T});
  };

  CommClock clock;
  events::Attach attach(clock);
  std::vector<double> step_s, comm_s;
  std::int64_t activation_peak = 0, elements = 0;
  float loss_value = 0;
  for (long long i = 0; i < steps + 1; ++i) {  // the first step warms up (allocations, optimizer states)
    const Tensor x = batch(), y = batch();
    world.barrier();
    world.stats().reset();
    reset_peak_memory();
    const std::int64_t before = memory_stats().current(MemTag::activation);
    (void)clock.take_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    Tensor loss;
    {
      TagScope scope(MemTag::activation);  // what forward and backward allocate (gradients retag themselves)
      loss = model->loss(x, y);
      autograd::backward(loss);
    }
    opt.step();
    opt.zero_grad();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    loss_value = loss.item();
    if (i == 0) continue;
    step_s.push_back(s);
    comm_s.push_back(clock.take_seconds());
    activation_peak = memory_stats().peak(MemTag::activation) - before;
    elements = world.stats().elements;
  }
  const std::int64_t formula =
      tp::tensor_traffic_per_micro_batch(cfg, B, T, t, r, /*e=*/4, /*recompute=*/false).elements;
  const double step = bench::median(step_s), comm = bench::median(comm_s);
  if (r == 0)
    std::printf("bench-tp: t %d | %s B=%lld | step %.1f ms | all-reduce %.1f ms (%.1f%%) | param %lld B | activation peak "
                "%lld B | param formula %lld B | TP elements sent %lld (formula %lld) | loss %.4f\n",
                t, cfg.describe().c_str(), static_cast<long long>(B), 1e3 * step, 1e3 * comm, 100 * comm / step,
                static_cast<long long>(param_bytes), static_cast<long long>(activation_peak),
                static_cast<long long>(4 * tp::parameters_per_rank(cfg, t)), static_cast<long long>(elements), static_cast<long long>(formula), loss_value);
  return 0;
}

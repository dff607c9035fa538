// Lesson 04, task L04.3: a copy's accounting (lessons/04_device/copy_ledger.h). The ledger is held to the
// library's own counters (minitorch::transfer_stats) over real copies between the host and sim, and the step's
// input and output bytes to a real training step's run report.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "data/batch_sampler.h"
#include "data/text_dataset.h"
#include "lessons/04_device/copy_ledger.h"
#include "minitorch/allocator.h"
#include "minitorch/random.h"
#include "minitorch/tensor.h"
#include "nn/gpt.h"
#include "runtime/plan.h"
#include "runtime/report.h"
#include "test_util.h"

namespace {

using lesson04::CopyLedger;
using lesson04::Direction;
using minitorch::Device;
using minitorch::Tensor;

TEST(L04_T3_CopyLedger, DirectionOfEveryPairOfDevices) {
  const Device cpu = Device::cpu(), sim = Device::sim(), gpu0 = Device::cuda(0), gpu1 = Device::cuda(1);
  EXPECT_EQ(lesson04::direction_of(cpu, cpu), Direction::none);
  EXPECT_EQ(lesson04::direction_of(sim, sim), Direction::none);
  EXPECT_EQ(lesson04::direction_of(gpu1, gpu1), Direction::none);
  EXPECT_EQ(lesson04::direction_of(cpu, sim), Direction::h2d);
  EXPECT_EQ(lesson04::direction_of(cpu, gpu1), Direction::h2d);
  EXPECT_EQ(lesson04::direction_of(sim, cpu), Direction::d2h);
  EXPECT_EQ(lesson04::direction_of(gpu0, cpu), Direction::d2h);
  EXPECT_EQ(lesson04::direction_of(gpu0, gpu1), Direction::through_host) << "two GPUs: Tensor::to goes through the host";
  EXPECT_EQ(lesson04::direction_of(sim, gpu0), Direction::through_host);
}

TEST(L04_T3_CopyLedger, CountsEachCounterApart) {
  CopyLedger ledger;
  ledger.add(Device::cpu(), Device::sim(), 100, false);
  ledger.add(Device::sim(), Device::cpu(), 20, false);
  ledger.add(Device::cpu(), Device::sim(), 3000, true);
  ledger.add(Device::sim(), Device::cpu(), 4, true);
  ledger.add(Device::sim(), Device::sim(), 50000, false);  // crosses nothing
  ledger.add(Device::cpu(), Device::cpu(), 60000, true);
  EXPECT_EQ(ledger.h2d, 100);
  EXPECT_EQ(ledger.d2h, 20);
  EXPECT_EQ(ledger.io_h2d, 3000);
  EXPECT_EQ(ledger.io_d2h, 4);
  ledger.add(Device::cuda(0), Device::cuda(1), 7, false);  // down, then up
  EXPECT_EQ(ledger.h2d, 107);
  EXPECT_EQ(ledger.d2h, 27);
}

// Real copies through Tensor::to, each added to the ledger as it happens: the ledger equals the library's counters.
TEST(L04_T3_CopyLedger, EqualsMinitorchsCountersOverRealCopies) {
  minitorch::Generator gen(4);
  const minitorch::TransferStats before = minitorch::transfer_stats();
  CopyLedger ledger;
  Tensor x = Tensor::randn({3, 5, 7}, gen);  // 420 B
  Tensor up = x.to(Device::sim());
  ledger.add(Device::cpu(), Device::sim(), static_cast<std::int64_t>(x.nbytes()), false);
  Tensor same = up.to(Device::sim());  // the tensor itself
  ledger.add(Device::sim(), Device::sim(), static_cast<std::int64_t>(up.nbytes()), false);
  Tensor ids = Tensor::from_ints({1, 2, 3, 4, 5}, {5});
  {
    minitorch::TransferScope io(minitorch::TransferPurpose::io);  // a batch going up
    Tensor ids_up = ids.to(Device::sim());
    ledger.add(Device::cpu(), Device::sim(), static_cast<std::int64_t>(ids.nbytes()), true);
    Tensor loss_down = up.narrow(0, 0, 1).to(Device::cpu());
    ledger.add(Device::sim(), Device::cpu(), static_cast<std::int64_t>(loss_down.nbytes()), true);
  }
  Tensor down = up.transpose(0, 2).to(Device::cpu());  // a strided view: its bytes, made contiguous
  ledger.add(Device::sim(), Device::cpu(), static_cast<std::int64_t>(down.nbytes()), false);
  const minitorch::TransferStats after = minitorch::transfer_stats();
  EXPECT_EQ(ledger.h2d, after.h2d - before.h2d);
  EXPECT_EQ(ledger.d2h, after.d2h - before.d2h);
  EXPECT_EQ(ledger.io_h2d, after.io_h2d - before.io_h2d);
  EXPECT_EQ(ledger.io_d2h, after.io_d2h - before.io_d2h);
  EXPECT_EQ(ledger.h2d, 420);
  EXPECT_EQ(ledger.io_h2d, 20);
  EXPECT_EQ(ledger.io_d2h, 140);
}

TEST(L04_T3_StepIo, FormulaOfTheBatchesAndTheLoss) {
  EXPECT_EQ(lesson04::step_io_bytes(32, 64, 1).h2d, (2 * 32 * 64 + 64) * 4);
  EXPECT_EQ(lesson04::step_io_bytes(32, 64, 1).d2h, 4);
  EXPECT_EQ(lesson04::step_io_bytes(4, 16, 3).h2d, 3 * (2 * 4 * 16 + 16) * 4) << "per micro-step";
  EXPECT_EQ(lesson04::step_io_bytes(4, 16, 3).d2h, 12);
}

// The formula against what a real step of the GPT on sim moves, as its run report counts it (2 micro-steps).
TEST(L04_T3_StepIo, EqualsARealStepsRunReport) {
  using namespace minitorch;
  const runtime::Config cfg = runtime::Config::from_json(R"({"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2,
      "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}},
      "model": {"name": "baby", "n_layer": 1, "n_embd": 32, "n_head": 2, "block_size": 16},
      "training": {"steps": 1, "seed": 7}})", 1, "test");
  runtime::Plan plan = runtime::make_plan(cfg, {.device = "sim", .device_memory = std::nullopt});
  runtime::setup_device(plan);
  Generator init(cfg.training.seed);
  auto model = std::make_shared<nn::GPT>(runtime::model_config(cfg, 11), init);
  auto engine = runtime::initialize(model, cfg, plan);
  auto tokens = std::make_shared<std::vector<std::int32_t>>();
  for (int i = 0; i < 500; ++i) tokens->push_back((i * 7) % 11);
  const data::BatchSampler sampler(tokens, 2, 16, 1);
  runtime::RunReport report(*engine, nullptr);
  {
    events::Attach listen(report);
    engine->train_batch(sampler);
  }
  const auto t = report.rank_json()["transfers_last_step"];
  const lesson04::StepIo want = lesson04::step_io_bytes(2, 16, 2);
  EXPECT_EQ(t["io_h2d"].get<std::int64_t>(), want.h2d);
  EXPECT_EQ(t["io_d2h"].get<std::int64_t>(), want.d2h);
}

}  // namespace

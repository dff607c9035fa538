// L08 — activation checkpointing with DDP and ZeRO-1/2/3 (autograd::checkpoint around the GPT's blocks):
// the same training bit for bit as without, each gradient reduced exactly once (the reduce traffic of a
// step unchanged), and at ZeRO-3 each checkpointed unit gathered once more per micro-step, for its
// recompute (DeepSpeed re-gathers too).
#include <gtest/gtest.h>

#include "zero/stage3.h"
#include "zero_test_util.h"

using namespace minitorch;
using zero_test::ZeroRun;
using zero_test::all_params;

namespace {

std::string with_checkpointing(std::string json, int segment_size) {
  const std::string at = R"("gradient_clipping": 1.0,)";
  json.insert(json.find(at) + at.size(), R"( "activation_checkpointing": {"enabled": true, "segment_size": )" +
                                             std::to_string(segment_size) + "},");
  return json;
}

}  // namespace

TEST(L08_CheckpointedStages, SameTrainingBitForBitAndEachGradientReducedOnce) {
  auto& world = dist::world();
  for (int stage : {0, 1, 2, 3}) {
    for (int segment : {1, 2}) {
      const std::string plain =
          zero_test::config_json(stage, 2, 2, false, 2500, stage == 3 ? R"(, "stage3_param_persistence_threshold": 0)" : "");
      ZeroRun a(plain, &world), b(with_checkpointing(plain, segment), &world);
      EXPECT_EQ(b.engine->model().checkpoint_segment_size(), segment);
      for (int s = 0; s < 4; ++s) {
        const float la = a.engine->train_batch(*a.sampler), lb = b.engine->train_batch(*b.sampler);
        EXPECT_EQ(la, lb) << "stage " << stage << ", segments of " << segment << ", step " << s;
      }
      auto ta = zero_test::traffic_of_one_step(a), tb = zero_test::traffic_of_one_step(b);
      for (const char* op : {"all_reduce", "reduce_scatter"})
        EXPECT_EQ(ta[op], tb[op]) << "stage " << stage << ": " << op << " (calls, elements) of one step";
      if (stage < 3) {
        EXPECT_EQ(ta["all_gather"], tb["all_gather"]) << "stage " << stage;
      } else {
        // Once more per checkpointed unit (block) and micro-step, for its recompute: a recompute inside backward
        // must not prefetch the units after it in forward order, whose backward is over (they would be
        // gathered for nothing and held to the end of backward).
        const std::int64_t blocks = 2, micro_steps = 2;
        EXPECT_EQ(tb["all_gather"].first, ta["all_gather"].first + blocks * micro_steps)
            << "ZeRO-3 gathers each checkpointed unit once more per micro-step, for its recompute";
      }
      EXPECT_EQ(all_params(a), all_params(b)) << "stage " << stage << ", segments of " << segment;
    }
  }
}

TEST(L08_CheckpointedStages, Bf16AndFp16SameTrainingBitForBit) {
  // The recompute hands each block's input the gradient the unsplit graph passes on, unrounded
  // (autograd/checkpoint.h): 16-bit losses and weights do not move either (issue 41).
  auto& world = dist::world();
  for (int stage : {0, 1, 2, 3}) {
    for (bool fp16 : {false, true}) {
      const std::string extra = stage == 3 ? R"(, "stage3_param_persistence_threshold": 0)" : "";
      std::string plain = zero_test::config_json(stage, 2, 1, !fp16, 2500, extra);
      const std::string min_lr = R"("warmup_min_lr": 0,)";  // steps from the first: later losses see the gradients
      plain.replace(plain.find(min_lr), min_lr.size(), R"("warmup_min_lr": 1e-3,)");
      if (fp16) plain = zero_test::with_fp16(plain);
      ZeroRun a(plain, &world), b(with_checkpointing(plain, 1), &world);
      EXPECT_EQ(a.train(3), b.train(3)) << "stage " << stage << (fp16 ? " fp16" : " bf16") << ": the losses";
      EXPECT_EQ(all_params(a), all_params(b)) << "stage " << stage << (fp16 ? " fp16" : " bf16") << ": the weights";
    }
  }
}

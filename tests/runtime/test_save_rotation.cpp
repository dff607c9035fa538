// Two faults in a row on a single-file save (runtime/save_target.h, promise 3; issue 41): a kill in the switch
// after the old manifest went leaves the new save complete only at PATH.partial, --resume PATH uses it, and a
// kill in that run's next save — any moment after it has begun — must still leave that save for --resume.
#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>

#include "runtime/checkpoint.h"
#include "runtime/save_and_resume.h"
#include "runtime/save_target.h"
#include "test_util.h"
#include "train_util.h"

using namespace minitorch;
using mt_test::TrainRun;
namespace fs = std::filesystem;

namespace {
const std::string kConfig = R"({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1,
    "optimizer": {"type": "AdamW", "params": {"lr": 3e-3}},
    "model": {"name": "baby", "n_layer": 1, "n_head": 2, "n_embd": 16, "block_size": 16},
    "training": {"steps": 10, "seed": 5}})";

bool complete_file(const std::string& p) { return runtime::is_complete(runtime::check_complete_save, p); }

/// A run saved to `p` after `steps` steps, trained one more, and its next save to `p` killed before switch step
/// `k` (runtime/save_target.h).
void save_then_kill_the_next_save(const std::string& p, int steps, int k) {
  TrainRun r(kConfig);
  r.train(steps);
  runtime::save_checkpoint(p, *r.engine, r.ds.tokenizer(), "run-a");
  r.train(1);
  EXPECT_EQ(mt_test::error_of([&] {
              runtime::save_single_file_checkpoint(p, *r.engine, r.ds.tokenizer(), "run-a", [&](int step) {
                if (step == k) throw std::runtime_error("killed");
              });
            }),
            "killed");
}
}  // namespace

TEST(L03_Checkpoint, AKillInTheSaveAfterAResumeFromPartialKeepsThatSave) {
  // Killed before switch step k = 1, 2, 3: PATH has lost its manifest, the step-2 save is whole at PATH.partial.
  for (int k = 1; k <= 3; ++k) {
    SCOPED_TRACE("first save killed before step " + std::to_string(k));
    mt_test::TempDir dir;
    const std::string p = dir.path("a.safetensors");
    save_then_kill_the_next_save(p, 1, k);
    ASSERT_EQ(runtime::locate_save(p).path, p + ".partial");

    TrainRun resumed(kConfig);
    EXPECT_EQ(runtime::resume_from(p, *resumed.engine).step, 2);
    const std::vector<float> after_two = resumed.train(1);
    runtime::begin_save(p, runtime::SaveKind::single_file, complete_file);  // the next save, killed once begun
    const runtime::LocatedSave where = runtime::locate_save(p);
    EXPECT_EQ(where.path, p) << "the interrupted switch was finished first: " << where.note;
    TrainRun again(kConfig);
    EXPECT_EQ(runtime::resume_from(p, *again.engine).step, 2) << "the step-2 save remains";
    EXPECT_EQ(again.train(1), after_two) << "and is the save the run resumed from, bit for bit";

    runtime::save_checkpoint(p, *resumed.engine, resumed.ds.tokenizer(), "run-a");
    EXPECT_EQ(runtime::check_complete_save(p).step, 3);
    for (const char* left : {".partial", ".partial.optim", ".partial.manifest.json"})
      EXPECT_FALSE(fs::exists(p + left)) << left;
  }
}

TEST(L03_Checkpoint, AtEveryKillPointTheNextSaveKeepsTheSaveResumeFinds) {
  // Whatever the state a kill left, right after the next save has begun --resume finds a save at least as
  // new as the one it found before: begin_save at every kill point of a switch.
  for (int k = 0; k <= 4; ++k) {
    SCOPED_TRACE("killed before step " + std::to_string(k));
    mt_test::TempDir dir;
    const std::string p = dir.path("a.safetensors");
    save_then_kill_the_next_save(p, 2, k);
    const runtime::LocatedSave before = runtime::locate_save(p);
    const std::int64_t step = runtime::read_checkpoint_info(p).step;
    runtime::begin_save(p, runtime::SaveKind::single_file, complete_file);
    EXPECT_EQ(runtime::read_checkpoint_info(p).step, step) << "found at " << before.path << " before";
    EXPECT_EQ(runtime::locate_save(p).path, p);
  }
}

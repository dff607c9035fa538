// Two faults in a row on a sharded save (runtime/save_target.h, promise 3; issue 41): a kill between the
// switch's renames leaves the new save complete at PATH.partial, --resume PATH uses it, and a kill in that run's
// next save — any moment after it has begun — must still leave that save for the next --resume.
#include <gtest/gtest.h>

#include <filesystem>

#include "runtime/save_and_resume.h"
#include "runtime/save_target.h"
#include "runtime/sharded_checkpoint.h"
#include "runtime_mpi/save_test_util.h"
#include "zero_mpi/zero_test_util.h"

using namespace minitorch;
using zero_test::config_json;
using zero_test::SharedDir;
using zero_test::ZeroRun;
namespace fs = std::filesystem;

TEST(L06_ShardedCheckpoint, AKillInTheSaveAfterAResumeFromPartialKeepsThatSave) {
  SharedDir dir;
  auto& world = dist::world();
  const std::string path = dir.path("ck"), json = config_json(2, 2, 1);
  ZeroRun run(json, &world, 11);
  run.train(1);
  runtime::save_checkpoint(path, *run.engine, run.ds.tokenizer(), "run-a");  // step 1 at PATH
  run.train(1);
  save_test::save_with_rank0_failing_before(1, path, run, world);  // killed between PATH -> PATH.old and PATH.partial -> PATH
  EXPECT_EQ(runtime::check_complete_sharded(path + ".partial").step, 2);
  EXPECT_EQ(runtime::check_complete_sharded(path + ".old").step, 1);

  ZeroRun resumed(json, &world, 99);
  EXPECT_EQ(runtime::resume_from(path, *resumed.engine).step, 2) << "the complete new save at PATH.partial";
  const std::vector<float> after_two = resumed.train(1);
  // The next save is killed as soon as it has begun (rank 0 alone prepares the target): what begin_save
  // removed is all that is lost, and the save --resume used is not among it.
  if (world.rank() == 0)
    runtime::begin_save(path, runtime::SaveKind::sharded,
                        [](const std::string& p) { return runtime::is_complete(runtime::check_complete_sharded, p); });
  world.barrier();
  const runtime::LocatedSave where = runtime::locate_save(path);
  EXPECT_EQ(where.path, path) << "the interrupted switch was finished first: " << where.note;
  ZeroRun again(json, &world, 77);
  EXPECT_EQ(runtime::resume_from(path, *again.engine).step, 2) << "the step-2 save remains";
  EXPECT_EQ(again.train(1), after_two) << "and is the save the run resumed from, bit for bit";

  // A whole save then lands as ever, leaving nothing beside it.
  runtime::save_checkpoint(path, *resumed.engine, resumed.ds.tokenizer(), "run-a");
  EXPECT_EQ(runtime::check_complete_sharded(path).step, 3);
  EXPECT_FALSE(fs::exists(path + ".partial"));
  EXPECT_FALSE(fs::exists(path + ".old"));
  world.barrier();
}

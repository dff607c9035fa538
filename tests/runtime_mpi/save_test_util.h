#pragma once
// What the sharded-save suites share: a save in which rank 0 dies at a chosen step of the switch.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "runtime/sharded_checkpoint.h"
#include "test_util.h"
#include "zero_mpi/zero_test_util.h"

namespace save_test {

/// A sharded save of `run` to `path` in which rank 0 fails (a full disk, a kill) just before step `step` of the
/// switch into place, after every file is written; the other ranks save normally.
inline void save_with_rank0_failing_before(int step, const std::string& path, zero_test::ZeroRun& run,
                                           minitorch::dist::ProcessGroup& world) {
  if (world.rank() == 0) {
    EXPECT_EQ(mt_test::error_of([&] {
                minitorch::runtime::save_sharded_checkpoint(path, *run.engine, run.ds.tokenizer(), "run-a", [&](int s) {
                  if (s == step) throw std::runtime_error("killed");
                });
              }),
              "killed");
    world.barrier();  // the save's last barrier, which rank 0 skipped by failing: the others wait in it
  } else {
    minitorch::runtime::save_sharded_checkpoint(path, *run.engine, run.ds.tokenizer(), "run-a");
  }
}

}  // namespace save_test

// L05: minitorch-run, DeepSpeed's launcher options turned into one mpirun line (tools/minitorch-run.cpp):
// golden lines for DeepSpeed's command lines, one clear error for each bad hostfile or impossible
// selection, and a real 2-rank run from a localhost hostfile.
#include <gtest/gtest.h>

#include "test_util.h"

namespace {
using mt_test::bin;
using mt_test::run_command;
using mt_test::TempDir;

// The launcher in a clean environment (no CUDA_VISIBLE_DEVICES unless `env` sets it; root allowed, so
// no --allow-run-as-root in the line), with `args`. The sanitizer settings pass through (make sanitize:
// Open MPI's leak suppressions, as mpirun_command passes them).
mt_test::CommandResult launcher(const std::string& args, const std::string& env = "") {
  return run_command("env -i PATH=\"$PATH\" HOME=\"$HOME\" LD_LIBRARY_PATH=\"$LD_LIBRARY_PATH\" LD_PRELOAD=\"$LD_PRELOAD\" "
                     "ASAN_OPTIONS=\"$ASAN_OPTIONS\" LSAN_OPTIONS=\"$LSAN_OPTIONS\" UBSAN_OPTIONS=\"$UBSAN_OPTIONS\" "
                     "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " + env + " " + bin("minitorch-run") + " " + args);
}

constexpr const char* kPrefix = "mpirun --bind-to none -x MASTER_ADDR=";

TEST(L05_Launcher, TranslatesDeepSpeedCommandLinesIntoOneMpirunLine) {
  TempDir dir;
  const std::string hosts = dir.write("hostfile", "worker-1 slots=4\n# the second machine\nworker-2 slots=4  # 4 GPUs\n\n");
  struct Case {
    std::string args, line;
  };
  const std::vector<Case> cases{
      // deepspeed --num_gpus 2 train.py (CPU ranks: a slot is a rank)
      {"--dry-run --num_gpus 2 train --config c.json",
       std::string(kPrefix) + "127.0.0.1 -x MASTER_PORT=29500 -np 2 --host localhost:2 train --config c.json"},
      // deepspeed --hostfile hosts --include worker-1:0,2@worker-2:1 train.py --device cuda
      {"--dry-run --hostfile " + hosts + " --include worker-1:0,2@worker-2:1 train --device cuda",
       std::string(kPrefix) + "worker-1 -x MASTER_PORT=29500 -np 2 --host worker-1:2 env CUDA_VISIBLE_DEVICES=0,2 " +
           "train --device cuda : -np 1 --host worker-2:1 env CUDA_VISIBLE_DEVICES=1 train --device cuda"},
      // deepspeed --hostfile hosts --num_nodes 1 --num_gpus 2 --master_port 6000 train.py --device=cuda:0
      {"--dry-run --hostfile " + hosts + " --num_nodes 1 --num_gpus 2 --master_port 6000 train --device=cuda:0",
       std::string(kPrefix) + "worker-1 -x MASTER_PORT=6000 -np 2 --host worker-1:2 env CUDA_VISIBLE_DEVICES=0,1 " +
           "train --device=cuda:0"},
      // deepspeed -H hosts --exclude worker-2 --master_addr 10.0.0.1 train.py 'a b' (CPU: every slot a rank)
      {"--dry-run -H " + hosts + " --exclude worker-2 --master_addr 10.0.0.1 train 'a b' --steps 5",
       std::string(kPrefix) + "10.0.0.1 -x MASTER_PORT=29500 -np 4 --host worker-1:4 train 'a b' --steps 5"},
      // deepspeed --hostfile hosts --exclude worker-1:1,3@worker-2:0 train.py --device cuda
      {"--dry-run --hostfile " + hosts + " --exclude worker-1:1,3@worker-2:0 train --device cuda",
       std::string(kPrefix) + "worker-1 -x MASTER_PORT=29500 -np 2 --host worker-1:2 env CUDA_VISIBLE_DEVICES=0,2 " +
           "train --device cuda : -np 3 --host worker-2:3 env CUDA_VISIBLE_DEVICES=1,2,3 train --device cuda"},
  };
  for (const Case& c : cases) {
    auto r = launcher(c.args);
    EXPECT_EQ(r.exit_code, 0) << c.args << "\n" << r.output;
    EXPECT_EQ(r.output, c.line + "\n") << c.args;
  }
}

TEST(L05_Launcher, CudaVisibleDevicesIsIgnoredWithAWarningWhenTheOptionsChoose) {
  TempDir dir;
  const std::string hosts = dir.write("hostfile", "worker-1 slots=2\nworker-2 slots=2\n");
  auto r = launcher("--dry-run --hostfile " + hosts + " --num_gpus 1 train --device cuda", "CUDA_VISIBLE_DEVICES=1,3");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(mt_test::contains(r.output, "warning: CUDA_VISIBLE_DEVICES=1,3 is ignored")) << r.output;
  EXPECT_TRUE(mt_test::contains(r.output, "-np 1 --host worker-1:1 env CUDA_VISIBLE_DEVICES=0 train --device cuda : "
                                          "-np 1 --host worker-2:1 env CUDA_VISIBLE_DEVICES=0 train"))
      << r.output;
  // CPU ranks: no GPU is counted, and CUDA_VISIBLE_DEVICES plays no part
  r = launcher("--dry-run --num_gpus 3 train", "CUDA_VISIBLE_DEVICES=1");
  EXPECT_EQ(r.output, std::string(kPrefix) + "127.0.0.1 -x MASTER_PORT=29500 -np 3 --host localhost:3 train\n");
}

TEST(L05_Launcher, BadHostfilesAndImpossibleSelectionsAreOneClearError) {
  TempDir dir;
  const std::string hosts = dir.write("hostfile", "worker-1 slots=4\nworker-2 slots=4\n");
  const std::vector<std::pair<std::string, std::string>> cases{
      {"--hostfile " + dir.write("a", "worker-1 4\n"), "is not 'HOST slots=N'"},
      {"--hostfile " + dir.write("b", "worker-1 slots=two\n"), "'two' is not a non-negative decimal integer"},
      {"--hostfile " + dir.write("c", "worker-1 slots=0\n"), "a host needs at least one slot"},
      {"--hostfile " + dir.write("d", "a slots=2\na slots=3\n"), "host a is listed twice"},
      {"--hostfile " + dir.write("e", "# nothing\n\n"), "lists no hosts"},
      {"--hostfile " + dir.path("missing"), "cannot read it"},
      {"--hostfile " + hosts + " --include worker-3", "host worker-3 is not in the resource pool (worker-1, worker-2)"},
      {"--hostfile " + hosts + " --include worker-1:4", "worker-1 has no slot 4 (its slots are 0..3)"},
      {"--hostfile " + hosts + " --include worker-1:1,1", "slot 1 of worker-1 is named twice"},
      // across two entries of one host: mpirun would start two ranks on the slot (DeepSpeed keeps the last entry)
      {"--hostfile " + hosts + " --include worker-1:0@worker-1:0", "slot 0 of worker-1 is named twice"},
      {"--hostfile " + hosts + " --include worker-1@worker-2:1@worker-1:3", "slot 3 of worker-1 is named twice"},
      {"--hostfile " + hosts + " --include worker-1:0@worker-1:1", "host worker-1 is named twice; name it once"},
      {"--hostfile " + hosts + " --exclude worker-2:2@worker-2:2", "slot 2 of worker-2 is named twice"},
      {"--hostfile " + hosts + " --include worker-1 --exclude worker-2", "--include and --exclude cannot be used together"},
      {"--hostfile " + hosts + " --include worker-1 --num_gpus 1", "cannot be used with --include / --exclude"},
      {"--hostfile " + hosts + " --exclude worker-1@worker-2", "leaves no slot to run on"},
      {"--hostfile " + hosts + " --num_nodes 3", "--num_nodes 3: the resource pool has 2 host(s)"},
      {"--hostfile " + hosts + " --num_gpus 5", "--num_gpus 5: host worker-1 has 4 slot(s)"},
  };
  for (const auto& [args, message] : cases) {
    auto r = launcher("--dry-run " + args + " train");
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_EQ(mt_test::error_lines(r.output), 1) << args << "\n" << r.output;
    EXPECT_TRUE(mt_test::contains(r.output, message)) << args << "\n" << r.output;
  }
  auto r = launcher("--dry-run --num_gpus 0 train");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(mt_test::contains(r.output, "--num_gpus")) << r.output;
  r = launcher("--dry-run");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(mt_test::contains(r.output, "no program to run")) << r.output;
}

TEST(L05_Launcher, LocalhostSlotNamedTwiceIsRefusedAsWithinOneEntry) {
  for (const std::string include : {"localhost:0,0", "localhost:0@localhost:0"}) {
    auto r = launcher("--dry-run --include " + include + " train");
    EXPECT_EQ(r.exit_code, 2) << include << "\n" << r.output;
    EXPECT_TRUE(mt_test::contains(r.output, "error: --include " + include + ": slot 0 of localhost is named twice"))
        << r.output;
  }
}

TEST(L05_Launcher, AnOptionItDoesNotHaveIsAUsageErrorNotMpirunsOne) {
  auto r = launcher("--dry-run --num_gpu 2 train");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(mt_test::error_lines(r.output), 1) << r.output;
  EXPECT_TRUE(mt_test::contains(r.output, "error: unknown option --num_gpu: minitorch-run's options come before the program"))
      << r.output;
  r = launcher("--bogus true");  // not a dry run: mpirun never sees it
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_FALSE(mt_test::contains(r.output, "mpirun")) << r.output;
  // After the program, options are the program's.
  r = launcher("--dry-run --num_gpus 1 train --bogus");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, std::string(kPrefix) + "127.0.0.1 -x MASTER_PORT=29500 -np 1 --host localhost:1 train --bogus\n");
  r = launcher("--dry-run --num_gpus 1 -- train --bogus");  // "--" ends the launcher's options, as usual
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, std::string(kPrefix) + "127.0.0.1 -x MASTER_PORT=29500 -np 1 --host localhost:1 train --bogus\n");
}

TEST(L05_Launcher, AProgramThatCannotRunIsOneErrorBeforeMpirunStarts) {
  TempDir dir;
  const std::string script = dir.write("script.sh", "#!/bin/sh\nexit 0\n");  // written without execute permission
  const std::vector<std::pair<std::string, std::string>> cases{
      {dir.path("missing"), "the program " + dir.path("missing") + " does not exist"},
      {script, "the program " + script + " is not an executable file"},
      {dir.path(""), "is a directory, not a program"},
      {"minitorch-no-such-program", "the program minitorch-no-such-program is not on PATH ("},
  };
  for (const auto& [program, message] : cases) {
    auto r = launcher("--num_gpus 1 " + program + " --steps 1");
    EXPECT_EQ(r.exit_code, 2) << program << "\n" << r.output;
    EXPECT_EQ(mt_test::error_lines(r.output), 1) << r.output;
    EXPECT_TRUE(mt_test::contains(r.output, message)) << program << "\n" << r.output;
    EXPECT_FALSE(mt_test::contains(r.output, "minitorch-run: mpirun")) << "mpirun was started:\n" << r.output;
  }
  // Found on PATH, as execvp finds it: mpirun runs it.
  auto r = launcher("--num_gpus 1 true", "OMPI_MCA_rmaps_base_oversubscribe=1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(mt_test::contains(r.output, "minitorch-run: mpirun")) << r.output;
}

TEST(L05_Launcher, CudaOnAMachineWithoutAGpuIsOneClearError) {
  if (mt_test::contains(run_command("nvidia-smi -L").output, "GPU 0")) GTEST_SKIP() << "this machine has a GPU";
  auto r = launcher("--dry-run --num_gpus 1 train --device cuda");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(mt_test::contains(r.output, "error: --device cuda: this machine has no CUDA device")) << r.output;
}

// A hostfile naming this machine: the launcher's line runs minitorch-train on 2 ranks.
TEST(L05_Launcher, LocalhostHostfileTrainsOnItsSlots) {
  TempDir dir;
  const std::string hosts = dir.write("hostfile", "localhost slots=2\n");
  auto r = launcher("--hostfile " + hosts + " " + bin("minitorch-train") + " --config " +
                        mt_test::tiny_model_copy(dir, "configs/ddp.json") + " --data " + mt_test::write_corpus(dir) +
                        " --steps 2 --out " + dir.path("model.safetensors"),
                    "MINITORCH_NUM_THREADS=1 OMPI_MCA_rmaps_base_oversubscribe=1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(mt_test::contains(r.output, "minitorch-run: mpirun --bind-to none")) << r.output;
  EXPECT_TRUE(mt_test::contains(r.output, "x data ranks 2 |")) << r.output;
  EXPECT_TRUE(mt_test::contains(r.output, "step     2/2")) << r.output;
}

}  // namespace

// Bad input to the command-line tools: each gives one clear error and a non-zero exit, and no
// half-written checkpoint is left behind.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_util.h"
#if MINITORCH_WITH_CUDA
#include "cuda/cuda.h"
#endif

using mt_test::bin;
using mt_test::run_command;
using mt_test::source;
using testing::HasSubstr;

namespace {
// A tiny but valid config: 2-layer model, 2 steps, no evaluation.
const char* kTinyConfig = R"({
  "train_batch_size": 4, "train_micro_batch_size_per_gpu": 4,
  "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}},
  "model": {"name": "baby", "n_layer": 1, "n_head": 2, "n_embd": 16, "block_size": 16},
  "training": {"steps": 2, "eval_interval": 0, "log_interval": 1, "seed": 7}
})";

std::string corpus(const mt_test::TempDir& dir) {
  std::string text;
  for (int i = 0; i < 40; ++i) text += "In the beginning God created the heaven and the earth.\n";
  return dir.write("corpus.txt", text);
}

void expect_one_error(const mt_test::CommandResult& r, const std::string& needle) {
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_EQ(mt_test::error_lines(r.output), 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr(needle));
}

std::string train_cmd(const std::string& config, const std::string& data, const std::string& extra = "") {
  return bin("minitorch-train") + " --config " + config + " --data " + data + " " + extra;
}
}  // namespace

TEST(L03_TrainCli, MissingDataFileIsOneClearError) {
  mt_test::TempDir dir;
  auto cfg = dir.write("c.json", kTinyConfig);
  expect_one_error(run_command(train_cmd(cfg, dir.path("nope.txt"))), "data file '" + (dir.path("nope.txt")) + "' not found");
}

TEST(L03_TrainCli, EmptyDataFileIsOneClearError) {
  mt_test::TempDir dir;
  auto cfg = dir.write("c.json", kTinyConfig);
  auto empty = dir.write("empty.txt", "");
  expect_one_error(run_command(train_cmd(cfg, empty)), "is empty");
}

TEST(L03_TrainCli, MalformedJsonNamesTheFile) {
  mt_test::TempDir dir;
  auto cfg = dir.write("bad.json", "{ \"train_batch_size\": 4, ");
  auto r = run_command(train_cmd(cfg, corpus(dir)));
  expect_one_error(r, "bad.json");
}

TEST(L03_TrainCli, UnknownSectionKeySuggestsTheNearestOne) {
  mt_test::TempDir dir;
  std::string text = kTinyConfig;
  text.insert(text.rfind('}'), R"(, "zero_optimization": {"stage": 0, "reduce_bucket_sz": 100})");
  auto r = run_command(train_cmd(dir.write("c.json", text), corpus(dir)));
  expect_one_error(r, "did you mean 'reduce_bucket_size'");
}

TEST(L03_TrainCli, BatchMismatchGivesDeepSpeedsMessage) {
  mt_test::TempDir dir;
  std::string text = kTinyConfig;
  text.replace(text.find("\"train_batch_size\": 4"), 21, "\"train_batch_size\": 6, \"gradient_accumulation_steps\": 1");
  auto r = run_command(train_cmd(dir.write("c.json", text), corpus(dir)));
  expect_one_error(r, "Check batch related parameters. train_batch_size is not equal to micro_batch_per_gpu * "
                      "gradient_acc_step * world_size 6 != 4 * 1 * 1");
}

TEST(L03_TrainCli, NotImplementedFeatureIsAConfigErrorWithStatus2) {
  // Partial offload (offload_optimizer.ratio below 1) must never look as if it ran: one error line, exit 2,
  // no training step.
  mt_test::TempDir dir;
  std::string text = kTinyConfig;
  text.insert(text.rfind('}'), R"(, "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "ratio": 0.5}})");
  auto r = run_command(train_cmd(dir.write("c.json", text), corpus(dir)));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(mt_test::error_lines(r.output), 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("partial offload (a share of the optimizer states) is not implemented yet"));
  EXPECT_THAT(r.output, testing::Not(HasSubstr("step ")));
}

TEST(L03_TrainCli, KeyWithoutEffectIsAWarningAndTrainingRuns) {
  mt_test::TempDir dir;
  std::string text = kTinyConfig;
  text.insert(text.rfind('}'), R"(, "zero_optimization": {"stage": 0, "sub_group_size": 1000})");
  auto r = run_command(train_cmd(dir.write("c.json", text), corpus(dir)));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("warning: zero_optimization.sub_group_size only affects ZeRO stage 3"));
  EXPECT_EQ(mt_test::error_lines(r.output), 0) << r.output;
}

TEST(L03_TrainCli, MissingRequiredFlagIsAUsageError) {
  auto r = run_command(bin("minitorch-train"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--config is required"));
}

TEST(L03_TrainCli, UnwritableCheckpointLeavesNothingBehind) {
  mt_test::TempDir dir;
  auto cfg = dir.write("c.json", kTinyConfig);
  auto blocker = dir.write("blocker", "a file where a directory should be");
  auto r = run_command(train_cmd(cfg, corpus(dir), "--out " + blocker + "/ckpt.safetensors"));
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_EQ(mt_test::error_lines(r.output), 1) << r.output;
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir.dir)) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 3) << "only c.json, corpus.txt and blocker may exist";
}

TEST(L03_EvalCli, CorruptOrTruncatedCheckpointIsOneClearError) {
  mt_test::TempDir dir;
  auto cfg = dir.write("c.json", kTinyConfig);
  auto data = corpus(dir);
  auto ckpt = dir.path("ok.safetensors");
  auto r = run_command(train_cmd(cfg, data, "--out " + ckpt));
  ASSERT_EQ(r.exit_code, 0) << r.output;

  std::ifstream in(ckpt, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto truncated = dir.write("truncated.safetensors", bytes.substr(0, bytes.size() / 2));
  auto garbage = dir.write("garbage.safetensors", "this is not a checkpoint at all");
  std::string flipped = bytes;
  flipped[10] = '!';  // inside the JSON header
  auto corrupt = dir.write("corrupt.safetensors", flipped);
  for (const auto& bad : {truncated, garbage, corrupt, dir.path("missing.safetensors")}) {
    auto e = run_command(bin("minitorch-eval") + " --checkpoint " + bad + " --data " + data);
    expect_one_error(e, bad);
  }
}

TEST(L03_TrainCli, StepsOverrideSaysTheScheduleKeepsItsHorizon) {
  mt_test::TempDir dir;
  auto config = [&](const std::string& total) {  // kTinyConfig with a decaying schedule over `total` steps
    const std::string tiny = kTinyConfig;
    const std::size_t at = tiny.find("\"model\"");
    return dir.write("c" + total + ".json", tiny.substr(0, at) + R"("scheduler": {"type": "WarmupDecayLR", "params": )" +
                                                R"({"warmup_max_lr": 1e-3, "warmup_num_steps": 1, "total_num_steps": )" +
                                                total + "}}, " + tiny.substr(at));
  };
  auto r = run_command(train_cmd(config("600"), corpus(dir), "--steps 2 --out ''"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("warning: --steps 2 does not rescale scheduler.params.total_num_steps (600)"));
  EXPECT_THAT(r.output, HasSubstr("set total_num_steps to 2 in the config"));
  // Equal horizons: nothing to say.
  auto r2 = run_command(train_cmd(config("2"), corpus(dir), "--steps 2 --out ''"));
  ASSERT_EQ(r2.exit_code, 0) << r2.output;
  EXPECT_THAT(r2.output, testing::Not(HasSubstr("does not rescale")));
}

TEST(L03_EvalCli, PrintsTheLossAndHowManyWindowsItEvaluated) {
  mt_test::TempDir dir;
  auto cfg = dir.write("c.json", kTinyConfig);
  auto data = corpus(dir);  // 40 lines of 55 characters = 2200 tokens; windows of 16 + 1
  auto ckpt = dir.path("ok.safetensors");
  ASSERT_EQ(run_command(train_cmd(cfg, data, "--out " + ckpt)).exit_code, 0);
  auto r = run_command(bin("minitorch-eval") + " --checkpoint " + ckpt + " --data " + data);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // 2200 / 17 = 129 windows (2193 tokens), 7 left out; one line, ending in a newline.
  EXPECT_THAT(r.output, testing::MatchesRegex("loss [0-9]+\\.[0-9]{6} over 129 windows of 17 tokens \\(2193 tokens of "
                                              "2200; the last 7, less than a window, left out\\)\n"));
}

TEST(L03_EvalCli, TextWithUnknownCharacterIsOneClearError) {
  mt_test::TempDir dir;
  auto cfg = dir.write("c.json", kTinyConfig);
  auto ckpt = dir.path("ok.safetensors");
  ASSERT_EQ(run_command(train_cmd(cfg, corpus(dir), "--out " + ckpt)).exit_code, 0);
  auto other = dir.write("other.txt", std::string(100, 'Z'));  // 'Z' is not in the corpus
  expect_one_error(run_command(bin("minitorch-eval") + " --checkpoint " + ckpt + " --data " + other), "'Z'");
}

// The communication timeout: comm.timeout_s sets it, --comm-timeout overrides it, and the run prints
// the one in force; a value that is not > 0 is one configuration error (exit 2).
TEST(L05_TrainCli, CommTimeoutComesFromTheConfigAndTheFlag) {
  mt_test::TempDir dir;
  std::string text = kTinyConfig;
  text.insert(1, R"("comm": {"timeout_s": 42.5},)");
  const std::string cfg = dir.write("c.json", text), data = corpus(dir);
  auto from_config = run_command(train_cmd(cfg, data));
  EXPECT_EQ(from_config.exit_code, 0) << from_config.output;
  EXPECT_THAT(from_config.output, HasSubstr("comm timeout 42.5 s"));
  auto from_flag = run_command(train_cmd(cfg, data, "--comm-timeout 7"));
  EXPECT_EQ(from_flag.exit_code, 0) << from_flag.output;
  EXPECT_THAT(from_flag.output, HasSubstr("comm timeout 7 s"));
  auto by_default = run_command(train_cmd(dir.write("d.json", kTinyConfig), data));
  EXPECT_THAT(by_default.output, HasSubstr("comm timeout 300 s"));
}

TEST(L05_TrainCli, BadCommTimeoutIsOneErrorWithStatus2) {
  mt_test::TempDir dir;
  const std::string data = corpus(dir);
  std::string text = kTinyConfig;
  text.insert(1, R"("comm": {"timeout_s": 0},)");
  auto r = run_command(train_cmd(dir.write("c.json", text), data));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  expect_one_error(r, "comm.timeout_s must be greater than 0");
  auto flag = run_command(train_cmd(dir.write("d.json", kTinyConfig), data, "--comm-timeout -1"));
  EXPECT_EQ(flag.exit_code, 2) << flag.output;
  EXPECT_THAT(flag.output, HasSubstr("--comm-timeout"));
  // NaN compares false with everything, so "> 0" alone let it through (exit 1, later).
  for (const char* bad : {"nan", "inf", "1e999"}) {
    flag = run_command(train_cmd(dir.path("d.json"), data, std::string("--comm-timeout ") + bad));
    EXPECT_EQ(flag.exit_code, 2) << bad << ": " << flag.output;
    EXPECT_THAT(flag.output, HasSubstr("is not a finite number")) << bad;
  }
  auto sample = run_command(bin("minitorch-sample") + " --checkpoint x --temperature nan");
  EXPECT_EQ(sample.exit_code, 2) << sample.output;
  EXPECT_THAT(sample.output, HasSubstr("'nan' is not a finite number"));
}

TEST(L03_TrainCli, ResumeFromAnIncompleteOrMixedSaveIsOneClearError) {
  mt_test::TempDir dir;
  auto cfg = dir.write("c.json", kTinyConfig);
  auto data = corpus(dir);
  auto a = dir.path("a.safetensors"), b = dir.path("b.safetensors");
  ASSERT_EQ(run_command(train_cmd(cfg, data, "--out " + a)).exit_code, 0);
  ASSERT_EQ(run_command(train_cmd(cfg, data, "--out " + b)).exit_code, 0);  // another run: another run id
  auto resume = [&] { return run_command(train_cmd(cfg, data, "--steps 3 --out '' --resume " + a)); };
  ASSERT_EQ(resume().exit_code, 0);

  std::filesystem::copy_file(b + ".optim", a + ".optim", std::filesystem::copy_options::overwrite_existing);
  auto r = resume();
  expect_one_error(r, "optimizer state '" + a + ".optim' is from another run");
  EXPECT_THAT(r.output, testing::Not(HasSubstr("step ")));

  std::filesystem::resize_file(a, std::filesystem::file_size(a) - 1);  // the manifest names it before parsing
  expect_one_error(resume(), "model file '" + a + "' is ");
  EXPECT_THAT(resume().output, HasSubstr("it is truncated or was replaced"));

  std::filesystem::remove(a + ".manifest.json");
  expect_one_error(resume(), "its manifest '" + a + ".manifest.json' is missing");
}

// A save on a full disk: tests/tools/full_disk_save.sh (ctest L03_TrainCli.AFullDiskLeavesTheLastSaveUsable).

TEST(L03_TrainCli, OutThatIsAUsersFileIsRefusedBeforeTraining) {
  mt_test::TempDir dir;
  auto cfg = dir.write("c.json", kTinyConfig);
  auto data = corpus(dir);
  const std::string notes = dir.write("notes.txt", "my notes");
  auto r = run_command(train_cmd(cfg, data, "--out " + notes));
  expect_one_error(r, "--out '" + notes + "': '" + notes + "' is not a file a minitorch save wrote");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, testing::Not(HasSubstr("step ")));
  EXPECT_EQ(mt_test::read_text(notes), "my notes");
}

TEST(L03_TrainCli, ADeviceThatCannotRunHereIsOneErrorWithStatus2BeforeTraining) {
  mt_test::TempDir dir;
  auto cfg = dir.write("c.json", kTinyConfig);
  auto data = corpus(dir);
  // A GPU that is not there: this build without the CUDA layer, this machine without a GPU, or (on a GPU
  // machine) an index past its GPUs.
#if MINITORCH_WITH_CUDA
  const bool gpu_here = minitorch::cuda::device_count() > 0;
  const std::string no_gpu_99 = gpu_here ? "there is no GPU 99" : "no usable CUDA device here";
#else
  const std::string no_gpu_99 = "this build has no CUDA layer";
#endif
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"gpu", "--device 'gpu' is not a device: use cpu, sim (a simulated accelerator), cuda (one GPU per rank) or cuda:N (GPU N)"},
      {"cuda:x", "--device 'cuda:x' is not a device"},
      {"cuda:99", "--device 'cuda:99': " + no_gpu_99},
  };
  for (const auto& [device, message] : cases) {
    auto r = run_command(train_cmd(cfg, data, "--device " + device));
    expect_one_error(r, message);
    EXPECT_EQ(r.exit_code, 2) << device;
    EXPECT_THAT(r.output, testing::Not(HasSubstr("step "))) << device;
  }
  // --device cpu is the default: the same losses, bit for bit.
  auto plain = run_command(train_cmd(cfg, data, "--steps 2"));
  auto on_cpu = run_command(train_cmd(cfg, data, "--steps 2 --device cpu"));
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  ASSERT_EQ(on_cpu.exit_code, 0) << on_cpu.output;
  auto losses = [](const std::string& out) {
    std::string kept;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);)
      if (line.rfind("step ", 0) == 0) kept += line.substr(0, line.find(" | lr")) + "\n";
    return kept;
  };
  EXPECT_FALSE(losses(plain.output).empty());
  EXPECT_EQ(losses(on_cpu.output), losses(plain.output));
  // --device sim runs the CPU kernels on the simulated accelerator's pool: the same losses, bit for bit.
  auto on_sim = run_command(train_cmd(cfg, data, "--steps 2 --device sim"));
  ASSERT_EQ(on_sim.exit_code, 0) << on_sim.output;
  EXPECT_EQ(losses(on_sim.output), losses(plain.output));
}

TEST(L06_TraceCli, TraceRecordsTheFirstTraceStepsStepsAndSaysSo) {
  // Every recorded event stays in memory until the end: a long traced run records its first steps only.
  mt_test::TempDir dir;
  auto cfg = dir.write("c.json", kTinyConfig);
  auto data = corpus(dir);
  auto r = run_command(train_cmd(cfg, data, "--steps 4 --trace " + dir.path("t") + " --trace-steps 2"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("warning: --trace recorded the first 2 steps of 4 (--trace-steps 2); the rest of the "
                                  "run is not traced"));
  EXPECT_THAT(r.output, HasSubstr("step     4/4"));
  const auto frames = nlohmann::json::parse(mt_test::read_text(dir.path("t/frames.json")));
  std::int64_t last = 0;
  for (const auto& f : frames.at("frames")) last = std::max<std::int64_t>(last, f.at("step").get<std::int64_t>());
  EXPECT_EQ(last, 2) << "frames of steps 1 and 2 only";
  // As many steps as the run has: no warning.
  r = run_command(train_cmd(cfg, data, "--steps 2 --trace " + dir.path("u") + " --trace-steps 2"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, testing::Not(HasSubstr("warning:")));
  r = run_command(train_cmd(cfg, data, "--trace-steps 2"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  expect_one_error(r, "--trace-steps says how many steps --trace records; give --trace DIR too");
}

TEST(L03_TrainCli, ResumeOnAnotherRankCountWarnsThatTheDataOrderChanges) {
  mt_test::TempDir dir;
  auto cfg = dir.write("c.json", kTinyConfig);
  auto data = corpus(dir);
  auto a = dir.path("a.safetensors");
  // Saved by 2 data-parallel ranks (DDP: one file), the same micro-batch of 4.
  std::string two = kTinyConfig;
  two.replace(two.find("\"train_batch_size\": 4, "), 23, "");
  auto cfg2 = dir.write("c2.json", two);
  auto saved = run_command(mt_test::mpirun_command("minitorch-train", 2, "--config " + cfg2 + " --data " + data + " --out " + a));
  ASSERT_EQ(saved.exit_code, 0) << saved.output;
  auto r = run_command(train_cmd(cfg, data, "--steps 3 --out " + a + " --resume " + a));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("warning: checkpoint '" + a + "' was saved on 2 data-parallel rank(s)"));
  EXPECT_THAT(r.output, HasSubstr("resumes on 1 with 4 x 1: the data order changes from here on"));
  EXPECT_THAT(r.output, HasSubstr("step     3/3"));
  // The resumed run saved a new complete save over the old one: it resumes without a warning.
  r = run_command(train_cmd(cfg, data, "--steps 4 --out '' --resume " + a));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, testing::Not(HasSubstr("warning:")));
}

TEST(L03_EvalCli, TheModelFileAloneIsEnough) {
  mt_test::TempDir dir;
  auto cfg = dir.write("c.json", kTinyConfig);
  auto data = corpus(dir);
  auto ckpt = dir.path("ok.safetensors");
  ASSERT_EQ(run_command(train_cmd(cfg, data, "--out " + ckpt)).exit_code, 0);
  std::filesystem::remove(ckpt + ".optim");
  std::filesystem::remove(ckpt + ".manifest.json");
  auto e = run_command(bin("minitorch-eval") + " --checkpoint " + ckpt + " --data " + data);
  EXPECT_EQ(e.exit_code, 0) << e.output;
  auto s = run_command(bin("minitorch-sample") + " --checkpoint " + ckpt + " --tokens 5");
  EXPECT_EQ(s.exit_code, 0) << s.output;
}

TEST(L13_TrainCli, TensorParallelRunsTrainAndRefuseWhatTheyCannotDoYet) {
  // 2 ranks, one tensor group of 2 (the tiny model's 2 heads split): it trains without a save.
  mt_test::TempDir dir;
  std::string text = kTinyConfig;
  text.replace(text.find("\"train_batch_size\": 4, "), 23, "");
  text.insert(text.rfind('}'), R"(, "tensor_parallel": {"autotp_size": 2})");
  const std::string cfg = dir.write("tp.json", text), data = corpus(dir);
  auto run = [&](const std::string& extra) {
    return run_command(mt_test::mpirun_command("minitorch-train", 2, "--config " + cfg + " --data " + data + " " + extra));
  };
  auto r = run("--out ''");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("tensor parallel: grid data 1 x pipeline 1 x tensor 2"));
  EXPECT_THAT(r.output, HasSubstr("step     2/2"));
  // A save (its checkpoint of slices is not written yet) is refused before step 1, naming what to do.
  r = run("--out " + dir.path("ckpt"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("saving or resuming a tensor-parallel run (tensor_parallel.size 2) is not available yet"));
  EXPECT_THAT(r.output, testing::Not(HasSubstr("step ")));
  EXPECT_FALSE(std::filesystem::exists(dir.path("ckpt")));
  // The simulated accelerator runs the CPU kernels, but the split layers are checked on the CPU only.
  r = run("--out '' --device sim");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("tensor_parallel.size 2 on --device sim is not available yet"));
}

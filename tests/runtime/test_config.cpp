// The DeepSpeed-style config: DeepSpeed's batch arithmetic and messages, its code defaults, and our
// strictness (nearest-key errors, top-level warnings, types, malformed JSON). The key table's
// statuses are walked in test_config_keys.cpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <unistd.h>

#include "runtime/config.h"
#include "runtime/config_reader.h"
#include "config_test_util.h"

using minitorch::runtime::Config;
using minitorch::runtime::ConfigError;
using minitorch::runtime::is_near_miss;
using minitorch::runtime::nearest_implemented_top_level_key;
namespace fs = std::filesystem;
using namespace config_test;

TEST(L03_Config, AnyTwoBatchParametersGiveTheThird) {
  Config a = parse(R"({"train_batch_size": 32, "train_micro_batch_size_per_gpu": 4})", 2);
  EXPECT_EQ(a.gradient_accumulation_steps, 4);
  Config b = parse(R"({"train_batch_size": 32, "gradient_accumulation_steps": 2})", 4);
  EXPECT_EQ(b.train_micro_batch_size_per_gpu, 4);
  Config c = parse(R"({"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2})", 2);
  EXPECT_EQ(c.train_batch_size, 16);
  Config d = parse(R"({"train_batch_size": 8, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2})", 2);
  EXPECT_EQ(d.train_batch_size, 8);
  // One alone: DeepSpeed sets gradient_accumulation_steps = 1.
  Config e = parse(R"({"train_batch_size": 12})", 3);
  EXPECT_EQ(e.train_micro_batch_size_per_gpu, 4);
  EXPECT_EQ(e.gradient_accumulation_steps, 1);
  Config f = parse(R"({"train_micro_batch_size_per_gpu": 5})", 2);
  EXPECT_EQ(f.train_batch_size, 10);
  EXPECT_EQ(f.gradient_accumulation_steps, 1);
}

TEST(L03_Config, BatchMismatchUsesDeepSpeedsMessage) {
  // DeepSpeed's message, then how the numbers were derived and what to do.
  const std::string fix = "set the batch keys for 1 rank, or give only train_batch_size, a multiple of the number of "
                          "ranks, and let the others be derived";
  EXPECT_EQ(parse_error(R"({"train_batch_size": 10, "train_micro_batch_size_per_gpu": 3,
                            "gradient_accumulation_steps": 2})"),
            "test.json: Check batch related parameters. train_batch_size is not equal to micro_batch_per_gpu * "
            "gradient_acc_step * world_size 10 != 3 * 2 * 1 (world size 1); " + fix);
  // Derived by integer division, as DeepSpeed does, then checked: 10 // 3 // 1 = 3.
  EXPECT_EQ(parse_error(R"({"train_batch_size": 10, "train_micro_batch_size_per_gpu": 3})"),
            "test.json: Check batch related parameters. train_batch_size is not equal to micro_batch_per_gpu * "
            "gradient_acc_step * world_size 10 != 3 * 3 * 1 (gradient_accumulation_steps = 10 / 3 / 1 = 3 (integer "
            "division, as DeepSpeed does), world size 1); " + fix);
  EXPECT_EQ(parse_error(R"({"train_batch_size": 6, "gradient_accumulation_steps": 2})", 4),
            "test.json: Micro batch size per gpu: 0 has to be greater than 0 (train_micro_batch_size_per_gpu = 6 / 4 / 2 "
            "= 0 (integer division, as DeepSpeed does), world size 4); set the batch keys for 4 ranks, or give only "
            "train_batch_size, a multiple of the number of ranks, and let the others be derived");
  EXPECT_EQ(parse_error("{}"), "test.json: Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided");
  EXPECT_EQ(parse_error(R"({"gradient_accumulation_steps": 4})"),
            "test.json: Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided");
  EXPECT_TRUE(contains(parse_error(R"({"train_batch_size": 8, "train_micro_batch_size_per_gpu": 0})"),
                       "test.json: Micro batch size per gpu: 0 has to be greater than 0"));
}

TEST(L03_Config, TrainBatchSizeAloneRunsOnEveryRankCountThatDividesIt) {
  // configs/baby.json gives only train_batch_size: micro = 32 / N, no accumulation, on 1, 2, 4, 8 ranks.
  for (int n : {1, 2, 4, 8}) {
    Config c = Config::from_file(std::string(MT_SOURCE_DIR) + "/configs/baby.json", n);
    EXPECT_EQ(c.train_batch_size, 32);
    EXPECT_EQ(c.train_micro_batch_size_per_gpu, 32 / n);
    EXPECT_EQ(c.gradient_accumulation_steps, 1);
  }
  // 3 does not divide 32: DeepSpeed's derivation gives 10 * 1 * 3 = 30, and the message says why.
  const std::string msg = error_of([] { Config::from_file(std::string(MT_SOURCE_DIR) + "/configs/baby.json", 3); });
  EXPECT_TRUE(contains(msg, "32 != 10 * 1 * 3 (train_micro_batch_size_per_gpu = 32 / 3 = 10")) << msg;
}

TEST(L03_Config, UnknownSectionKeyNamesTheNearestValidKey) {
  std::string msg = parse_error(with(R"("zero_optimization": {"stage": 2, "reduce_bucket_sz": 1000})"));
  EXPECT_TRUE(contains(msg, "unknown key 'reduce_bucket_sz' in zero_optimization; did you mean 'reduce_bucket_size'?"))
      << msg;
  EXPECT_TRUE(contains(msg, "test.json")) << msg;
  msg = parse_error(with(R"("optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "beta": [0.9, 0.95]}})"));
  EXPECT_TRUE(contains(msg, "unknown key 'beta' in optimizer.params; did you mean 'betas'?")) << msg;
  msg = parse_error(with(R"("bf16": {"enable": true})"));
  EXPECT_TRUE(contains(msg, "unknown key 'enable' in bf16; did you mean 'enabled'?")) << msg;
  msg = parse_error(with(R"("model": {"name": "baby", "n_layers": 2})"));
  EXPECT_TRUE(contains(msg, "unknown key 'n_layers' in model; did you mean 'n_layer'?")) << msg;
  msg = parse_error(with(R"("training": {"eval_interal": 5})"));
  EXPECT_TRUE(contains(msg, "unknown key 'eval_interal' in training; did you mean 'eval_interval'?")) << msg;
  msg = parse_error(with(R"("zero_optimization": {"stage": 1, "offload_optimizer": {"devise": "cpu"}})"));
  EXPECT_TRUE(contains(msg, "in zero_optimization.offload_optimizer; did you mean 'device'?")) << msg;
  msg = parse_error(with(R"("scheduler": {"type": "WarmupLR", "params": {"warmup_max": 0.1}})"));
  EXPECT_TRUE(contains(msg, "did you mean 'warmup_max_lr'?")) << msg;
}

TEST(L03_Config, NearMissOfAnImplementedTopLevelKeyIsAnError) {
  // A misspelt key of ours would train without its effect (no clipping, no ZeRO section): refused.
  EXPECT_EQ(parse_error(with(R"("gradient_cliping": 1.0)")),
            "test.json: unknown top-level key 'gradient_cliping'; did you mean 'gradient_clipping'? (as written it "
            "would have no effect; rename it, or remove it)");
  for (const char* typo : {R"("zero_optimisation": {"stage": 2})", R"("optimiser": {"type": "AdamW"})",
                           R"("Train_Batch_Size": 8)", R"("schedular": {})", R"("trainig": {})"}) {
    const std::string msg = parse_error(with(typo));
    EXPECT_TRUE(contains(msg, "unknown top-level key")) << typo << " -> " << msg;
    EXPECT_TRUE(contains(msg, "did you mean")) << msg;
  }
  EXPECT_TRUE(contains(parse_error(with(R"("zero_optimisation": {})")), "did you mean 'zero_optimization'?"));
}

TEST(L03_Config, UnknownTopLevelKeyFarFromOursIsAWarning) {
  // Far from every key: the user's own note; DeepSpeed would ignore it silently, we warn once.
  Config t = parse(with(R"("my_notes": "ok", "fp61": true)"));
  ASSERT_EQ(t.warnings.size(), 2u);  // in the JSON object's (sorted) key order
  EXPECT_TRUE(contains(t.warnings[0], "'fp61'")) << t.warnings[0];  // 2 edits in 4 letters: not a near-miss
  EXPECT_EQ(t.warnings[1], "unknown top-level key 'my_notes' ignored: minitorch does not know it (DeepSpeed would "
                           "silently ignore it)");
  EXPECT_TRUE(contains(t.summary(), "my_notes"));
  // Close to a DeepSpeed key we only warn about: still a warning, with the suggestion.
  Config m = parse(with(R"("tensorbord": {})"));
  ASSERT_EQ(m.warnings.size(), 1u);
  EXPECT_TRUE(contains(m.warnings[0], "did you mean 'tensorboard'?")) << m.warnings[0];
  // Real DeepSpeed keys minitorch does not implement warn that they have no effect; "elasticity" is
  // one edit from nothing of ours, "aio" would be a near-miss of nothing either.
  Config d = parse(with(R"("zero_optimization": {"stage3_max_live_parameters": 1e9}, "prescale_gradients": false,)"
                        R"( "elasticity": {"enabled": true}, "aio": {"block_size": 1048576})"));
  ASSERT_EQ(d.warnings.size(), 4u);  // the section's own first, then the top-level keys in sorted order
  EXPECT_TRUE(contains(d.warnings[0], "zero_optimization.stage3_max_live_parameters only affects ZeRO stage 3"))
      << d.warnings[0];
  EXPECT_TRUE(contains(d.warnings[1], "aio only affects ZeRO-Infinity's NVMe swap")) << d.warnings[1];
  EXPECT_TRUE(contains(d.warnings[2], "elasticity is accepted but has no effect here")) << d.warnings[2];
  EXPECT_TRUE(contains(d.warnings[3], "prescale_gradients is accepted but has no effect here")) << d.warnings[3];
}

TEST(L03_Config, NearMissRule) {
  EXPECT_TRUE(is_near_miss("gradient_cliping", "gradient_clipping"));
  EXPECT_TRUE(is_near_miss("BF16", "bf16"));           // case only
  EXPECT_FALSE(is_near_miss("fp61", "fp16"));          // 2 edits in 4 letters
  EXPECT_TRUE(is_near_miss("fp17", "fp16"));           // 1 edit in 4 letters
  EXPECT_FALSE(is_near_miss("train", "training"));     // 3 edits
  EXPECT_EQ(nearest_implemented_top_level_key("gradient_cliping"), "gradient_clipping");
  EXPECT_EQ(nearest_implemented_top_level_key("zero_optimisation"), "zero_optimization");
}

TEST(L03_Config, Bf16AndFp16TogetherIsAnError) {
  std::string msg = parse_error(with(R"("bf16": {"enabled": true}, "fp16": {"enabled": true})"));
  EXPECT_TRUE(contains(msg, "bfloat16 and fp16 modes cannot be simultaneously enabled")) << msg;
  Config c = parse(with(R"("bf16": {"enabled": true}, "fp16": {"enabled": false})"));
  EXPECT_TRUE(c.bf16);
}

TEST(L03_Config, Fp16DefaultsAreDeepSpeeds) {
  Config c = parse(with(R"("fp16": {"enabled": true})"));
  EXPECT_TRUE(c.fp16.enabled);
  EXPECT_TRUE(c.mixed_precision());
  EXPECT_TRUE(c.warnings.empty());
  EXPECT_TRUE(c.fp16.dynamic());
  EXPECT_EQ(c.fp16.initial_scale_power, 16);
  EXPECT_EQ(c.fp16.loss_scale_window, 1000);
  EXPECT_EQ(c.fp16.hysteresis, 2);
  EXPECT_FALSE(c.fp16.consecutive_hysteresis);
  EXPECT_EQ(c.fp16.min_loss_scale, 1.0);
  EXPECT_TRUE(contains(c.summary(), "precision: fp16 (dynamic loss scale 2^16")) << c.summary();
  Config s = parse(with(R"("fp16": {"enabled": true, "loss_scale": 128, "consecutive_hysteresis": true})"));
  EXPECT_FALSE(s.fp16.dynamic());
  EXPECT_TRUE(s.fp16.consecutive_hysteresis);
  EXPECT_TRUE(s.warnings.empty());
  ASSERT_EQ(parse(with(R"("fp16": {"enabled": true, "auto_cast": true})")).warnings.size(), 1u);
}

TEST(L03_Config, Fp16RangesFailWithOneClearErrorEach) {
  EXPECT_TRUE(contains(parse_error(with(R"("fp16": {"hysteresis": 0})")), "fp16.hysteresis must be at least 1, got 0"));
  EXPECT_TRUE(contains(parse_error(with(R"("fp16": {"loss_scale": -1})")), "fp16.loss_scale must be"));
  EXPECT_TRUE(contains(parse_error(with(R"("fp16": {"initial_scale_power": 65})")), "fp16.initial_scale_power must be between 0 and 64"));
  // DeepSpeed's rule: the window and the floor must be > 0 only where they are used, a dynamic scale of an
  // enabled fp16 (its messages); a static scale or fp16 off accepts what it never reads.
  EXPECT_TRUE(contains(parse_error(with(R"("fp16": {"enabled": true, "loss_scale_window": 0})")),
                       "fp16.loss_scale_window must be > 0 when dynamic loss scaling is enabled (loss_scale=0)"));
  EXPECT_TRUE(contains(parse_error(with(R"("fp16": {"enabled": true, "min_loss_scale": 0})")),
                       "fp16.min_loss_scale must be > 0 when dynamic loss scaling is enabled (loss_scale=0)"));
  EXPECT_TRUE(parse(with(R"("fp16": {"enabled": true, "loss_scale": 128, "loss_scale_window": -1, "min_loss_scale": 0})"))
                  .warnings.empty());
  EXPECT_NO_THROW(parse(with(R"("fp16": {"enabled": false, "loss_scale_window": 0, "min_loss_scale": -1})")));
  const std::string msg = parse_error(with(R"("fp16": {"enabled": true, "initial_scale_power": 4, "min_loss_scale": 32})"));
  EXPECT_TRUE(contains(msg, "is above the initial scale 2^4")) << msg;
}

TEST(L03_Config, WrongTypesNameTheKeyAndTheExpectedType) {
  std::string msg = parse_error(R"({"train_batch_size": "32"})");
  EXPECT_TRUE(contains(msg, "train_batch_size must be an integer, got \"32\" (string)")) << msg;
  msg = parse_error(with(R"("zero_optimization": {"overlap_comm": "maybe"})"));
  EXPECT_TRUE(contains(msg, "zero_optimization.overlap_comm must be a boolean")) << msg;
  msg = parse_error(with(R"("zero_optimization": {"reduce_bucket_size": 1.5})"));
  EXPECT_TRUE(contains(msg, "zero_optimization.reduce_bucket_size must be an integer")) << msg;
  msg = parse_error(with(R"("optimizer": {"type": "AdamW", "params": {"lr": "0.1"}})"));
  EXPECT_TRUE(contains(msg, "optimizer.params.lr must be a number")) << msg;
  msg = parse_error(with(R"("zero_optimization": 2)"));
  EXPECT_TRUE(contains(msg, "zero_optimization must be an object")) << msg;
  msg = parse_error(with(R"("zero_optimization": {"stage": 4})"));
  EXPECT_TRUE(contains(msg, "zero_optimization.stage must be between 0 and 3, got 4")) << msg;
  // 5e8 written as a JSON float is a whole number: accepted as an element count.
  Config c = parse(with(R"("zero_optimization": {"stage": 0, "reduce_bucket_size": 2e8})"));
  EXPECT_EQ(c.zero.reduce_bucket_size, 200'000'000);
}

TEST(L03_Config, MalformedAndMissingFiles) {
  fs::path dir = fs::temp_directory_path() / ("mt_cfg_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string bad = (dir / "bad.json").string();
  std::ofstream(bad) << "{\n  \"train_batch_size\": 8,\n  \"bf16\": {\"enabled\": true,}\n}\n";
  std::string msg = error_of([&] { Config::from_file(bad); });
  EXPECT_TRUE(contains(msg, bad) && contains(msg, "malformed JSON") && contains(msg, "line 3")) << msg;
  const std::string dup = (dir / "dup.json").string();
  std::ofstream(dup) << R"({"train_batch_size": 8, "train_batch_size": 16})";
  msg = error_of([&] { Config::from_file(dup); });
  EXPECT_TRUE(contains(msg, dup) && contains(msg, "duplicate key 'train_batch_size'")) << msg;
  const std::string missing = (dir / "missing.json").string();
  EXPECT_EQ(error_of([&] { Config::from_file(missing); }), "config file '" + missing + "' not found");
  const std::string good = (dir / "good.json").string();
  std::ofstream(good) << R"({"train_batch_size": 8, "gradient_accumulation_steps": 2})";
  Config c = Config::from_file(good, 2);
  EXPECT_EQ(c.train_micro_batch_size_per_gpu, 2);
  EXPECT_EQ(c.source, good);
  EXPECT_TRUE(contains(parse_error("[1, 2]"), "must be a JSON object"));
  fs::remove_all(dir);
}

TEST(L03_Config, ZeroDefaultsFollowDeepSpeedsCode) {
  // Stage 0 is the only stage that parses today; overlap_comm's stage-3 default (true) comes with stage 3.
  Config none = parse(with(""));
  EXPECT_EQ(none.zero.stage, 0);
  EXPECT_FALSE(none.zero.overlap_comm);
  Config zero = parse(with(R"("zero_optimization": {"stage": 0})"));
  EXPECT_EQ(zero.zero.reduce_bucket_size, 500'000'000);
  EXPECT_EQ(zero.zero.allgather_bucket_size, 500'000'000);
  EXPECT_EQ(zero.zero.stage3_prefetch_bucket_size, 50'000'000);
  EXPECT_EQ(zero.zero.stage3_param_persistence_threshold, 100'000);
  EXPECT_EQ(zero.zero.sub_group_size, 1'000'000'000);
  EXPECT_FALSE(zero.zero.overlap_comm);  // true by default only for stage 3
  EXPECT_TRUE(zero.zero.contiguous_gradients);
  EXPECT_TRUE(zero.zero.reduce_scatter);
  EXPECT_TRUE(zero.zero.allgather_partitions);
  EXPECT_FALSE(zero.zero.offload_optimizer.enabled());
  EXPECT_TRUE(zero.warnings.empty());
  EXPECT_EQ(none.gradient_clipping, 0.0);
  EXPECT_FALSE(none.wall_clock_breakdown);
  EXPECT_FALSE(none.bf16);
}

TEST(L03_Config, OptimizerAndScheduler) {
  Config c = parse(with(R"("optimizer": {"type": "Adam", "params": {"lr": 6e-4, "betas": [0.9, 0.95], "eps": 1e-8,
                                                                      "weight_decay": 0.1}},
                           "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": 0, "warmup_max_lr": 6e-4,
                                         "warmup_num_steps": 10, "total_num_steps": 100, "warmup_type": "linear"}},
                           "gradient_clipping": 1.0)"));
  EXPECT_EQ(c.optimizer.type, minitorch::runtime::OptimizerType::adamw);  // Adam: adam_w_mode = true
  EXPECT_TRUE(c.optimizer.adam_w_mode);
  EXPECT_DOUBLE_EQ(c.optimizer.lr, 6e-4);
  EXPECT_DOUBLE_EQ(c.optimizer.beta2, 0.95);
  EXPECT_DOUBLE_EQ(c.optimizer.weight_decay, 0.1);
  EXPECT_EQ(c.scheduler.type, minitorch::optim::LRScheduleType::warmup_decay_lr);
  EXPECT_EQ(c.scheduler.total_num_steps, 100);
  EXPECT_EQ(c.scheduler.warmup_type, minitorch::optim::WarmupType::linear);
  EXPECT_DOUBLE_EQ(*c.scheduler.warmup_max_lr, 6e-4);
  EXPECT_DOUBLE_EQ(c.gradient_clipping, 1.0);
  auto sched = minitorch::optim::make_lr_schedule(c.scheduler, static_cast<float>(c.optimizer.lr));
  EXPECT_FLOAT_EQ(sched.lr(55), static_cast<float>(6e-4 * 45.0 / 90.0));
  Config d = parse(with(R"("optimizer": {"type": "adamw"})"));
  EXPECT_DOUBLE_EQ(d.optimizer.lr, 1e-3);          // FusedAdam defaults
  EXPECT_DOUBLE_EQ(d.optimizer.weight_decay, 0.0);
  EXPECT_FALSE(parse(with("")).optimizer.specified);
  EXPECT_EQ(parse(with("")).scheduler.type, minitorch::optim::LRScheduleType::constant);
  EXPECT_TRUE(contains(parse_error(with(R"("optimizer": {"type": "Lamb"})")), "'Lamb' is not supported"));
  EXPECT_TRUE(contains(parse_error(with(R"("scheduler": {"type": "WarmupDecayLR", "params": {}})")),
                       "total_num_steps is required by WarmupDecayLR"));
  EXPECT_TRUE(contains(parse_error(with(R"("scheduler": {"type": "Cosine"})")), "unknown scheduler type 'Cosine'"));
  Config cos = parse(with(R"("scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 50,
                                           "warmup_min_ratio": 0.1, "cos_min_ratio": 0.01}})"));
  EXPECT_DOUBLE_EQ(cos.scheduler.cos_min_ratio, 0.01);
  EXPECT_EQ(cos.scheduler.warmup_num_steps, 1000);  // DeepSpeed's default
  EXPECT_TRUE(contains(parse_error(with(R"("scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 50,
                                           "warmup_max_lr": 0.1}})")),
                       "unknown key 'warmup_max_lr' in scheduler.params"));
}

TEST(L03_Config, ModelAndTrainingSections) {
  Config c = parse(with(R"("model": {"name": "small", "n_layer": 2},
                           "training": {"steps": 50, "seed": 7, "tokenizer": "byte", "checkpoint": "out.safetensors"})"));
  EXPECT_EQ(c.model.name, "small");
  EXPECT_EQ(c.model.n_layer, 2);
  EXPECT_EQ(c.model.n_embd, 384);
  EXPECT_EQ(c.model.block_size, 256);
  EXPECT_EQ(c.training.steps, 50);
  EXPECT_EQ(c.training.seed, 7u);
  EXPECT_EQ(c.training.tokenizer, "byte");
  EXPECT_EQ(c.training.checkpoint, "out.safetensors");
  Config d = parse(with(""));
  EXPECT_EQ(d.model.name, "baby");
  EXPECT_EQ(d.model.n_embd, 128);
  EXPECT_EQ(d.model.vocab_size, 0);
  EXPECT_EQ(minitorch::runtime::model_preset("gpt2").vocab_size, 50257);
  EXPECT_TRUE(contains(parse_error(with(R"("model": {"dropout": 0.1})")), "only 0 is supported"));
  EXPECT_TRUE(contains(parse_error(with(R"("model": {"name": "huge"})")), "valid: baby, small, gpt2"));
  EXPECT_TRUE(contains(parse_error(with(R"("model": {"n_embd": 100, "n_head": 3})")), "divisible"));
  EXPECT_TRUE(contains(parse_error(with(R"("training": {"tokenizer": "bpe"})")), "must be one of char, byte"));
}

TEST(L03_Config, NearestKeyByEditDistance) {
  using minitorch::runtime::edit_distance;
  using minitorch::runtime::nearest_key;
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(nearest_key("stge", {"stage", "sub_group_size"}), "stage");
}

TEST(L03_Config, SummaryShowsEffectiveSettings) {
  Config c = parse(with(R"("gradient_accumulation_steps": 2, "zero_optimization": {"stage": 0}, "bf16": {"enabled": true})"), 2);
  std::string s = c.summary();
  EXPECT_TRUE(contains(s, "train_batch_size 8 = micro 2 x accumulation 2 x data-parallel 2")) << s;
  EXPECT_TRUE(contains(s, "stage 0")) << s;
  EXPECT_TRUE(contains(s, "bf16")) << s;
  EXPECT_TRUE(contains(s, "constant")) << s;
}

TEST(L03_Config, ShippedConfigsParse) {
  // Every configs/*.json must parse for some world size with no unknown-key error (docs/design.md §7: the
  // seeds' config files must run), and without a warning: a shipped config sets only what runs.
  fs::path dir = fs::path(MT_SOURCE_DIR) / "configs";
  int n = 0;
  if (fs::is_directory(dir))
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().extension() != ".json") continue;
      ++n;
      std::string last;
      bool ok = false;
      for (int world : {1, 2, 4, 8}) {
        try {
          Config c = Config::from_file(e.path().string(), world);
          EXPECT_TRUE(c.warnings.empty()) << e.path() << ": " << c.warnings[0];
          ok = true;
          break;
        } catch (const std::exception& ex) {
          last = ex.what();
        }
      }
      EXPECT_TRUE(ok) << e.path() << ": " << last;
    }
  if (n == 0) GTEST_SKIP() << "no configs/*.json yet";
}

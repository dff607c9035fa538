// The key table (runtime/config_keys.h): every key behaves as its status says, ZeRO stages 1-3 and the
// other features not implemented yet fail clearly, their off values are silent, and docs/config.md
// lists every key with the table's status.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/config.h"
#include "runtime/config_keys.h"
#include "config_test_util.h"

using minitorch::runtime::Config;
using minitorch::runtime::ConfigError;
using minitorch::runtime::ConfigKey;
using minitorch::runtime::KeyStatus;
using nlohmann::json;
namespace mz = minitorch::runtime;
using namespace config_test;

namespace {

/// A minimal config holding `key` = `value` (with the key's context), at ZeRO stage `stage` if >= 0.
std::string config_with(const ConfigKey& key, const std::string& value, int stage) {
  json j = key.context.empty() ? json::object() : json::parse(key.context);
  std::string pointer = "/" + std::string(key.path);
  for (char& ch : pointer) ch = ch == '.' ? '/' : ch;
  j[json::json_pointer(pointer)] = json::parse(value);
  if (stage >= 0) j["zero_optimization"]["stage"] = stage;
  if (!j.contains("train_batch_size") && !j.contains("train_micro_batch_size_per_gpu"))
    j["train_micro_batch_size_per_gpu"] = 2;
  return j.dump();
}
bool in_zero_section(const ConfigKey& k) {
  return k.path.starts_with("zero_optimization.") && k.path != "zero_optimization.stage";
}
}  // namespace

TEST(L03_Config, EveryTableKeyBehavesAsItsStatusSays) {
  std::map<KeyStatus, int> seen;
  for (const ConfigKey& k : mz::config_keys()) {
    const std::string path(k.path);
    // zero_optimization keys are tried at every stage that runs today; the others once.
    for (int stage = in_zero_section(k) ? 0 : -1; stage <= (in_zero_section(k) ? 3 : -1); ++stage) {
      if (stage >= 0 && mz::zero_stage_status(stage) != KeyStatus::implemented) continue;
      const std::string text = config_with(k, std::string(k.example), stage);
      SCOPED_TRACE(path + " in " + text);
      const bool other_stage = stage >= 0 && !(k.stages & mz::stage_bit(stage));
      const KeyStatus expected = other_stage ? KeyStatus::warning : k.status;
      ++seen[expected];
      if (expected == KeyStatus::error) {
        const std::string msg = parse_error(text);
        EXPECT_TRUE(contains(msg, path) && contains(msg, "not implemented yet")) << msg;
        EXPECT_FALSE(contains(msg, "(not a ConfigError)") || contains(msg, "(no error)")) << msg;
        continue;
      }
      Config c;
      // the examples' 2 stages or 2 tensor ranks need ranks to divide
      const int world = path == "pipeline.stages" || path.starts_with("tensor_parallel.") ? 2 : 1;
      ASSERT_NO_THROW(c = parse(text, world));
      if (path.starts_with("aio.")) {  // the aio section alone, without NVMe offload, also says that it does nothing
        ASSERT_FALSE(c.warnings.empty());
        EXPECT_TRUE(contains(c.warnings.back(), "aio only affects ZeRO-Infinity's NVMe swap")) << c.warnings.back();
        c.warnings.pop_back();
      }
      if (expected == KeyStatus::implemented) {
        EXPECT_TRUE(c.warnings.empty()) << c.warnings[0];
        continue;
      }
      if (expected == KeyStatus::deprecated) {  // read under its new name, with DeepSpeed's deprecation warning
        ASSERT_GE(c.warnings.size(), 1u);
        EXPECT_TRUE(contains(c.warnings[0], path) && contains(c.warnings[0], "deprecated") &&
                    contains(c.warnings[0], std::string(k.note)))
            << c.warnings[0];
        continue;
      }
      ASSERT_EQ(c.warnings.size(), 1u);
      EXPECT_TRUE(contains(c.warnings[0], path)) << c.warnings[0];
      EXPECT_TRUE(contains(c.warnings[0], "no effect here")) << c.warnings[0];
      if (other_stage) {
        EXPECT_TRUE(contains(c.warnings[0], "only affects ZeRO " + mz::describe_stages(k.stages)) &&
                    contains(c.warnings[0], "this config runs stage " + std::to_string(stage)))
            << c.warnings[0];
      }
    }
  }
  // The walk covers all three outcomes (a table of one status would test little).
  EXPECT_GT(seen[KeyStatus::implemented], 50);
  EXPECT_GT(seen[KeyStatus::warning], 50);
  EXPECT_GE(seen[KeyStatus::error], 6);
}

TEST(L03_Config, EveryDeepSpeedKeyAcceptsDeepSpeedsDefault) {
  // What DeepSpeed accepts by default, minitorch accepts: each key set to its DeepSpeed default parses, at
  // every stage (a not-implemented feature's default is its off value, so that too is silent).
  int n = 0;
  for (const ConfigKey& k : mz::config_keys()) {
    const std::string path(k.path);
    if (!k.is_deepspeed() || k.status == KeyStatus::deprecated) continue;
    // Not a value: the batch keys (None means "derive it"), the scheduler's required type and total, and a
    // default DeepSpeed builds in code (leaf_module's class list).
    if (path.starts_with("train_") || path == "gradient_accumulation_steps" || path == "scheduler.type" ||
        path == "scheduler.params.total_num_steps" || path == "zero_optimization.leaf_module")
      continue;
    ++n;
    for (int stage = in_zero_section(k) ? 0 : -1; stage <= (in_zero_section(k) ? 3 : -1); ++stage) {
      const std::string text = config_with(k, std::string(k.deepspeed_default), stage);
      SCOPED_TRACE(path + " in " + text);
      Config c;
      EXPECT_NO_THROW(c = parse(text, path == "pipeline.stages" ? 2 : 1));
    }
  }
  EXPECT_GE(n, 150);
}

TEST(L03_Config, EveryZeroStageRunsOnAnyNumberOfRanks) {
  for (int world : {1, 2}) {
    for (int stage : {0, 1, 2, 3}) {
      Config c = parse(with(R"("zero_optimization": {"stage": )" + std::to_string(stage) + "}"), world);
      EXPECT_EQ(c.zero.stage, stage);
      EXPECT_TRUE(c.warnings.empty());
      EXPECT_EQ(mz::zero_stage_status(stage), KeyStatus::implemented);
    }
    EXPECT_TRUE(contains(parse_error(with(R"("zero_optimization": {"stage": 4})"), world), "zero_optimization.stage"));
  }
}

TEST(L03_Config, KeysOfOtherStagesWarnNamingTheirStages) {
  Config c = parse(with(R"("zero_optimization": {"stage": 0, "sub_group_size": 1e9, "allgather_bucket_size": 5e8,
                                                 "overlap_comm": true, "reduce_bucket_size": 1000})"));
  ASSERT_EQ(c.warnings.size(), 3u);  // reduce_bucket_size is DDP's bucket size: implemented at stage 0
  EXPECT_EQ(c.warnings[0], "zero_optimization.allgather_bucket_size only affects ZeRO stages 1 and 2 and this config "
                           "runs stage 0: accepted, as DeepSpeed does, but it has no effect here");
  EXPECT_TRUE(contains(c.warnings[1], "zero_optimization.overlap_comm only affects ZeRO stages 1, 2 and 3")) << c.warnings[1];
  EXPECT_TRUE(contains(c.warnings[2], "zero_optimization.sub_group_size only affects ZeRO stage 3")) << c.warnings[2];
  EXPECT_EQ(c.zero.reduce_bucket_size, 1000);
}

TEST(L03_Config, NotImplementedFeaturesAreSilentWhenOff) {
  Config c = parse(with(R"("zero_optimization": {"stage": 0, "offload_optimizer": {"device": "none"},
                                                 "offload_param": {"device": "none"}},
                           "activation_checkpointing": {"enabled": false}, "pipeline": {"stages": 1},
                           "fp16": {"enabled": false}, "amp": {"enabled": false}, "model": {"dropout": 0.0})"),
                   2);
  EXPECT_TRUE(c.warnings.empty()) << c.warnings[0];
  EXPECT_FALSE(c.activation_checkpointing.enabled);
  // The same through the table: every error key set to its off value parses without a word.
  int n = 0;
  for (const ConfigKey& k : mz::config_keys()) {
    if (k.status != KeyStatus::error) continue;
    ++n;
    const std::string text = config_with(k, std::string(k.off), in_zero_section(k) ? 0 : -1);
    Config off;
    ASSERT_NO_THROW(off = parse(text)) << text;
    EXPECT_TRUE(off.warnings.empty()) << text << ": " << off.warnings[0];
  }
  EXPECT_GE(n, 6);
}

TEST(L03_Config, NotImplementedFeaturesSayWhatToDoInstead) {
  std::string msg = parse_error(with(R"("amp": {"enabled": true, "opt_level": "O1"})"));
  EXPECT_TRUE(contains(msg, "amp (NVIDIA Apex mixed precision) is not implemented yet")) << msg;
  EXPECT_TRUE(parse(with(R"("amp": {"opt_level": "O1"})")).warnings.empty());  // enabled defaults to false
  // DeepSpeed's pipeline keys that have no counterpart here only warn, saying why.
  Config c = parse(with(R"("pipeline": {"stages": 1, "seed_layers": true})"));
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_TRUE(contains(c.warnings[0], "pipeline.seed_layers is accepted but has no effect here: "
                                      "every rank builds the whole GPT from the one seed"))
      << c.warnings[0];
}

TEST(L08_Config, ActivationCheckpointingKeysOursAndDeepSpeeds) {
  Config c = parse(with(R"("activation_checkpointing": {"enabled": true, "segment_size": 2})"));
  EXPECT_TRUE(c.warnings.empty());
  EXPECT_TRUE(c.activation_checkpointing.enabled);
  EXPECT_EQ(c.activation_checkpointing.segment_size, 2);
  EXPECT_EQ(parse(with(R"("activation_checkpointing": {"enabled": true})")).activation_checkpointing.segment_size, 1);
  std::string msg = parse_error(with(R"("activation_checkpointing": {"enabled": true, "segment_size": 5})"));
  EXPECT_TRUE(contains(msg, "activation_checkpointing.segment_size (5) is more than the model's 4 blocks (model.n_layer)"))
      << msg;
  msg = parse_error(with(R"("activation_checkpointing": {"segment_size": 0})"));
  EXPECT_TRUE(contains(msg, "segment_size")) << msg;
  // DeepSpeed's keys: rejected with the reason, or accepted with a warning saying what they would do.
  msg = parse_error(with(R"("activation_checkpointing": {"enabled": true, "partition_activations": true})"));
  EXPECT_TRUE(contains(msg, "minitorch's tensor-parallel runs keep whole checkpoints (no sequence split yet): set it to false")) << msg;
  msg = parse_error(with(R"("activation_checkpointing": {"enabled": true, "contiguous_memory_optimization": true})"));
  EXPECT_TRUE(contains(msg, "minitorch does not partition them: set it to false")) << msg;
  // cpu_checkpointing: the checkpointed inputs wait in host memory (docs/design.md §10); only with checkpointing on.
  EXPECT_TRUE(parse(with(R"("activation_checkpointing": {"enabled": true, "cpu_checkpointing": true})"))
                  .activation_checkpointing.cpu_checkpointing);
  msg = parse_error(with(R"("activation_checkpointing": {"cpu_checkpointing": true})"));
  EXPECT_TRUE(contains(msg, "activation_checkpointing.cpu_checkpointing keeps the checkpointed blocks' inputs in host "
                            "memory: it needs activation_checkpointing.enabled true")) << msg;
  c = parse(with(R"("activation_checkpointing": {"enabled": true, "number_checkpoints": 4})"));
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_TRUE(contains(c.warnings[0], "it sizes DeepSpeed's buffer for contiguous_memory_optimization")) << c.warnings[0];
}

TEST(L09_Config, PipelineSectionAndItsBatchArithmetic) {
  // One stage: every rank is data-parallel, as without a pipeline section.
  Config c = parse(with(R"("gradient_accumulation_steps": 3, "pipeline": {"stages": 1})"), 4);
  EXPECT_EQ(c.data_parallel_size, 4);
  EXPECT_EQ(c.train_batch_size, 2 * 3 * 4);
  EXPECT_TRUE(c.warnings.empty());
  // Two stages on 4 ranks: 2 data-parallel replicas (DeepSpeed's world_size / stages); micro-batches = G.
  c = parse(with(R"("gradient_accumulation_steps": 3, "pipeline": {"stages": 2, "schedule": "gpipe",
                                                                   "partition_method": "uniform"})"), 4);
  EXPECT_TRUE(c.warnings.empty()) << c.warnings[0];
  EXPECT_EQ(c.data_parallel_size, 2);
  EXPECT_EQ(c.train_batch_size, 2 * 3 * 2);
  EXPECT_EQ(c.pipeline.schedule, "gpipe");
  EXPECT_EQ(c.pipeline.partition_method, "uniform");
  c = parse(with(R"("pipeline": {"stages": 2})"), 2);
  EXPECT_EQ(c.pipeline.schedule, "1f1b");
  EXPECT_EQ(c.pipeline.partition_method, "parameters");  // DeepSpeed's PipelineModule default
}

TEST(L09_Config, BadPipelineInputIsOneClearError) {
  std::string msg = parse_error(with(R"("pipeline": {"stages": 5})"), 5);
  EXPECT_TRUE(contains(msg, "pipeline.stages (5) is more than the model's 4 blocks (model.n_layer)")) << msg;
  msg = parse_error(with(R"("pipeline": {"stages": 2})"), 3);
  EXPECT_TRUE(contains(msg, "pipeline.stages (2) must divide the world size (3)")) << msg;
  EXPECT_TRUE(contains(msg, "run with a multiple of 2 ranks")) << msg;
  for (int stage : {2, 3}) {
    msg = parse_error(with(R"("pipeline": {"stages": 2}, "zero_optimization": {"stage": )" + std::to_string(stage) + "}"), 2);
    EXPECT_TRUE(contains(msg, "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism (zero_optimization.stage " +
                                  std::to_string(stage) + " with pipeline.stages 2)")) << msg;
  }
  EXPECT_NO_THROW(parse(with(R"("pipeline": {"stages": 2}, "zero_optimization": {"stage": 1})"), 2));
  msg = parse_error(with(R"("pipeline": {"stages": 2, "schedule": "interleaved"})"), 2);
  EXPECT_TRUE(contains(msg, "pipeline.schedule must be one of gpipe, 1f1b, got 'interleaved'")) << msg;
  msg = parse_error(with(R"("pipeline": {"stages": 2, "partition_method": "type:Block"})"), 2);
  EXPECT_TRUE(contains(msg, "pipeline.partition_method must be one of parameters, uniform")) << msg;
}

TEST(L13_Config, TensorParallelSectionAndItsBatchArithmetic) {
  // 8 ranks, 2 stages, t = 2: 2 data-parallel replicas (world / (stages · t)), and the batch rule uses them.
  Config c = parse(with(R"("gradient_accumulation_steps": 3, "pipeline": {"stages": 2},
                           "tensor_parallel": {"autotp_size": 2})"), 8);
  EXPECT_TRUE(c.warnings.empty()) << c.warnings[0];
  EXPECT_EQ(c.tensor_parallel.size, 2);
  EXPECT_EQ(c.data_parallel_size, 2);
  EXPECT_EQ(c.train_batch_size, 2 * 3 * 2);
  // Our `size` says the same; both equal is fine; 0 and 1 are off.
  EXPECT_EQ(parse(with(R"("tensor_parallel": {"size": 2, "autotp_size": 2})"), 2).data_parallel_size, 1);
  EXPECT_EQ(parse(with(R"("tensor_parallel": {"autotp_size": 0})"), 2).tensor_parallel.size, 1);
  EXPECT_EQ(parse(with(R"("tensor_parallel": {"size": 1})"), 2).data_parallel_size, 2);
  // DeepSpeed's other keys are read and warn, naming why.
  c = parse(with(R"("tensor_parallel": {"size": 2, "tp_overlap_comm": true})"), 2);
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_TRUE(contains(c.warnings[0], "tensor_parallel.tp_overlap_comm")) << c.warnings[0];
}

TEST(L13_Config, BadTensorParallelInputIsOneClearError) {
  std::string msg = parse_error(with(R"("tensor_parallel": {"size": 2, "autotp_size": 4})"), 4);
  EXPECT_TRUE(contains(msg, "tensor_parallel.autotp_size (4) and tensor_parallel.size (2) differ")) << msg;
  msg = parse_error(with(R"("tensor_parallel": {"size": 3})"), 3);  // the baby GPT has 4 heads
  EXPECT_TRUE(contains(msg, "tensor_parallel.size 3 does not divide the model's 4 heads (model.n_head)")) << msg;
  msg = parse_error(with(R"("tensor_parallel": {"size": 2}, "pipeline": {"stages": 2})"), 2);
  EXPECT_TRUE(contains(msg, "tensor_parallel.size 2 × pipeline.stages 2 does not divide the world size (2)")) << msg;
  EXPECT_TRUE(contains(msg, "run with a multiple of 4 ranks")) << msg;
  msg = parse_error(with(R"("tensor_parallel": {"size": 2}, "zero_optimization": {"stage": 3})"), 4);
  EXPECT_TRUE(contains(msg, "zero_optimization.stage 3 with tensor_parallel.size 2 is not supported")) << msg;
  EXPECT_TRUE(contains(msg, "use zero_optimization.stage 0, 1 or 2")) << msg;
  msg = parse_error(with(R"("tensor_parallel": {"size": -1})"), 2);
  EXPECT_TRUE(contains(msg, "tensor_parallel.size must be at least 0, got -1")) << msg;  // the key table's range
  for (int stage : {1, 2}) EXPECT_NO_THROW(parse(with(R"("tensor_parallel": {"size": 2}, "zero_optimization": {"stage": )" +
                                                     std::to_string(stage) + "}"), 4));
}

TEST(L03_Config, OffloadOptimizerToTheCpuAtStages1To3AndParamsAtStage3WithIt) {
  const std::string key = "zero_optimization.offload_optimizer";
  for (int stage = 1; stage <= 3; ++stage) {
    Config on = parse(with(R"("zero_optimization": {"stage": )" + std::to_string(stage) +
                           R"(, "offload_optimizer": {"device": "cpu"}})"));
    EXPECT_TRUE(on.zero.offload_optimizer.enabled()) << stage;
    EXPECT_TRUE(on.zero.offload_optimizer.pin_memory) << "DeepSpeed's default since PR #8207";
    EXPECT_TRUE(on.warnings.empty()) << on.warnings[0];
  }
  std::string msg = parse_error(with(R"("zero_optimization": {"stage": 0, "offload_optimizer": {"device": "cpu"}})"));
  EXPECT_TRUE(contains(msg, key + " needs ZeRO stage 1, 2 or 3 (stage is 0)")) << msg;
  // offload_param (ZeRO-Infinity): stage 3, with offload_optimizer (our rules, docs/config.md departure 8).
  Config both = parse(with(R"("zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"},
                                                     "offload_param": {"device": "cpu"}})"));
  EXPECT_TRUE(both.zero.offload_param.enabled());
  EXPECT_TRUE(both.warnings.empty()) << both.warnings[0];
  msg = parse_error(with(R"("zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"}})"));
  EXPECT_TRUE(contains(msg, "zero_optimization.offload_param needs zero_optimization.offload_optimizer too")) << msg;
  EXPECT_TRUE(contains(msg, R"(add "offload_optimizer": {"device": "cpu"})")) << msg;  // what to do instead
  for (int stage = 1; stage <= 2; ++stage) {
    msg = parse_error(with(R"("zero_optimization": {"stage": )" + std::to_string(stage) +
                           R"(, "offload_optimizer": {"device": "cpu"}, "offload_param": {"device": "cpu"}})"));
    EXPECT_TRUE(contains(msg, "zero_optimization.offload_param is only valid with stage 3 (stage is " +
                                  std::to_string(stage) + ")")) << msg;
  }
  // pin_memory: page-locked memory matters to a GPU's copies only; written, it warns saying so.
  for (std::string section : {"offload_optimizer", "offload_param"}) {
    const std::string pin = R"({"device": "cpu", "pin_memory": true})", plain = R"({"device": "cpu"})";
    const bool optimizer = section == "offload_optimizer";
    Config pinned = parse(with(R"("zero_optimization": {"stage": 3, "offload_optimizer": )" + (optimizer ? pin : plain) +
                               R"(, "offload_param": )" + (optimizer ? plain : pin) + "}"));
    ASSERT_EQ(pinned.warnings.size(), 1u) << section;
    EXPECT_TRUE(contains(pinned.warnings[0], "zero_optimization." + section + ".pin_memory")) << pinned.warnings[0];
    EXPECT_TRUE(contains(pinned.warnings[0], "plain memcpy")) << pinned.warnings[0];
    EXPECT_EQ(mz::find_config_key("zero_optimization." + section + ".pin_memory")->deepspeed_default, "true");
  }
  msg = parse_error(with(R"("zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "ratio": 0.5}})"));
  EXPECT_TRUE(contains(msg, "partial offload (a share of the optimizer states) is not implemented yet")) << msg;
  for (std::string section : {"offload_optimizer", "offload_param"}) {
    const std::string head = R"("zero_optimization": {"stage": 3, ")" + section + R"(": )";
    Config off = parse(with(head + R"({"device": "none"}})"));
    EXPECT_TRUE(off.warnings.empty()) << off.warnings[0];
    EXPECT_FALSE(off.zero.offload_optimizer.enabled() || off.zero.offload_param.enabled());
    msg = parse_error(with(head + R"({"device": "nvme"}})"));
    EXPECT_TRUE(contains(msg, ".device \"nvme\" needs zero_optimization." + section + ".nvme_path")) << msg;
    msg = parse_error(with(head + R"({"device": "gpu"}})"));
    EXPECT_TRUE(contains(msg, ".device must be one of none, cpu, nvme, got 'gpu'")) << msg;
    EXPECT_EQ(mz::find_config_key("zero_optimization." + section + ".device")->deepspeed_default, "\"none\"");
    EXPECT_EQ(mz::find_config_key("zero_optimization." + section + ".device")->status, KeyStatus::implemented);
  }
}

TEST(L03_Config, NvmeOffloadOfTheOptimizerAtStage3WithItsPathAndTheAioSection) {
  const std::string nvme = R"("offload_optimizer": {"device": "nvme", "nvme_path": "/local_nvme")";
  Config c = parse(with(R"("zero_optimization": {"stage": 3, )" + nvme +
                        R"(, "pipeline_read": true, "pipeline_write": true}},
                           "aio": {"block_size": 262144, "intra_op_parallelism": 2})"));
  EXPECT_TRUE(c.warnings.empty()) << c.warnings[0];
  EXPECT_TRUE(c.zero.offload_optimizer.on_nvme());
  EXPECT_EQ(c.zero.offload_optimizer.nvme_path, "/local_nvme");
  EXPECT_TRUE(c.zero.offload_optimizer.pipeline_read && c.zero.offload_optimizer.pipeline_write);
  EXPECT_EQ(c.aio.block_size, 262144);
  EXPECT_EQ(c.aio.intra_op_parallelism, 2);
  EXPECT_EQ(c.strategy().aio.block_size, 262144) << "the strategy gets the section";
  // DeepSpeed's defaults (deepspeed/runtime/swap_tensor/aio_config.py).
  const minitorch::zero::AioConfig d;
  EXPECT_EQ(d.block_size, 1048576);
  EXPECT_EQ(d.queue_depth, 8);
  EXPECT_EQ(d.intra_op_parallelism, 1);
  EXPECT_FALSE(d.single_submit);
  EXPECT_TRUE(d.overlap_events);
  EXPECT_FALSE(d.use_gds);
  for (const char* key : {"block_size", "queue_depth", "intra_op_parallelism", "single_submit", "overlap_events", "use_gds"})
    EXPECT_NE(mz::find_config_key(std::string("aio.") + key), nullptr) << key;
  EXPECT_FALSE(mz::find_config_key("zero_optimization.offload_optimizer.pipeline_read")->deepspeed_default != "false");
  // Stage 3 only, and the path is required.
  std::string msg = parse_error(with(R"("zero_optimization": {"stage": 2, )" + nvme + "}}"));
  EXPECT_TRUE(contains(msg, R"(offload_optimizer.device "nvme" needs ZeRO stage 3 (stage is 2))")) << msg;
  msg = parse_error(with(R"("zero_optimization": {"stage": 3, "offload_optimizer": {"device": "nvme"}})"));
  EXPECT_TRUE(contains(msg, "needs zero_optimization.offload_optimizer.nvme_path")) << msg;
  // The NVMe keys with device "cpu": accepted, each said to do nothing.
  Config cpu = parse(with(R"("zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "nvme_path": "/x",
                                                   "pipeline_read": true}})"));
  ASSERT_EQ(cpu.warnings.size(), 2u);
  EXPECT_TRUE(contains(cpu.warnings[0], R"(offload_optimizer.nvme_path only affects device "nvme")")) << cpu.warnings[0];
  EXPECT_TRUE(contains(cpu.warnings[1], "offload_optimizer.pipeline_read only affects")) << cpu.warnings[1];
  // aio: thread_count is DeepSpeed's old name (read, with a warning naming the new one); the four libaio keys warn.
  Config old_name = parse(with(R"("zero_optimization": {"stage": 3, )" + nvme + R"(}}, "aio": {"thread_count": 3})"));
  EXPECT_EQ(old_name.aio.intra_op_parallelism, 3);
  ASSERT_EQ(old_name.warnings.size(), 1u);
  EXPECT_TRUE(contains(old_name.warnings[0], "aio.thread_count is deprecated use aio.intra_op_parallelism")) << old_name.warnings[0];
  msg = parse_error(with(R"("zero_optimization": {"stage": 3, )" + nvme +
                         R"(}}, "aio": {"thread_count": 3, "intra_op_parallelism": 2})"));
  EXPECT_TRUE(contains(msg, "aio.thread_count (3) and aio.intra_op_parallelism (2) are one key")) << msg;
  Config libaio = parse(with(R"("zero_optimization": {"stage": 3, )" + nvme + R"(}}, "aio": {"queue_depth": 32, "use_gds": true})"));
  ASSERT_EQ(libaio.warnings.size(), 2u);
  EXPECT_TRUE(contains(libaio.warnings[0], "aio.queue_depth")) << libaio.warnings[0];
  EXPECT_TRUE(contains(libaio.warnings[1], "GPUDirect")) << libaio.warnings[1];
  msg = parse_error(with(R"("aio": {"block_size": 5000})"));
  EXPECT_TRUE(contains(msg, "aio.block_size 5000 is not a multiple of 4096")) << msg;
  // The parameters on NVMe too: with the optimizer's, in the same folder (our rules, docs/config.md departure 8).
  const std::string param_nvme = R"("offload_param": {"device": "nvme", "nvme_path": "/local_nvme"})";
  Config both = parse(with(R"("zero_optimization": {"stage": 3, )" + nvme + "}, " + param_nvme + "}"));
  EXPECT_TRUE(both.warnings.empty()) << both.warnings[0];
  EXPECT_TRUE(both.zero.offload_param.on_nvme());
  msg = parse_error(with(R"("zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}, )" + param_nvme + "}"));
  EXPECT_TRUE(contains(msg, R"(offload_param.device "nvme" needs zero_optimization.offload_optimizer.device "nvme")")) << msg;
  msg = parse_error(with(R"("zero_optimization": {"stage": 3, )" + nvme +
                         R"(}, "offload_param": {"device": "nvme", "nvme_path": "/elsewhere"}})"));
  EXPECT_TRUE(contains(msg, R"(offload_param.nvme_path ("/elsewhere") and zero_optimization.offload_optimizer.nvme_path ("/local_nvme") differ)"))
      << msg;
  // Its swap buffers' keys: minitorch sizes a shard's buffer from the shard; each warns, naming why.
  Config buffers = parse(with(R"("zero_optimization": {"stage": 3, )" + nvme +
                              R"(}, "offload_param": {"device": "nvme", "nvme_path": "/local_nvme", "buffer_size": 1e8}})"));
  ASSERT_EQ(buffers.warnings.size(), 1u);
  EXPECT_TRUE(contains(buffers.warnings[0], "offload_param.buffer_size")) << buffers.warnings[0];
  EXPECT_TRUE(contains(buffers.warnings[0], "host buffer of the shard's size")) << buffers.warnings[0];
}

TEST(L03_Config, DeviceSectionNamesTheDeviceAndSimsCapacity) {
  Config c = parse(with(R"("device": {"type": "sim", "memory": "24MiB"})"));
  EXPECT_EQ(c.device.type, "sim");
  EXPECT_EQ(c.device.memory, 24 * 1048576);
  EXPECT_TRUE(c.warnings.empty());
  EXPECT_EQ(parse(with(R"("device": {"type": "sim", "memory": 4096})")).device.memory, 4096) << "a bare number is bytes";
  EXPECT_EQ(parse(with(R"("device": {"type": "sim", "memory": "1.5GB"})")).device.memory, 1500000000);
  EXPECT_EQ(parse(with("")).device.type, "cpu");
  EXPECT_EQ(parse(with("")).device.memory, 0) << "no capacity unless asked";
  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"("device": {"type": "gpu"})", "device.type must be one of cpu, sim, cuda, got 'gpu'"},
      {R"("device": {"type": "sim", "memory": "-3MiB"})", "device.memory: '-3MiB' is negative"},
      {R"("device": {"type": "sim", "memory": -3})", "device.memory: '-3' is negative"},
      {R"("device": {"type": "sim", "memory": "24 parsecs"})", "unknown unit 'parsecs'"},
      {R"("device": {"type": "sim", "memory": "0"})", "device.memory is 0 bytes"},
      {R"("device": {"type": "sim", "memory": 0.5})", "is not a whole number of bytes"},
      {R"("device": {"type": "sim", "memory": true})", "device.memory must be a size"},
      {R"("device": {"type": "cuda", "memory": "24MiB"})", "it applies to \"type\": \"sim\" only"},
      {R"("device": {"typ": "sim"})", "did you mean 'type'?"},
      {R"("device": {"type": "cpu", "link_bandwidth": "16GB"})", "device.link_bandwidth is the simulated accelerator's host link"},
      {R"("device": {"type": "sim", "link_bandwidth": 0})", "device.link_bandwidth is 0 bytes per second"},
      {R"("device": {"type": "sim", "link_bandwidth": "fast"})", "device.link_bandwidth: "},
      {R"("device": {"type": "sim", "link_bandwidth": [1]})", "device.link_bandwidth must be bytes per second"},
  };
  // sim's host link: bytes per second, through the plan to the allocator (setup_device).
  EXPECT_EQ(parse(with(R"("device": {"type": "sim", "link_bandwidth": "16GB"})")).device.link_bandwidth, 16'000'000'000);
  EXPECT_EQ(parse(with("")).device.link_bandwidth, 0) << "instant copies unless asked";
  for (const auto& [section, message] : bad) {
    const std::string msg = parse_error(with(section));
    EXPECT_TRUE(contains(msg, message)) << section << ": " << msg;
  }
}

TEST(L03_Config, TableKeysOfAnotherVariantAreStillUnknown) {
  // momentum is in the table (SGD), yet with AdamW it is a typo to report, not a key to accept.
  std::string msg = parse_error(with(R"("optimizer": {"type": "AdamW", "params": {"momentum": 0.9}})"));
  EXPECT_TRUE(contains(msg, "unknown key 'momentum' in optimizer.params")) << msg;
  EXPECT_EQ(parse(with(R"("optimizer": {"type": "SGD", "params": {"momentum": 0.9}})")).optimizer.momentum, 0.9);
  EXPECT_EQ(mz::find_config_key("optimizer.params.momentum")->status, KeyStatus::implemented);
  EXPECT_EQ(mz::find_config_key("no.such.key"), nullptr);
}

TEST(L03_Config, EveryTableKeyIsDocumentedWithItsDefaultTypeAndStatus) {
  std::ifstream in(std::string(MT_SOURCE_DIR) + "/docs/config.md");
  ASSERT_TRUE(in) << "docs/config.md is missing";
  std::map<std::string, std::vector<std::string>> row;  // "| `key` | default | type | status | meaning |"
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with("| `")) continue;
    const std::size_t end = line.find('`', 3);
    std::vector<std::string> cells;
    std::stringstream ss(line.substr(1));
    for (std::string cell; std::getline(ss, cell, '|');) {
      const std::size_t b = cell.find_first_not_of(' '), e = cell.find_last_not_of(' ');
      cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
    }
    ASSERT_GE(cells.size(), 5u) << line;
    row[line.substr(3, end - 3)] = cells;
  }
  for (const ConfigKey& k : mz::config_keys()) {
    const std::string path(k.path);
    auto it = row.find(path);
    if (it == row.end()) {
      ADD_FAILURE() << "docs/config.md has no row for `" << path << "`";
      continue;
    }
    const std::vector<std::string>& cells = it->second;
    if (k.is_deepspeed()) {  // DeepSpeed's code default, in code font (a departure may follow it)
      EXPECT_TRUE(cells[1].starts_with("`" + std::string(k.deepspeed_default) + "`")) << path << ": docs say '" << cells[1] << "'";
    } else {
      EXPECT_FALSE(cells[1].starts_with("`")) << path << " is minitorch's key: its default is not DeepSpeed's";
    }
    EXPECT_EQ(cells[2], k.describe_type()) << path;
    EXPECT_TRUE(cells[3].starts_with(mz::status_name(k.status))) << path << ": docs say '" << cells[3] << "'";
    if (k.status == KeyStatus::warning) {  // what DeepSpeed does with it: the warning says it, and so do the docs
      EXPECT_FALSE(k.deepspeed_does.empty()) << path;
      EXPECT_TRUE(contains(cells[4], std::string(k.deepspeed_does))) << path << ": docs say '" << cells[4] << "'";
    }
    if (!k.alias.empty()) {
      EXPECT_TRUE(contains(cells[4], "also spelled `" + std::string(k.alias) + "`")) << path;
    }
    row.erase(it);
  }
  for (const auto& [path, cells] : row) ADD_FAILURE() << "docs/config.md documents `" << path << "`, not in the table";
}

/// \file config_keys.cpp
/// The table. Stage sets follow DeepSpeed's engine (_configure_zero_optimizer): which ZeRO optimizer
/// receives the key. A key that is read and used is `ok`; `noop` keys warn that they have no effect;
/// `todo` keys are features not implemented yet, an error unless set to their off value.
#include "runtime/config_keys.h"

#include <nlohmann/json.hpp>
#include "minitorch/json_limits.h"
#include <stdexcept>
#include <vector>

namespace minitorch::runtime {

namespace {

using S = KeyStatus;

constexpr ConfigKey ok(std::string_view path, std::string_view example, std::string_view context = {}) {
  return {path, S::implemented, example, {}, {}, {}, kAllStages, context};
}
/// Implemented at `stages`; elsewhere a warning naming them.
constexpr ConfigKey ok_at(std::string_view path, std::string_view example, StageMask stages) {
  return {path, S::implemented, example, {}, {}, {}, stages, {}};
}
constexpr ConfigKey noop(std::string_view path, std::string_view example, std::string_view why,
                         StageMask stages = kAllStages, std::string_view context = {}) {
  return {path, S::warning, example, why, {}, {}, stages, context};
}
constexpr ConfigKey todo(std::string_view path, std::string_view example, std::string_view off,
                         std::string_view feature, std::string_view advice) {
  return {path, S::error, example, advice, off, feature, kAllStages, {}};
}

/// ZeRO stage -> status. The ZeRO issues flip stages 1, 2, 3 to implemented here as they land.
constexpr KeyStatus kZeroStageStatus[] = {S::implemented, S::implemented, S::implemented, S::implemented};
constexpr std::string_view kStagePath = "zero_optimization.stage";

constexpr StageMask k12 = stage_bit(1) | stage_bit(2), k123 = k12 | stage_bit(3), k3 = stage_bit(3),
                    k23 = stage_bit(2) | stage_bit(3);
constexpr std::string_view kUnused = "minitorch's ZeRO does not use it yet";
constexpr std::string_view kOffload = "it only tunes offloading, which is not implemented yet";
constexpr std::string_view kActTuning = "it tunes DeepSpeed's checkpointing (device synchronisation, timing), which minitorch's has no counterpart for";
constexpr std::string_view kNoFeature = "minitorch does not have this DeepSpeed feature";
constexpr std::string_view kMonitor = "monitoring is not implemented; the training log is stdout";
constexpr std::string_view kOffloadAdvice =
    "remove it or set \"device\": \"none\" (the states then stay in memory with the parameters)";
constexpr std::string_view kWarmup = R"({"scheduler": {"type": "WarmupLR"}})";
constexpr std::string_view kCosine = R"({"scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 10}}})";

const ConfigKey kKeys[] = {
    // ---- top level: batch, clipping, logging (DeepSpeed) ----
    ok("train_batch_size", "2"),
    ok("train_micro_batch_size_per_gpu", "2"),
    ok("gradient_accumulation_steps", "1"),
    ok("gradient_clipping", "1.0"),
    ok("steps_per_print", "10"),
    ok("wall_clock_breakdown", "true"),
    noop("zero_allow_untested_optimizer", "true", "minitorch runs only its own optimizers"),
    noop("zero_force_ds_cpu_optimizer", "true", "there is no CPU-offload optimizer to force"),
    noop("communication_data_type", R"("fp32")", "gradients are all-reduced in their own dtype"),
    noop("prescale_gradients", "true", "it only moves DeepSpeed's division by the world size; DDP averages"),
    noop("gradient_predivide_factor", "2.0", "it only moves DeepSpeed's division by the world size; DDP averages"),
    noop("sparse_gradients", "true", "gradients are dense (no sparse embedding gradients)"),
    noop("dump_state", "true", "DeepSpeed's debug dump is not implemented"),
    noop("memory_breakdown", "true", "not implemented; memory_stats() has the tagged byte counts"),
    noop("flops_profiler", "{}", kMonitor),
    noop("tensorboard", "{}", kMonitor),
    noop("wandb", "{}", kMonitor),
    noop("csv_monitor", "{}", kMonitor),
    noop("comms_logger", "{}", kMonitor),
    noop("data_types", R"({"grad_accum_dtype": "fp32"})", "gradients accumulate in the parameters' dtype"),
    noop("checkpoint", "{}", "DeepSpeed's checkpoint-engine options; minitorch writes training.checkpoint"),
    noop("dataloader_drop_last", "true", "there is no DeepSpeed dataloader: data::BatchSampler draws batches"),
    // Real DeepSpeed sections minitorch does not have: accepted with a warning, as an unknown top-level key
    // would be, but named so that a near-miss of one of them is not mistaken for a typo of ours.
    noop("sparse_attention", "{}", kNoFeature),
    noop("data_efficiency", "{}", kNoFeature),
    noop("curriculum_learning", "{}", kNoFeature),
    noop("progressive_layer_drop", "{}", kNoFeature),
    noop("eigenvalue", "{}", kNoFeature),
    noop("quantize_training", "{}", kNoFeature),
    noop("compression_training", "{}", kNoFeature),
    noop("weight_quantization", "{}", kNoFeature),
    noop("hybrid_engine", "{}", kNoFeature),
    noop("tensor_parallel", "{}", kNoFeature),
    noop("elasticity", "{}", "minitorch has no elastic training: the batch is the config's batch keys"),
    noop("autotuning", "{}", kNoFeature),
    noop("aio", "{}", "it tunes NVMe offload, which minitorch does not have"),
    noop("nebula", "{}", "DeepSpeed's Nebula checkpoint service; minitorch writes training.checkpoint"),
    noop("compile", "{}", "there is no torch.compile here"),
    noop("torch_autocast", "{}", "use \"bf16\": {\"enabled\": true} for mixed precision"),
    noop("timers", "{}", kMonitor),
    noop("fp32_allreduce", "true", "gradients are all-reduced in their own dtype"),
    noop("disable_allgather", "true", "minitorch's ZeRO does not use it"),
    noop("seq_parallel_communication_data_type", R"("fp32")", "there is no sequence parallelism"),
    todo("amp", R"({"enabled": true})", R"({"enabled": false})", "amp (NVIDIA Apex mixed precision)",
         "remove it, or use \"bf16\": {\"enabled\": true} for mixed precision"),
    // ---- precision ----
    ok("bf16", "{}"),
    ok("bf16.enabled", "true"),
    noop("bf16.immediate_grad_update", "true", "it tunes DeepSpeed's BF16 optimizer; AdamW keeps f32 masters anyway"),
    ok("fp16", "{}"),
    ok("fp16.enabled", "true"),  // f16 parameters and gradients, f32 masters, runtime/loss_scaler.h
    ok("fp16.loss_scale", "0"),
    ok("fp16.initial_scale_power", "16"),
    ok("fp16.loss_scale_window", "1000"),
    ok("fp16.hysteresis", "2"),
    ok("fp16.min_loss_scale", "1"),
    ok("fp16.consecutive_hysteresis", "false"),
    noop("fp16.auto_cast", "false", "minitorch casts nothing: the model's inputs are token ids and its parameters are f16 already"),
    noop("fp16.fused_mode", "false", "it selects DeepSpeed's fused fp16 optimizer; minitorch's step is one path"),
    // ---- zero_optimization ----
    ok("zero_optimization", "{}"),
    ok(kStagePath, "0"),  // per stage: kZeroStageStatus
    ok("zero_optimization.reduce_bucket_size", "200000"),  // DDP's bucket size at stage 0
    noop("zero_optimization.allgather_bucket_size", "200000000", kUnused, k12),
    ok_at("zero_optimization.overlap_comm", "true", k123),         // reduce-scatter from the gradient hooks
    ok_at("zero_optimization.contiguous_gradients", "true", k23),  // stage 1's gradients are always one buffer
    noop("zero_optimization.reduce_scatter", "true", kUnused, k123),
    noop("zero_optimization.allgather_partitions", "true", kUnused, k12),
    noop("zero_optimization.round_robin_gradients", "true", kUnused, k12),
    noop("zero_optimization.use_multi_rank_bucket_allreduce", "true", kUnused, k12),
    noop("zero_optimization.ignore_unused_parameters", "true", kUnused, k12),
    noop("zero_optimization.elastic_checkpoint", "false", kUnused, k12),
    noop("zero_optimization.load_from_fp32_weights", "true", kUnused, k123),
    ok_at("zero_optimization.sub_group_size", "1000000000", k3),  // tiles the ZeRO-3 optimizer step
    ok_at("zero_optimization.stage3_prefetch_bucket_size", "50000000", k3),       // units gathered ahead
    ok_at("zero_optimization.stage3_param_persistence_threshold", "100000", k3),  // tensors kept whole
    noop("zero_optimization.stage3_model_persistence_threshold", "1000000", kUnused, k3),
    noop("zero_optimization.stage3_max_live_parameters", "1000000000", kUnused, k3),
    noop("zero_optimization.stage3_max_reuse_distance", "1000000000", kUnused, k3),
    noop("zero_optimization.stage3_gather_16bit_weights_on_model_save", "true", kUnused, k3),
    ok("zero_optimization.offload_optimizer", "{}"),
    todo("zero_optimization.offload_optimizer.device", R"("cpu")", R"("none")", "zero_optimization.offload_optimizer",
         kOffloadAdvice),
    noop("zero_optimization.offload_optimizer.pin_memory", "true", kOffload),
    noop("zero_optimization.offload_optimizer.nvme_path", R"("/local_nvme")", kOffload),
    noop("zero_optimization.offload_optimizer.buffer_count", "4", kOffload),
    noop("zero_optimization.offload_optimizer.fast_init", "false", kOffload),
    noop("zero_optimization.offload_optimizer.ratio", "1.0", kOffload),
    noop("zero_optimization.offload_optimizer.pipeline_read", "false", kOffload),
    noop("zero_optimization.offload_optimizer.pipeline_write", "false", kOffload),
    ok("zero_optimization.offload_param", "{}"),
    todo("zero_optimization.offload_param.device", R"("cpu")", R"("none")", "zero_optimization.offload_param",
         kOffloadAdvice),
    noop("zero_optimization.offload_param.pin_memory", "true", kOffload),
    noop("zero_optimization.offload_param.nvme_path", R"("/local_nvme")", kOffload),
    noop("zero_optimization.offload_param.buffer_count", "5", kOffload),
    noop("zero_optimization.offload_param.buffer_size", "100000000", kOffload),
    noop("zero_optimization.offload_param.max_in_cpu", "1000000000", kOffload),
    // ---- optimizer ----
    ok("optimizer", R"({"type": "AdamW"})"),
    ok("optimizer.type", R"("AdamW")"),
    noop("optimizer.legacy_fusion", "false", "it selects a DeepSpeed fused kernel"),
    ok("optimizer.params", "{}"),
    ok("optimizer.params.lr", "0.001"),
    ok("optimizer.params.betas", "[0.9, 0.95]"),
    ok("optimizer.params.eps", "1e-8"),
    ok("optimizer.params.weight_decay", "0.1"),
    ok("optimizer.params.adam_w_mode", "true"),
    ok("optimizer.params.momentum", "0.9", R"({"optimizer": {"type": "SGD"}})"),
    noop("optimizer.params.torch_adam", "true", "it picks torch.optim.AdamW over FusedAdam: the same update"),
    // ---- scheduler ----
    ok("scheduler", R"({"type": "WarmupLR"})"),
    ok("scheduler.type", R"("WarmupLR")"),
    ok("scheduler.params", "{}", kWarmup),
    ok("scheduler.params.warmup_num_steps", "10", kWarmup),
    ok("scheduler.params.warmup_type", R"("linear")", kWarmup),
    ok("scheduler.params.warmup_min_lr", "0.0", kWarmup),
    ok("scheduler.params.warmup_max_lr", "0.001", kWarmup),
    ok("scheduler.params.warmup_min_ratio", "0.1", kCosine),
    ok("scheduler.params.cos_min_ratio", "0.01", kCosine),
    ok("scheduler.params.total_num_steps", "100", R"({"scheduler": {"type": "WarmupDecayLR"}})"),
    noop("scheduler.params.last_batch_iteration", "-1", "the schedule follows the engine's step (--resume restores it)",
         kAllStages, kWarmup),
    // ---- pipeline (pipeline/engine.h), activation checkpointing ----
    ok("pipeline", "{}"),
    ok("pipeline.stages", "2"),                      // stages of the data × pipeline grid (minitorch's key)
    ok("pipeline.schedule", R"("gpipe")"),           // "gpipe" | "1f1b" (minitorch's key)
    ok("pipeline.partition_method", R"("uniform")"), // DeepSpeed's PipelineModule(partition_method=...)
    noop("pipeline.partition", R"("parameters")",
         "DeepSpeed takes the method from PipelineModule(partition_method=...); minitorch's key is pipeline.partition_method"),
    noop("pipeline.seed_layers", "false", "every rank builds the whole GPT from the one seed, so the stages' layers agree anyway"),
    noop("pipeline.activation_checkpoint_interval", "0",
         "minitorch's stages checkpoint with activation_checkpointing.segment_size"),
    noop("pipeline.pipe_partitioned", "true", "it splits the sent activations across tensor-parallel ranks; minitorch has no tensor parallelism"),
    noop("pipeline.grad_partitioned", "true", "it splits the sent gradients across tensor-parallel ranks; minitorch has no tensor parallelism"),
    ok("activation_checkpointing", "{}"),
    ok("activation_checkpointing.enabled", "true"),      // GPT::set_checkpoint_segments (minitorch's key)
    ok("activation_checkpointing.segment_size", "1"),    // blocks per checkpointed segment (minitorch's key)
    todo("activation_checkpointing.partition_activations", "true", "false",
         "activation_checkpointing.partition_activations",
         "it splits each checkpoint across tensor-parallel ranks, and minitorch has no tensor parallelism: set it to false"),
    todo("activation_checkpointing.cpu_checkpointing", "true", "false", "activation_checkpointing.cpu_checkpointing",
         "it keeps the checkpoints in host memory, which needs the host memory pools of the offload work: set it to false"),
    todo("activation_checkpointing.contiguous_memory_optimization", "true", "false",
         "activation_checkpointing.contiguous_memory_optimization",
         "it copies partitioned checkpoints into one buffer, and minitorch does not partition them (no tensor "
         "parallelism): set it to false"),
    noop("activation_checkpointing.number_checkpoints", "4",
         "it sizes DeepSpeed's buffer for contiguous_memory_optimization; minitorch checkpoints every segment_size blocks"),
    noop("activation_checkpointing.synchronize_checkpoint_boundary", "false", kActTuning),
    noop("activation_checkpointing.profile", "false", kActTuning),
    // ---- model (minitorch) ----
    ok("model", R"({"name": "baby"})"),
    ok("model.name", R"("baby")"),
    ok("model.n_layer", "2"),
    ok("model.n_head", "4"),
    ok("model.n_embd", "64"),
    ok("model.block_size", "32"),
    ok("model.vocab_size", "65"),
    todo("model.dropout", "0.1", "0", "dropout", "only 0 is supported: remove model.dropout or set it to 0"),
    ok("model.bias", "false"),
    // ---- training (minitorch) ----
    ok("training", "{}"),
    ok("training.steps", "100"),
    ok("training.eval_interval", "10"),
    ok("training.eval_iters", "5"),
    ok("training.log_interval", "10"),
    ok("training.checkpoint", R"("out/model.safetensors")"),
    ok("training.seed", "7"),
    ok("training.tokenizer", R"("byte")"),
    ok("training.data", R"("datasets/kjv.txt")"),
    // ---- comm (minitorch) ----
    ok("comm", "{}"),
    ok("comm.timeout_s", "300"),
};

/// `value` leaves the feature off: equal to `off`, or (object `off`) each member of `off` absent or equal.
bool is_off(const nlohmann::json& value, const nlohmann::json& off) {
  if (!off.is_object() || !value.is_object()) return value == off;
  for (auto it = off.begin(); it != off.end(); ++it)
    if (value.contains(it.key()) && value[it.key()] != it.value()) return false;
  return true;
}

}  // namespace

std::string_view status_name(KeyStatus s) {
  return s == S::implemented ? "implemented" : s == S::warning ? "warning" : "error";
}

std::span<const ConfigKey> config_keys() { return kKeys; }

const ConfigKey* find_config_key(std::string_view path) {
  for (const ConfigKey& k : kKeys)
    if (k.path == path) return &k;
  return nullptr;
}

KeyStatus zero_stage_status(int stage) {
  if (stage < 0 || stage > 3) throw std::out_of_range("ZeRO stage " + std::to_string(stage) + " (valid: 0-3)");
  return kZeroStageStatus[stage];
}

std::string describe_stages(StageMask stages) {
  std::vector<std::string> s;
  for (int i = 0; i < 4; ++i)
    if (stages & stage_bit(i)) s.push_back(std::to_string(i));
  if (s.size() == 1) return "stage " + s[0];
  std::string out = "stages ";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i == 0 ? "" : i + 1 == s.size() ? " and " : ", ") + s[i];
  return out;
}

KeyVerdict judge_config_key(const ConfigKey& key, const nlohmann::json& value, int zero_stage) {
  const std::string path(key.path);
  if (key.path == kStagePath) {
    const int s = value.get<int>();  // range-checked by the parser
    if (zero_stage_status(s) == S::implemented) return {};
    return {S::error, "ZeRO stage " + std::to_string(s) + " is not implemented yet (" + path + " is " +
                          std::to_string(s) + "); stages 0 (DDP), 1 (sharded optimizer states) and 2 (+ sharded gradients) are what run "
                          "today, on any number of ranks: set \"stage\": 2"};
  }
  if (!(key.stages & stage_bit(zero_stage)))
    return {S::warning, path + " only affects ZeRO " + describe_stages(key.stages) + " and this config runs stage " +
                            std::to_string(zero_stage) + ": accepted, as DeepSpeed does, but it has no effect here"};
  switch (key.status) {
    case S::implemented:
      return {};
    case S::warning:
      return {S::warning, path + " is accepted but has no effect here: " + std::string(key.note)};
    case S::error:
      if (!key.off.empty() && is_off(value, nlohmann::json::parse(key.off))) return {};
      return {S::error, std::string(key.feature) + " is not implemented yet (" + path + " is " + json_excerpt(value) + "); " +
                            std::string(key.note)};
  }
  return {};
}

}  // namespace minitorch::runtime

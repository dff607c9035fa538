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
/// DeepSpeed's deprecated spelling of `new_name` (runtime/config_spellings.cpp maps it).
constexpr ConfigKey dep(std::string_view path, std::string_view example, std::string_view new_name) {
  return ConfigKey{path, S::deprecated, example, new_name, {}, {}, kAllStages, {}}.ds("{}");
}

/// ZeRO stage -> status. The ZeRO issues flip stages 1, 2, 3 to implemented here as they land.
constexpr KeyStatus kZeroStageStatus[] = {S::implemented, S::implemented, S::implemented, S::implemented};
constexpr std::string_view kStagePath = "zero_optimization.stage";

constexpr StageMask k12 = stage_bit(1) | stage_bit(2), k123 = k12 | stage_bit(3), k3 = stage_bit(3),
                    k23 = stage_bit(2) | stage_bit(3);
constexpr std::string_view kUnused = "minitorch's ZeRO does not use it yet";
constexpr std::string_view kOffload = "it tunes NVMe offload (ZeRO-Infinity), which is not implemented yet";
constexpr std::string_view kCpuAdam = "it tunes DeepSpeed's CPU Adam; minitorch's host AdamW uses every core";
constexpr std::string_view kActTuning = "it tunes DeepSpeed's checkpointing (device synchronisation, timing), which minitorch's has no counterpart for";
constexpr std::string_view kNoFeature = "minitorch does not have this DeepSpeed feature";
constexpr std::string_view kMonitor = "monitoring is not implemented; the training log is stdout";
constexpr std::string_view kOffloadAdvice =
    "remove it or set \"device\": \"none\" (the states then stay in memory with the parameters)";
constexpr std::string_view kWarmup = R"({"scheduler": {"type": "WarmupLR"}})";
constexpr std::string_view kCosine = R"({"scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 10}}})";

using T = ValueType;

// DeepSpeed's declarations (deepspeed/runtime/zero/config.py, zero/offload_config.py, precision_config.py,
// activation_checkpointing/config.py, runtime/config.py + constants.py, lr_schedules.py, ops/adam/fused_adam.py;
// v0.19.5): `.ds()` is the code default as JSON ("null": Python's None), `.ge()` / `.gt()` the pydantic range,
// `.also()` the other name pydantic accepts. A key without `.ds()` is minitorch's own.
const ConfigKey kKeys[] = {
    // ---- top level: batch, clipping, logging (DeepSpeed) ----
    ok("train_batch_size", "2").ds("null"),  // > 0 and the product rule: resolve_batch, DeepSpeed's messages
    ok("train_micro_batch_size_per_gpu", "2").ds("null"),
    ok("gradient_accumulation_steps", "1").ds("null"),
    ok("gradient_clipping", "1.0").ds("1.0").ge(0),  // minitorch's default is 0 (off): docs/config.md, departures
    ok("steps_per_print", "10").ds("null").ge(1),
    ok("wall_clock_breakdown", "true").ds("false"),
    ok("gradient_allreduce_op", R"("mean")").ds(R"("mean")"),  // "sum": runtime/config.cpp
    todo("managed_gradient_accumulation", "false", "true", "managed_gradient_accumulation false (every step() an accumulation boundary)",
         "minitorch's engine always counts micro-steps: remove it or set it to true").ds("true"),
    noop("zero_allow_untested_optimizer", "true", "minitorch runs only its own optimizers").ds("false")
        .what("allow a non-DeepSpeed optimizer with ZeRO"),
    noop("zero_force_ds_cpu_optimizer", "true", "offload always runs minitorch's own host AdamW").ds("true")
        .what("insist on its CPU Adam when offloading"),
    noop("communication_data_type", R"("fp32")", "gradients are all-reduced in their own dtype").ds("null").type(T::string)
        .what("dtype of gradient all-reduces"),
    noop("prescale_gradients", "true", "it only moves DeepSpeed's division by the world size; DDP averages").ds("false")
        .what("divide gradients by the world size before the all-reduce"),
    noop("gradient_predivide_factor", "2.0", "it only moves DeepSpeed's division by the world size; DDP averages").ds("1.0")
        .what("divide by this before the all-reduce, the rest after"),
    noop("sparse_gradients", "true", "gradients are dense (no sparse embedding gradients)").ds("false")
        .what("sparse all-reduce of embedding gradients"),
    noop("dump_state", "true", "DeepSpeed's debug dump is not implemented").ds("false")
        .what("print its state after initialisation"),
    noop("memory_breakdown", "true", "not implemented; memory_stats() has the tagged byte counts").ds("false")
        .what("print memory use at points of the step"),
    noop("graph_harvesting", "true", "it captures CUDA graphs in DeepSpeed's fused kernels; minitorch has none").ds("false")
        .what("capture CUDA graphs of its fused kernels"),
    noop("log_level", R"("info")", "minitorch's log is stdout and stderr, without levels").ds("null").type(T::string)
        .what("the engine's log level"),
    noop("vocabulary_size", "50304", "DeepSpeed only warns when it is not a multiple of 8; the model's vocabulary is model.vocab_size").ds("null").type(T::integer)
        .what("only warns when it is not a multiple of 8"),
    noop("use_data_before_expert_parallelism", "true", "there is no expert parallelism (no mixture of experts)").ds("false")
        .what("the order of data- and expert-parallel groups (mixture of experts)"),
    noop("disable_allgather", "true", "minitorch's ZeRO does not use it").ds("false")
        .what("broadcast instead of all-gather in ZeRO-1/2"),
    noop("seq_parallel_communication_data_type", R"("fp32")", "there is no sequence parallelism").ds(R"("fp32")")
        .what("dtype of sequence-parallel communication"),
    noop("dataloader_drop_last", "true", "there is no DeepSpeed dataloader: data::BatchSampler draws batches").ds("false")
        .what("its dataloader: drop the last incomplete batch"),
    noop("flops_profiler", "{}", kMonitor).ds("{}")
        .what("its FLOPs profiler"),
    noop("tensorboard", "{}", kMonitor).ds("{}")
        .what("its TensorBoard monitor"),
    noop("wandb", "{}", kMonitor).ds("{}")
        .what("its Weights & Biases monitor"),
    noop("csv_monitor", "{}", kMonitor).ds("{}")
        .what("its CSV monitor"),
    noop("comet", "{}", kMonitor).ds("{}")
        .what("its Comet monitor"),
    noop("comms_logger", "{}", kMonitor).ds("{}")
        .what("its communication logger"),
    noop("data_types", R"({"grad_accum_dtype": "fp32"})", "gradients accumulate in the parameters' dtype").ds("{}")
        .what("`grad_accum_dtype`, the dtype gradients accumulate in"),
    noop("checkpoint", "{}", "DeepSpeed's checkpoint-engine options; minitorch writes training.checkpoint").ds("{}")
        .what("its checkpoint-engine options (tag validation, universal checkpoints, ...)"),
    // Real DeepSpeed sections minitorch does not have: accepted with a warning, as an unknown top-level key
    // would be, but named so that a near-miss of one of them is not mistaken for a typo of ours.
    noop("sparse_attention", "{}", kNoFeature).ds("null")
        .what("its sparse attention kernels"),
    noop("data_efficiency", "{}", kNoFeature).ds("{}")
        .what("its data sampling and routing (curriculum, random-LTD)"),
    noop("curriculum_learning", "{}", kNoFeature).ds("{}")
        .what("its legacy curriculum learning"),
    noop("progressive_layer_drop", "{}", kNoFeature).ds("{}")
        .what("its progressive layer dropping"),
    noop("eigenvalue", "{}", kNoFeature).ds("{}")
        .what("its Hessian eigenvalue estimation"),
    noop("quantize_training", "{}", kNoFeature).ds("{}")
        .what("its quantization-aware training"),
    noop("compression_training", "{}", kNoFeature).ds("{}")
        .what("DeepSpeed Compression"),
    noop("weight_quantization", "{}", kNoFeature).ds("null")
        .what("its weight quantization at load time"),
    noop("hybrid_engine", "{}", kNoFeature).ds("{}")
        .what("DeepSpeed-Chat's hybrid training/inference engine"),
    noop("tensor_parallel", "{}", kNoFeature).ds("{}")
        .what("its automatic tensor parallelism"),
    noop("expert_parallel", "{}", "there is no expert parallelism (no mixture of experts)").ds("{}")
        .what("its automatic expert parallelism"),
    noop("elasticity", "{}", "minitorch has no elastic training: the batch is the config's batch keys").ds("{}")
        .what("its elastic training (batch sizes chosen per world size)"),
    noop("autotuning", "{}", kNoFeature).ds("{}")
        .what("its autotuner"),
    noop("aio", "{}", "it tunes NVMe offload, which minitorch does not have").ds("{}")
        .what("its async I/O for NVMe offload"),
    noop("nebula", "{}", "DeepSpeed's Nebula checkpoint service; minitorch writes training.checkpoint").ds("{}")
        .what("its Nebula checkpoint service"),
    noop("datastates", "{}", "DeepSpeed's DataStates checkpoint engine; minitorch writes training.checkpoint").ds("{}")
        .what("its DataStates asynchronous checkpoint engine"),
    noop("compile", "{}", "there is no torch.compile here").ds("{}")
        .what("`torch.compile` of the model"),
    noop("torch_autocast", "{}", "use \"bf16\": {\"enabled\": true} for mixed precision").ds("{}")
        .what("`torch.autocast` mixed precision"),
    noop("timers", "{}", kMonitor).ds("{}")
        .what("its throughput timers"),
    noop("allgather_size", "500000000",
         "DeepSpeed reads it only with the deprecated \"zero_optimization\": true, as allgather_bucket_size").ds("500000000")
        .what("the all-gather size of the deprecated `\"zero_optimization\": true` form (read as `allgather_bucket_size` there)"),
    todo("amp", R"({"enabled": true})", R"({"enabled": false})", "amp (NVIDIA Apex mixed precision)",
         "remove it, or use \"bf16\": {\"enabled\": true} for mixed precision").ds("{}"),
    // ---- precision (DeepSpeedBF16Config, DeepSpeedFP16Config) ----
    ok("bf16", "{}").ds("{}"),
    dep("bfloat16", "{}", "bf16"),
    ok("bf16.enabled", "true").ds("false"),
    noop("bf16.immediate_grad_update", "true", "it tunes DeepSpeed's BF16 optimizer; AdamW keeps f32 masters anyway").ds("false")
        .what("its BF16 optimizer: apply gradients as they arrive"),
    noop("bf16.check_grad_overflow", "true",
         "minitorch's bf16 step never checks the gradients for inf/nan: DeepSpeed (true, its default) would skip such a step, "
         "minitorch applies it").ds("true")
        .what("skip a bf16 step whose gradients hold inf/nan (its default); minitorch's bf16 step does not check"),
    todo("bf16.bf16_master_weights_and_grads", "true", "false", "bf16 master weights and gradients",
         "minitorch keeps f32 master weights: set it to false").ds("false"),
    todo("bf16.bf16_optimizer_states", "true", "false", "bf16 optimizer states",
         "AdamW's m and v are f32 here: set it to false").ds("false"),
    ok("fp16", "{}").ds("{}"),
    ok("fp16.enabled", "true").ds("false"),  // f16 parameters and gradients, f32 masters, runtime/loss_scaler.h
    ok("fp16.loss_scale", "0").ds("0").type(T::number).ge(0),
    ok("fp16.initial_scale_power", "16").ds("16").ge(0, 64),  // DeepSpeed: any int (departure)
    ok("fp16.loss_scale_window", "1000").ds("1000"),          // > 0 when the scale is dynamic
    ok("fp16.hysteresis", "2").ds("2").ge(1),                  // DeepSpeed: any int (departure)
    ok("fp16.min_loss_scale", "1").ds("1"),                    // > 0 when the scale is dynamic
    ok("fp16.consecutive_hysteresis", "false").ds("false"),
    noop("fp16.auto_cast", "false", "minitorch casts nothing: the model's inputs are token ids and its parameters are f16 already").ds("false")
        .what("cast the model's inputs to fp16 (minitorch's inputs are token ids; the parameters are f16 already)"),
    todo("fp16.fp16_master_weights_and_grads", "true", "false", "fp16 master weights and gradients",
         "minitorch keeps f32 master weights: set it to false").ds("false"),
    // ---- zero_optimization (DeepSpeedZeroConfig) ----
    ok("zero_optimization", "{}").ds("{}"),
    ok(kStagePath, "0").ds("0").ge(0, 3),  // per stage: kZeroStageStatus
    ok("zero_optimization.reduce_bucket_size", "200000").ds("500000000").ge(0),  // DDP's bucket size at stage 0
    noop("zero_optimization.allgather_bucket_size", "200000000", kUnused, k12).ds("500000000").ge(0)
        .what("elements per all-gather of updated partitions"),
    ok_at("zero_optimization.overlap_comm", "true", k123).ds("null"),  // null: true at stage 3 only
    ok_at("zero_optimization.contiguous_gradients", "true", k23).ds("true"),  // stage 1's gradients are always one buffer
    noop("zero_optimization.reduce_scatter", "true", kUnused, k123).ds("true")
        .what("average gradients with reduce-scatter instead of all-reduce"),
    noop("zero_optimization.allgather_partitions", "true", kUnused, k12).ds("true")
        .what("all-gather (vs. broadcasts) of updated partitions"),
    noop("zero_optimization.round_robin_gradients", "true", kUnused, k12).ds("false")
        .what("round-robin gradient copies across ranks when offloading"),
    noop("zero_optimization.use_multi_rank_bucket_allreduce", "true", kUnused, k12).ds("true")
        .what("combine buckets of several ranks into one all-reduce"),
    noop("zero_optimization.ignore_unused_parameters", "true", kUnused, k12).ds("true")
        .what("tolerate parameters that get no gradient"),
    noop("zero_optimization.elastic_checkpoint", "false", kUnused, k12).ds("false")
        .what("checkpoints that load on a different world size"),
    noop("zero_optimization.load_from_fp32_weights", "true", kUnused, k123).ds("true")
        .what("rebuild fp32 masters from the checkpoint's fp32 weights"),
    noop("zero_optimization.legacy_stage1", "true", "it selects DeepSpeed's old stage-1 code; minitorch has one", stage_bit(1)).ds("false")
        .what("its old stage-1 implementation"),
    ok_at("zero_optimization.sub_group_size", "1000000000", k3).ds("1000000000").ge(0),  // tiles the ZeRO-3 optimizer step
    ok_at("zero_optimization.stage3_prefetch_bucket_size", "50000000", k3).ds("50000000").ge(0).also("prefetch_bucket_size"),
    ok_at("zero_optimization.stage3_param_persistence_threshold", "100000", k3).ds("100000").ge(0)
        .also("param_persistence_threshold"),
    noop("zero_optimization.stage3_model_persistence_threshold", "1000000", kUnused, k3).ds("9223372036854775807").ge(0)
        .also("model_persistence_threshold")
        .what("cap on the elements kept gathered by the rule above"),
    noop("zero_optimization.stage3_max_live_parameters", "1000000000", kUnused, k3).ds("1000000000").ge(0)
        .also("max_live_parameters")
        .what("cap on gathered parameter elements"),
    noop("zero_optimization.stage3_max_reuse_distance", "1000000000", kUnused, k3).ds("1000000000").ge(0)
        .also("max_reuse_distance")
        .what("keep a parameter gathered if reused within this many elements"),
    noop("zero_optimization.stage3_gather_16bit_weights_on_model_save", "true", kUnused, k3).ds("false")
        .also("gather_16bit_weights_on_model_save")
        .what("gather the full 16-bit model when saving"),
    noop("zero_optimization.stage3_module_granularity_threshold", "0", "minitorch's ZeRO-3 units are the GPT's blocks", k3).ds("0")
        .also("module_granularity_threshold")
        .what("modules below this size are fetched as one unit"),
    noop("zero_optimization.stage3_use_all_reduce_for_fetch_params", "false", kUnused, k3).ds("false")
        .also("use_all_reduce_for_fetch_params")
        .what("gather parameters with an all-reduce instead of an all-gather"),
    noop("zero_optimization.stage3_allgather_sequential", "false", kUnused, k3).ds("false").also("allgather_sequential")
        .what("gather parameters one by one, without bucketing"),
    dep("zero_optimization.stage3_gather_fp16_weights_on_model_save", "true", "zero_optimization.stage3_gather_16bit_weights_on_model_save")
        .ds("false"),
    dep("zero_optimization.cpu_offload", "false", "zero_optimization.offload_optimizer").ds("null").type(T::boolean),
    dep("zero_optimization.cpu_offload_param", "false", "zero_optimization.offload_param").ds("null").type(T::boolean),
    dep("zero_optimization.cpu_offload_use_pin_memory", "true", "zero_optimization.offload_param or zero_optimization.offload_optimizer")
        .ds("null").type(T::boolean),
    todo("zero_optimization.zero_hpz_partition_size", "2", "1", "ZeRO++ hierarchical partitioning (hpZ)",
         "remove it or set it to 1").ds("1").ge(0),
    todo("zero_optimization.zero_quantized_weights", "true", "false", "ZeRO++ quantized weights (qwZ)", "set it to false").ds("false"),
    todo("zero_optimization.zero_quantized_nontrainable_weights", "true", "false", "quantized non-trainable weights",
         "set it to false").ds("false"),
    todo("zero_optimization.zero_quantized_gradients", "true", "false", "ZeRO++ quantized gradients (qgZ)", "set it to false").ds("false"),
    todo("zero_optimization.zeropp_loco_param", R"({"err_beta": 0.8})", "null", "LoCo-ZeRO++ (zeropp_loco_param)",
         "remove it").ds("null").type(T::object),
    todo("zero_optimization.mics_shard_size", "2", "-1", "MiCS (mics_shard_size)", "remove it or set it to -1").ds("-1"),
    noop("zero_optimization.mics_hierarchical_params_gather", "true", "it only tunes MiCS, which minitorch does not have").ds("false")
        .what("MiCS: hierarchical all-gather"),
    todo("zero_optimization.zenflow", "{}", "null", "ZenFlow (zero_optimization.zenflow)", "remove it").ds("null").type(T::object),
    noop("zero_optimization.memory_efficient_linear", "true", "minitorch's Linear saves its input for backward, as DeepSpeed's does with it",
         k3).ds("true")
        .what("a stage-3 Linear that saves less for backward"),
    noop("zero_optimization.pipeline_loading_checkpoint", "true", kUnused, k3).ds("false")
        .what("load a stage-3 checkpoint in pipeline mode"),
    noop("zero_optimization.override_module_apply", "true", "minitorch has no nn.Module.apply to override", k3).ds("true")
        .what("patch nn.Module.apply to gather stage-3 parameters"),
    noop("zero_optimization.log_trace_cache_warnings", "true", "minitorch's ZeRO-3 follows the GPT's fixed order, without a trace cache",
         k3).ds("false")
        .what("log stage-3 trace-cache invalidations"),
    noop("zero_optimization.enable_sanity_checks", "true", "DeepSpeed's internal debug checks; minitorch's tests check instead").ds("false")
        .what("internal debug checks"),
    noop("zero_optimization.save_muon_momentum_buffer_in_memory", "true", "there is no Muon optimizer or NVMe offload").ds("false")
        .what("keep Muon's momentum in memory under NVMe offload"),
    noop("zero_optimization.leaf_module", "{}", "minitorch's ZeRO-3 units are the GPT's blocks, fixed", k3)
        .ds(R"({"classes": [three MoE blocks], "names": [], "name_suffixes": []})")
        .what("modules (`classes`, `names`, `name_suffixes`) stage 3 treats as one unit"),
    // ---- offload (DeepSpeedZeroOffloadOptimizerConfig, DeepSpeedZeroOffloadParamConfig) ----
    ok("zero_optimization.offload_optimizer", "{}").ds("null"),
    // "cpu" needs stage 1-3 and "nvme" is not implemented (runtime/config.cpp): the example stays valid everywhere.
    ok("zero_optimization.offload_optimizer.device", R"("none")").ds(R"("none")"),
    // Page-locked host buffers on a GPU; on sim and cpu there is nothing to lock (docs/config.md).
    ok("zero_optimization.offload_optimizer.pin_memory", "true").ds("false"),
    noop("zero_optimization.offload_optimizer.nvme_path", R"("/local_nvme")", kOffload).ds("null")
        .what("NVMe directory (ZeRO-Infinity)"),
    noop("zero_optimization.offload_optimizer.buffer_count", "4", kOffload).ds("4").ge(0)
        .what("NVMe buffers"),
    noop("zero_optimization.offload_optimizer.fast_init", "false", kOffload).ds("false")
        .what("fast NVMe optimizer initialisation"),
    todo("zero_optimization.offload_optimizer.ratio", "0.5", "1.0", "partial offload (a share of the optimizer states)",
         "remove it or set 1.0: minitorch offloads all of them").ds("1.0").ge(0, 1),
    noop("zero_optimization.offload_optimizer.pipeline_read", "false", kOffload).ds("false")
        .what("overlap NVMe reads with the step"),
    noop("zero_optimization.offload_optimizer.pipeline_write", "false", kOffload).ds("false")
        .what("overlap NVMe writes with the step"),
    noop("zero_optimization.offload_optimizer.super_offload", "false", kCpuAdam).ds("false")
        .what("CPU offload tuned for Superchips (stage 3)"),
    noop("zero_optimization.offload_optimizer.cpuadam_cores_perc", "0.8", kCpuAdam).ds("0.8").ge(0, 1)
        .what("share of CPU cores for its CPU Adam (with super_offload)"),
    ok("zero_optimization.offload_param", "{}").ds("null"),
    todo("zero_optimization.offload_param.device", R"("cpu")", R"("none")", "zero_optimization.offload_param",
         kOffloadAdvice).ds(R"("none")"),
    noop("zero_optimization.offload_param.pin_memory", "true", kOffload).ds("true")
        .what("page-locked host buffers"),
    noop("zero_optimization.offload_param.nvme_path", R"("/local_nvme")", kOffload).ds("null")
        .what("NVMe directory (ZeRO-Infinity)"),
    noop("zero_optimization.offload_param.buffer_count", "5", kOffload).ds("5").ge(0)
        .what("NVMe buffers"),
    noop("zero_optimization.offload_param.buffer_size", "100000000", kOffload).ds("100000000").ge(0)
        .what("elements per NVMe buffer"),
    noop("zero_optimization.offload_param.max_in_cpu", "1000000000", kOffload).ds("1000000000").ge(0)
        .what("parameter elements kept in CPU memory"),
    // ---- optimizer (runtime/config.py; Adam's params: FusedAdam's signature) ----
    ok("optimizer", R"({"type": "AdamW"})").ds("null"),
    ok("optimizer.type", R"("AdamW")").ds("null"),
    noop("optimizer.legacy_fusion", "false", "it selects a DeepSpeed fused kernel").ds("false")
        .what("its legacy fused kernel"),
    ok("optimizer.params", "{}").ds("{}"),
    ok("optimizer.params.lr", "0.001").ds("0.001").ge(0),
    ok("optimizer.params.betas", "[0.9, 0.95]").ds("[0.9, 0.999]"),
    ok("optimizer.params.eps", "1e-8").ds("1e-08").ge(0),
    ok("optimizer.params.weight_decay", "0.1").ds("0.0").ge(0),
    ok("optimizer.params.adam_w_mode", "true").ds("true"),
    ok("optimizer.params.momentum", "0.9", R"({"optimizer": {"type": "SGD"}})").ds("0").ge(0),
    noop("optimizer.params.torch_adam", "true", "it picks torch.optim.AdamW over FusedAdam: the same update").ds("false")
        .what("torch.optim.AdamW instead of FusedAdam"),
    noop("optimizer.params.set_grad_none", "true", "minitorch's zero_grad always frees the gradients").ds("true")
        .what("FusedAdam: set gradients to None in zero_grad"),
    todo("optimizer.params.bias_correction", "false", "true", "Adam without bias correction",
         "minitorch's AdamW always corrects the bias: remove it or set it to true").ds("true"),
    todo("optimizer.params.amsgrad", "true", "false", "AMSGrad", "set it to false").ds("false"),
    todo("optimizer.params.max_grad_norm", "1.0", "0.0", "optimizer.params.max_grad_norm",
         "DeepSpeed refuses it too ('max_grad_norm' is not supported as an optimizer parameter): use the top-level "
         "\"gradient_clipping\"").ds("null").type(T::number),
    // ---- scheduler (lr_schedules.py) ----
    ok("scheduler", R"({"type": "WarmupLR"})").ds("null"),
    ok("scheduler.type", R"("WarmupLR")").ds("null"),
    ok("scheduler.params", "{}", kWarmup).ds("{}"),
    ok("scheduler.params.warmup_num_steps", "10", kWarmup).ds("1000").ge(1),
    ok("scheduler.params.warmup_type", R"("linear")", kWarmup).ds(R"("log")"),
    ok("scheduler.params.warmup_min_lr", "0.0", kWarmup).ds("0.0").ge(0),
    ok("scheduler.params.warmup_max_lr", "0.001", kWarmup).ds("null").ge(0),  // null: the optimizer's lr (WarmupLR)
    ok("scheduler.params.warmup_min_ratio", "0.1", kCosine).ds("0.0").ge(0, 1),
    ok("scheduler.params.cos_min_ratio", "0.01", kCosine).ds("0.0001").ge(0, 1),
    ok("scheduler.params.total_num_steps", "100", R"({"scheduler": {"type": "WarmupDecayLR"}})").ds("null").ge(1),
    noop("scheduler.params.last_batch_iteration", "-1", "the schedule follows the engine's step (--resume restores it)",
         kAllStages, kWarmup).ds("-1")
        .what("step to resume the schedule from"),
    // ---- pipeline (pipeline/engine.h), activation checkpointing ----
    ok("pipeline", "{}").ds("{}"),
    ok("pipeline.stages", "2").ge(1),                 // stages of the data × pipeline grid (minitorch's key;
                                                      // DeepSpeed's "auto" takes them from PipelineModule)
    ok("pipeline.schedule", R"("gpipe")"),           // "gpipe" | "1f1b" (minitorch's key)
    ok("pipeline.partition_method", R"("uniform")"), // DeepSpeed's PipelineModule(partition_method=...)
    noop("pipeline.partition", R"("parameters")",
         "DeepSpeed takes the method from PipelineModule(partition_method=...); minitorch's key is pipeline.partition_method")
        .ds(R"("best")")
        .what("DeepSpeed reads the method from `PipelineModule(partition_method=...)`; ours is `pipeline.partition_method`"),
    noop("pipeline.seed_layers", "false", "every rank builds the whole GPT from the one seed, so the stages' layers agree anyway").ds("false")
        .what("a different seed per layer; every minitorch rank builds the whole GPT from one seed"),
    noop("pipeline.activation_checkpoint_interval", "0",
         "minitorch's stages checkpoint with activation_checkpointing.segment_size").ds("0")
        .what("checkpoint every N layers; ours: `activation_checkpointing.segment_size`"),
    noop("pipeline.pipe_partitioned", "true", "it splits the sent activations across tensor-parallel ranks; minitorch has no tensor parallelism")
        .ds("true")
        .what("split sent activations across tensor-parallel ranks (none here)"),
    noop("pipeline.grad_partitioned", "true", "it splits the sent gradients across tensor-parallel ranks; minitorch has no tensor parallelism")
        .ds("true")
        .what("split sent gradients across tensor-parallel ranks (none here)"),
    ok("activation_checkpointing", "{}").ds("{}"),
    ok("activation_checkpointing.enabled", "true"),      // GPT::set_checkpoint_segments (minitorch's key)
    ok("activation_checkpointing.segment_size", "1").ge(1),  // blocks per checkpointed segment (minitorch's key)
    todo("activation_checkpointing.partition_activations", "true", "false",
         "activation_checkpointing.partition_activations",
         "it splits each checkpoint across tensor-parallel ranks, and minitorch has no tensor parallelism: set it to false").ds("false"),
    // Checkpointed inputs kept in host memory (autograd::SaveOnHost); needs `enabled` (runtime/config.cpp).
    ok("activation_checkpointing.cpu_checkpointing", "true", R"({"activation_checkpointing": {"enabled": true}})").ds("false"),
    todo("activation_checkpointing.contiguous_memory_optimization", "true", "false",
         "activation_checkpointing.contiguous_memory_optimization",
         "it copies partitioned checkpoints into one buffer, and minitorch does not partition them (no tensor "
         "parallelism): set it to false").ds("false"),
    noop("activation_checkpointing.number_checkpoints", "4",
         "it sizes DeepSpeed's buffer for contiguous_memory_optimization; minitorch checkpoints every segment_size blocks").ds("null")
        .what("checkpoints per model, sizing the buffer above (minitorch: `segment_size`)"),
    noop("activation_checkpointing.synchronize_checkpoint_boundary", "false", kActTuning).ds("false")
        .what("synchronise the device at checkpoints"),
    noop("activation_checkpointing.profile", "false", kActTuning).ds("false")
        .what("time the checkpoint functions"),
    // ---- model (minitorch) ----
    ok("model", R"({"name": "baby"})"),
    ok("model.name", R"("baby")"),
    ok("model.n_layer", "2").ge(1, 2147483647),  // token ids and positions are i32; model_budget.h bounds the product
    ok("model.n_head", "4").ge(1, 2147483647),
    ok("model.n_embd", "64").ge(1, 2147483647),
    ok("model.block_size", "32").ge(1, 2147483647),
    ok("model.vocab_size", "65").ge(0, 2147483647),
    todo("model.dropout", "0.1", "0", "dropout", "only 0 is supported: remove model.dropout or set it to 0").ge(0, 1),
    ok("model.bias", "false"),
    // ---- training (minitorch) ----
    ok("training", "{}"),
    ok("training.steps", "100").ge(0),
    ok("training.eval_interval", "10").ge(0),
    ok("training.eval_iters", "5").ge(1),     // 0 batches would average nothing: nan
    ok("training.log_interval", "10").ge(1),  // a period: 0 would divide by zero
    ok("training.checkpoint", R"("out/model.safetensors")"),
    ok("training.seed", "7").ge(0),
    ok("training.tokenizer", R"("byte")"),
    ok("training.data", R"("datasets/kjv.txt")"),
    // ---- comm (minitorch) ----
    ok("comm", "{}"),
    ok("comm.timeout_s", "300").type(T::number).gt(0),  // 0 would time out every wait at once; there is no "never"
    // ---- device (minitorch) ----
    ok("device", R"({"type": "sim", "memory": "24MiB"})"),
    ok("device.type", R"("sim")"),  // "cpu", "sim", "cuda": runtime/config.cpp
    ok("device.memory", R"("24MiB")", R"({"device": {"type": "sim"}})").type(T::any),  // a size string or bytes, sim only: runtime/byte_size.h
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
  switch (s) {
    case S::implemented: return "implemented";
    case S::warning: return "warning";
    case S::error: return "error";
    case S::deprecated: return "deprecated";
  }
  return "?";
}

std::string_view type_name(ValueType t) {
  switch (t) {
    case ValueType::boolean: return "boolean";
    case ValueType::integer: return "integer";
    case ValueType::number: return "number";
    case ValueType::string: return "string";
    case ValueType::object: return "object";
    case ValueType::array: return "array";
    case ValueType::any: return "any";
  }
  return "?";
}

ValueType ConfigKey::value_type() const {
  if (typed) return declared;
  const nlohmann::json e = nlohmann::json::parse(example);
  if (e.is_boolean()) return ValueType::boolean;
  if (e.is_number_integer()) return ValueType::integer;
  if (e.is_number()) return ValueType::number;
  if (e.is_string()) return ValueType::string;
  if (e.is_object()) return ValueType::object;
  if (e.is_array()) return ValueType::array;
  return ValueType::any;
}

std::string ConfigKey::describe_type() const {
  auto num = [](double v) { return nlohmann::json(v == static_cast<double>(static_cast<long long>(v)) ? nlohmann::json(static_cast<long long>(v)) : nlohmann::json(v)).dump(); };
  std::string out(type_name(value_type()));
  if (lo > -kUnbounded && hi < kUnbounded) out += " in [" + num(lo) + ", " + num(hi) + "]";
  else if (lo > -kUnbounded) out += (lo_open ? " > " : " ≥ ") + num(lo);
  if (deepspeed_default == "null" && status != S::deprecated) out += ", or null";
  return out;
}

bool is_pydantic_section(std::string_view section) {
  return section == "zero_optimization" || section == "zero_optimization.offload_optimizer" ||
         section == "zero_optimization.offload_param" || section == "bf16" || section == "fp16";
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
    (void)value;
    const int s = zero_stage;  // the parsed stage (a pydantic section: "2" is 2)
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
      return {S::warning, path + " is accepted but has no effect here: " + std::string(key.note) +
                              (key.deepspeed_does.empty() ? std::string() : " (DeepSpeed: " + std::string(key.deepspeed_does) + ")")};
    case S::error:
      if (!key.off.empty() && is_off(value, nlohmann::json::parse(key.off))) return {};
      return {S::error, std::string(key.feature) + " is not implemented yet (" + path + " is " + json_excerpt(value) + "); " +
                            std::string(key.note)};
    case S::deprecated:  // runtime/config_spellings.cpp maps these before any section is read
      return {S::warning, "Config parameter " + path + " is deprecated use " + std::string(key.note) + " instead"};
  }
  return {};
}

}  // namespace minitorch::runtime

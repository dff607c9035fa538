// The key table's zero_optimization keys, its offload sub-sections included (runtime/config_key_rows.h says
// how rows are written).
#include "runtime/config_key_rows.h"

namespace minitorch::runtime::key_rows {

namespace {
constexpr StageMask k12 = stage_bit(1) | stage_bit(2), k123 = k12 | stage_bit(3), k3 = stage_bit(3),
                    k23 = stage_bit(2) | stage_bit(3);
constexpr std::string_view kUnused = "minitorch's ZeRO does not use it yet";
constexpr std::string_view kParamSwap =
    "minitorch reads each unit's shard from disk into a host buffer of the shard's size right before its gather, "
    "one at a time, and writes the updated values straight from the optimizer's tile";
constexpr std::string_view kOwnTiles =
    "minitorch's tiled NVMe step allocates its own buffers: a tile's master, m and v for each tile in flight, and one "
    "tile's gradient (docs/design.md §10)";
constexpr std::string_view kReleaseAtOnce =
    "minitorch's ZeRO-3 releases a unit right after its forward and its backward and bounds the units gathered "
    "ahead by stage3_prefetch_bucket_size alone";
constexpr std::string_view kCpuAdam = "it tunes DeepSpeed's CPU Adam; minitorch's host AdamW uses every core";
constexpr std::string_view kPinned =
    "page-locked memory speeds a GPU's copies; minitorch offloads on sim and cpu, whose copies are plain memcpy";
}  // namespace

std::span<const ConfigKey> zero_optimization_rows() {
  static constexpr ConfigKey rows[] = {
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
      noop("zero_optimization.stage3_max_live_parameters", "1000000000", kReleaseAtOnce, k3).ds("1000000000").ge(0)
          .also("max_live_parameters")
          .what("cap on gathered parameter elements"),
      noop("zero_optimization.stage3_max_reuse_distance", "1000000000", kReleaseAtOnce, k3).ds("1000000000").ge(0)
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
      noop("zero_optimization.offload_optimizer.pin_memory", "true", kPinned).ds("true")
          .what("page-locked host buffers"),
      // With device "cpu" a warning says nvme_path and the pipeline keys do nothing (runtime/config_sections.cpp).
      ok("zero_optimization.offload_optimizer.nvme_path", R"("/local_nvme")").ds("null"),
      noop("zero_optimization.offload_optimizer.buffer_count", "4", kOwnTiles).ds("4").ge(0)
          .what("NVMe buffers"),
      noop("zero_optimization.offload_optimizer.fast_init", "false",
           "minitorch's swap files start as zeros (posix_fallocate), with nothing to write at start-up but the masters")
          .ds("false")
          .what("fast NVMe optimizer initialisation"),
      todo("zero_optimization.offload_optimizer.ratio", "0.5", "1.0", "partial offload (a share of the optimizer states)",
           "remove it or set 1.0: minitorch offloads all of them").ds("1.0").ge(0, 1),
      ok("zero_optimization.offload_optimizer.pipeline_read", "false").ds("false"),
      ok("zero_optimization.offload_optimizer.pipeline_write", "false").ds("false"),
      noop("zero_optimization.offload_optimizer.super_offload", "false", kCpuAdam).ds("false")
          .what("CPU offload tuned for Superchips (stage 3)"),
      noop("zero_optimization.offload_optimizer.cpuadam_cores_perc", "0.8", kCpuAdam).ds("0.8").ge(0, 1)
          .what("share of CPU cores for its CPU Adam (with super_offload)"),
      ok("zero_optimization.offload_param", "{}").ds("null"),
      // "cpu" needs stage 3 and offload_optimizer (runtime/config_sections.cpp): the example stays valid everywhere.
      ok("zero_optimization.offload_param.device", R"("none")").ds(R"("none")"),
      noop("zero_optimization.offload_param.pin_memory", "true", kPinned).ds("true")
          .what("page-locked host buffers"),
      ok("zero_optimization.offload_param.nvme_path", R"("/local_nvme")").ds("null"),
      noop("zero_optimization.offload_param.buffer_count", "5", kParamSwap).ds("5").ge(0)
          .what("NVMe buffers"),
      noop("zero_optimization.offload_param.buffer_size", "100000000", kParamSwap).ds("100000000").ge(0)
          .what("elements per NVMe buffer"),
      noop("zero_optimization.offload_param.max_in_cpu", "1000000000",
           "with device \"nvme\" every unit's shard is on disk; for shards in host memory use device \"cpu\"")
          .ds("1000000000").ge(0)
          .what("parameter elements kept in CPU memory"),
  };
  return rows;
}

}  // namespace minitorch::runtime::key_rows

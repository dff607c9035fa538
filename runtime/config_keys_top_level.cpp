// The key table's top-level DeepSpeed keys: batch, clipping, logging, and DeepSpeed's sections minitorch
// does not have (runtime/config_key_rows.h says how rows are written).
#include "runtime/config_key_rows.h"

namespace minitorch::runtime::key_rows {

namespace {
constexpr std::string_view kNoLibaio =
    "minitorch's swap is synchronous pread/pwrite (O_DIRECT) split over intra_op_parallelism threads: no libaio "
    "queue to tune";
constexpr std::string_view kNoFeature = "minitorch does not have this DeepSpeed feature";
constexpr std::string_view kMonitor = "monitoring is not implemented; the training log is stdout";
}  // namespace

std::span<const ConfigKey> top_level_rows() {
  static constexpr ConfigKey rows[] = {
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
      noop("expert_parallel", "{}", "there is no expert parallelism (no mixture of experts)").ds("{}")
          .what("its automatic expert parallelism"),
      noop("elasticity", "{}", "minitorch has no elastic training: the batch is the config's batch keys").ds("{}")
          .what("its elastic training (batch sizes chosen per world size)"),
      noop("autotuning", "{}", kNoFeature).ds("{}")
          .what("its autotuner"),
      // ---- aio (DeepSpeed's AioConfig): the NVMe swap's I/O, zero/nvme_store.h ----
      ok("aio", "{}").ds("{}"),
      ok("aio.block_size", "1048576").ds("1048576").ge(4096),  // a multiple of 4096: runtime/config_sections.cpp
      ok("aio.intra_op_parallelism", "1").ds("1").ge(1),
      dep("aio.thread_count", "1", "aio.intra_op_parallelism").ds("1").type(T::integer).ge(1),
      noop("aio.queue_depth", "8", kNoLibaio).ds("8").ge(1)
          .what("requests libaio keeps in flight"),
      noop("aio.single_submit", "false", kNoLibaio).ds("false")
          .what("submit libaio requests one at a time"),
      noop("aio.overlap_events", "true", kNoLibaio).ds("true")
          .what("overlap libaio's submission and completion"),
      noop("aio.use_gds", "false", "there is no GPUDirect Storage here: the swap reads into host memory").ds("false")
          .what("read NVMe straight into GPU memory (GPUDirect Storage)"),
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
  };
  return rows;
}

}  // namespace minitorch::runtime::key_rows

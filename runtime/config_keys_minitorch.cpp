// The key table's pipeline and activation_checkpointing keys (DeepSpeed's sections, mostly minitorch's keys)
// and minitorch's own sections: model, training, comm, device (runtime/config_key_rows.h says how rows are
// written).
#include "runtime/config_key_rows.h"

namespace minitorch::runtime::key_rows {

namespace {
/// Gemini is ZeRO-3 on chunks: its keys' examples run at stage 3.
constexpr std::string_view kGeminiContext = R"({"zero_optimization": {"stage": 3}})";
constexpr std::string_view kGeminiAutoContext = R"({"zero_optimization": {"stage": 3}, "gemini": {"placement_policy": "auto"}})";
constexpr std::string_view kTpLayout = "minitorch splits its GPT by Megatron's fixed layout (tp/gpt.h), not by a policy";
constexpr std::string_view kActTuning = "it tunes DeepSpeed's checkpointing (device synchronisation, timing), which minitorch's has no counterpart for";
}  // namespace

std::span<const ConfigKey> minitorch_rows() {
  static constexpr ConfigKey rows[] = {
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
      noop("pipeline.pipe_partitioned", "true",
           "it splits the sent activations across tensor-parallel ranks; every minitorch tensor rank sends its whole copy")
          .ds("true")
          .what("split sent activations across tensor-parallel ranks (each tensor rank sends its whole copy here)"),
      noop("pipeline.grad_partitioned", "true",
           "it splits the sent gradients across tensor-parallel ranks; every minitorch tensor rank sends its whole copy")
          .ds("true")
          .what("split sent gradients across tensor-parallel ranks (each tensor rank sends its whole copy here)"),
      // ---- tensor_parallel (DeepSpeed's TPTrainingConfig; tp/): the size, the rest warns ----
      ok("tensor_parallel", "{}").ds("{}"),
      ok("tensor_parallel.autotp_size", "2").ds("0").ge(0),  // DeepSpeed's: 0 = off; the same as `size`
      ok("tensor_parallel.size", "2").ge(0),                 // minitorch's name for it
      noop("tensor_parallel.tp_overlap_comm", "true", "the TP all-reduces run in order with the compute (no overlap)").ds("false")
          .what("overlap the TP all-reduces with compute"),
      noop("tensor_parallel.tp", R"({"tp_size": 2})", "the size is tensor_parallel.size (or autotp_size)").ds("{}")
          .what("its inference TP group settings (tp_size, tp_grain_size)"),
      noop("tensor_parallel.partition_config", "{}", kTpLayout).ds("null")
          .what("a custom layer partition"),
      noop("tensor_parallel.preset_model", R"("llama")", kTpLayout).ds("null")
          .what("a named model's layer partition"),
      noop("tensor_parallel.injection_policy_tuple", R"(["attn.c_proj", "mlp.c_proj"])", kTpLayout).ds("null")
          .what("which layers to split, by policy"),
      noop("tensor_parallel.keep_module_on_host", "true", "each rank builds its slices from the whole model in host memory anyway").ds("false")
          .what("keep the module on the host while splitting it"),
      noop("tensor_parallel.kernel_inject", "true", "there are no DeepSpeed inference kernels here").ds("false")
          .what("inject its inference kernels"),
      noop("tensor_parallel.dtype", R"("bf16")", "the precision is bf16.enabled / fp16.enabled").ds(R"("float16")")
          .what("the TP module's dtype"),
      ok("activation_checkpointing", "{}").ds("{}"),
      ok("activation_checkpointing.enabled", "true"),      // GPT::set_checkpoint_segments (minitorch's key)
      ok("activation_checkpointing.segment_size", "1").ge(1),  // blocks per checkpointed segment (minitorch's key)
      todo("activation_checkpointing.partition_activations", "true", "false",
           "activation_checkpointing.partition_activations",
           "it splits each checkpoint across tensor-parallel ranks, and minitorch's tensor-parallel runs keep whole "
           "checkpoints (no sequence split yet): set it to false").ds("false"),
      // Checkpointed inputs kept in host memory (autograd::SaveOnHost); needs `enabled` (runtime/config.cpp).
      ok("activation_checkpointing.cpu_checkpointing", "true", R"({"activation_checkpointing": {"enabled": true}})").ds("false"),
      todo("activation_checkpointing.contiguous_memory_optimization", "true", "false",
           "activation_checkpointing.contiguous_memory_optimization",
           "it copies partitioned checkpoints into one buffer, and minitorch does not partition them: set it to "
           "false").ds("false"),
      noop("activation_checkpointing.number_checkpoints", "4",
           "it sizes DeepSpeed's buffer for contiguous_memory_optimization; minitorch checkpoints every segment_size blocks").ds("null")
          .what("checkpoints per model, sizing the buffer above (minitorch: `segment_size`)"),
      noop("activation_checkpointing.synchronize_checkpoint_boundary", "false", kActTuning).ds("false")
          .what("synchronise the device at checkpoints"),
      noop("activation_checkpointing.profile", "false", kActTuning).ds("false")
          .what("time the checkpoint functions"),
      // ---- gemini (Colossal-AI's GeminiPlugin keys and defaults; gemini/config.h) ----
      ok("gemini", "{}", kGeminiContext),
      ok("gemini.placement_policy", R"("auto")", kGeminiContext),
      ok("gemini.shard_param_frac", "0.5", kGeminiContext).ge(0, 1),
      ok("gemini.offload_optim_frac", "1.0", kGeminiContext).ge(0, 1),  // strictly between 0 and 1: not implemented yet
      ok("gemini.offload_param_frac", "0.5", R"({"zero_optimization": {"stage": 3}, "gemini": {"offload_optim_frac": 1.0}})")
          .ge(0, 1),
      // auto placement's (with "static" a warning says they do nothing: runtime/config_sections.cpp)
      ok("gemini.warmup_non_model_data_ratio", "0.5", kGeminiAutoContext).ge(0, 1),
      ok("gemini.steady_cuda_cap_ratio", "0.5", kGeminiAutoContext).ge(0, 1),
      todo("gemini.gpu_margin_mem_ratio", "0.5", "0.0", "gemini.gpu_margin_mem_ratio (optimizer states back on the device)",
           "remove it: every chunk's optimizer states stay on the host under auto placement").ge(0, 1).within(kGeminiContext),
      ok("gemini.max_prefetch", "2", kGeminiContext).ge(0),  // the schedule's next chunks, after the warm-up
      ok("gemini.search_range_m", "16", kGeminiContext).type(T::number).ge(0),
      ok("gemini.min_chunk_size_m", "0.0625", kGeminiContext).type(T::number).ge(0),
      ok("gemini.hidden_dim", "256", kGeminiContext).ge(1),
      ok("gemini.chunk_config_dict", R"({"1": {"chunk_size": 65536, "keep_gathered": false}})", kGeminiContext),
      noop("gemini.enable_gradient_accumulation", "true",
           "minitorch's Gemini reduces every micro-step into the gradient shards, as its ZeRO-3 does: "
           "gradient_accumulation_steps works without it", kAllStages, kGeminiContext)
          .what("Colossal-AI: allow gradient accumulation (no_sync) under Gemini"),
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
      ok("comm.timeout_s", "300").type(T::number).gt(0),  // 0 would time out every wait at once; >= 1e9: no limit (dist/deadline.h)
      // ---- device (minitorch) ----
      ok("device", R"({"type": "sim", "memory": "24MiB"})"),
      ok("device.type", R"("sim")"),  // "cpu", "sim", "cuda": runtime/config.cpp
      ok("device.memory", R"("24MiB")", R"({"device": {"type": "sim"}})").type(T::any),
      ok("device.link_bandwidth", R"("16GB")", R"({"device": {"type": "sim"}})").type(T::any),  // bytes per second, sim only  // a size string or bytes, sim only: runtime/byte_size.h
  };
  return rows;
}

}  // namespace minitorch::runtime::key_rows

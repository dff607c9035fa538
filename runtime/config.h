#pragma once
/// \file config.h
/// The DeepSpeed-style JSON configuration (docs/design.md §7). Key names, defaults and batch arithmetic follow
/// DeepSpeed's *code* (deepspeed/runtime/config.py, zero/config.py, lr_schedules.py), so a DeepSpeed
/// config file runs here unchanged as far as minitorch implements it, and a wrong one fails the same way.
///
/// Nothing is accepted silently: every key is in the table of runtime/config_keys.h (documented in
/// docs/config.md) with its status and, for DeepSpeed's keys, DeepSpeed's default, type and range, which
/// the parser enforces on every key present. DeepSpeed's other spellings (`bfloat16`, `cpu_offload`, the
/// `stage3_` aliases, ...) are mapped first (runtime/config_spellings.h). Stricter than DeepSpeed, on purpose
/// (docs/config.md lists each departure):
/// - an unknown key inside a section is an error naming the nearest valid key
///   ("unknown key 'reduce_bucket_sz' in zero_optimization; did you mean 'reduce_bucket_size'?");
/// - an unknown top-level key is a warning in `Config::warnings` (DeepSpeed silently ignores it),
///   with "did you mean" when it is close to a real one;
/// - a DeepSpeed key that only tunes performance, or only another ZeRO stage (e.g. sub_group_size
///   below stage 3), is a warning saying it has no effect here;
/// - a feature not implemented yet is an error "... is not implemented yet" saying what to do
///   instead (offload_optimizer / offload_param to "cpu", ZeRO++, MiCS, amp, model.dropout > 0, ...);
///   its off value is silent;
/// - wrong JSON types, malformed JSON and duplicate keys are errors naming the file and the key.
///
/// minitorch's additions (not DeepSpeed keys) live in their own sections:
/// - `model`: {"name": "baby"|"small"|"gpt2", overrides n_layer, n_head, n_embd, block_size,
///   vocab_size (0 = from the tokenizer), dropout (only 0), bias};
/// - `training`: {steps, eval_interval, eval_iters, log_interval, checkpoint, seed, tokenizer, data};
/// - `pipeline`: {stages, schedule "gpipe"|"1f1b"} and partition_method (pipeline/engine.h);
/// - `activation_checkpointing`: {"enabled": bool, "segment_size": blocks per segment (default 1)};
/// - `comm`: {"timeout_s": seconds > 0} — how long a rank waits in one collective or receive before
///   it ends the job (dist::ProcessGroup::set_timeout); 1e9 or more is no limit (dist/deadline.h);
/// - `device`: {"type": "cpu"|"sim"|"cuda", "memory": sim's capacity, "24MiB" or bytes} (DeviceConfig).
///
/// \code
///   auto cfg = minitorch::runtime::Config::from_file("configs/ddp.json", /*world_size=*/4);
///   for (const auto& w : cfg.warnings) std::cerr << "warning: " << w << "\n";
///   int stage = cfg.zero.stage;
///   auto sched = minitorch::optim::make_lr_schedule(cfg.scheduler, cfg.optimizer.lr);
/// \endcode
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "optim/lr_schedule.h"
#include "gemini/config.h"
#include "runtime/config_error.h"
#include "zero/config.h"

namespace minitorch::runtime {

// The zero_optimization section's values are the strategies' own (zero/config.h); this file reads them.
using zero::AioConfig;
using zero::OffloadConfig;
using zero::ZeroConfig;


/// `fp16`: f16 parameters and gradients, f32 master weights, and DeepSpeed's loss scaler
/// (runtime/loss_scaler.h has the rule). Defaults are DeepSpeed's.
struct Fp16Config {
  bool enabled = false;
  double loss_scale = 0;          ///< 0 = dynamic loss scaling; > 0 = this static scale
  int initial_scale_power = 16;   ///< dynamic scale starts at 2^initial_scale_power
  int loss_scale_window = 1000;   ///< overflow-free steps before the scale doubles
  int hysteresis = 2;             ///< the scale halves on the hysteresis-th overflow (1: on every one)
  bool consecutive_hysteresis = false;  ///< refill the hysteresis after every overflow-free step
  double min_loss_scale = 1;      ///< the dynamic scale never goes below it
  bool dynamic() const { return loss_scale == 0; }
};

enum class OptimizerType { adamw, sgd };

/// `optimizer`. "AdamW" and "Adam" (any case, as DeepSpeed lowercases) both give AdamW: DeepSpeed's
/// Adam defaults to adam_w_mode = true, i.e. decoupled weight decay. "SGD" is torch.optim.SGD.
/// Defaults are DeepSpeed's FusedAdam defaults (weight_decay 0, unlike torch.optim.AdamW's 0.01).
struct OptimizerConfig {
  bool specified = false;          ///< false: no `optimizer` section, these are defaults
  OptimizerType type = OptimizerType::adamw;
  std::string type_name = "AdamW"; ///< as written in the file
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool adam_w_mode = true;
  double momentum = 0.0;           ///< SGD only
};

/// `model` (ours). Presets: baby (L4 H4 C128 T64), small (L6 H6 C384 T256, nanoGPT shakespeare-char),
/// gpt2 (L12 H12 C768 T1024, vocabulary 50257). bias defaults to true (nanoGPT's default).
struct ModelConfig {
  std::string name = "baby";
  std::int64_t n_layer = 4, n_head = 4, n_embd = 128, block_size = 64;
  std::int64_t vocab_size = 0;  ///< 0 = take it from the tokenizer
  double dropout = 0.0;         ///< only 0 is supported
  bool bias = true;
};

/// `training` (ours): what `minitorch-train` does.
struct TrainingConfig {
  std::int64_t steps = 1000;        ///< optimizer steps
  std::int64_t eval_interval = 100; ///< 0 = never evaluate during training
  std::int64_t eval_iters = 20;     ///< batches per evaluation
  std::int64_t log_interval = 10;
  std::string checkpoint;           ///< safetensors path to save at the end ("" = none)
  std::uint64_t seed = 1337;
  std::string tokenizer = "char";   ///< "char" | "byte"
  std::string data;                 ///< text file ("" = the tool's default corpus)
};

/// `pipeline` (ours). Micro-batches per step = gradient_accumulation_steps, as in DeepSpeed's
/// PipelineEngine.
struct PipelineConfig {
  std::int64_t stages = 1;
  std::string schedule = "1f1b";    ///< "gpipe" | "1f1b"
  std::string partition_method = "parameters";  ///< "parameters" | "uniform" (pipeline/partition.h)
};

/// `tensor_parallel` (DeepSpeed's section): Megatron's tensor parallelism over `size` adjacent ranks (tp/). DeepSpeed's
/// `autotp_size` (0 = off) and our `size` say the same; 1 = off.
struct TensorParallelConfig {
  int size = 1;
};

/// `activation_checkpointing` (our keys; DeepSpeed's are judged by runtime/config_keys.cpp): `enabled` runs
/// the GPT's blocks in autograd::checkpoint segments of `segment_size` blocks (nn::GPT::set_checkpoint_segments).
struct ActivationCheckpointingConfig {
  bool enabled = false;
  std::int64_t segment_size = 1;  ///< blocks per checkpointed segment, 1 to n_layer
  /// DeepSpeed's key: each checkpointed segment's input kept in host memory (d2h in forward, h2d in
  /// backward's recompute), not on the device (autograd::SaveOnHost). Needs `enabled`.
  bool cpu_checkpointing = false;
};

/// `device` (ours): where each rank computes (docs/config.md). `type`: "cpu" (the default), "sim" (the
/// simulated accelerator: CPU kernels, its own memory pool) or "cuda" (the GPU of the rank's local rank);
/// `memory`: sim's capacity in bytes ("24MiB" or a number of bytes; absent = no limit). The tools'
/// --device and --device-memory override them.
struct DeviceConfig {
  std::string type = "cpu";
  std::int64_t memory = 0;  ///< bytes; 0 = no limit
  std::int64_t link_bandwidth = 0;  ///< sim: host↔device bytes per second (set_link_bandwidth); 0 = instant
};

/// `comm` (ours): communication between ranks.
struct CommConfig {
  double timeout_s = 300;  ///< dist::kDefaultTimeoutSeconds; the engine sets it on its group
};

struct Config {
  // ---- batch (DeepSpeed): train_batch_size = micro × accumulation × data-parallel size ----
  std::int64_t train_batch_size = 0;
  std::int64_t train_micro_batch_size_per_gpu = 0;
  std::int64_t gradient_accumulation_steps = 0;
  int world_size = 1;               ///< all ranks
  int data_parallel_size = 1;       ///< world_size / (pipeline.stages · tensor_parallel.size): the batch's world_size

  double gradient_clipping = 0.0;   ///< global-norm clip; 0 = off
  std::int64_t steps_per_print = 10;  ///< DeepSpeed's long-standing default (its newest code: None)
  bool wall_clock_breakdown = false;
  bool bf16 = false;                ///< `bf16.enabled`
  /// bf16 or fp16: 16-bit parameters and gradients with f32 master weights (P = G = 2, K = 12).
  bool mixed_precision() const { return bf16 || fp16.enabled; }
  Fp16Config fp16;
  OptimizerConfig optimizer;
  optim::LRScheduleConfig scheduler;  ///< type constant when there is no `scheduler` section
  ZeroConfig zero;
  ModelConfig model;
  TrainingConfig training;
  PipelineConfig pipeline;
  TensorParallelConfig tensor_parallel;
  ActivationCheckpointingConfig activation_checkpointing;
  CommConfig comm;
  DeviceConfig device;
  gemini::GeminiConfig gemini;  ///< Colossal-AI's Gemini (`gemini`): ZeRO-3 on chunks (gemini/gemini.h)
  zero::AioConfig aio;  ///< DeepSpeed's `aio`: the NVMe swap's I/O (zero/nvme_store.h)

  std::vector<std::string> warnings;  ///< unknown top-level keys, keys accepted without effect
  std::string source = "<string>";    ///< file name, for messages

  /// Parses a config file for `world_size` ranks. Throws ConfigError (file not found, malformed JSON
  /// with nlohmann's position, unknown section key, wrong type, inconsistent batch sizes, a feature
  /// not implemented yet, ...).
  static Config from_file(const std::string& path, int world_size = 1);
  /// Same from JSON text; `source` names it in messages.
  static Config from_json(const std::string& text, int world_size = 1, const std::string& source = "<string>");
  /// What the gradient strategy is built from (zero/strategy.h): `zero` and the optimizer's AdamW settings.
  zero::StrategyConfig strategy() const;
  /// A readable multi-line summary of the effective settings (defaults included).
  std::string summary() const;
};

/// Model preset by name (baby, small, gpt2); throws ConfigError listing the names.
ModelConfig model_preset(const std::string& name);

}  // namespace minitorch::runtime

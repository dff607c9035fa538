#pragma once
/// \file engine.h
/// The training engine, DeepSpeed's shape: `initialize(model, config)` returns an engine with
/// forward / backward / step. It owns the optimizer (AdamW from the config's `optimizer`), the LR
/// schedule (`scheduler`), gradient accumulation (`gradient_accumulation_steps`), global-norm
/// clipping (`gradient_clipping`), bf16 mixed precision (`bf16.enabled`) and the wall-clock
/// breakdown. This is stage 0 on one rank; data parallelism and ZeRO stages 1–3 plug in between
/// backward and step.
///
/// \code
///   auto cfg = zero::Config::from_file("configs/baby.json");
///   auto engine = zero::initialize(model, cfg);
///   for (std::int64_t s = 0; s < cfg.training.steps; ++s)
///     for (std::int64_t m = 0; m < cfg.gradient_accumulation_steps; ++m) {
///       auto b = sampler.sample(/*rank=*/0, s, /*world=*/1, m, cfg.gradient_accumulation_steps);
///       Tensor loss = engine->forward(b.x, b.y);
///       engine->backward(loss);   // scaled by 1 / gradient_accumulation_steps
///       engine->step();           // steps the optimizer on the last micro-batch only
///     }
/// \endcode
#include <array>
#include <chrono>
#include <memory>
#include <string>

#include "data/batch_sampler.h"
#include "nn/gpt.h"
#include "optim/adamw.h"
#include "optim/lr_schedule.h"
#include "zero/config.h"

namespace minitorch::zero {

/// Wall-clock timers of DeepSpeed's breakdown, summed over the micro-batches of the last step (ms).
struct StepTimes {
  double forward = 0, backward = 0, backward_allreduce = 0, step = 0;
};

class Engine {
 public:
  /// Builds the optimizer and schedule from `config`; with `bf16.enabled` the model's parameters are
  /// converted to bf16 (the optimizer keeps f32 master weights). `fp16` is rejected: the CPU has no
  /// f16 type.
  Engine(std::shared_ptr<nn::GPT> model, Config config);

  /// Mean cross-entropy of one micro-batch (records the graph).   idx, targets: (B, T) i32
  Tensor forward(const Tensor& idx, const Tensor& targets);
  /// Backward of loss / gradient_accumulation_steps, so accumulated gradients are those of the mean
  /// over the whole batch.
  void backward(const Tensor& loss);
  /// On the last micro-batch of an accumulation: clip, set the scheduled lr, update, zero the
  /// gradients; returns true. On the others it only counts the micro-batch and returns false.
  bool step();
  /// True when the next step() will update the parameters.
  bool is_gradient_accumulation_boundary() const;

  /// One optimizer step over `gradient_accumulation_steps` micro-batches of this rank from
  /// `sampler`; returns the mean loss.
  float train_batch(const data::BatchSampler& sampler);
  /// Mean loss over `iters` fixed validation micro-batches (the same ones at every call), no graph.
  float evaluate(const data::BatchSampler& val_sampler, std::int64_t iters);

  nn::GPT& model() { return *model_; }
  const nn::GPT& model() const { return *model_; }
  std::shared_ptr<nn::GPT> model_ptr() const { return model_; }
  optim::AdamW& optimizer() { return *optimizer_; }
  const optim::AdamW& optimizer() const { return *optimizer_; }
  const Config& config() const { return config_; }
  /// Optimizer steps taken so far (DeepSpeed's global_steps).
  std::int64_t global_steps() const { return global_steps_; }
  /// Sets global_steps (resuming from a checkpoint).
  void set_global_steps(std::int64_t s) { global_steps_ = s; }
  /// The learning rate the last step used.
  float lr() const { return optimizer_->lr(); }
  /// Global gradient norm before clipping at the last step (0 if never computed).
  double last_grad_norm() const { return last_grad_norm_; }
  const StepTimes& step_times() const { return last_times_; }
  /// "time (ms) | forward: .. | backward: .. | backward_allreduce: .. | step: .." plus, once, the legend.
  std::string wall_clock_report(bool with_legend) const;

 private:
  using Clock = std::chrono::steady_clock;
  std::shared_ptr<nn::GPT> model_;
  Config config_;
  std::unique_ptr<optim::AdamW> optimizer_;
  optim::LRSchedule schedule_;
  std::int64_t micro_steps_ = 0, global_steps_ = 0;
  double last_grad_norm_ = 0;
  StepTimes times_, last_times_;
};

/// DeepSpeed's entry point: `deepspeed.initialize(model=..., config=...)`.
std::unique_ptr<Engine> initialize(std::shared_ptr<nn::GPT> model, const Config& config);

/// The model shape a config asks for, with the vocabulary from the tokenizer when the config leaves
/// it 0 (and a clear error when they disagree).
nn::GPTConfig model_config(const Config& config, std::int64_t tokenizer_vocab);

}  // namespace minitorch::zero

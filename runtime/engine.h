#pragma once
/// \file engine.h
/// The training engine, DeepSpeed's shape: `initialize(model, config)` returns an engine with
/// forward / backward / step. It owns the optimizer (AdamW from the config's `optimizer`), the LR
/// schedule (`scheduler`), gradient accumulation (`gradient_accumulation_steps`), global-norm
/// clipping (`gradient_clipping`), bf16 or fp16 mixed precision (`bf16.enabled`, `fp16.enabled` with
/// DeepSpeed's loss scaler, runtime/loss_scaler.h: overflow steps are skipped and counted) and the wall-clock
/// breakdown. Gradient reduction and the optimizer step belong to a GradientStrategy (zero/strategy.h),
/// one per ZeRO stage, chosen once by make_strategy(); the engine drives it the same way whatever the
/// stage: begin/end_backward around every backward, reduce_gradients() (timer `backward_allreduce`)
/// and step() at the accumulation boundary. Stage 0 (zero/stage0.h) is DDP: rank 0's initial
/// parameters broadcast, no communication before the boundary micro-step, bucket all-reduces from the
/// gradient hooks during the boundary backward.
///
/// \code
///   auto& world = dist::init(&argc, &argv);                     // mpirun -np N ...
///   auto cfg = runtime::Config::from_file("configs/ddp.json", world.size());
///   auto engine = runtime::initialize(model, cfg, &world);        // nullptr (default): one rank
///   for (std::int64_t s = 0; s < cfg.training.steps; ++s)
///     for (std::int64_t m = 0; m < cfg.gradient_accumulation_steps; ++m) {
///       auto b = sampler.sample(world.rank(), s, world.size(), m, cfg.gradient_accumulation_steps);
///       Tensor loss = engine->forward(b.x, b.y);
///       engine->backward(loss);   // scaled by 1 / gradient_accumulation_steps
///       engine->step();           // steps the optimizer on the last micro-batch only
///     }
/// \endcode
#include <array>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "data/batch_sampler.h"
#include "dist/process_group.h"
#include "nn/gpt.h"
#include "optim/adamw.h"
#include "optim/lr_schedule.h"
#include "runtime/config.h"
#include "runtime/loss_scaler.h"
#include "runtime/out_of_memory.h"
#include "runtime/plan.h"
#include "runtime/trainer.h"
#include "zero/strategy.h"

namespace minitorch::runtime {

/// Wall-clock timers of DeepSpeed's breakdown, summed over the micro-batches of the last step (ms).
struct StepTimes {
  double forward = 0, backward = 0, backward_allreduce = 0, step = 0;
};

/// A pipeline stage's part of the training (pipeline/engine.h drives the engine this way); the default,
/// empty part is the whole model.
struct PipelineStagePart {
  nn::NamedTensors params;               ///< the parameters this rank trains (empty: all of the model's)
  dist::ProcessGroup* pipeline = nullptr;  ///< this rank's pipeline: the gradient norm is summed over it
  /// The boundary backward only accumulates and step() runs the whole data-parallel reduction: the end
  /// stages sum the tied weight's gradient between their last backward and step() (DeepSpeed reduces
  /// the tied gradients before the data-parallel ones too).
  bool defer_reduction = false;
};

class Engine : public Trainer {
 public:
  /// Builds the optimizer and schedule from `config`; with `bf16.enabled` (`fp16.enabled`) the model's
  /// parameters are converted to bf16 (f16; the optimizer keeps f32 master weights, and fp16 gets a
  /// LossScaler). `group`: the data-parallel ranks (nullptr = one rank); the config's batch triple
  /// must have been computed for group->size() ranks (Config::from_file(path, group->size())).
  /// `part`: a pipeline stage's share and hooks (default: the whole model).
  /// The plan (runtime/plan.h) says what runs: the strategy is make_strategy(plan.zero_stage), and the model
  /// is moved to plan.device (as deepspeed.initialize moves it to the rank's device; setup_device(plan) first).
  Engine(std::shared_ptr<nn::GPT> model, Config config, Plan plan, dist::ProcessGroup* group = nullptr,
         PipelineStagePart part = {});
  /// The same with make_plan(config) on the device the model is on (a library user places the model).
  Engine(std::shared_ptr<nn::GPT> model, Config config, dist::ProcessGroup* group = nullptr, PipelineStagePart part = {});
  /// The same over a data-parallel group the engine keeps alive (a sub-group of the grid, pipeline/make_trainer.h).
  Engine(std::shared_ptr<nn::GPT> model, Config config, Plan plan, std::shared_ptr<dist::ProcessGroup> group);

  /// Mean cross-entropy of one micro-batch (records the graph).   idx, targets: (B, T) i32
  Tensor forward(const Tensor& idx, const Tensor& targets);
  /// Backward of loss / gradient_accumulation_steps (fp16: loss × scale / gradient_accumulation_steps),
  /// so accumulated gradients are those of the mean over the whole batch (× the loss scale). Data parallel: communicates only on the boundary micro-step (its hooks
  /// start the bucket all-reduces while backward runs).
  void backward(const Tensor& loss);
  /// The two calls above for any piece of the model (what a pipeline stage runs): `compute` records
  /// micro-batch `micro`'s forward (activations tagged, timed, traced) and returns its output; the
  /// backward runs autograd from `output` with `grad_output` between the strategy's begin/end_backward.
  Tensor run_forward(std::int64_t micro, const std::function<Tensor()>& compute);
  void run_backward(std::int64_t micro, const Tensor& output, const Tensor& grad_output);
  /// What backward() seeds the loss's gradient with: loss_scale() / gradient_accumulation_steps.
  float loss_gradient() const;
  /// On the last micro-batch of an accumulation: (data parallel: wait for the averaged gradients,)
  /// clip, set the scheduled lr, update, zero the gradients; returns true. On the others it only
  /// counts the micro-batch and returns false. A non-finite gradient norm, or a non-finite loss
  /// seen by train_batch() in this step, throws std::runtime_error "step N: the loss is nan ...".
  /// fp16: a non-finite norm is an overflow instead: the update is skipped (gradients zeroed, the
  /// optimizer's step count and the lr schedule stay; global_steps still counts it, as DeepSpeed's),
  /// and the loss scaler halves the scale by its rule.
  bool step();
  /// Counts a micro-batch that is not the accumulation's last: all step() does before the boundary, by
  /// name (the pipeline engine, whose micro-batches are not steps). Throws std::logic_error at the boundary.
  void count_micro_step();
  /// True when the next step() will update the parameters.
  bool is_gradient_accumulation_boundary() const;
  /// Which micro-step of the current optimizer step comes next (0 … gradient_accumulation_steps − 1).
  std::int64_t micro_in_step() const { return micro_steps_ % config_.gradient_accumulation_steps; }

  /// One optimizer step over `gradient_accumulation_steps` micro-batches of this rank from
  /// `sampler` (sampler.sample(rank, step, world, m, G)); returns the mean loss over the micro-batches
  /// of every rank (one extra scalar all-reduce under NoRecordScope, so the byte accounting of
  /// group->stats() sees only gradients).
  float train_batch(const data::BatchSampler& sampler) override;
  /// Mean loss over `iters` fixed validation micro-batches (the same ones at every call), no graph.
  float evaluate(const data::BatchSampler& val_sampler, std::int64_t iters) override;
  // ---- the rest of the Trainer interface (runtime/trainer.h; runtime/engine_trainer.cpp) ----
  /// save_checkpoint (runtime/save_and_resume.h): every rank writes its shard, or rank 0 the one file.
  void save(const std::string& path, const data::Tokenizer& tokenizer, const std::string& run_id) const override;
  /// resume_from(path, *this).
  ResumeInfo resume(const std::string& path) override;
  Engine& engine() override { return *this; }
  const Engine& engine() const override { return *this; }
  /// trace.json, frames.json and trace.html (runtime/step_trace.h).
  std::vector<std::string> write_trace(const std::string& dir, const trace::TraceRecorder& recorder,
                                       dist::ProcessGroup* group, nlohmann::json about) const override;

  nn::GPT& model() { return *model_; }
  const nn::GPT& model() const { return *model_; }
  std::shared_ptr<nn::GPT> model_ptr() const { return model_; }
  /// The strategy's optimizer (over this rank's parameters or shard).
  optim::AdamW& optimizer() { return strategy_->optimizer(); }
  const optim::AdamW& optimizer() const { return strategy_->optimizer(); }
  /// The stage's strategy; strategy_as<Stage0>() etc. for stage-specific views (nullptr if another).
  zero::GradientStrategy& strategy() { return *strategy_; }
  const zero::GradientStrategy& strategy() const { return *strategy_; }
  template <typename S>
  const S* strategy_as() const { return dynamic_cast<const S*>(strategy_.get()); }
  const Config& config() const { return config_; }
  /// What runs: the effective stage, the device, the grid, the kind of save (runtime/plan.h).
  const Plan& plan() const { return plan_; }
  /// What this run does otherwise than its config says (the plan's warnings), for the tools to print once.
  const std::vector<std::string>& warnings() const { return plan_.warnings; }
  /// Optimizer steps taken so far (DeepSpeed's global_steps).
  std::int64_t global_steps() const { return global_steps_; }
  /// Sets global_steps (resuming from a checkpoint).
  void set_global_steps(std::int64_t s) { global_steps_ = s; }
  /// fp16: the loss scaler (nullptr otherwise); its state() is what a checkpoint must keep.
  const LossScaler* loss_scaler() const { return scaler_.get(); }
  LossScaler* loss_scaler() { return scaler_.get(); }
  /// The current loss scale (1 without fp16).
  double loss_scale() const { return scaler_ ? scaler_->scale() : 1.0; }
  /// Optimizer steps skipped for an fp16 overflow (DeepSpeed's skipped_steps); set when resuming.
  std::int64_t skipped_steps() const { return skipped_steps_; }
  void set_skipped_steps(std::int64_t s) { skipped_steps_ = s; }
  /// Whether the last optimizer step was skipped (fp16 overflow).
  bool last_step_skipped() const { return last_step_skipped_; }
  /// The learning rate the last step used.
  float lr() const { return optimizer().lr(); }
  /// Global gradient norm before clipping at the last step (0 if never computed).
  double last_grad_norm() const { return last_grad_norm_; }
  const StepTimes& step_times() const { return last_times_; }
  /// Where this rank computes: the plan's device (`--device`). Batches are uploaded to it.
  Device device() const { return plan_.device; }
  /// This run as the out-of-memory explanation sees it (rank, N, stage, Ψ, the model, the config).
  MemoryRun memory_run() const;
  /// The micro-batch on this rank's device: uploaded (h2d, counted as `io`) on a GPU or sim rank; the
  /// same tensors on the CPU.
  data::Batch on_device(data::Batch b) const;
  /// Data-parallel rank and size (0 and 1 without a group).
  int dp_rank() const { return group_ ? group_->rank() : 0; }
  int dp_size() const { return group_ ? group_->size() : 1; }
  /// The data-parallel ranks (nullptr: one rank).
  dist::ProcessGroup* group() const { return group_; }
  /// Tensor parallelism: the model's tensor group (tp::TensorParallelGPT; nullptr when the model is whole).
  dist::ProcessGroup* tensor_group() const { return tensor_group_; }
  /// Model-state bytes measured by the allocator (tags param, grad, optim on this rank) at the last
  /// optimizer step, after the gradients were reduced and before the update (docs/design.md §9).
  const zero::ModelStateBytes& measured_model_states() const { return measured_states_; }
  /// The same tags in the host pool, on a rank whose device is not the host (sim, cuda): with ZeRO-Offload,
  /// the optimizer's master, m, v and the staging copies.
  const zero::ModelStateBytes& measured_host_model_states() const { return measured_host_states_; }
  /// "time (ms) | forward: .. | backward: .. | backward_allreduce: .. | step: .." plus, once, the legend.
  std::string wall_clock_report(bool with_legend) const;

 private:
  using Clock = std::chrono::steady_clock;
  std::shared_ptr<nn::GPT> model_;
  Config config_;
  std::unique_ptr<zero::GradientStrategy> strategy_;
  optim::LRSchedule schedule_;
  std::unique_ptr<LossScaler> scaler_;  ///< fp16 only
  std::int64_t micro_steps_ = 0, global_steps_ = 0, skipped_steps_ = 0;
  bool last_step_skipped_ = false;
  double last_grad_norm_ = 0;
  bool framed_start_ = false;  ///< the "init" frame was recorded (trace/frames.h)
  bool step_open_ = false;     ///< a forward of the current optimizer step has run (its step_begin emitted)
  Plan plan_;
  PipelineStagePart part_;
  float bad_loss_ = 0;  ///< the first non-finite micro-batch loss of the current step (0: none)
  std::string diverged_message() const;
  void check_device_support() const;
  /// Marks the step begun (once per optimizer step): the report counts the step's traffic from here.
  void open_step();
  /// An allocation beyond the device's capacity, rethrown as OutOfMemoryError with the run's formula
  /// and levers (runtime/out_of_memory.h).
  [[noreturn]] void throw_explained(const OutOfMemory& e) const;
  StepTimes times_, last_times_;
  zero::ModelStateBytes measured_states_, measured_host_states_;
  dist::ProcessGroup* group_ = nullptr;
  std::shared_ptr<dist::ProcessGroup> owned_group_;  ///< group_ when the engine keeps it alive
  dist::ProcessGroup* tensor_group_ = nullptr;
  std::vector<std::string> norm_excluded_;  ///< tp::TensorParallelGPT::norm_excluded: counted by another tensor rank
};

/// DeepSpeed's entry point: `deepspeed.initialize(model=..., config=...)`; `group` = the
/// data-parallel ranks (nullptr: one rank).
std::unique_ptr<Engine> initialize(std::shared_ptr<nn::GPT> model, const Config& config,
                                   dist::ProcessGroup* group = nullptr);
/// The same for a plan made once (make_plan, setup_device) by the caller.
std::unique_ptr<Engine> initialize(std::shared_ptr<nn::GPT> model, const Config& config, const Plan& plan,
                                   dist::ProcessGroup* group = nullptr);

/// A library user's plan: make_plan(config) on the device the model was put on (the engines' constructors
/// without a plan).
Plan plan_on_model_device(const Config& config, const nn::GPT& model);

/// Why a tensor-parallel run cannot save or resume yet (its sharded checkpoint of each rank's slices is not written
/// yet): one sentence naming what to do instead. save_checkpoint, save_shards and resume_from throw it as a
/// ConfigError; minitorch-train refuses --out and --resume with it before step 1.
std::string tensor_parallel_save_problem(const Config& config);

/// The model shape a config asks for, with the vocabulary from the tokenizer when the config leaves
/// it 0 (and a clear error when they disagree); refused at once when it cannot fit in this
/// machine's memory (runtime/model_budget.h).
nn::GPTConfig model_config(const Config& config, std::int64_t tokenizer_vocab);
/// The same shape without the memory check: for sizing a model, not building it (minitorch-estimate).
nn::GPTConfig model_shape(const Config& config, std::int64_t tokenizer_vocab);

}  // namespace minitorch::runtime

#pragma once
/// \file engine.h
/// The pipeline engine (docs/design.md, "Pipelines"): a GPT split into P stages over a data × pipeline
/// grid of ranks (dist/grid.h), trained by running a schedule (pipeline/schedule.h) — any list of
/// instructions, GPipe's or 1F1B's — with activations and their gradients sent point to point.
///
/// Each rank builds the whole GPT from the one seed (so every stage's layers are the ones the unsplit
/// model would have), keeps its stage's parameters (pipeline/partition.h) and releases the others'
/// bytes. Its stage trains through a runtime::Engine over the stage's data-parallel group (DDP or
/// ZeRO-1 across the replicas of the stage), so the LR schedule, clipping, mixed precision and the
/// report are the engine's. One optimizer step = M = gradient_accumulation_steps micro-batches
/// (DeepSpeed's PipelineEngine): the last stage computes the loss of each, scaled by 1/M.
///
/// The tied weight (wte = lm_head) lives on the first and the last stage. The first stage owns it:
/// after the last backward the last stage sends its gradient there (reduce_tied), the first stage adds
/// it to its own before the data-parallel reduction, updates the weight and sends it back after the
/// step. DeepSpeed all-reduces the two gradients and updates both copies; this moves the same bytes
/// and keeps the weight's optimizer state on one stage only. The gradient norm for clipping is one
/// sum of squares over all stages (the tied weight counted once), so clipped runs match the unsplit
/// model too.
///
/// \code
///   auto& world = dist::init(&argc, &argv);                          // mpirun -np 4
///   auto cfg = runtime::Config::from_file("configs/pipeline.json", 4);  // pipeline.stages 2: 2 × 2 grid
///   pipeline::PipelineEngine pipe(model, cfg, world);
///   for (std::int64_t s = 0; s < cfg.training.steps; ++s) {
///     float loss = pipe.train_batch(sampler);   // every rank gets the step's mean loss
///   }
/// \endcode
#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/batch_sampler.h"
#include "dist/grid.h"
#include "pipeline/partition.h"
#include "pipeline/schedule.h"
#include "runtime/engine.h"
#include "runtime/plan.h"
#include "runtime/trainer.h"
#include "runtime/save_and_resume.h"

namespace minitorch::pipeline {

/// What one step looked like on one stage (pipeline phase only: first forward to last backward;
/// reduce_tied and the optimizer step excluded).
struct StageMeasure {
  double busy_ms = 0;        ///< forward + backward compute of this stage
  double idle_ms = 0;        ///< the phase's length (the slowest stage's) minus busy_ms
  int peak_live = 0;         ///< most micro-batches whose activations were alive at once
};

/// The run report's `pipeline` section (docs/report.md), the same on every rank.
struct PipelineMeasure {
  std::vector<StageMeasure> stages;     ///< per stage, averaged over the steps measured
  double bubble_measured = 0;           ///< 1 − Σ busy / (P × phase), averaged over the steps measured
  double bubble_formula = 0;            ///< (P − 1) / (M + P − 1)
  std::int64_t steps_measured = 0;      ///< every step but the first (which pays the warm-up)
  std::int64_t activation_bytes = 0;    ///< sent per step by the whole grid: activations forward
  std::int64_t gradient_bytes = 0;      ///< ... and their gradients backward
  std::int64_t tied_bytes = 0;          ///< ... and the tied weight's gradient and value
};

class PipelineEngine : public runtime::Trainer {
 public:
  /// Collective over `world`: the grid of config.pipeline.stages stages, this rank's stage of the
  /// GPT (config.pipeline.partition_method), its engine over the stage's data-parallel group, the
  /// schedule (config.pipeline.schedule) for M = gradient_accumulation_steps micro-batches. `config`
  /// must have been read for world.size() ranks. `model`: the whole GPT, the same on every rank.
  PipelineEngine(std::shared_ptr<nn::GPT> model, const runtime::Config& config, dist::ProcessGroup& world);
  /// The same with the run's plan (runtime/plan.h), made once by the caller: its stage engine runs it.
  PipelineEngine(std::shared_ptr<nn::GPT> model, const runtime::Config& config, const runtime::Plan& run,
                 dist::ProcessGroup& world);

  /// One optimizer step: the schedule's instructions for this stage, then reduce_tied and the step.
  /// Returns the mean loss of the step's micro-batches over every data-parallel replica, on every rank.
  float train_batch(const data::BatchSampler& sampler) override;
  /// Mean loss over `iters` fixed validation micro-batches, forward only through the stages; on every rank.
  float evaluate(const data::BatchSampler& val_sampler, std::int64_t iters) override;

  /// This stage's engine (its strategy, optimizer, timers, measured model states).
  runtime::Engine& engine() override { return *engine_; }
  const runtime::Engine& engine() const override { return *engine_; }
  /// "pipeline: P stages x N data-parallel, ... | stages: blocks [0, 2) + embeddings, ..." (the run's summary).
  std::string describe() const override;
  /// The report's `pipeline` section and each rank's `pipeline_stage`.
  void add_to_report(runtime::RunReport& report) const override;
  /// trace.json (F<m> / B<m> per stage, every send and receive) and the schedule's page (pipeline/report.cpp).
  std::vector<std::string> write_trace(const std::string& dir, const trace::TraceRecorder& recorder,
                                       dist::ProcessGroup* group, nlohmann::json about) const override;
  const dist::Grid& grid() const { return grid_; }
  int stage() const { return grid_.stage; }
  int stages() const { return grid_.stages; }
  const StagePlan& plan() const { return plan_[static_cast<std::size_t>(grid_.stage)]; }
  const std::vector<StagePlan>& plans() const { return plan_; }
  const Schedule& schedule() const { return schedule_; }
  /// The parameters this rank trains (its stage's, the tied weight on the first stage only).
  const nn::NamedTensors& trained_parameters() const { return trained_; }
  /// This stage's parameters including the last stage's copy of the tied weight (what it holds).
  const nn::NamedTensors& held_parameters() const { return held_; }
  /// Saves the grid's state as one sharded checkpoint at `dir` (runtime/sharded_checkpoint.h, one shard per
  /// rank of the grid): each rank writes what it owns of its stage — ZeRO-1: its pieces; DDP: the stage's
  /// first replica writes the stage whole — so the tied weight is written once, by the first stage. Every
  /// rank calls it (pipeline/checkpoint.cpp).
  void save(const std::string& dir, const data::Tokenizer& tokenizer, const std::string& run_id) const override;
  /// Resumes from any checkpoint, on any grid (runtime::resume_from: single-file or sharded; the state is read
  /// whole and cut for this stage): the stage's parameters and optimizer state, then the last stage's copy
  /// of the tied weight from the first stage. Every rank calls it.
  runtime::ResumeInfo resume(const std::string& path) override;
  /// The measurements so far (the same on every rank).
  PipelineMeasure measure() const;
  /// The run report's `pipeline` section (docs/report.md): the plan, the measurements and the formulas.
  nlohmann::ordered_json report_section() const;

 private:
  struct Micro;  // one micro-batch in flight on this stage
  struct Step;   // one optimizer step in flight: the live micro-batches and the step's measurements
  Tensor stage_forward(Micro& mb) const;
  // ---- compute: Op::forward, Op::backward ----
  void forward(Micro& mb, int micro, Step& st);
  void backward(Micro& mb, int micro, Step& st);
  // ---- communication: Op::recv_act, send_act, recv_grad, send_grad (lab task L09.3) ----
  void recv_activation(Micro& mb, int peer, const Step& st);
  void send_activation(Micro& mb, int peer);
  void recv_gradient(Micro& mb, int peer);
  void send_gradient(Micro& mb, int peer);
  void reduce_tied();
  void send_tied_weight();
  void finish_sends();
  void record_step(double busy_ms, double phase_end_ms, int peak_live);

  std::shared_ptr<nn::GPT> model_;
  runtime::Config config_;
  dist::ProcessGroup& world_;
  dist::Grid grid_;
  std::vector<StagePlan> plan_;
  Schedule schedule_;
  nn::NamedTensors trained_, held_;
  std::unique_ptr<runtime::Engine> engine_;
  Tensor tied_;  ///< wte.weight on the end stages (P > 1), undefined elsewhere
  std::vector<std::pair<std::unique_ptr<dist::Work>, Tensor>> sends_;  ///< isends in flight and their tensors
  // measurements (sums over the steps after the first)
  std::int64_t steps_ = 0, measured_ = 0;
  std::vector<double> busy_sum_, idle_sum_;
  std::vector<int> peak_live_;
  double bubble_sum_ = 0;
  std::int64_t act_bytes_ = 0, grad_bytes_ = 0, tied_bytes_ = 0;  ///< this rank's sends in the last step
  std::vector<std::int64_t> step_bytes_;  ///< the grid's sends per step: activations, gradients, tied
};

}  // namespace minitorch::pipeline

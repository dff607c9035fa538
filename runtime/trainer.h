#pragma once
/// \file trainer.h
/// One interface for every engine (docs/design.md, "One plan, one trainer"): what a training loop asks of
/// the data-parallel engine (runtime/engine.h) and of the pipeline engine (pipeline/engine.h) alike — and of
/// the engines to come — so that `minitorch-train`'s loop has no branch on the kind of engine:
///
/// \code
///   std::unique_ptr<runtime::Trainer> t = pipeline::make_trainer(model, cfg, plan, world);
///   while (t->engine().global_steps() < steps) {
///     float loss = t->train_batch(train_sampler);           // one optimizer step, the mean loss of every rank
///     if (due) float val = t->evaluate(val_sampler, iters);  // forward only
///   }
///   t->save("out/ckpt", tokenizer, run_id);                  // every rank calls it; the plan says file or shards
/// \endcode
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/batch_sampler.h"
#include "data/tokenizer.h"
#include "dist/process_group.h"
#include "trace/chrome_trace.h"

namespace minitorch::runtime {

class Engine;
class RunReport;
struct ResumeInfo;

class Trainer {
 public:
  virtual ~Trainer() = default;
  /// One optimizer step over the step's micro-batches from `sampler`; the mean loss over every rank's
  /// micro-batches, on every rank.
  virtual float train_batch(const data::BatchSampler& sampler) = 0;
  /// Mean loss over `iters` fixed validation micro-batches, forward only; on every rank.
  virtual float evaluate(const data::BatchSampler& val_sampler, std::int64_t iters) = 0;
  /// Saves the run's state at `path`: one file, or a directory of shards, as engine().plan().save_kind says.
  /// Every rank calls it (a single-file save is written by rank 0 alone).
  virtual void save(const std::string& path, const data::Tokenizer& tokenizer, const std::string& run_id) const = 0;
  /// Restores a save of any kind from any number of ranks (runtime/save_and_resume.h). Every rank calls it.
  virtual ResumeInfo resume(const std::string& path) = 0;
  /// The engine whose counters are the run's: steps, lr, gradient norm, loss scale, timers, plan, strategy
  /// (a pipeline: this rank's stage's engine).
  virtual Engine& engine() = 0;
  virtual const Engine& engine() const = 0;
  /// Lines this trainer adds to the run's opening summary ("" for none; a pipeline: its stages and schedule).
  virtual std::string describe() const { return ""; }
  /// What this trainer adds to the run report (a pipeline: its `pipeline` section, each rank's stage).
  virtual void add_to_report(RunReport& report) const { (void)report; }
  /// Writes the step trace of what `recorder` holds into `dir` (every rank calls it: a collective over
  /// `group`); `about` describes the run. Returns what rank 0 prints, one line each.
  virtual std::vector<std::string> write_trace(const std::string& dir, const trace::TraceRecorder& recorder,
                                               dist::ProcessGroup* group, nlohmann::json about) const = 0;
};

}  // namespace minitorch::runtime

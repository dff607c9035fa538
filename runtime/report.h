#pragma once
/// \file report.h
/// The run report (`--report PATH.json`, docs/design.md §9; every field in docs/report.md): what a training
/// run did and measured, for tests, notebooks, benchmarks and graders.
///
/// It is built from the event sink and the allocator: attached as this rank's events::Sink, it
/// counts the collectives of each optimizer step (from the engine's `step_begin` marker on, so the
/// counts at the end are the last step's); the engine measures the model states at the last step;
/// the allocator gives current and peak bytes per tag. write() gathers every rank's part to rank 0,
/// which writes the file atomically.
///
/// \code
///   runtime::RunReport report(*engine, &world);
///   events::Attach listen(report);                 // collectives and steps are now counted
///   for (...) { float loss = engine->train_batch(sampler); report.add_step(s, loss, engine->lr(), ...); }
///   report.write("out/report.json");               // collective: every rank calls it
/// \endcode
#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gemini/layout.h"
#include "minitorch/events.h"
#include "runtime/engine.h"

namespace minitorch::runtime {

/// A Gemini layout as the report's `gemini` section and minitorch-estimate's both open it (docs/report.md):
/// placement_policy, chunk_size and where it came from, chunks, waste_elements, kept_gathered, shards_on_host,
/// optimizer_on_host.
nlohmann::ordered_json gemini_layout_json(const gemini::GeminiLayout& layout, const std::string& placement_policy);

/// Calls, elements and bytes of one kind of collective.
struct CommCount {
  std::int64_t calls = 0, elements = 0, bytes = 0;
};

class RunReport : public events::Sink {
 public:
  /// The collectives the report counts, in its output order.
  static constexpr std::array<const char*, 6> kOps = {"all_reduce", "reduce_scatter", "all_gather",
                                                     "broadcast",  "send",           "recv"};

  /// `group`: the ranks whose entries the report holds (the data-parallel ranks, or the whole grid of
  /// a pipeline run; nullptr: one rank).
  RunReport(const Engine& engine, dist::ProcessGroup* group);

  void on_event(const events::Event& e) override;
  /// One optimizer step: the loss (mean over ranks), its lr, gradient norm and wall time.
  void add_step(std::int64_t step, float loss, float lr, double grad_norm, double ms);
  void add_val(std::int64_t step, float loss);

  /// This rank's entry of "ranks" (rank, device, model_states, memory, comm_last_step, ...).
  nlohmann::ordered_json rank_json() const;
  /// The whole report, given every rank's entry (in rank order).
  nlohmann::ordered_json to_json(const std::vector<nlohmann::ordered_json>& ranks) const;
  /// A section of our own at the top level (the pipeline engine's `pipeline`), written as given.
  void set_section(const std::string& name, nlohmann::ordered_json value) { sections_[name] = std::move(value); }
  /// A field of this rank's entry (a pipeline rank's `stage`).
  void set_rank_field(const std::string& name, nlohmann::ordered_json value) { rank_fields_[name] = std::move(value); }
  /// Collective over the group: gathers every rank's entry to rank 0, which writes `path`
  /// atomically. Not counted in the byte accounting (bookkeeping, like the logged loss).
  void write(const std::string& path) const;

 private:
  nlohmann::ordered_json formulas_json() const;
  /// rank_json's `tensor_parallel` entry (docs/report.md).
  nlohmann::ordered_json tensor_parallel_json(const dist::ProcessGroup& tensor) const;
  const Engine& engine_;
  dist::ProcessGroup* group_;
  nlohmann::ordered_json steps_ = nlohmann::ordered_json::array();
  nlohmann::ordered_json val_ = nlohmann::ordered_json::array();
  nlohmann::ordered_json sections_ = nlohmann::ordered_json::object(), rank_fields_ = nlohmann::ordered_json::object();
  mutable std::mutex mutex_;
  std::array<CommCount, kOps.size()> this_step_{};  // since the last step_begin
  std::array<CommCount, kOps.size()> last_step_{};  // this_step_ at the last step_end: the last optimizer step
  CommCount this_step_tensor_{}, last_step_tensor_{};  // the tensor group's all-reduces (tp/), apart from the rest
  TransferStats this_step_transfers_{}, last_step_transfers_{};  // host <-> device bytes, the same way
};

}  // namespace minitorch::runtime

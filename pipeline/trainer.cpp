// The pipeline engine as a Trainer (runtime/trainer.h): what it adds to the run's summary, to the run report
// and to the trace, so that the training loop has no branch on the kind of engine.
#include <cstdio>
#include <sstream>

#include "pipeline/engine.h"
#include "runtime/report.h"
#include "runtime/step_trace.h"
#include "trace/html_player.h"

namespace minitorch::pipeline {

std::string PipelineEngine::describe() const {
  const int M = static_cast<int>(config_.gradient_accumulation_steps);
  char head[256];
  std::snprintf(head, sizeof head,
                "pipeline: %d stages x %d data-parallel, %s schedule of %d micro-batches (bubble (P-1)/(M+P-1) = %.3f)",
                stages(), grid_.dp_size, config_.pipeline.schedule.c_str(), M, bubble_formula(stages(), M));
  std::ostringstream os;
  os << head;
  for (const StagePlan& p : plans())
    os << (&p == &plans().front() ? " | stages:" : ",") << " blocks [" << p.first_block << ", " << p.end_block << ")"
       << (p.embeddings ? " + embeddings" : "") << (p.head ? " + head" : "");
  os << " (" << config_.pipeline.partition_method << ")";
  return os.str();
}

void PipelineEngine::add_to_report(runtime::RunReport& report) const {
  report.set_section("pipeline", report_section());
  report.set_rank_field("pipeline_stage", stage());
}

std::vector<std::string> PipelineEngine::write_trace(const std::string& dir, const trace::TraceRecorder& recorder,
                                                     dist::ProcessGroup* group, nlohmann::json about) const {
  const int M = static_cast<int>(config_.gradient_accumulation_steps);
  about["pipeline_stages"] = stages();
  about["schedule"] = config_.pipeline.schedule;
  about["micro_batches"] = M;
  const std::string path = runtime::write_chrome_trace(dir, recorder, group, about);
  if (group && group->rank() != 0) return {};
  // The schedule as predicted, beside the measured step: F<m> / B<m> per stage, every send and receive.
  const Timeline predicted = simulate(make_schedule(config_.pipeline.schedule, stages(), M));
  const std::string page = trace::write_pipeline_html(dir, timeline_json(predicted));
  return {"wrote " + path + " (open it in https://ui.perfetto.dev or chrome://tracing: a track per rank, F<m> and B<m> "
          "per micro-batch, arrows from each send to its receive)",
          "wrote " + page + " (open it in a browser: the predicted schedule above the measured step, played)\n"
          "no frames.json: its per-rank state is one model's shards, and a pipeline's stages hold different layers"};
}

nlohmann::ordered_json PipelineEngine::report_section() const {
  const PipelineMeasure m = measure();
  const int P = stages(), M = static_cast<int>(config_.gradient_accumulation_steps);
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  for (int k = 0; k < P; ++k) {
    const StagePlan& p = plan_[static_cast<std::size_t>(k)];
    stages.push_back({{"pipeline_stage", k}, {"blocks", {p.first_block, p.end_block}}, {"embeddings", p.embeddings},
                      {"head", p.head}, {"parameters", p.parameters}, {"busy_ms", m.stages[k].busy_ms},
                      {"idle_ms", m.stages[k].idle_ms}, {"peak_live_microbatches", m.stages[k].peak_live},
                      {"peak_live_formula", config_.pipeline.schedule == "gpipe" ? M : std::min(P - k, M)}});
  }
  return {{"stages", stages},
          {"schedule", config_.pipeline.schedule},
          {"partition_method", config_.pipeline.partition_method},
          {"micro_batches", M},
          {"bubble_fraction_measured", m.bubble_measured},
          {"bubble_fraction_formula", m.bubble_formula},
          {"steps_measured", m.steps_measured},
          {"p2p_bytes_per_step",
           {{"activations", m.activation_bytes},
            {"gradients", m.gradient_bytes},
            {"tied", m.tied_bytes},
            {"total", m.activation_bytes + m.gradient_bytes + m.tied_bytes}}}};
}

}  // namespace minitorch::pipeline

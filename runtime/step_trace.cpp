#include "runtime/step_trace.h"

#include <filesystem>

#include "gemini/gemini.h"
#include "minitorch/allocator.h"
#include "minitorch/atomic_file.h"
#include "trace/frames.h"
#include "trace/frames_reader.h"
#include "trace/html_player.h"

namespace minitorch::runtime {

using nlohmann::json;

json frames_run(const Engine& engine, int world_size) {
  const Config& c = engine.config();
  const Plan& plan = engine.plan();
  // Gemini places its chunks itself: auto keeps every sharded chunk's shard on the host (cached copies: the frames'
  // `chunks`), static the shards of its offloaded chunks; its optimizer states on the host with offload_optim_frac 1.0.
  const auto* gemini = dynamic_cast<const gemini::Gemini*>(&engine.strategy());
  const bool every_shard_on_host = gemini && gemini->layout().sharded() > 0 &&
                                   gemini->layout().on_host() == gemini->layout().sharded();
  const bool params_on_host =
      gemini ? c.gemini.placement_policy == "auto" || every_shard_on_host : plan.offload_param;
  const bool optim_on_host = gemini ? gemini->layout().optim_on_host : plan.offload_optimizer;
  return {{"strategy", engine.strategy().name()},
          {"zero_stage", plan.zero_stage},
          {"world_size", world_size},
          {"dtype", precision_name(plan.precision)},
          {"num_parameters", engine.model().model_parameters()},
          {"gradient_accumulation_steps", c.gradient_accumulation_steps},
          {"device", engine.device().str()},
          {"capacity_bytes", memory_capacity(engine.device()) > 0 ? json(memory_capacity(engine.device())) : json(nullptr)},
          // where each state lives (docs/design.md §10): ZeRO-Offload keeps the optimizer's on the host, ZeRO-Infinity
          // the parameter shards there too (offload_param) and the optimizer's on disk (NVMe)
          {"pools", {{"params", c.zero.offload_param.on_nvme() ? "disk" : params_on_host ? "host" : "device"}, {"grads", "device"},
                     {"optim", c.zero.offload_optimizer.on_nvme() ? "disk" : optim_on_host ? "host" : "device"}}}};
}

json gather_frames(const std::vector<events::Event>& evs, dist::ProcessGroup* group, const Engine& engine) {
  const std::string mine = json(trace::frames_of(evs)).dump();
  const std::vector<std::string> texts = group ? dist::all_gather_strings(*group, mine) : std::vector<std::string>{mine};
  if (group && group->rank() != 0) return nullptr;
  std::vector<std::vector<json>> frames;
  for (const std::string& t : texts) frames.push_back(json::parse(t).get<std::vector<json>>());
  return trace::frames_document(frames_run(engine, group ? group->size() : 1), engine.strategy().flat_space(), frames);
}

std::string write_chrome_trace(const std::string& dir, const trace::TraceRecorder& recorder, dist::ProcessGroup* group,
                               const json& about) {
  const int rank = group ? group->rank() : 0;
  // Each rank's events as Chrome events on its own clock: ranks start together (the engine's first
  // broadcast), so the time since each recorder began lines the ranks up well enough to read.
  const std::string mine =
      trace::chrome_events(recorder.events(), rank, recorder.initial_memory(), recorder.start_us(),
                           recorder.initial_device_memory()).dump();
  const std::vector<std::string> texts = group ? dist::all_gather_strings(*group, mine) : std::vector<std::string>{mine};
  const std::string path = (std::filesystem::path(dir) / "trace.json").string();
  if (rank != 0) return path;
  std::vector<json> per_rank;
  for (const std::string& t : texts) per_rank.push_back(json::parse(t));
  const std::string text = trace::chrome_trace(per_rank, about).dump() + "\n";
  write_file_atomic(path, {{text.data(), text.size()}}, "trace");
  return path;
}

std::string write_step_trace(const std::string& dir, const trace::TraceRecorder& recorder, dist::ProcessGroup* group,
                             const Engine& engine, const json& about) {
  const std::string path = write_chrome_trace(dir, recorder, group, about);
  const json doc = gather_frames(recorder.events(), group, engine);
  if (group && group->rank() != 0) return path;
  const std::filesystem::path out(dir);
  const std::string frames_text = doc.dump() + "\n";
  trace::parse_frames(doc, (out / "frames.json").string());  // the recorder holds itself to docs/frames.md
  write_file_atomic((out / "frames.json").string(), {{frames_text.data(), frames_text.size()}}, "frames");
  trace::write_trace_html(dir);
  return path;
}

}  // namespace minitorch::runtime

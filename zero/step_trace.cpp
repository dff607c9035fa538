#include "zero/step_trace.h"

#include <filesystem>

#include "minitorch/atomic_file.h"

namespace minitorch::zero {

std::string write_step_trace(const std::string& dir, const trace::TraceRecorder& recorder, dist::ProcessGroup* group,
                             const nlohmann::json& about) {
  const int rank = group ? group->rank() : 0;
  // Each rank's events as Chrome events on its own clock: ranks start together (the engine's first
  // broadcast), so the time since each recorder began lines the ranks up well enough to read.
  const std::string mine = trace::chrome_events(recorder.events(), rank, recorder.initial_memory(), recorder.start_us()).dump();
  const std::vector<std::string> texts = group ? dist::all_gather_strings(*group, mine) : std::vector<std::string>{mine};
  const std::string path = (std::filesystem::path(dir) / "trace.json").string();
  if (rank != 0) return path;
  std::vector<nlohmann::json> per_rank;
  for (const std::string& t : texts) per_rank.push_back(nlohmann::json::parse(t));
  const std::string text = trace::chrome_trace(per_rank, about).dump() + "\n";
  write_file_atomic(path, {{text.data(), text.size()}}, "trace");
  return path;
}

}  // namespace minitorch::zero

// The data-parallel engine as a Trainer (runtime/trainer.h): saving, resuming and the step trace, each
// a call into the file that does it, so that the training loop drives every engine alike.
#include <filesystem>

#include "runtime/engine.h"
#include "runtime/save_and_resume.h"
#include "runtime/step_trace.h"

namespace minitorch::runtime {

void Engine::save(const std::string& path, const data::Tokenizer& tokenizer, const std::string& run_id) const {
  if (!plan_.sharded_save() && dp_rank() != 0) return;  // one file: rank 0 holds the whole state
  save_checkpoint(path, *this, tokenizer, run_id);
}

ResumeInfo Engine::resume(const std::string& path) { return resume_from(path, *this); }

std::vector<std::string> Engine::write_trace(const std::string& dir, const trace::TraceRecorder& recorder,
                                             dist::ProcessGroup* group, nlohmann::json about) const {
  const std::string path = write_step_trace(dir, recorder, group, *this, about);
  const std::filesystem::path d(dir);
  return {"wrote " + path + " (open it in https://ui.perfetto.dev or chrome://tracing)",
          "wrote " + (d / "frames.json").string() + " (the state after each phase) and " + (d / "trace.html").string() +
              " (open it in a browser; or: minitorch-trace " + dir + ")"};
}

}  // namespace minitorch::runtime

#include "runtime/save_and_resume.h"

#include <filesystem>
#include <stdexcept>

#include "runtime/save_target.h"

namespace minitorch::runtime {

void save_checkpoint(const std::string& path, const Engine& engine, const data::Tokenizer& tokenizer,
                     const std::string& run_id) {
  if (engine.tensor_group()) throw ConfigError(tensor_parallel_save_problem(engine.config()));
  if (engine.plan().sharded_save()) return save_sharded_checkpoint(path, engine, tokenizer, run_id);
  save_single_file_checkpoint(path, engine, tokenizer, run_id);
}

LocatedSave locate_save(const std::string& path) {
  std::string why;
  try {
    check_complete(path);
    return {path, ""};
  } catch (const std::runtime_error& e) {
    why = e.what();
  }
  std::vector<std::string> tried;
  for (const std::string& other : {partial_path(path), old_path(path)}) {
    std::error_code ec;
    if (!std::filesystem::exists(other, ec) && !std::filesystem::exists(manifest_path(other), ec)) continue;
    try {
      check_complete(other);
      return {other, "'" + path + "' is not a complete save (a save of it was interrupted); using '" + other +
                         "', the complete " + (other == partial_path(path) ? "new" : "previous") + " save beside it"};
    } catch (const std::runtime_error& e) {
      tried.push_back(e.what());
    }
  }
  for (const std::string& t : tried) why += "; nor is the save beside it: " + t;
  throw std::runtime_error(why);
}

CheckpointInfo read_checkpoint_info(const std::string& given) {
  const std::string path = locate_save(given).path;
  if (is_sharded_checkpoint(path)) {
    const ShardedManifest m = check_complete_sharded(path);
    CheckpointInfo info = checkpoint_info_of(load_safetensors(path + "/" + m.shards.front().name));
    info.path = path;
    return info;
  }
  return checkpoint_info_of(load_safetensors(path));
}

void check_complete(const std::string& path) {
  if (is_sharded_checkpoint(path)) check_complete_sharded(path);
  else check_complete_save(path);
}

ResumeInfo resume_from(const std::string& given, Engine& engine) {
  if (engine.tensor_group()) throw ConfigError(tensor_parallel_save_problem(engine.config()));
  const LocatedSave where = locate_save(given);
  const std::string& path = where.path;
  const FullState st = is_sharded_checkpoint(path) ? read_sharded_checkpoint(path) : read_single_file_checkpoint(path);
  if (!(st.info.model == engine.model().config()))
    throw std::runtime_error("cannot resume from '" + path + "': it holds " + st.info.model.describe() +
                             " but the config builds " + engine.model().config().describe());
  load_full_state(engine, st);
  ResumeInfo r{st.run.run_id, st.info.step, st.run.data_parallel_size, {}};
  if (!where.note.empty()) r.warnings.push_back(where.note);
  const Config& c = engine.config();
  const SavedRun& saved = st.run;
  const bool same_data = saved.train_micro_batch_size_per_gpu == c.train_micro_batch_size_per_gpu &&
                         saved.gradient_accumulation_steps * saved.data_parallel_size ==
                             c.gradient_accumulation_steps * engine.dp_size();
  if (saved.data_parallel_size != engine.dp_size() || !same_data) {
    std::string w = "checkpoint '" + path + "' was saved on " + std::to_string(saved.data_parallel_size) +
                    " data-parallel rank(s) with micro-batch " + std::to_string(saved.train_micro_batch_size_per_gpu) +
                    " x accumulation " + std::to_string(saved.gradient_accumulation_steps) + " and resumes on " +
                    std::to_string(engine.dp_size()) + " with " + std::to_string(c.train_micro_batch_size_per_gpu) +
                    " x " + std::to_string(c.gradient_accumulation_steps) + ": ";
    // Micro-batches are numbered (step * G + micro) * W + rank, so only B and G*W decide the data.
    w += same_data ? "the data order changes among the ranks (each step sees the same micro-batches, summed in "
                     "another order), so the losses match an uninterrupted run only up to rounding"
                   : "the data order changes from here on (other micro-batches per step), so the losses will "
                     "not match an uninterrupted run";
    r.warnings.push_back(w);
  }
  return r;
}

}  // namespace minitorch::runtime

#pragma once
/// \file save_and_resume.h
/// Saving and resuming, whatever the format: save_checkpoint() picks a single-file save
/// (runtime/checkpoint.h) or a sharded one (runtime/sharded_checkpoint.h) for the engine at hand, and
/// resume_from() reads either into the one whole state and cuts it for the engine it is given. It sits
/// above both formats, so neither includes the other.
///
/// \code
///   runtime::save_checkpoint("out/ckpt", engine, tokenizer, run_id);  // a file, or a directory of shards
///   runtime::ResumeInfo r = runtime::resume_from("out/ckpt", other_engine);  // any ranks, any stage
/// \endcode
#include <string>
#include <vector>

#include "runtime/checkpoint.h"
#include "runtime/sharded_checkpoint.h"

namespace minitorch::runtime {

/// What resume_from() found, and what the caller should tell the user (one line each).
struct ResumeInfo {
  std::string run_id;               ///< the run that saved it
  std::int64_t step = 0;
  int data_parallel_size = 1;       ///< ranks of the run that saved it
  std::vector<std::string> warnings;  ///< e.g. the data order changes on another number of ranks
};

/// Writes the engine's state. Stage 0 (or one rank): save_single_file_checkpoint, by the one rank that
/// calls it. A sharded optimizer state (stages 1–3 on N > 1 ranks): the directory `path` of
/// runtime/sharded_checkpoint.h, and every rank calls it. `run_id`: new_run_id(), generated once per
/// training run (by rank 0, the same on every rank).
void save_checkpoint(const std::string& path, const Engine& engine, const data::Tokenizer& tokenizer,
                     const std::string& run_id);
/// Which complete save `path` names (runtime/save_target.h): `path` itself when it is complete; after an
/// interrupted save, `path.partial` (the new save, complete before its switch) when it is complete, else
/// `path.old` (the previous one, during a sharded switch). `note` says which was used when it is not `path`.
/// None complete: one std::runtime_error, check_complete(path)'s, naming the others and what is wrong
/// with them.
struct LocatedSave {
  std::string path;
  std::string note;  ///< "" when `path` itself is complete
};
LocatedSave locate_save(const std::string& path);

/// Reads only the metadata (the weights are validated but not kept). `path` may be a sharded
/// checkpoint's directory (then its first shard's metadata).
CheckpointInfo read_checkpoint_info(const std::string& path);
/// The cheap checks of either kind before anything is loaded: a directory as a sharded save
/// (check_complete_sharded), else check_complete_save.
void check_complete(const std::string& path);
/// Restores weights, optimizer state and step count into an engine built for the same model shape,
/// from a single-file or a sharded checkpoint, saved on any number of ranks at any stage, or on any
/// pipeline grid (every rank calls it); the save locate_save(path) finds (its note is a warning). Refuses, with one std::runtime_error naming the file and the
/// problem, anything that is not one complete save: no manifest, a file or shard missing, truncated or
/// changed (size, checksum), files from another run or another step, another model shape.
ResumeInfo resume_from(const std::string& path, Engine& engine);

}  // namespace minitorch::runtime

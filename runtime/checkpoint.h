#pragma once
/// \file checkpoint.h
/// Self-contained checkpoints in safetensors.
///
/// `PATH` holds the model's state_dict under nanoGPT's names (so `model.load_state_dict(
/// safetensors.torch.load_file(PATH))` works on a nanoGPT-style PyTorch GPT) and, in `__metadata__`,
/// everything needed to use it alone: `format` ("minitorch-checkpoint-1"), `model_args` (nanoGPT's
/// keys, JSON), `tokenizer` ("char"/"byte"), `vocab` (the characters, UTF-8), `step`, and
/// (from save_checkpoint) `run_id`.
/// `PATH.optim` (also safetensors) holds the optimizer state (exp_avg.*, exp_avg_sq.*, master.*),
/// its step count and the run id, for `--resume`; `PATH.manifest.json` (runtime/checkpoint_manifest.h)
/// names both with their sizes and checksums. A save writes the three whole as `PATH.partial*` (each
/// atomically: temp file, fsync, rename; the manifest last) and only then switches them in, so the last
/// complete save is never lost, and never replaces a file no minitorch save wrote (runtime/save_target.h).
/// resume_from() (runtime/save_and_resume.h) accepts only a save whose manifest, sizes, checksums, steps,
/// run id and manifest facts agree; load_model() needs only `PATH`, so eval and sampling work on a model
/// file alone.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "data/tokenizer.h"
#include "minitorch/safetensors.h"
#include "nn/gpt.h"
#include "runtime/checkpoint_manifest.h"
#include "runtime/engine.h"

namespace minitorch::runtime {

/// What a checkpoint's metadata says.
struct CheckpointInfo {
  std::string path;
  nn::GPTConfig model;
  std::shared_ptr<const data::Tokenizer> tokenizer;
  std::int64_t step = 0;
};

/// A training state on no particular number of ranks: what a checkpoint holds, whole. Every checkpoint,
/// single-file (read_single_file_checkpoint) or sharded (runtime/sharded_checkpoint.h), is read into one.
struct FullState {
  CheckpointInfo info;    ///< model args, tokenizer, step
  nn::NamedTensors params;  ///< every parameter (named_parameters() order), its shape, dtype as saved
  nn::NamedTensors optim;   ///< "exp_avg.<param>", "exp_avg_sq.<param>", "master.<param>" (f32), whole
  std::int64_t optimizer_steps = 0;  ///< 0: no optimizer state
  std::string engine_state;          ///< engine_state_json() of the saving engine ("" in older saves)
  SavedRun run;                      ///< what the manifest says of the run that saved it (run.step is info.step)
};

/// What a save's manifest records of `engine`'s run: `run_id`, the step, the data-parallel ranks and
/// the batch split.
SavedRun saved_run(const Engine& engine, const std::string& run_id);

/// Writes the engine's whole state as one file set: the model (and, if it has stepped, its optimizer
/// state) to `path` / `path.optim`, then `path.manifest.json`, by the one rank that calls it (stage 0, or
/// one rank); through `path.partial*` and switch_into_place (runtime/save_target.h: `before_step` is
/// for tests, which fail a save at each step of the switch). save_checkpoint (runtime/save_and_resume.h) picks this or a sharded save. `run_id`:
/// new_run_id(), generated once per training run (by rank 0, the same on every rank).
void save_single_file_checkpoint(const std::string& path, const Engine& engine, const data::Tokenizer& tokenizer,
                                 const std::string& run_id, const std::function<void(int)>& before_step = {});
/// What a resume needs of the engine beyond weights and optimizer: the skipped (fp16 overflow) steps
/// and the loss scaler's state, as JSON for a file's metadata ("engine_state").
std::string engine_state_json(const Engine& engine);
/// Restores it (a scaler state only into an fp16 engine; an fp16 engine resumed from another
/// precision starts its scaler afresh, as DeepSpeed does). Throws std::runtime_error naming `path`.
void restore_engine_state(Engine& engine, const std::string& json, const std::string& path);
/// The safetensors metadata of a model file: format, model_args, tokenizer, vocab, step.
std::map<std::string, std::string> checkpoint_metadata(const nn::GPT& model, const data::Tokenizer& tokenizer,
                                                       std::int64_t step);
/// What a file's metadata says (checked: a minitorch checkpoint, valid model args and tokenizer).
CheckpointInfo checkpoint_info_of(const SafetensorsFile& file);
/// Writes a model alone (no optimizer file).
void save_model(const std::string& path, const nn::GPT& model, const data::Tokenizer& tokenizer, std::int64_t step);

/// Loads a model for eval / sampling: builds the GPT from the metadata and loads the weights.
/// Any problem (missing or corrupt file, not a minitorch checkpoint, missing or mis-shaped weight)
/// is one std::runtime_error naming the path and what to do.
std::shared_ptr<nn::GPT> load_model(const std::string& path, CheckpointInfo* info = nullptr);
/// The same from a file already read (load_safetensors of a path or of bytes in memory): what
/// load_model(path) does after reading it. Errors name `file.path`.
std::shared_ptr<nn::GPT> load_model(const SafetensorsFile& file, CheckpointInfo* info = nullptr);
/// The optimizer step count a `.optim` file records in its `optimizer_steps` metadata: a non-negative
/// decimal integer, else std::runtime_error "optimizer state '<path>' has no valid optimizer_steps
/// metadata ...". resume_from() reads it before loading the state (Optimizer::load_state).
std::int64_t optimizer_steps_of(const SafetensorsFile& optim_file);
/// The cheap part of resume_from()'s checks, before anything is loaded: the manifest is there and
/// readable, and `path` and `path.optim` have the sizes it names. Throws like resume_from().
CheckpointManifest check_complete_save(const std::string& path);
/// Reads a single-file checkpoint (PATH, PATH.optim, PATH.manifest.json) into a FullState, with
/// resume_from's checks.
FullState read_single_file_checkpoint(const std::string& path);

}  // namespace minitorch::runtime

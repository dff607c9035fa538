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
/// its step count and the run id, for `--resume`. A save is one complete save or nothing: it removes
/// the old manifest and what a killed save left (`*.tmp.<pid>`), writes both files atomically (temp
/// file, fsync, rename), and writes `PATH.manifest.json` (runtime/checkpoint_manifest.h) last.
/// resume_from() accepts only a save whose manifest, sizes, checksums, steps and run id agree;
/// load_model() needs only `PATH`, so eval and sampling work on a model file alone.
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

/// What resume_from() found, and what the caller should tell the user (one line each).
struct ResumeInfo {
  std::string run_id;               ///< the run that saved it
  std::int64_t step = 0;
  int data_parallel_size = 1;       ///< ranks of the run that saved it
  std::vector<std::string> warnings;  ///< e.g. the data order changes on another number of ranks
};

/// Writes the engine's state. Stage 0 (or one rank): the model (and, if it has stepped, its optimizer
/// state) to `path` / `path.optim`, then `path.manifest.json`, by the one rank that calls it. A
/// sharded optimizer state (stages 1–3 on N > 1 ranks): the directory `path` of
/// runtime/sharded_checkpoint.h, and every rank calls it. `run_id`: new_run_id(), generated once per
/// training run (by rank 0, the same on every rank).
void save_checkpoint(const std::string& path, const Engine& engine, const data::Tokenizer& tokenizer,
                     const std::string& run_id);
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
/// Reads only the metadata (the weights are validated but not kept). `path` may be a sharded
/// checkpoint's directory (then its first shard's metadata).
CheckpointInfo read_checkpoint_info(const std::string& path);
/// The optimizer step count a `.optim` file records in its `optimizer_steps` metadata: a non-negative
/// decimal integer, else std::runtime_error "optimizer state '<path>' has no valid optimizer_steps
/// metadata ...". resume_from() reads it before loading the state (Optimizer::load_state).
std::int64_t optimizer_steps_of(const SafetensorsFile& optim_file);
/// The cheap part of resume_from()'s checks, before anything is loaded: the manifest is there and
/// readable, and `path` and `path.optim` have the sizes it names. Throws like resume_from().
CheckpointManifest check_complete_save(const std::string& path);
/// The same for either kind: a directory is checked as a sharded save (check_complete_sharded).
void check_complete(const std::string& path);
/// Restores weights, optimizer state and step count into an engine built for the same model shape,
/// from a single-file or a sharded checkpoint, saved on any number of ranks at any stage
/// (runtime/sharded_checkpoint.h; every rank calls it). Refuses, with one std::runtime_error naming the
/// file and the problem, anything that is not one complete save: no manifest, a file or shard
/// missing, truncated or changed (size, checksum), files from another run or another step.
ResumeInfo resume_from(const std::string& path, Engine& engine);

}  // namespace minitorch::runtime

#pragma once
/// \file checkpoint.h
/// Self-contained checkpoints in safetensors.
///
/// `PATH` holds the model's state_dict under nanoGPT's names (so `model.load_state_dict(
/// safetensors.torch.load_file(PATH))` works on a nanoGPT-style PyTorch GPT) and, in `__metadata__`,
/// everything needed to use it alone: `format` ("minitorch-checkpoint-1"), `model_args` (nanoGPT's
/// keys, JSON), `tokenizer` ("char"/"byte"), `vocab` (the characters, UTF-8), `step`.
/// `PATH.optim` (also safetensors) holds the optimizer state (exp_avg.*, exp_avg_sq.*, master.*)
/// and its step count, for `--resume`. Both are written atomically (temp file, fsync, rename), the
/// optimizer file first, so a crash never leaves a model file without the state it was saved with.
#include <map>
#include <memory>
#include <string>

#include "data/tokenizer.h"
#include "nn/gpt.h"
#include "zero/engine.h"

namespace minitorch::zero {

/// What a checkpoint's metadata says.
struct CheckpointInfo {
  std::string path;
  nn::GPTConfig model;
  std::shared_ptr<const data::Tokenizer> tokenizer;
  std::int64_t step = 0;
};

/// Writes the engine's model (and, if it has stepped, its optimizer state) to `path` / `path.optim`.
void save_checkpoint(const std::string& path, const Engine& engine, const data::Tokenizer& tokenizer);
/// Writes a model alone (no optimizer file).
void save_model(const std::string& path, const nn::GPT& model, const data::Tokenizer& tokenizer, std::int64_t step);

/// Loads a model for eval / sampling: builds the GPT from the metadata and loads the weights.
/// Any problem (missing or corrupt file, not a minitorch checkpoint, missing or mis-shaped weight)
/// is one std::runtime_error naming the path and what to do.
std::shared_ptr<nn::GPT> load_model(const std::string& path, CheckpointInfo* info = nullptr);
/// Reads only the metadata (the weights are validated but not kept).
CheckpointInfo read_checkpoint_info(const std::string& path);
/// Restores weights, optimizer state and step count into an engine built for the same model shape.
void resume_from(const std::string& path, Engine& engine);

}  // namespace minitorch::zero

#pragma once
/// \file sharded_checkpoint.h
/// Checkpoints of a run whose optimizer state is sharded (ZeRO stages 1–3 on N > 1 ranks) or whose model is
/// split into pipeline stages (pipeline/engine.h: one shard per rank of the grid), and the one form every
/// checkpoint is read into, whatever wrote it.
///
/// A sharded checkpoint is a directory; each rank writes only what it owns, nobody gathers:
///
///   PATH/shard-0000r-of-0000N.safetensors   rank r's pieces `"<param>[a:b]"` (zero/partition.h):
///                                           `param.<piece>` (dtype P), `exp_avg.<piece>`, `exp_avg_sq.<piece>`
///                                           and, for bf16, `master.<piece>` (f32); the model's metadata
///   PATH/manifest.json                      zero_stage, N, Ψ, every parameter's name and shape, the step,
///                                           each shard's size and FNV-1a 64 (written last)
///
/// A save is one complete save or nothing: the ranks write into `PATH.partial/` (cleared first if a
/// killed save left it; a complete one beside an incomplete `PATH` is switched in first), rank 0 adds the manifest, then renames the old save to `PATH.old`, the new
/// one to `PATH`, and removes `PATH.old` (runtime/save_target.h). A kill in between leaves a complete
/// save at `PATH.partial` or `PATH.old`, which `--resume PATH` and `minitorch-consolidate PATH` find
/// (locate_save in runtime/save_and_resume.h) and name.
///
/// Reading goes the other way: every shard's pieces are put back together into whole tensors
/// (FullState), each element covered exactly once, and load_full_state() cuts them again for the
/// engine it is given — the same N (bit-identical) or another (re-partitioned), any stage. A
/// single-file checkpoint (stage 0) reads into the same FullState, so it resumes at any stage too.
/// Reading holds the whole state (16Ψ bytes in bf16) on each rank for a moment: fine for the models
/// minitorch trains on a CPU; a DeepSpeed-sized loader would read only the shards that overlap its own.
///
/// \code
///   runtime::save_checkpoint("out/ckpt", engine, tokenizer, run_id);   // every rank, stage 2 on 4 ranks
///   // (runtime/save_and_resume.h picks the format)
///   // later, on 2 ranks (or 1, or 4; any stage):
///   runtime::resume_from("out/ckpt", engine);
///   runtime::consolidate("out/ckpt", "out/model.safetensors");          // nanoGPT's names, f32
/// \endcode
#include <functional>
#include <string>

#include "runtime/checkpoint.h"
#include "runtime/checkpoint_manifest.h"

namespace minitorch::runtime {

/// True if `path` is a directory (a sharded checkpoint, complete or not).
bool is_sharded_checkpoint(const std::string& path);

/// Writes `engine`'s state as a sharded checkpoint at `dir`. Every rank calls it (barriers inside).
/// Refuses a `dir` that is a file, or a directory (or `dir.partial`, `dir.old`) holding anything no
/// sharded save wrote, before anything is written (runtime/save_target.h). `before_step(k)` runs on
/// rank 0 before each step k of switch_into_place (tests fail a save there, at its worst moments).
void save_sharded_checkpoint(const std::string& dir, const Engine& engine, const data::Tokenizer& tokenizer,
                             const std::string& run_id, const std::function<void(int)>& before_step = {});
/// The core of every sharded save, for any grid: each rank of `group` (the world, for a pipeline: its
/// data_parallel_size × pipeline_stages ranks) writes `mine` (shard_tensors()) as its shard, with the
/// manifest's facts in its metadata; rank 0 writes the manifest with `engine`'s facts (step, stage, batch
/// split; every parameter of the whole model) and switches the save into place. Barriers inside.
void save_shards(const std::string& dir, const Engine& engine, const data::Tokenizer& tokenizer, const std::string& run_id,
                 dist::ProcessGroup& group, const nn::NamedTensors& mine, int pipeline_stages,
                 const std::function<void(int)>& before_step = {});
/// What strategy `s` writes into a sharded save: its pieces `param.<p>[a:b]` when it shards the optimizer
/// state, else the parameters `whole` (`param.<p>`: a pipeline stage's, written by one replica), and then its
/// optimizer state (`exp_avg.<...>`, `exp_avg_sq.<...>`, `master.<...>`) once it has taken a step.
nn::NamedTensors shard_tensors(const zero::GradientStrategy& s, const nn::NamedTensors& whole = {});
/// The cheap checks: the manifest is there and readable, every shard is there with its size.
ShardedManifest check_complete_sharded(const std::string& dir);
/// Reads a sharded checkpoint whole, checking everything: the manifest, each shard's size, checksum,
/// run id, step and rank, and that the pieces cover every element of every parameter (and of every
/// optimizer state) exactly once. Any problem is one std::runtime_error "cannot resume from '<dir>': ...".
FullState read_sharded_checkpoint(const std::string& dir);

/// Loads `state` into `engine`: the parameters (Engine::strategy().load_parameters: a collective at
/// stages 1–3), the optimizer state cut to this rank's pieces, the step count. The model's shape
/// must match (checked by the caller, resume_from). bf16 <-> f32 converts through the f32 masters.
void load_full_state(Engine& engine, const FullState& state);

/// Writes `dir`'s parameters as one f32 safetensors model file at `out` with nanoGPT's names and the
/// checkpoint metadata: what minitorch-eval, minitorch-sample and a PyTorch nanoGPT load. The values
/// are the f32 masters when the run was bf16. Returns the number of parameters written.
std::int64_t consolidate(const std::string& dir, const std::string& out);

}  // namespace minitorch::runtime

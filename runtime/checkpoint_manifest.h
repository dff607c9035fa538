#pragma once
/// \file checkpoint_manifest.h
/// The manifest that makes a checkpoint one complete save or nothing.
///
/// A save writes `PATH` and `PATH.optim` (each atomically) and then, last, `PATH.manifest.json`
/// naming both with their sizes and FNV-1a 64 checksums, the run id, the step and the data-parallel
/// size: files without their manifest are not a complete save, so `--resume` never takes a mixed pair.
/// (The files are first written as `PATH.partial*` and then switched in: runtime/save_target.h.)
/// Files are found by convention (`PATH`, `PATH.optim`), so a complete save can be renamed as a set;
/// the names in the manifest are for a reader. The files also carry the manifest's facts
/// (manifest_facts), so an edited manifest field is refused too.
///
/// \code
///   {"format": "minitorch-manifest-1", "run_id": "1718000000-4242-9f3a61c2", "step": 600,
///    "data_parallel_size": 4, "train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 1,
///    "files": {"model": {"name": "baby.safetensors", "bytes": 3245376, "fnv1a64": "a1b2..."},
///              "optim": {"name": "baby.safetensors.optim", "bytes": 9723904, "fnv1a64": "c3d4...",
///                        "optimizer_steps": 600}}}
/// \endcode
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/run_id.h"  // new_run_id(): the run id every manifest names

namespace minitorch::runtime {

/// The `format` of what a save writes: a checkpoint or model file's safetensors metadata
/// (runtime/checkpoint.h), a single-file save's manifest, a sharded save's manifest. save_target.h
/// tells a save's own files from a user's by them.
inline constexpr const char* kCheckpointFormat = "minitorch-checkpoint-1";
inline constexpr const char* kManifestFormat = "minitorch-manifest-1";
inline constexpr const char* kShardedManifestFormat = "minitorch-sharded-1";

/// One file of a save as the manifest records it.
struct ManifestFile {
  std::string name;            ///< file name (no directory), for a reader
  std::uint64_t bytes = 0;     ///< size on disk
  std::uint64_t fnv1a64 = 0;   ///< FNV-1a 64 over every byte
  std::int64_t optimizer_steps = 0;  ///< `.optim` only: the optimizer's step count
};

/// What every manifest, single-file or sharded, says of the run that saved: which run and step, and
/// the ranks and batch split it trained with (a resume on others warns: runtime/save_and_resume.h).
struct SavedRun {
  std::string run_id;
  std::int64_t step = 0;
  int data_parallel_size = 1;
  /// The batch split: with the same micro-batch size and micro-batches per step (accumulation ×
  /// ranks), a resumed run trains on the same data (data/batch_sampler.h) on any number of ranks.
  std::int64_t train_micro_batch_size_per_gpu = 0, gradient_accumulation_steps = 0;
};

/// What `PATH.manifest.json` says.
struct CheckpointManifest : SavedRun {
  explicit CheckpointManifest(SavedRun run = {}) : SavedRun(std::move(run)) {}
  ManifestFile model;
  std::optional<ManifestFile> optim;  ///< absent for a save before the first optimizer step
};

/// What `DIR/manifest.json` of a sharded checkpoint says (runtime/sharded_checkpoint.h): the run, the
/// ZeRO stage and ranks that wrote it, the model's parameters (names, shapes: Ψ = Σ numel) and one file
/// per rank. Saves from before the ZeRO stage was called `zero_stage` say `stage`, and still read.
///
/// \code
///   {"format": "minitorch-sharded-1", "run_id": "...", "step": 600, "zero_stage": 2, "data_parallel_size": 4,
///    "pipeline_stages": 1,
///    "train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 1, "optimizer_steps": 600,
///    "dtype": "f32", "numel": 809600,
///    "params": [{"name": "transformer.wte.weight", "shape": [65, 128]}, ...],
///    "shards": [{"name": "shard-00000-of-00004.safetensors", "bytes": 3243880, "fnv1a64": "..."}, ...]}
/// \endcode
struct ShardedManifest : SavedRun {
  explicit ShardedManifest(SavedRun run = {}) : SavedRun(std::move(run)) {}
  int zero_stage = 1;
  /// Pipeline stages of the grid that wrote it (1: no pipeline). One shard per rank: data_parallel_size ×
  /// pipeline_stages files. A pipeline's stage-0 (DDP) save is sharded too: each pipeline stage's first
  /// replica writes that stage's parameters whole.
  int pipeline_stages = 1;
  int ranks() const { return data_parallel_size * pipeline_stages; }
  std::int64_t optimizer_steps = 0;  ///< 0: saved before the first optimizer step (no optimizer state)
  std::string dtype;                 ///< the parameters' dtype P: "f32", "bf16" or "f16"
  std::int64_t numel = 0;            ///< Ψ
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> params;  ///< named_parameters() order
  std::vector<ManifestFile> shards;  ///< shard r is rank r's file
};

/// `dir + "/manifest.json"`.
std::string sharded_manifest_path(const std::string& dir);
/// `dir/shard-0000r-of-0000N.safetensors`.
std::string shard_file_name(int rank, int world);
/// Writes `dir`'s manifest atomically.
void write_sharded_manifest(const std::string& dir, const ShardedManifest& manifest);
/// Reads and checks it like read_manifest(): one std::runtime_error "cannot resume from '<dir>': ..."
/// for a missing or malformed manifest (every field checked for type and range; the shards' count
/// equals data_parallel_size × pipeline_stages; the shapes' sizes add up to numel).
ShardedManifest read_sharded_manifest(const std::string& dir);
ShardedManifest parse_sharded_manifest(const std::string& text, const std::string& dir);

/// A manifest's facts, all it says but its files' sizes and checksums, as one JSON text. Every file of
/// a save carries them in its metadata (`manifest_facts`), and a reader holds the manifest to them, so
/// an edited field (a step, optimizer_steps, a shape, a count) is refused, naming it.
std::string manifest_facts(const CheckpointManifest& m);
std::string manifest_facts(const ShardedManifest& m);
/// "" if `facts` (a file's `manifest_facts`) say what `m` says; else the first field that differs:
/// "the manifest's optimizer_steps is 1000 but the save wrote 3".
std::string facts_mismatch(const CheckpointManifest& m, const std::string& facts);
std::string facts_mismatch(const ShardedManifest& m, const std::string& facts);

/// `path + ".manifest.json"`.
std::string manifest_path(const std::string& checkpoint_path);

/// FNV-1a 64 of a file's bytes. Throws std::runtime_error naming the file if it cannot be read.
std::uint64_t fnv1a64_file(const std::string& path);

/// Size and checksum of `path` (name = its file name).
ManifestFile describe_file(const std::string& path);

/// Writes the manifest of the save at `checkpoint_path` atomically (write_file_atomic).
void write_manifest(const std::string& checkpoint_path, const CheckpointManifest& manifest);

/// Reads `checkpoint_path`'s manifest. A missing, unreadable or malformed manifest is one
/// std::runtime_error that names it and says the save is not complete.
CheckpointManifest read_manifest(const std::string& checkpoint_path);
/// The parsing half of read_manifest(): `text` is the manifest's content, `checkpoint_path` names
/// the save in messages. Every field is checked for its type and range (a step or a size is a
/// non-negative integer, the data-parallel size and the batch split at least 1, a checksum exactly
/// 16 hex digits); anything else is the same std::runtime_error as read_manifest's.
CheckpointManifest parse_manifest(const std::string& text, const std::string& checkpoint_path);


}  // namespace minitorch::runtime

#pragma once
// Lesson 11's runs: one ZeRO-3 engine at a time on the simulated accelerator (`sim`) of every rank, its
// parameters and optimizer on the card, in host memory or in swap files on disk (ZeRO-Infinity), and what each
// rank's pools, copies and disk traffic measured — or the out-of-memory error every rank got — gathered to
// rank 0, beside runtime/formulas.h's formulas and runtime/estimate.h's exact bytes.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "data/text_dataset.h"
#include "dist/process_group.h"
#include "minitorch/allocator.h"
#include "runtime/config.h"
#include "runtime/engine.h"
#include "runtime/estimate.h"
#include "runtime/formulas.h"
#include "common/sim_card.h"
#include "zero/strategy.h"

namespace lesson11 {

/// The folder every rank's swap space lives under, `<temp>/minitorch-lesson11-<run id>` (the same name on
/// every rank: rank 0 makes the id). Rank 0 creates it; remove() (every rank, after the last engine) removes it.
class SwapRoot {
 public:
  explicit SwapRoot(minitorch::dist::ProcessGroup& world);
  ~SwapRoot();  // an error's way out: rank 0 removes what is left, without waiting for the others
  SwapRoot(const SwapRoot&) = delete;
  SwapRoot& operator=(const SwapRoot&) = delete;
  const std::string& path() const { return path_; }
  /// Every rank calls it once its engines, and their swap folders with them, are gone: rank 0 removes the root.
  /// Returns whether it is gone (rank 0's answer is the one printed).
  bool remove(minitorch::dist::ProcessGroup& world);

 private:
  std::string path_;
  bool rank0_ = false, removed_ = false;
};

/// One configuration of the story: the GPT (C = width, H = 4 heads, micro-batch 1, 4 micro-steps), stage 3
/// with every tensor in a unit, where its parameters and optimizer live, and the knobs of the tiled step.
struct Setup {
  long long layers = 4, block_size = 64, width = 128;  // L, T, C: the baby
  std::string optimizer = "none";  // offload_optimizer.device: none, cpu, nvme
  std::string param = "none";      // offload_param.device: none, cpu, nvme
  long long tile = 0;              // sub_group_size (0: DeepSpeed's default, 1e9)
  bool pipeline = false;           // pipeline_read and pipeline_write
  long long bucket = 200000;       // reduce_bucket_size
  std::string name() const;        // "ZeRO-3 + offload_optimizer nvme + offload_param nvme"
  int slots() const { return pipeline ? 3 : 1; }  // state buffers of the tiled step: 1 + read + write
  bool nvme() const { return optimizer == "nvme"; }
};

/// The config of `setup` (docs/config.md keys), the swap under `nvme_path` where it offloads to "nvme".
std::string config_json(const Setup& setup, const std::string& nvme_path);

/// What one rank measured at the second of two optimizer steps (AdamW makes its states at the first).
struct Measured {
  bool out_of_memory = false;
  int ranks_out_of_memory = 0;  // of N: every rank runs the same allocations, so all or none
  std::string error;            // rank 0's OutOfMemoryError, as the engine wrote it
  int steps_done = 0;
  std::int64_t psi = 0, owned = 0;                 // Ψ, and the elements this rank's shard owns
  int micro_steps = 1;                             // A: gradient_accumulation_steps
  std::int64_t largest_unit = 0;                   // elements of the largest unit (a block, or the embeddings)
  minitorch::zero::ModelStateBytes device, host, disk;  // param, grad, optim in the sim pool, the host pool, the swap
  minitorch::runtime::ExactOffload exact;        // the same predicted to the byte (runtime::exact_offload_states)
  minitorch::TransferStats step;                 // the second step's copies and disk traffic
  std::int64_t device_peak = 0, comm_peak = 0;   // the sim pool over the run: everything, and the tag comm
  std::int64_t host_optim_peak = 0, host_temp_peak = 0;  // the host pool in the second step: optim, optim_temp
  std::int64_t host_step_bytes = 0, tiles = 0;   // NvmeOptimizer::host_step_bytes(), tiles of a step
  double io_s = 0, waited_s = 0;                 // the NVMe step's I/O seconds, and those the main thread waited
  std::vector<std::pair<std::string, std::int64_t>> files;  // rank 0's swap folder: file, bytes
  std::string not_direct;                        // why the swap is not O_DIRECT here ("" if it is)
  bool same_on_every_rank = true;                // rank 0's figures equal every rank's?
  bool exact_on_every_rank = true;               // every rank measured its exact_offload_states, to the byte?
};

// The card, the runs on it and the error lines: lessons/common/sim_card.h, shared with the other lessons on sim.
using lesson::engine_on_sim;

/// Runs `setup` on every rank (each on Device::sim() of `capacity` bytes, 0 = none): two optimizer steps, or until
/// the engine throws its OutOfMemoryError on every rank.
Measured measure(minitorch::dist::ProcessGroup& world, const minitorch::data::TextDataset& ds, const Setup& setup,
                 std::int64_t capacity, const std::string& nvme_path);

/// The fp32 bytes per parameter the runs train with: P, G, K = 4, 4, 8.
minitorch::runtime::BytesPerParameter fp32();

/// "12.35 MiB"
std::string mib(double bytes);
/// "(= exact)" when equal, "(DIFFERENT)" otherwise.
const char* agrees(std::int64_t measured, std::int64_t predicted);

using lesson::print_error_lines;  // lessons/common/sim_card.h: the first line and those naming one of `keys`

/// The last beat: the baby GPT trained `steps` steps on the KJV with configs/zero3_offload.json's batch and
/// configs/baby.json's AdamW and schedule, as plain ZeRO-3 and with the optimizer and the parameters on NVMe
/// under `nvme_path`; the losses side by side and every pool measured beside its formula.
void train_on_nvme(minitorch::dist::ProcessGroup& world, const minitorch::data::TextDataset& ds, long long steps,
                   const std::string& nvme_path, bool quick);

}  // namespace lesson11

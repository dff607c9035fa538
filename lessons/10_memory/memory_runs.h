#pragma once
// Lesson 10's runs: one engine at a time on the simulated accelerator (`sim`) of every rank, under a capacity,
// and what each rank's pools and copies measured — or the out-of-memory error every rank got — gathered to
// rank 0, next to the formulas of runtime/formulas.h.
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/batch_sampler.h"
#include "data/text_dataset.h"
#include "dist/process_group.h"
#include "runtime/activation_formulas.h"
#include "runtime/config.h"
#include "runtime/engine.h"
#include "runtime/formulas.h"
#include "common/sim_card.h"
#include "zero/strategy.h"

namespace lesson10 {


/// One configuration of the story: the GPT's depth and sequence, the ZeRO stage and the two levers.
struct Setup {
  long long layers = 4, block_size = 64;  // the baby: L = 4, T = 64 (C = 128, H = 4)
  int stage = 0;
  bool offload = false;        // zero_optimization.offload_optimizer.device "cpu"
  bool checkpointing = false;  // activation_checkpointing, segments of one block
  bool cpu_checkpointing = false;  // activation_checkpointing.cpu_checkpointing: the blocks' inputs on the host
  std::string name() const;    // "ZeRO-3 + offload + checkpointing"
};

/// The config of `setup`: the seeds' batch shape (configs/zero3_offload.json: micro-batch 1, 4 micro-steps),
/// AdamW as configs/baby.json, buckets and prefetch of 200000 elements, every ZeRO-3 tensor sharded.
std::string config_json(const Setup& setup);

/// What one rank measured at the last of two optimizer steps (AdamW allocates its states at its first).
struct Measured {
  bool out_of_memory = false;
  int ranks_out_of_memory = 0;  // of N: every rank runs the same allocations, so all or none
  std::string error;            // rank 0's OutOfMemoryError, as the engine wrote it
  int steps_done = 0;           // optimizer steps completed before it
  std::int64_t psi = 0;
  minitorch::zero::ModelStateBytes device, host;    // the tags param, grad, optim in the sim pool and the host pool
  std::int64_t device_peak = 0, activation_peak = 0;  // the sim pool's peak of the sum, and of `activation`
  std::int64_t d2h = 0, h2d = 0;         // model bytes copied in the second step (the run's input apart)
  double step_ms = 0;                    // the optimizer step's time in the second step
  bool same_on_every_rank = true;        // rank 0's figures (the error's request and bytes in use, the bytes
                                         // above, the steps done): equal on every rank?
};

// The card, the runs on it and the error lines: lessons/common/sim_card.h, shared with the other lessons on sim.
using lesson::engine_on_sim;
using lesson::lift_sim_capacity;

/// Runs `setup` on every rank of `world` (each rank's model on Device::sim(), `capacity` bytes per rank,
/// 0 = none): two optimizer steps, or until the engine throws its OutOfMemoryError on every rank.
Measured measure(minitorch::dist::ProcessGroup& world, const minitorch::data::TextDataset& ds, const Setup& setup, std::int64_t capacity);

/// Ψ of `setup`'s GPT for vocabulary `V`, without building it.
std::int64_t psi_of(const Setup& setup, std::int64_t V);
/// The activations of one of `setup`'s micro-batches by the model's shapes (runtime/activation_formulas.h).
minitorch::runtime::ActivationShape activation_shape_of(const Setup& setup, std::int64_t V);

/// The device model states the formulas predict for `setup` (fp32: P, G, K = 4, 4, 8) on N ranks.
minitorch::runtime::ModelStateEstimate formula(const Setup& setup, double psi, int N);
/// The formula's text: "(P+G+K)Ψ", "PΨ + (G+K)Ψ/N", ..., "(P+G)Ψ/N" with offload.
std::string formula_text(const Setup& setup);

/// "12.35 MiB"
std::string mib(double bytes);

/// Prints "param ... grad ... optim ... = total" measured, the formula beside it, and whether they agree.
void print_model_states(const Measured& m, const Setup& setup, int N);

using lesson::print_error_lines;  // lessons/common/sim_card.h: the first line and those naming one of `keys`

/// The closing table: per rank, for each setup, device model states (measured, formula), activation peak,
/// device peak against the capacity, host model states (measured, 16Ψ/N), d2h and h2d per step (GΨ/N, PΨ/N).
void print_table(const std::vector<Setup>& setups, const std::vector<Measured>& runs, int N, std::int64_t capacity);

/// The last beat: configs/zero3_offload.json (read from the repository root) with configs/baby.json's AdamW and
/// schedule, trained `steps` steps on the KJV with and without offload on the card; their losses side by side,
/// and what the offloaded run held and copied beside the formulas.
void train_seeds_config(minitorch::dist::ProcessGroup& world, const minitorch::data::TextDataset& ds, long long steps, std::int64_t capacity,
                        bool quick);

}  // namespace lesson10

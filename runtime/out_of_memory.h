#pragma once
/// \file out_of_memory.h
/// "CUDA out of memory", made useful (docs/design.md §10). When an allocation does not fit the rank's
/// device (minitorch::OutOfMemory from the allocator), the engine rethrows it as an OutOfMemoryError whose
/// message names the rank, what was asked for, the capacity, what is in use per tag, the ZeRO formula of
/// this run, and the levers that would make it fit — each computed for this run:
///
///   out of memory on sim of rank 1: 0.06 MiB (65536 B) of activation asked for, 0.94 MiB in use of a
///   capacity of 1.00 MiB (1048576 B)
///     in use: param 0.11 MiB, grad 0.00 MiB, optim 0.22 MiB, ..., activation 0.50 MiB, comm 0.11 MiB, ...
///     this run: ZeRO stage 0 (DDP), f32 (P, G, K = 4, 4, 8 bytes per parameter), Ψ = 28512, N = 2: ...
///     what would fit in 1.00 MiB (computed for this run):
///       - ZeRO-2: PΨ + (G+K)Ψ/N = 0.27 MiB of model states, leaving 0.73 MiB for activations and buffers
///       - ZeRO-2 + offload_optimizer (device "cpu"): PΨ + GΨ/N = 0.16 MiB on the device, ...
///       - micro-batch 2 with gradient_accumulation_steps 2 (the same batch): activations about 0.25 MiB
///       - activation checkpointing: ...
///
/// A Gemini run (docs/design.md §11) is described by its placement and offered Gemini's levers instead: the static
/// fractions that move more to the host, and auto placement (every shard on the host, cached as the capacity allows).
///
/// A run whose model states alone exceed the capacity is told so before its first step
/// (check_model_states_fit), in the same words.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "minitorch/allocator.h"
#include "nn/gpt_config.h"
#include "runtime/config.h"
#include "runtime/plan.h"

namespace minitorch::runtime {

/// An allocation beyond the device's capacity, explained (exit status 1, as any runtime failure).
class OutOfMemoryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// What the explanation needs to know about the run.
struct MemoryRun {
  int rank = 0;
  int dp_size = 1;            ///< N
  int zero_stage = 0;         ///< the stage that runs (the plan's)
  bool offload = false;       ///< ZeRO-Offload runs (the plan's)
  bool offload_param = false; ///< and ZeRO-Infinity's offload_param with it (stage 3)
  bool nvme = false;          ///< the optimizer on NVMe (stage 3): no optimizer state on the device either
  bool gemini = false;        ///< Gemini runs (the plan's): its placement (config->gemini) says where the states are
  double psi = 0;             ///< Ψ: the parameters this rank's engine trains (a pipeline stage's own)
  int pipeline_stages = 1;    ///< > 1: a stage of a pipeline (its activations are not the whole model's)
  nn::GPTConfig model;        ///< B·T·C sizes for the activation levers
  const Config* config = nullptr;
};

/// The run a plan describes (runtime/plan.h: N, the stage that runs, offload, the pipeline's stages), Ψ of
/// `model` (a pipeline stage sets its own: pipeline::memory_run_for_rank).
MemoryRun memory_run_for(const Plan& plan, const Config& config, const nn::GPTConfig& model, int rank);
/// The same with make_plan(config).
MemoryRun memory_run_for(const Config& config, const nn::GPTConfig& model, int rank);

/// The message for `e` in this run (see the file comment).
std::string explain_out_of_memory(const OutOfMemory& e, const MemoryRun& run);

/// Device model states of this run by the formulas (docs/design.md §8, §10), in bytes.
double device_model_state_bytes(const MemoryRun& run);

/// Before anything is allocated on the device: throws OutOfMemoryError when the model states alone
/// (device_model_state_bytes) exceed `capacity` bytes (0 = no limit), with the same table and levers.
void check_model_states_fit(const MemoryRun& run, Device device, std::int64_t capacity);

}  // namespace minitorch::runtime

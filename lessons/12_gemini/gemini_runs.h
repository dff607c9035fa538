#pragma once
// Lesson 12's runs: one engine at a time on the simulated accelerator (`sim`) of every rank — DDP, ZeRO-3 with
// and without ZeRO-Offload / ZeRO-Infinity's offload_param, or Colossal-AI's Gemini (gemini/gemini.h) with static
// or auto placement — and what each rank measured step by step: the bytes copied up and down, Gemini's gathers and
// its auto placement's loads, evictions, refreshes and uncached gathers, or the out-of-memory error every rank got.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/sim_card.h"
#include "data/text_dataset.h"
#include "dist/process_group.h"
#include "gemini/gemini.h"
#include "minitorch/events.h"
#include "runtime/config.h"
#include "runtime/engine.h"
#include "runtime/formulas.h"

namespace lesson12 {

/// The ways the lesson trains the baby GPT, from the most device memory to the least.
enum class Method {
  ddp,                // stage 0: every model state whole on every card
  zero3,              // stage 3, every tensor in a unit (stage3_param_persistence_threshold 0)
  offload_optimizer,  // + offload_optimizer "cpu" (ZeRO-Offload)
  offload_param,      // + offload_param "cpu" (ZeRO-Infinity's parameter offload)
  gemini_static,      // Gemini, placement_policy "static" (the fractions in Setup)
  gemini_auto         // Gemini, placement_policy "auto"
};

/// Gemini's chunk search for the baby: sizes from 2^16 elements (its largest tensor, mlp.c_fc.weight) up to 2^16
/// more, in steps of 1024. Colossal-AI's default minimum, 32 × 2^20, would make the whole baby one chunk.
inline constexpr double kMinChunkM = 0.0625, kSearchRangeM = 0.0625;

/// One run of the story: the baby GPT (L = 4, T = 64, C = 128) in micro-batches of one sequence.
struct Setup {
  Method method = Method::zero3;
  int micro_steps = 4;                                     // A: gradient_accumulation_steps
  double offload_optim_frac = 0.0, offload_param_frac = 0.0;  // Gemini static's placement
  long long schedule_steps = 0;  // > 0: configs/baby.json's warm-up-decay schedule over this many steps
  std::string name() const;      // "Gemini static (offload_optim_frac 1.0, offload_param_frac 1.0)"
};

/// The config of `setup` (docs/config.md keys) for N ranks.
minitorch::runtime::Config config_of(const Setup& setup, int N);

/// What one step cost on this rank (the counters' growth over the step).
struct StepRecord {
  float loss = 0;
  std::int64_t h2d = 0, d2h = 0;  // the model's copies (the batches and the loss apart: TransferStats::io_*)
  std::int64_t gathers = 0;       // Gemini: all-gathers of sharded chunks
  std::int64_t loads = 0, evictions = 0, refreshes = 0, uncached = 0;  // Gemini auto (Gemini::AutoStats)
};

/// One gemini_load / gemini_evict trace event: its name, the chunk and why (its scope), the shard's bytes.
struct ChunkEvent {
  std::string name, scope;
  std::int64_t bytes = 0;
};

/// What a run measured on this rank (rank 0's is printed; `same_on_every_rank` says whether the others measured the
/// same: the peak, and per step h2d, the gathers and the auto counters — not d2h, see used_in_shards).
struct Run {
  bool out_of_memory = false;
  int ranks_out_of_memory = 0;  // of N: every rank runs the same allocations, so all or none
  std::string error;            // rank 0's OutOfMemoryError, as the engine wrote it
  std::int64_t psi = 0, capacity = 0, device_peak = 0;
  std::vector<StepRecord> steps;  // one per step done
  // Gemini's
  minitorch::gemini::GeminiLayout layout;
  std::vector<std::int64_t> shard_bytes;  // per chunk: P · allocated / N
  minitorch::gemini::Gemini::AutoStats auto_stats;
  std::vector<std::size_t> schedule, moment_starts;
  std::vector<std::int64_t> period_peaks;
  std::vector<ChunkEvent> events;  // the chunk events of the step `Measure::record_step`
  bool same_on_every_rank = true;
  const StepRecord& step(int k) const { return steps.at(static_cast<std::size_t>(k - 1)); }  // 1-based
  std::int64_t chunk_elements() const;  // Ψ': Σ the chunks' allocated elements (their waste included)
};

/// How to run: steps, the card, which step's chunk events to keep, and a look at the engine before the first step
/// and after the last.
struct Measure {
  int steps = 2;
  std::int64_t capacity = 0;  // bytes per rank; 0: no limit
  int record_step = 0;        // 1-based; 0: none
  std::function<void(minitorch::runtime::Engine&)> before = {}, after = {};
};

/// Runs `setup` on every rank as `how` says, or until the engine throws its OutOfMemoryError on every rank.
Run measure(minitorch::dist::ProcessGroup& world, const minitorch::data::TextDataset& ds, const Setup& setup,
            const Measure& how);

/// The sampler a run of `cfg` trains on (configs' seed; every rank draws its own micro-batches from it).
minitorch::data::BatchSampler train_sampler(const minitorch::data::TextDataset& ds, const minitorch::runtime::Config& cfg);

/// The elements of rank `rank`'s shards that hold parameters: Σ over the chunks of [r·s, (r+1)·s) ∩ [0, used), s =
/// allocated / N. A rank brings down this much of its gradient shards for the host AdamW: a chunk's empty tail
/// falls in the last ranks' shards, so their d2h is smaller.
std::int64_t used_in_shards(const minitorch::gemini::GeminiLayout& layout, int rank, int N);

/// The fp32 bytes per parameter the runs train with: P, G, K = 4, 4, 8.
minitorch::runtime::BytesPerParameter fp32();

/// "12.35 MiB"
std::string mib(double bytes);
/// "transformer.h.0.attn.c_attn.weight" -> "h0.attn.c_attn.w"
std::string short_name(const std::string& name);

/// `ok` on every rank.
bool on_every_rank(bool ok);

}  // namespace lesson12

#pragma once
/// \file gemini.h
/// Colossal-AI's Gemini on minitorch's ZeRO-3 machinery (docs/design.md §11): the parameters packed into chunks in
/// order of use (gemini/layout.h), each chunk sharded over the data-parallel ranks as one ZeRO-3 unit (zero/unit.h)
/// — but a chunk is gathered and released by its **tensors' states** (gemini/tensor_state.h), not by a module:
///
///   module pre-forward / pre-backward   its tensors → COMPUTE; a chunk with a tensor in COMPUTE is gathered
///   module post-forward                 COMPUTE → HOLD; a chunk whose tensors all HOLD is released
///   gradient hook (the gradient final)  COMPUTE → HOLD_AFTER_BWD → READY_FOR_REDUCE
///   every tensor of a chunk READY       its gradients reduce-scattered (the reducer's launch); the tensors → HOLD,
///                                       and the chunk released
///
/// A chunk that straddles two blocks is released between them in forward and gathered again: the price of a
/// chunk size chosen for waste, not for module boundaries (the report counts the gathers). Kept-gathered chunks
/// (shard_param_frac < 1, or a model smaller than min_chunk_size) are whole on every rank, reduced and gathered
/// after the step like ZeRO-3's persistent tensors. Static placement (placement_policy "static"): a chunk whose
/// shard lives in host memory (offload_param_frac) is copied up at each gather and updated there by the host
/// AdamW (offload_optim_frac 1.0: every chunk's optimizer states on the host, ZeRO-Offload's optimizer).
///
/// **Auto placement** (placement_policy "auto", Colossal-AI's AutoPlacementPolicy): every sharded chunk's shard
/// lives in host memory, where the host AdamW updates it; the device keeps a **cached copy** of as many shards as the
/// capacity allows, so a gather of a cached chunk needs no copy up. The first iteration is the **warm-up**: it records
/// the order of chunk uses (the schedule) and, per moment (each module hook that uses chunks), the peak the period
/// after it adds beyond the model data (activations, local gradients, buffers: take_period_peak). Before each use the
/// manager makes room so that the model data stays within
///
///   warm-up   capacity × (1 − warmup_non_model_data_ratio)
///   after     capacity × steady_cuda_cap_ratio − the next period's recorded peak
///
/// evicting cached shards — during the warm-up the least recently used, afterwards the one whose next use in the
/// schedule is farthest (Belady's OPT, gemini/eviction.h) — and caches the shards it loads while they fit. An
/// eviction costs no copy down (the host holds every shard); after the step the cached shards are refreshed from
/// the host (h2d), as Colossal-AI copies its updated fp32 chunks into the fp16 ones. Each load and eviction is a trace
/// event ("gemini_load", "gemini_evict": which chunk, and why that one; trace::record_chunk_move), and the frames of
/// a traced run carry every chunk's state (holdings) and the moves since the frame before (docs/frames.md version 4).
///
/// (The auto placement's code: gemini/auto_placement.cpp.)
///
/// **Prefetch** (max_prefetch, either policy): after the warm-up each moment also starts the all-gathers of the next
/// max_prefetch chunks of the schedule, which run while the moment's modules compute. Under auto a prefetch must fit
/// (its buffer held until its use, under the periods' peaks in between), else it waits: at the warm-up's end every
/// rank takes the largest of each period's peak, so every rank decides alike (the decision orders the all-gathers).
///
/// \code
///   gemini::Gemini g(model, config.strategy(), config.gemini, world);   // as any strategy (zero/strategy.h)
///   g.layout().size();        // chunks
///   g.states(0).count(gemini::TensorState::hold);
/// \endcode
#include <memory>
#include <string>
#include <vector>

#include "gemini/chunk_states.h"
#include "gemini/config.h"
#include "gemini/eviction.h"
#include "gemini/layout.h"
#include "minitorch/hooks.h"
#include "nn/gpt.h"
#include "zero/sharded_strategy.h"
#include "zero/unit.h"

namespace minitorch::gemini {

class Gemini final : public zero::ShardedStrategy {
 public:
  /// Broadcasts rank 0's parameters, lays out the chunks (plan_gemini), keeps this rank's shard of each sharded
  /// chunk (in host memory where the placement says), hooks the modules and the gradients, and builds AdamW over
  /// this rank's pieces (on the host with offload_optim_frac 1.0). Any number of ranks, one included.
  Gemini(std::shared_ptr<nn::GPT> model, const zero::StrategyConfig& config, const GeminiConfig& gemini,
         dist::ProcessGroup& group);
  ~Gemini() override;

  std::string name() const override { return "Gemini"; }
  int zero_stage() const override { return 3; }
  /// The chunks whose reduction no hook started (a parameter backward did not reach) are reduced now.
  void end_backward() override;
  trace::FlatSpace flat_space() const override;
  /// ZeRO-3's holdings plus each chunk's (trace/frames.h ChunkHolding: its unit, where its shard is, its tensors).
  trace::RankHoldings holdings() const override;

  const GeminiLayout& layout() const { return layout_; }
  /// Chunk c's tensors and their states (slots in the chunk's order).
  const ChunkStates& states(std::size_t c) const { return states_.at(c); }
  /// Chunk c is whole on this rank now (a kept-gathered chunk always).
  bool gathered(std::size_t c) const;
  /// Every sharded chunk gathered / released (a consolidated view of the parameters, e.g. for a test or a save).
  void gather_all();
  void release_all();
  /// Gathers of sharded chunks since construction (a chunk straddling two blocks is gathered once per block).
  std::int64_t gathers() const { return gathers_; }

  /// Auto placement's and prefetch's record (the schedule is recorded for either; the rest is auto's).
  struct AutoStats {
    bool warmed_up = false;          ///< the warm-up iteration is over: the schedule drives eviction and prefetch
    std::size_t schedule_uses = 0;   ///< chunk uses per iteration, as the warm-up recorded them
    std::int64_t loads = 0;          ///< shards copied up and cached
    std::int64_t evictions = 0;      ///< cached shards dropped to make room
    std::int64_t refreshes = 0;      ///< cached shards refreshed after a step
    std::int64_t uncached_gathers = 0;  ///< gathers of a shard not cached: copied up into the gather's slot only
    std::int64_t prefetches = 0;     ///< gathers started ahead of use (max_prefetch)
    std::int64_t prefetches_refused = 0;  ///< auto: moments whose next prefetch did not fit (it waits for its use)
    std::int64_t warmup_non_model_peak = 0;  ///< the highest period peak beyond the model data, bytes
  };
  const AutoStats& auto_stats() const { return auto_stats_; }
  /// The warm-up's record (auto, or max_prefetch > 0): the chunk uses of one iteration in order (the schedule), and
  /// per moment (a module hook that used chunks) its first use's position and the peak its period added beyond the
  /// model data, bytes (auto only; empty otherwise).
  const std::vector<std::size_t>& schedule() const { return recorded_; }
  const std::vector<std::size_t>& moment_starts() const { return moment_at_; }
  const std::vector<std::int64_t>& period_peaks() const { return period_extra_; }
  /// Chunk c's shard is on the device now (static: its home; auto: cached).
  bool resident(std::size_t c) const;
  /// Auto: the cached shards are refreshed from the host after the update.
  zero::StepResult step(const zero::StepRequest& request) override;
  /// Auto: every cached shard dropped first, so the values land in the host shards the optimizer owns.
  void load_parameters(const nn::NamedTensors& whole) override;

 private:
  Gemini(std::shared_ptr<nn::GPT> model, const zero::StrategyConfig& config, const GeminiConfig& gemini,
         dist::ProcessGroup& group, GeminiLayout layout);
  void paint_bucket(std::size_t b, trace::RankHoldings& h) const override;
  zero::ModelStateBytes bucket_bytes(std::size_t b) const override;
  void hook_modules();
  void hook_gradients();

  // ---- the tensor states (Colossal-AI's ParamOpHook and grad handle); `tensors`: indices into named_parameters() ----
  /// → COMPUTE; their chunks gathered. `forward_start`: the model's own pre-forward (an iteration begins).
  void use(const std::vector<std::size_t>& tensors, bool forward_start = false);
  void done(const std::vector<std::size_t>& tensors);  ///< COMPUTE → HOLD; chunks with no tensor in use released
  void gradient_final(std::size_t param);              ///< COMPUTE → HOLD_AFTER_BWD → READY_FOR_REDUCE
  /// The reducer's launch for chunk c: its reduce-scatter starts, its tensors go back to HOLD, it is released.
  std::unique_ptr<dist::Work> reduce_chunk(std::size_t c);
  /// Releases chunk c if it is sharded, gathered and none of its tensors is in use; `framed` as Unit::release.
  void release_if_idle(std::size_t c, bool framed);
  void frame_releases();

  // ---- auto placement (see the file comment) ----
  /// Makes room for and caches the shards of `now` (this moment's uses, distinct, in order) before they gather;
  /// `ahead`: the chunks max_prefetch would gather now; returns those that fit (a prefix: the rest wait for their use).
  std::vector<std::size_t> place(const std::vector<std::size_t>& now, const std::vector<std::size_t>& ahead);
  /// Evicts one cached shard (OPT with `known_future`, else LRU), never one of `keep` still to be gathered, nor
  /// (farther_than set) one used at or before schedule position farther_than; returns its bytes (0: none could go).
  std::int64_t evict_one(std::size_t at, const std::vector<std::size_t>& keep, bool known_future,
                         std::size_t farther_than = UseSchedule::kNever);
  /// End of the warm-up: every rank takes the largest of each period's peak (collective; rank-identical decisions).
  void agree_on_period_peaks();
  void count_gather(std::size_t c);  ///< a sharded chunk's gather starts (auto: counted uncached if not resident)
  /// Whether `chunks`, used from position `at`, are what the recorded schedule says (after the warm-up).
  bool on_schedule(std::size_t at, const std::vector<std::size_t>& chunks) const;
  void load(std::size_t c);   ///< shard copied up (h2d) and cached
  void evict(std::size_t c);    ///< cached copy dropped to make room (counted); the host shard stays
  void uncache(std::size_t c);  ///< cached copy dropped (the values go to the host shards: load_parameters)
  std::int64_t shard_bytes(std::size_t c) const;
  std::int64_t full_bytes(std::size_t c) const;
  std::int64_t model_bytes() const;  ///< the device's param + grad + optim bytes now
  /// Warm-up: the period since the last moment ends (its peak beyond the model data at its start).
  void close_period();

  GeminiLayout layout_;
  bool auto_ = false;
  double capacity_ = 0;                      ///< the device's capacity in bytes (0: no limit)
  double warmup_ratio_ = 0.8, steady_ratio_ = 0.9;
  std::size_t max_prefetch_ = 0;             ///< chunks gathered ahead of use (the schedule's next ones)
  std::vector<Tensor> host_shard_;           ///< auto: per sharded chunk its shard in host memory (the optimizer's)
  std::vector<std::size_t> recorded_;        ///< warm-up: the chunk uses so far; afterwards the schedule
  UseSchedule schedule_{std::vector<std::size_t>{}};  ///< recorded_ indexed for next-use queries, built at the warm-up's end
  std::vector<std::int64_t> period_extra_;   ///< per moment: what its period added beyond the model data at its start
  std::vector<std::size_t> moment_at_;       ///< per moment: its first use's position in the schedule
  std::size_t pos_ = 0, moment_ = 0;         ///< this iteration's next use and moment
  std::int64_t model_at_moment_ = 0;         ///< warm-up: the model data when the current period began
  bool in_period_ = false;
  AutoStats auto_stats_;
  std::vector<ChunkStates> states_;                 ///< per chunk
  std::vector<std::unique_ptr<zero::Unit>> units_;  ///< per chunk; null for a kept-gathered chunk
  struct Place {
    std::size_t chunk = 0, slot = 0;
  };
  std::vector<Place> place_;                        ///< per parameter (named_parameters() index)
  std::vector<std::size_t> outer_;                  ///< the tensors the model's own hooks use (wte, wpe, ln_f)
  std::vector<std::vector<std::size_t>> block_tensors_;  ///< per block
  std::vector<zero::Unit*> unframed_releases_;      ///< released inside a gradient hook, framed later
  bool backward_returned_ = false;                  ///< end_backward launches what no hook did
  std::int64_t gathers_ = 0;
  std::vector<HookHandle> hooks_;
};

}  // namespace minitorch::gemini

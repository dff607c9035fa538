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

 private:
  Gemini(std::shared_ptr<nn::GPT> model, const zero::StrategyConfig& config, const GeminiConfig& gemini,
         dist::ProcessGroup& group, GeminiLayout layout);
  void paint_bucket(std::size_t b, trace::RankHoldings& h) const override;
  zero::ModelStateBytes bucket_bytes(std::size_t b) const override;
  void hook_modules();
  void hook_gradients();

  // ---- the tensor states (Colossal-AI's ParamOpHook and grad handle); `tensors`: indices into named_parameters() ----
  void use(const std::vector<std::size_t>& tensors);   ///< → COMPUTE; their chunks gathered
  void done(const std::vector<std::size_t>& tensors);  ///< COMPUTE → HOLD; chunks with no tensor in use released
  void gradient_final(std::size_t param);              ///< COMPUTE → HOLD_AFTER_BWD → READY_FOR_REDUCE
  /// The reducer's launch for chunk c: its reduce-scatter starts, its tensors go back to HOLD, it is released.
  std::unique_ptr<dist::Work> reduce_chunk(std::size_t c);
  /// Releases chunk c if it is sharded, gathered and none of its tensors is in use; `framed` as Unit::release.
  void release_if_idle(std::size_t c, bool framed);
  void frame_releases();

  GeminiLayout layout_;
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

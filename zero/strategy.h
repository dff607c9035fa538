#pragma once
/// \file strategy.h
/// What the engine drives: one object per ZeRO stage that owns gradient reduction and the
/// optimizer step (docs/design.md §6). The engine counts micro-steps, times the phases and sets the
/// learning rate; it never asks which stage runs. Stage 0 (DDP, and one rank) is zero/stage0.h;
/// each ZeRO stage is one more file implementing this interface, and zero/make_strategy.h picks one.
///
/// The calls of one optimizer step with A micro-steps, in order:
///
///   for m in 0..G-1:   begin_backward(m == G-1)  →  autograd backward  →  end_backward()
///   at the boundary:   reduce_gradients()        (wait for what backward did not hide)
///                      step({lr, max_norm, ...}) (norm, clip, update this rank's part, zero grads)
///
/// \code
///   auto s = zero::make_strategy(model, config.strategy(), &world);  // zero/make_strategy.h chooses the stage
///   s->begin_backward(/*boundary=*/true);
///   autograd::backward(loss);
///   s->end_backward();
///   s->reduce_gradients();
///   double norm = s->step({.lr = 1e-3f, .max_norm = 1.0}).norm;
/// \endcode
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dist/process_group.h"
#include "nn/gpt.h"
#include "optim/adamw.h"
#include "trace/frames.h"
#include "zero/config.h"

namespace minitorch::zero {

/// Bytes of model states one rank holds, by what they are (docs/design.md §8: P·Ψ, G·Ψ, K·Ψ and shards).
/// ZeRO-Infinity's NVMe swap of one rank (zero/nvme_optimizer.h, zero/nvme_store.h), for the run report.
struct SwapStats {
  std::string folder;           ///< the rank's swap folder
  bool direct = false;          ///< the files are opened O_DIRECT
  std::string why_not_direct;   ///< if not, what the filesystem said
  std::int64_t bytes_read = 0, bytes_written = 0;  ///< since the start
  double read_seconds = 0, write_seconds = 0;      ///< spent inside the store's reads and writes
  std::int64_t tiles = 0, host_step_bytes = 0;     ///< of the optimizer step
  double io_seconds_last_step = 0, waited_seconds_last_step = 0;  ///< 1 − waited / io: the I/O the step hid
  std::vector<std::string> removed_leftovers;  ///< killed runs' swap folders this rank's start removed, with bytes
};

struct ModelStateBytes {
  std::int64_t param = 0, grad = 0, optim = 0;
  std::int64_t total() const { return param + grad + optim; }
};

/// What the engine asks of one optimizer step.
struct StepRequest {
  float lr = 0;
  double max_norm = 0;          ///< global-norm clipping; 0 = off
  double loss_scale = 1;        ///< fp16: the gradients are loss_scale × the true ones (runtime/loss_scaler.h)
  bool skip_on_overflow = false;  ///< a non-finite norm skips the update (gradients zeroed) instead of applying it
  /// Pipelines: this rank's pipeline (one rank per pipeline stage). The squared norm of the gradients this
  /// rank holds is summed over it too (one scalar all-reduce), so every pipeline stage clips by the global
  /// norm of the whole model. nullptr: this rank's data-parallel group holds the whole model.
  dist::ProcessGroup* pipeline = nullptr;
  /// Tensor parallelism: this rank's tensor group (nullptr: none). Σ g² is summed over it as over the pipeline,
  /// leaving out of this rank's sum the parameters `norm_excluded` names (the replicated ones, on every tensor
  /// rank but the first: tp::TensorParallelGPT::norm_excluded), so each parameter counts once.
  dist::ProcessGroup* tensor = nullptr;
  std::vector<std::string> norm_excluded;
};
/// What one optimizer step did.
struct StepResult {
  double norm = 0;       ///< global norm of the true (unscaled) gradients before clipping; inf/nan = overflow
  bool skipped = false;  ///< the update was skipped (skip_on_overflow and the norm is not finite)
};

class GradientStrategy {
 public:
  virtual ~GradientStrategy() = default;
  /// "DDP", "ZeRO-1", ... for logs and the run report.
  virtual std::string name() const = 0;
  /// zero_optimization.stage this strategy implements.
  virtual int zero_stage() const = 0;

  /// A micro-step's backward is about to run; `boundary`: it is the last of the accumulation (the
  /// one whose gradients are reduced).
  virtual void begin_backward(bool boundary) = 0;
  /// That backward has returned.
  virtual void end_backward() = 0;
  /// At the boundary, after the last backward: finishes the gradient reduction, so the gradients
  /// this rank updates with are final. The engine times this call (`backward_allreduce`).
  virtual void reduce_gradients() = 0;
  /// At the boundary, after reduce_gradients(): global gradient norm (over all ranks' shards, one
  /// decision for all ranks), unscaling by 1/loss_scale and clipping to `max_norm` (0 = off) folded
  /// into one multiplier, the update of this rank's parameters (or shard) with `lr`, and zeroing the
  /// gradients. On overflow with skip_on_overflow: only the zeroing (the optimizer's step count stays).
  /// The sequence is written once, for every stage: zero/step_sequence.h.
  virtual StepResult step(const StepRequest& request) = 0;

  /// Bytes of parameters, gradients and optimizer states this rank holds, counted from the tensors
  /// it owns (the run report sets them beside the allocator's tags and the formulas).
  virtual ModelStateBytes model_state_bytes() const = 0;
  /// Bytes of model states this rank keeps on disk (ZeRO-Infinity's NVMe swap files, as reserved); none elsewhere.
  virtual ModelStateBytes disk_model_state_bytes() const { return {}; }
  /// The NVMe swap's figures (nullopt: no swap).
  virtual std::optional<SwapStats> swap_stats() const { return std::nullopt; }
  /// The flat parameter space this strategy lays the model out in (buckets end to end), and what this
  /// rank holds of it now, read from the buffers it owns: frames.json (trace/frames.h, zero/step_frames.h).
  virtual trace::FlatSpace flat_space() const = 0;
  virtual trace::RankHoldings holdings() const = 0;

  /// The optimizer (over this rank's parameters, or over its shard).
  virtual optim::AdamW& optimizer() = 0;
  virtual const optim::AdamW& optimizer() const = 0;

  /// True when each rank holds only its shard of the optimizer state (stages 1–3 on N > 1 ranks):
  /// a checkpoint is then a directory of per-rank shards (runtime/sharded_checkpoint.h).
  virtual bool shards_optimizer_state() const { return false; }
  /// What a sharded checkpoint saves of the parameters from this rank: its pieces "<param>[a:b]"
  /// (1-D views, dtype P; zero/partition.h). Empty at stage 0 (the model file holds them).
  virtual nn::NamedTensors parameter_pieces() const { return {}; }
  /// Sets every parameter to `whole` (name -> tensor of the parameter's shape, every parameter of
  /// named_parameters()): the model's tensors at stages 0–2, this rank's shards at stage 3, then the
  /// parameters that stay whole are gathered (a collective at stages 1–3: every rank calls it).
  virtual void load_parameters(const nn::NamedTensors& whole) = 0;
  /// The optimizer state a checkpoint saves (`exp_avg.<name>`, `exp_avg_sq.<name>`, `master.<name>`): the
  /// whole model's at stage 0, this rank's shard at stages 1–3; and its step count.
  virtual nn::NamedTensors optimizer_state() const { return optimizer().state_tensors(); }
  virtual std::int64_t optimizer_steps() const { return optimizer().step_count(); }
  /// Restores what optimizer_state() saved (tensors allocated under the caller's TagScope).
  virtual void load_optimizer_state(const nn::NamedTensors& state, std::int64_t steps) {
    optimizer().load_state(state, steps);
  }
};

/// Σ g² of this rank's gradients plus the other pipeline stages' when `request.pipeline` is set and the other
/// tensor ranks' when `request.tensor` is (one scalar all-reduce over each, every rank gets the same sum); else
/// `sum_squares` unchanged.
double sum_over_model(const StepRequest& request, double sum_squares);

/// AdamW over `params` with the optimizer's `options` and nanoGPT's decay groups (2-D
/// weights decay, biases and LayerNorm gains do not). Shared by every stage.
std::unique_ptr<optim::AdamW> make_adamw(const nn::NamedTensors& params, const optim::AdamWOptions& options);

}  // namespace minitorch::zero

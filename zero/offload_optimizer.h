#pragma once
/// \file offload_optimizer.h
/// ZeRO-Offload (zero_optimization.offload_optimizer.device "cpu"; docs/design.md §10): the AdamW of a
/// rank's shard runs on the host, over host copies of its pieces — an f32 master of each (the optimizer's
/// parameter, so its m, v live on the host too: 12 bytes per element under `optim`), a staging copy of
/// their gradients (G, under `grad`) and, in 16-bit training, of their updated 16-bit values (P, under
/// `param`). ShardedOptimizer holds one when offload is on; its step gains two copies, each once per
/// optimizer step:
///
///   down      each piece's reduced gradient, device → host (d2h: G bytes per element)
///   (norm, clip: zero/step_sequence.h; the update on the host, in the same tiles)
///   up        each piece's updated value, host → device (h2d: P bytes per element), then the gather
///
/// With offload_param (ZeRO-Infinity, stage 3) a unit's shard already lives on the host: its pieces are
/// updated **in place** — an f32 piece is its own master (no copy, no `optim` bytes for it), a 16-bit
/// piece gets an f32 master and the step writes the rounded value straight into the shard — and nothing
/// goes up after the step: the unit's next gather copies the shard up (zero/unit.h).
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "nn/module.h"
#include "optim/adamw.h"

namespace minitorch::zero {

class OffloadOptimizer {
 public:
  /// Host copies of the pieces in `groups` (this rank's, with their gradients: Partition::optimizer_groups;
  /// views of the partition's buffers, which must outlive this) and AdamW over the copies with `options`.
  /// The pieces named in `in_place` live in host memory (offload_param): updated there, no staging of them.
  OffloadOptimizer(std::vector<optim::ParamGroup> groups, const optim::AdamWOptions& options,
                   const std::set<std::string>& in_place = {});

  /// The host's AdamW: its parameters are the f32 masters, its gradients the host staging.
  optim::AdamW& adamw() { return *adamw_; }
  const optim::AdamW& adamw() const { return *adamw_; }

  /// Each piece's reduced gradient into its host staging view (d2h).
  void copy_gradients_down();
  /// The host's step (zero/tiled_step.h: each gradient × `grad_multiplier`, in tiles of `tile_elements`),
  /// then each piece's updated value back to the device (h2d).
  void update(float grad_multiplier, std::int64_t tile_elements);
  /// The host masters from the device pieces (at the start, and after the parameters are loaded).
  void refresh_masters();

  /// AdamW's state, plus in 16-bit training each piece's master as "master.<piece>": the names a run
  /// without offload saves, so either resumes the other.
  nn::NamedTensors state_tensors() const;
  void load_state(const nn::NamedTensors& state, std::int64_t steps);

 private:
  /// The host staging of every piece's gradient (G) and, 16-bit, of the updated value (P) of each piece not
  /// `in_place`, end to end.
  void allocate_staging(const std::vector<optim::ParamGroup>& groups, const std::set<std::string>& in_place);
  void copy_parameters_up();

  nn::NamedTensors device_pieces_;  ///< my pieces (views, dtype P), piece order: on the device, or in_place
  std::vector<bool> in_place_;        ///< per piece: it lives on the host (offload_param)
  std::vector<Tensor> device_grads_;  ///< their gradient views (the buckets' grad shards)
  std::vector<Tensor> masters_;       ///< the host f32 masters, piece order (AdamW's parameters)
  Tensor host_grads_;                 ///< the host staging of the gradients (G), pieces end to end
  Tensor host_params16_;              ///< 16-bit training: the updated 16-bit values (P) of the device pieces
  std::unique_ptr<optim::AdamW> adamw_;
};

}  // namespace minitorch::zero

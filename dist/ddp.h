#pragma once
/// \file ddp.h
/// Data parallelism, PyTorch DDP's way (picotron style): every rank holds the whole model, trains on
/// its own micro-batches, and before the optimizer step the gradients are averaged over the ranks, so
/// every rank takes the same step and the parameters stay identical.
///
/// Compute and communication overlap. Gradients are grouped into **buckets** of `bucket_size`
/// elements in reverse order of `named_parameters()` — the order in which backward makes them final
/// (last layer first). A parameter bigger than a bucket gets a bucket of its own. A gradient hook on
/// every parameter counts down its bucket (dist/bucket_countdown.h, shared with the ZeRO stages); when
/// the bucket's last gradient is final, on_grad_ready copies
/// the bucket's gradients into one flat f32 buffer (a FlatBuffer, allocated once, tagged `comm`,
/// padded to a multiple of the number of ranks) and starts a
/// non-blocking all-reduce (average) of it — while backward keeps computing the earlier layers.
/// `finish()` waits for what is still in flight and copies the averages back into the gradients.
///
/// Gradient accumulation: `set_sync(false)` (PyTorch's no_sync) makes the hooks do nothing, so the
/// gradients of the first micro-steps just add up locally; the last micro-step runs with sync on and
/// communicates once. Volume per rank per optimizer step: the ring all-reduce of Ψ elements,
/// 2·(N−1)/N·Ψ elements (docs/design.md §8).
///
/// \code
///   dist::DistributedDataParallel ddp(model.named_parameters(), world, /*bucket_size=*/200000);
///   ddp.broadcast_parameters();              // every rank starts from rank 0's weights
///   for (int m = 0; m < G; ++m) {
///     ddp.set_sync(m == G - 1);              // communicate on the last micro-step only
///     ddp.begin_backward();
///     autograd::backward(model.loss(x, y));  // hooks start bucket all-reduces as grads become final
///     ddp.end_backward();
///   }
///   ddp.finish();                            // wait, write the averaged gradients back
///   optimizer.step();
/// \endcode
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dist/bucket_countdown.h"
#include "dist/process_group.h"
#include "minitorch/flat_buffer.h"
#include "nn/module.h"

namespace minitorch::dist {

/// One bucket: consecutive parameters (in reverse order of use) reduced together.
struct Bucket {
  std::vector<std::string> names;   ///< the parameters, in the order backward finishes them
  std::vector<Tensor> params;
  std::int64_t first = 0;            ///< where the buffer starts in the buckets' flat space (traces)
  FlatBuffer buffer;                  ///< f32, tag comm: slot i holds params[i]'s gradient; all-reduced whole
  /// Σ numel of the parameters (the buffer adds padding < N).
  std::int64_t numel() const { return buffer.used(); }
  // ---- this backward ----
  std::unique_ptr<Work> work;         ///< the all-reduce in flight
  double launched_ms = -1;            ///< when the all-reduce started (ms since begin_backward); -1: not yet
  bool launched_in_backward = false;  ///< started from a hook, i.e. overlapped with backward
  int launch_order = -1;              ///< 0 = the first bucket started in this backward
};

/// When the last synchronised backward's communication happened (ms since begin_backward).
struct DDPTiming {
  double backward_ms = 0;    ///< begin_backward → end_backward
  double wait_ms = 0;        ///< time finish() spent waiting: communication NOT hidden under backward
  double finish_ms = 0;      ///< all of finish() (wait + copy back)
};

class DistributedDataParallel {
 public:
  /// Registers one gradient hook per parameter and builds the buckets. `params` in model order
  /// (named_parameters()); bucket_size in elements (DeepSpeed's reduce_bucket_size).
  DistributedDataParallel(const nn::NamedTensors& params, ProcessGroup& group, std::int64_t bucket_size);
  ~DistributedDataParallel();
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  /// Copies rank `root`'s parameters to every rank (call once, before training).
  void broadcast_parameters(int root = 0);

  /// Off: backward only accumulates locally (PyTorch's no_sync). On (the default): hooks communicate.
  void set_sync(bool on) {
    sync_ = on;
    countdown_->set_armed(on);
  }
  bool sync() const { return sync_; }

  /// Marks the start / end of a backward (resets the countdowns, sets the clock for the timings).
  void begin_backward();
  void end_backward();
  /// Waits for every bucket's all-reduce (starting those whose hooks did not fire) and writes the
  /// averaged gradients back into the parameters' grads. Does nothing when sync is off.
  void finish();

  const std::vector<Bucket>& buckets() const { return buckets_; }
  const DDPTiming& timing() const { return timing_; }
  ProcessGroup& group() { return group_; }

 private:
  void on_grad_ready(std::size_t bucket);       // a bucket's last gradient is final (the countdown's ready)
  void launch(Bucket& b, bool in_backward);
  double now_ms() const;

  ProcessGroup& group_;
  std::vector<Bucket> buckets_;
  std::unique_ptr<BucketCountdown> countdown_;  // one gradient hook per parameter, removed with the DDP
  bool sync_ = true, in_backward_ = false;
  int launched_ = 0;
  double t0_ = 0;
  DDPTiming timing_;
};

/// Splits parameter sizes (given in reverse order of use) into buckets of at most `bucket_size`
/// elements (a bigger parameter alone; 0: every parameter alone); returns the index ranges [first, last)
/// into `numels`.
std::vector<std::pair<std::size_t, std::size_t>> plan_buckets(const std::vector<std::int64_t>& numels,
                                                              std::int64_t bucket_size);

}  // namespace minitorch::dist

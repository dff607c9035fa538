#pragma once
/// \file bucket_countdown.h
/// When a bucket of gradients is ready to reduce — the one idea DDP (dist/ddp.h) and the ZeRO stages
/// (zero/bucket_reducer.h) share. One gradient hook per parameter counts its bucket down during a backward;
/// the hook that brings a bucket to zero calls `ready(bucket)`, and the caller starts that bucket's
/// collective while backward goes on computing the earlier layers. Every armed hook call also calls `poll`,
/// where the caller lets the collectives already in flight progress (MPI moves data only inside its calls).
///
///   reset() → set_armed(true) → [backward: hooks count down, ready(0), ready(1), ...]
///
/// Disarmed, the hooks do nothing and the counts stay where they are: gradient accumulation (PyTorch's
/// no_sync), or a strategy that reduces only after backward.
#include <cstddef>
#include <functional>
#include <vector>

#include "minitorch/hooks.h"
#include "minitorch/tensor.h"

namespace minitorch::dist {

class BucketCountdown {
 public:
  using Ready = std::function<void(std::size_t bucket)>;
  using Poll = std::function<void()>;

  /// `buckets[b]`: bucket b's parameters. Registers one gradient hook per parameter; they are removed with
  /// this object, so a hook never calls into a countdown that is gone. Starts reset and armed.
  BucketCountdown(const std::vector<std::vector<Tensor>>& buckets, Ready ready, Poll poll = {});
  BucketCountdown(const BucketCountdown&) = delete;  // the hooks point to this object
  BucketCountdown& operator=(const BucketCountdown&) = delete;

  /// Every bucket counts all its parameters again (a new backward).
  void reset();
  void set_armed(bool armed) { armed_ = armed; }
  bool armed() const { return armed_; }
  /// Whether bucket b reached zero in this backward (since the last reset()).
  bool fired(std::size_t bucket) const { return pending_[bucket] == 0; }

 private:
  void on_grad_ready(std::size_t bucket);

  std::vector<int> size_, pending_;  ///< per bucket: its parameters; those not final yet
  Ready ready_;
  Poll poll_;
  bool armed_ = true;
  std::vector<HookHandle> hooks_;
};

}  // namespace minitorch::dist

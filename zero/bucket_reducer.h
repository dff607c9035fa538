#pragma once
/// \file bucket_reducer.h
/// When the ZeRO stages reduce a bucket: the gradient hooks of a partition's parameters count each
/// bucket down during a backward (dist/bucket_countdown.h, as DDP's do), and the moment its last gradient
/// is final the bucket is handed to the stage's `launch` (which starts its reduce-scatter and returns the Work) — while backward goes
/// on computing the earlier layers (`overlap_comm`). Without overlap the hooks stay quiet and
/// end_backward() launches every bucket, one after the other.
///
/// At most `max_in_flight` reductions run at once: launching one more first finishes the oldest
/// (its Work waited, then the stage's `finish`), so the stage's communication buffers are bounded
/// by that many buckets of `reduce_bucket_size` elements (DeepSpeed keeps two with overlap_comm).
///
///   begin_backward(reduce) → [hooks: launch bucket 0, 1, ...] → end_backward() → wait_all()
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "dist/bucket_countdown.h"
#include "dist/process_group.h"
#include "zero/partition.h"

namespace minitorch::zero {

class BucketReducer {
 public:
  using Launch = std::function<std::unique_ptr<dist::Work>(std::size_t bucket)>;
  using Finish = std::function<void(std::size_t bucket)>;

  /// Counts down each bucket's parameters of `partition` (which must outlive this object).
  BucketReducer(Partition& partition, bool overlap, int max_in_flight, Launch launch, Finish finish);
  ~BucketReducer();  // waits for what is in flight: MPI must never write into a freed buffer
  BucketReducer(const BucketReducer&) = delete;
  BucketReducer& operator=(const BucketReducer&) = delete;

  /// A backward starts; `reduce`: its buckets are reduced (false: gradients only accumulate).
  void begin_backward(bool reduce);
  /// The backward has returned: launches the buckets whose hooks did not fire (without overlap:
  /// all of them; with it: those holding a parameter this backward did not reach).
  void end_backward();
  /// Finishes every reduction in flight (the wait that backward did not hide).
  void wait_all();

  /// Buckets launched from a hook, i.e. while backward was running, in the last reducing backward.
  int launched_in_backward() const { return launched_in_backward_; }

 private:
  void on_grad_ready(std::size_t bucket);  ///< its last gradient is final, during backward (the countdown's ready)
  void start(std::size_t bucket);
  void finish_oldest();

  Partition& partition_;
  bool overlap_;
  std::size_t max_in_flight_;
  Launch launch_;
  Finish finish_;
  std::vector<bool> launched_;      ///< per bucket: launched in this backward
  std::deque<std::pair<std::size_t, std::unique_ptr<dist::Work>>> in_flight_;
  std::unique_ptr<dist::BucketCountdown> countdown_;  ///< armed while reducing with overlap
  bool reduce_ = false;
  int launched_in_backward_ = 0;
};

/// ZeRO-2 and -3's reduction of one bucket: its gradients flattened into a `comm` buffer (and freed:
/// the full gradients only pass through), reduce-scattered (average), and the result added into this
/// rank's gradient shard when the Work is done. The buffers live from start to finish only.
struct ShardReduction {
  Tensor flat;     ///< (numel) the bucket's gradients, flattened, tag comm
  Tensor reduced;  ///< (numel / N) the average of this rank's shard, tag comm

  /// Flattens bucket b's gradients (a parameter this backward did not reach contributes zeros),
  /// frees them, and starts the reduce-scatter.
  std::unique_ptr<dist::Work> start(Partition& partition, std::size_t b, dist::ProcessGroup& group);
  /// grad_shard += reduced (accumulation: the micro-steps' averages add up, the loss is / G); frees
  /// the buffers.
  void finish(Partition& partition, std::size_t b);
};

}  // namespace minitorch::zero

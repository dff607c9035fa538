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
#include <algorithm>
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

/// ZeRO-2 and -3's reduction of one bucket: its gradients packed into a `comm` buffer, reduce-scattered
/// (average), and the result added into this rank's gradient shard. The gradients are freed once packed
/// (the full gradients only pass through); the buffers live from start to finish only.
///
/// ZeRO-R's constant buffers: a bucket bigger than `bucket_elements` (a ZeRO-3 unit is a whole block, whatever
/// reduce_bucket_size says) is reduced in chunks. Each rank's shard of s = numel/N elements is cut into chunks of
/// c = bucket_elements/N; chunk k packs the k-th slice of every rank's shard side by side, N·c elements, and
/// one reduce-scatter gives rank r the average of slice k of its own shard:
///
///   bucket  | shard 0: k=0 k=1 k=2 | shard 1: k=0 k=1 k=2 |        (N = 2, 3 chunks)
///   chunk 1 buffer:   [ shard 0's k=1 | shard 1's k=1 ]   → reduce-scatter → rank r: its k=1
///
/// So a reduction never holds more than N·c + c ≤ bucket_elements·(1 + 1/N) elements of comm, whatever the
/// model's width (runtime::reduction_buffer_bytes). The chunks run one after the other: the first starts in
/// start(), the Work it returns launches the others when it is waited (every rank must start collectives in the
/// same order, so never "whenever the last one is done"), and finish() adds the last one.
struct ShardReduction {
  std::vector<Tensor> grads;  ///< the bucket's gradients in slot order, until the last chunk is packed
                              ///< (undefined: a parameter this backward did not reach, zeros)
  Tensor flat;     ///< (N·c) chunk k of every rank's shard side by side, tag comm
  Tensor reduced;  ///< (c) the average of chunk k of this rank's shard, tag comm
  std::int64_t chunk = 0;   ///< c: elements of each rank's shard per chunk (the whole shard: one chunk)
  std::int64_t begin = 0;   ///< where the chunk in flight starts inside the shard

  /// Takes bucket b's gradients off their parameters and starts the reduce-scatter of its first chunk
  /// (`bucket_elements` <= 0, or a bucket that fits: the whole bucket in one).
  std::unique_ptr<dist::Work> start(Partition& partition, std::size_t b, dist::ProcessGroup& group,
                                    std::int64_t bucket_elements);
  /// grad_shard += reduced for the last chunk (accumulation: the micro-steps' averages add up, the loss is / G);
  /// frees the buffers.
  void finish(Partition& partition, std::size_t b);

  /// c, for a bucket of `numel` elements on `world` ranks: ⌊bucket_elements/N⌋ (at least 1), at most the shard;
  /// the whole shard when bucket_elements <= 0 (reduce_bucket_size 0: one bucket per tensor, never cut).
  static std::int64_t chunk_elements(std::int64_t numel, int world, std::int64_t bucket_elements) {
    const std::int64_t shard = numel / world;
    return bucket_elements > 0 ? std::clamp<std::int64_t>(bucket_elements / world, 1, shard) : shard;
  }
  /// The reduce-scatters one reduction of such a bucket makes: ⌈shard / c⌉.
  static std::int64_t chunks(std::int64_t numel, int world, std::int64_t bucket_elements) {
    const std::int64_t c = chunk_elements(numel, world, bucket_elements);
    return (numel / world + c - 1) / c;
  }
  /// Elements of the chunk in flight (the last one may be shorter).
  std::int64_t chunk_size(const ShardedBucket& bucket, int world) const {
    return std::min(chunk, bucket.numel / world - begin);
  }
  /// Packs the chunk at `begin` of every rank's shard into `flat` (freeing the gradients after the last) and
  /// starts its reduce-scatter into `reduced`.
  std::unique_ptr<dist::Work> reduce_chunk(Partition& partition, std::size_t b, dist::ProcessGroup& group);
  /// grad_shard[begin, begin + c) += reduced; frees the chunk's buffers.
  void add_chunk(Partition& partition, std::size_t b);
};

}  // namespace minitorch::zero

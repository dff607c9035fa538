#include "zero/bucket_reducer.h"

#include <algorithm>

#include "minitorch/events.h"
#include "minitorch/ops.h"
#include "minitorch/not_implemented.h"

namespace minitorch::zero {

BucketReducer::BucketReducer(Partition& partition, bool overlap, int max_in_flight, Launch launch, Finish finish)
    : partition_(partition),
      overlap_(overlap),
      max_in_flight_(static_cast<std::size_t>(std::max(1, max_in_flight))),
      launch_(std::move(launch)),
      finish_(std::move(finish)),
      launched_(partition.buckets().size()) {
  std::vector<std::vector<Tensor>> members;
  for (const ShardedBucket& bucket : partition_.buckets()) {
    members.emplace_back();
    for (std::size_t p : bucket.members) members.back().push_back(partition_.params()[p].second);
  }
  countdown_ = std::make_unique<dist::BucketCountdown>(
      members, [this](std::size_t b) { on_grad_ready(b); },
      [this] {
        for (auto& [b, work] : in_flight_) work->test();  // let MPI move what is already in flight
      });
  countdown_->set_armed(false);  // until a reducing backward begins
}

BucketReducer::~BucketReducer() {
  for (auto& [bucket, work] : in_flight_) work->wait();
}

void BucketReducer::begin_backward(bool reduce) {
  wait_all();  // the previous micro-step's reductions, if a caller left them running
  reduce_ = reduce;
  if (reduce_) launched_in_backward_ = 0;
  launched_.assign(launched_.size(), false);
  countdown_->reset();
  countdown_->set_armed(reduce_ && overlap_);  // else: accumulating locally, or reducing after backward
}

void BucketReducer::on_grad_ready(std::size_t bucket) {
  start(bucket);
  ++launched_in_backward_;
}

void BucketReducer::end_backward() {
  if (!reduce_) return;
  for (std::size_t b = 0; b < launched_.size(); ++b)
    if (!launched_[b]) start(b);
}

void BucketReducer::start(std::size_t bucket) {
  while (in_flight_.size() >= max_in_flight_) finish_oldest();
  launched_[bucket] = true;
  in_flight_.emplace_back(bucket, launch_(bucket));
}

void BucketReducer::finish_oldest() {
  auto [bucket, work] = std::move(in_flight_.front());
  in_flight_.pop_front();
  work->wait();
  finish_(bucket);
}

void BucketReducer::wait_all() {
  while (!in_flight_.empty()) finish_oldest();
}

namespace {

/// The Work of a reduction in chunks. Every rank must start its collectives in the same order (MPI's rule for a
/// communicator), so chunk k+1 is launched at a point every rank reaches in the same order — here, in wait():
/// chunk k waited, its average added to the shard, chunk k+1 packed and launched — never in test(), where it
/// would start whenever chunk k happens to be done on this rank. Done when the last chunk's reduce-scatter is
/// (finish() adds that one).
class ChunkedReduction final : public dist::Work {
 public:
  ChunkedReduction(ShardReduction& r, Partition& partition, std::size_t b, dist::ProcessGroup& group,
                   std::unique_ptr<dist::Work> first)
      : r_(r), partition_(partition), b_(b), group_(group), current_(std::move(first)) {}
  bool test() override { return current_->test() && last(); }  // lets the chunk in flight progress
  void wait() override {
    for (current_->wait(); !last(); current_->wait()) next();
  }

 private:
  bool last() const {
    const ShardedBucket& bucket = partition_.buckets()[b_];
    return r_.begin + r_.chunk_size(bucket, group_.size()) >= bucket.numel / group_.size();
  }
  void next() {
    r_.add_chunk(partition_, b_);
    current_.reset();  // the finished Work holds chunk k's buffers too: let them go before chunk k+1's
    r_.begin += r_.chunk;
    current_ = r_.reduce_chunk(partition_, b_, group_);
  }
  ShardReduction& r_;
  Partition& partition_;
  std::size_t b_;
  dist::ProcessGroup& group_;
  std::unique_ptr<dist::Work> current_;
};

}  // namespace

std::unique_ptr<dist::Work> ShardReduction::start(Partition& partition, std::size_t b, dist::ProcessGroup& group,
                                                  std::int64_t bucket_elements) {
  ShardedBucket& bucket = partition.buckets()[b];
  const std::int64_t shard = bucket.numel / group.size();
  chunk = chunk_elements(bucket.numel, group.size(), bucket_elements);
  begin = 0;
  grads.clear();
  for (std::size_t p : bucket.members) {  // the gradients leave their parameters: this reduction owns them now
    Tensor param = partition.params()[p].second;
    grads.push_back(param.grad());
    param.set_grad(Tensor());
  }
  std::unique_ptr<dist::Work> first = reduce_chunk(partition, b, group);
  if (chunk == shard) return first;  // one chunk: the reducer waits for it, finish() adds it
  return std::make_unique<ChunkedReduction>(*this, partition, b, group, std::move(first));
}

std::unique_ptr<dist::Work> ShardReduction::reduce_chunk(Partition& partition, std::size_t b, dist::ProcessGroup& group) {
  const ShardedBucket& bucket = partition.buckets()[b];
  const int N = group.size();
  const std::int64_t shard = bucket.numel / N, c = chunk_size(bucket, N);
  const Tensor& first = partition.params()[bucket.members.front()].second;
  {
    TagScope scope(MemTag::comm);
    flat = Tensor::zeros({N * c}, first.dtype(), first.device());  // padding and unreached parameters: zeros
    reduced = Tensor::empty({c}, first.dtype(), first.device());
  }
  // BEGIN SOLUTION L06.4
  // flat[r·c, (r+1)·c) = the bucket's elements [r·s + begin, r·s + begin + c): where they meet each gradient.
  std::int64_t offset = 0;  // where the parameter starts in the bucket
  for (std::size_t i = 0; i < bucket.members.size(); ++i) {
    const std::int64_t n = partition.params()[bucket.members[i]].second.numel();
    if (grads[i].defined()) {
      const Tensor g = grads[i].reshape({n});
      for (int r = 0; r < N; ++r) {
        const std::int64_t lo = std::max(offset, r * shard + begin), hi = std::min(offset + n, r * shard + begin + c);
        if (lo < hi) flat.narrow(0, r * c + lo - (r * shard + begin), hi - lo).copy_(g.narrow(0, lo - offset, hi - lo));
      }
    }
    offset += n;
  }
  if (begin + c >= shard) grads.clear();  // the last chunk is packed: free the gradients
  events::FlatRange what("zero bucket", bucket.first, bucket.first + bucket.numel);  // for the traces
  return group.reduce_scatter_into_async(reduced, flat, dist::ReduceOp::avg);
  // END SOLUTION
}

void ShardReduction::add_chunk(Partition& partition, std::size_t b) {
  ShardedBucket& bucket = partition.buckets()[b];
  Tensor into = bucket.grad_shard.narrow(0, begin, reduced.numel());
  ops::add_(into, reduced);
  flat = Tensor();  // the comm buffers go back to the allocator
  reduced = Tensor();
}

void ShardReduction::finish(Partition& partition, std::size_t b) { add_chunk(partition, b); }

}  // namespace minitorch::zero

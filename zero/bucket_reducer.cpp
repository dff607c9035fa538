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

std::unique_ptr<dist::Work> ShardReduction::start(Partition& partition, std::size_t b, dist::ProcessGroup& group) {
  ShardedBucket& bucket = partition.buckets()[b];
  const Tensor& first = partition.params()[bucket.members.front()].second;
  {
    TagScope scope(MemTag::comm);
    flat = Tensor::zeros({bucket.numel}, first.dtype(), first.device());
    reduced = Tensor::empty({bucket.numel / group.size()}, first.dtype(), first.device());
  }
  // BEGIN SOLUTION L06.4
  std::int64_t offset = 0;
  for (std::size_t p : bucket.members) {  // flatten, then free the gradients
    Tensor param = partition.params()[p].second;
    if (param.grad().defined()) {
      Tensor into = flat.narrow(0, offset, param.numel()).view(param.shape());
      into.copy_(param.grad());
    }
    param.set_grad(Tensor());
    offset += param.numel();
  }
  events::FlatRange what("zero bucket", bucket.first, bucket.first + bucket.numel);  // for the traces
  return group.reduce_scatter_into_async(reduced, flat, dist::ReduceOp::avg);
  // END SOLUTION
}

void ShardReduction::finish(Partition& partition, std::size_t b) {
  Tensor shard = partition.buckets()[b].grad_shard;
  ops::add_(shard, reduced);
  flat = Tensor();  // the comm buffers go back to the allocator
  reduced = Tensor();
}

}  // namespace minitorch::zero

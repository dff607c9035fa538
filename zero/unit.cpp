#include "zero/unit.h"

#include <stdexcept>

#include "minitorch/allocator.h"

#include "minitorch/not_implemented.h"

namespace minitorch::zero {

Unit::Unit(std::string name, std::size_t bucket, const Shared& shared)
    : name_(std::move(name)),
      bucket_(bucket),
      partition_(shared.partition),
      group_(shared.group),
      strategy_(shared.strategy),
      progress_(shared.progress),
      swap_(shared.swap) {
  partition_.shard_parameters(bucket_, shared.home != ShardHome::device);
  if (shared.home == ShardHome::disk) {  // ZeRO-Infinity: the shard to its swap file, and out of memory
    if (!swap_) throw std::invalid_argument("Unit " + name_ + ": offload_param \"nvme\" needs the rank's swap space");
    ShardedBucket& b = partition_.buckets()[bucket_];
    const auto bytes = static_cast<std::int64_t>(b.param_shard.nbytes());
    swap_->reserve(shard_swap_file(bucket_), bytes);  // a full disk: one error now, before the first step
    swap_->write(shard_swap_file(bucket_), 0, b.param_shard.raw_data(), bytes);
    b.param_shard.release_data();  // its shape stays: the pieces are views of it, their values on disk
    b.home = ShardHome::disk;
  }
}

Unit::~Unit() {
  if (gather_) gather_->wait();
}

nn::NamedTensors Unit::parameters() const {
  nn::NamedTensors mine;
  for (std::size_t p : bucket().members) mine.push_back(partition_.params()[p]);
  return mine;
}

// ---- the transitions: sharded → gathering → gathered → sharded ----

void Unit::gather_async() {
  if (state_ != State::sharded) return;
  if (gather_)  // a second all-gather into a new buffer while the first still writes into the old one
    throw std::logic_error("gather of " + name_ + ": an all-gather of it is already in flight (a unit "
                           "whose gather has started is gathering, not sharded)");
  // BEGIN SOLUTION L07.1
  ShardedBucket& bucket = partition_.buckets()[bucket_];
  bucket.params = FlatBuffer(partition_.shapes(bucket), bucket.param_shard.dtype(), group_.size(), MemTag::param,
                             partition_.device(), bucket.numel);
  Tensor full = bucket.params.flat();
  events::FlatRange what("zero unit", bucket.first, bucket.first + bucket.numel);  // for the traces
  gather_ = group_.all_gather_into_async(full, shard_on_device());
  state_ = State::gathering;
  // END SOLUTION
}

Tensor Unit::shard_on_device() {
  ShardedBucket& bucket = partition_.buckets()[bucket_];
  if (bucket.home == ShardHome::device) return bucket.param_shard;
  // BEGIN SOLUTION L11.2
  Tensor slot = bucket.params.shard_view(partition_.rank());
  if (bucket.home == ShardHome::host) {
    slot.copy_(bucket.param_shard);  // host → device: the copy offload_param adds to every gather
    return slot;
  }
  Tensor staged;  // disk → host → device: one shard's buffer, freed once the copy is made
  {
    TagScope scope(MemTag::param);
    staged = Tensor::empty(bucket.param_shard.shape(), bucket.param_shard.dtype(), Device::cpu());
  }
  swap_->read(shard_swap_file(bucket_), 0, staged.raw_data(), static_cast<std::int64_t>(staged.nbytes()));
  slot.copy_(staged);
  return slot;
  // END SOLUTION
}

void Unit::ensure_gathered() {
  if (state_ == State::gathered) return;
  // BEGIN SOLUTION L07.2
  gather_async();
  gather_->wait();
  gather_.reset();
  partition_.attach_gathered(bucket_);
  state_ = State::gathered;
  // END SOLUTION
  unit_gathered_frame(strategy_, partition_, bucket_, name_, progress_.in_backward);
}

void Unit::release(bool framed) {
  if (state_ == State::sharded) return;
  // BEGIN SOLUTION L07.3
  if (state_ == State::gathering) ensure_gathered();  // a prefetch not used: finish it first
  partition_.release_gathered(bucket_);
  state_ = State::sharded;
  // END SOLUTION
  if (gather_)  // the all-gather would go on writing into the freed buffer
    throw std::logic_error("release of " + name_ + ": its all-gather is still in flight (finish an unused "
                           "prefetch before freeing the buffer it writes into)");
  if (framed) released_frame();
}

void Unit::released_frame() const { unit_released_frame(strategy_, name_, progress_.in_backward); }

// ---- read-outs: what this rank holds of the unit (no computation) ----

void Unit::paint_parameters(trace::HeldRanges& params) const {
  const auto [begin, end] = own_shard(partition_, bucket_);
  params.paint(begin, end, "shard");
  // While gathering or gathered, the full buffer lies over the shard, which stays allocated.
  if (state_ != State::sharded)
    params.paint(bucket().first, bucket().first + numel(), state_ == State::gathered ? "gathered" : "gathering",
                 trace::Overlay::separate_buffer);
}

std::int64_t Unit::parameter_bytes() const {
  std::int64_t bytes = bucket().home != ShardHome::device ? 0 : static_cast<std::int64_t>(bucket().param_shard.nbytes());
  if (bucket().params.numel() > 0) bytes += static_cast<std::int64_t>(bucket().params.flat().nbytes());
  return bytes;
}

void paint_unit_bucket(const Partition& partition, std::size_t b, const Unit* unit, const ReductionProgress& progress,
                       const std::vector<Tensor>& packing, trace::RankHoldings& holdings) {
  const ShardedBucket& bucket = partition.buckets()[b];
  if (unit) unit->paint_parameters(holdings.params);
  else holdings.params.paint(bucket.first, bucket.first + bucket.numel, "whole");
  paint_sharded_gradients(partition, b, progress, holdings.grads, packing);
}

ModelStateBytes unit_bucket_bytes(const Partition& partition, std::size_t b, const Unit* unit) {
  const ShardedBucket& bucket = partition.buckets()[b];
  ModelStateBytes bytes;
  bytes.param = unit ? unit->parameter_bytes() : static_cast<std::int64_t>(bucket.params.flat().nbytes());
  bytes.grad = static_cast<std::int64_t>(bucket.grad_shard.nbytes());
  return bytes;
}

}  // namespace minitorch::zero

#include "zero/partition.h"

#include <algorithm>
#include <stdexcept>

#include "dist/ddp.h"
#include "minitorch/not_implemented.h"

namespace minitorch::zero {

namespace {
/// Buckets of at most `bucket_elements` in reverse order of use (as DDP's): backward finishes the
/// last layer's gradients first.
std::vector<std::vector<std::size_t>> reverse_buckets(const nn::NamedTensors& params, std::int64_t bucket_elements) {
  std::vector<std::size_t> order;
  std::vector<std::int64_t> numels;
  for (std::size_t i = params.size(); i-- > 0;) {
    order.push_back(i);
    numels.push_back(params[i].second.numel());
  }
  std::vector<std::vector<std::size_t>> groups;
  for (auto [first, last] : dist::plan_buckets(numels, bucket_elements))
    groups.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(first), order.begin() + static_cast<std::ptrdiff_t>(last));
  return groups;
}
}  // namespace

Partition::Partition(const nn::NamedTensors& params, std::int64_t bucket_elements, int rank, int world)
    : Partition(params, reverse_buckets(params, bucket_elements), rank, world) {}

Partition::Partition(const nn::NamedTensors& params, const std::vector<std::vector<std::size_t>>& groups, int rank,
                     int world, const std::vector<std::int64_t>& sizes)
    : params_(params), rank_(rank), world_(world) {
  if (world < 1 || rank < 0 || rank >= world)
    throw std::invalid_argument("Partition: rank " + std::to_string(rank) + " of " + std::to_string(world));
  if (!sizes.empty() && sizes.size() != groups.size())
    throw std::invalid_argument("Partition: " + std::to_string(sizes.size()) + " sizes for " +
                                std::to_string(groups.size()) + " buckets");
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const auto& group = groups[g];
    if (group.empty()) throw std::invalid_argument("Partition: an empty bucket");
    const std::int64_t min_numel = sizes.empty() ? 0 : sizes[g];  // a Gemini chunk's fixed size, else none
    if (min_numel % world != 0)
      throw std::invalid_argument("Partition: bucket " + std::to_string(g) + " of " + std::to_string(min_numel) +
                                  " elements does not split into " + std::to_string(world) + " equal shards");
    ShardedBucket b;
    b.members = group;
    // BEGIN SOLUTION L06.1
    // FlatBuffer's layout, planned without allocating (adopt_parameters allocates): slots end to end,
    // padded to a multiple of N; shard r is [r·S, (r+1)·S) with S = padded / N.
    std::int64_t used = 0;
    for (std::size_t p : group) used += params_.at(p).second.numel();
    numel_ += used;
    const std::int64_t shard = std::max((used + world - 1) / world, min_numel / world);  // min_numel: a Gemini chunk
    padding_ += shard * world - used;
    b.numel = shard * world;
    b.first = buckets_.empty() ? 0 : buckets_.back().first + buckets_.back().numel;
    const std::int64_t mine_begin = rank * shard, mine_end = mine_begin + shard;
    std::int64_t offset = 0;
    for (std::size_t slot = 0; slot < b.members.size(); ++slot) {
      const std::size_t p = b.members[slot];
      const std::int64_t n = params_[p].second.numel();
      const std::int64_t begin = std::max(offset, mine_begin), end = std::min(offset + n, mine_end);
      if (begin < end) {
        const std::int64_t a = begin - offset;
        pieces_.push_back({params_[p].first + "[" + std::to_string(a) + ":" + std::to_string(a + end - begin) + "]", p,
                           buckets_.size(), {begin, end}, a, params_[p].second.dim() >= 2});
      }
      offset += n;
    }
    buckets_.push_back(std::move(b));
    // END SOLUTION
    if (min_numel > 0 && buckets_.back().numel != min_numel)
      throw std::invalid_argument("Partition: bucket " + std::to_string(g) + " of " + std::to_string(min_numel) +
                                  " elements is smaller than its parameters (" + std::to_string(buckets_.back().numel) +
                                  " elements with the padding)");
  }
}

std::vector<Shape> Partition::shapes(const ShardedBucket& b) const {
  std::vector<Shape> out;
  for (std::size_t p : b.members) out.push_back(params_[p].second.shape());
  return out;
}

void Partition::adopt_parameters() {
  for (std::size_t b = 0; b < buckets_.size(); ++b) adopt_parameters(b);
}

void Partition::adopt_parameters(std::size_t bucket) {
  ShardedBucket& b = buckets_[bucket];
  const DType dtype = params_[b.members.front()].second.dtype();
  b.params = FlatBuffer(shapes(b), dtype, world_, MemTag::param, params_[b.members.front()].second.device(), b.numel);
  for (std::size_t slot = 0; slot < b.members.size(); ++slot) {
    Tensor& p = params_[b.members[slot]].second;
    if (p.dtype() != dtype)
      throw std::invalid_argument("Partition: parameters of one bucket must share a dtype ('" +
                                  params_[b.members[slot]].first + "')");
    Tensor view = b.params.view(slot);
    view.copy_(p);
    p.set_data(view);  // the old storage goes back to the allocator
  }
  b.param_shard = b.params.shard_view(rank_);
}

void Partition::shard_parameters() {
  for (std::size_t b = 0; b < buckets_.size(); ++b) shard_parameters(b);
}

void Partition::shard_parameters(std::size_t bucket, bool on_host) {
  ShardedBucket& b = buckets_[bucket];
  TagScope scope(MemTag::param);
  const Tensor& first = params_[b.members.front()].second;
  b.param_shard = Tensor::zeros({b.numel / world_}, first.dtype(), on_host ? Device::cpu() : first.device());
  b.home = on_host ? ShardHome::host : ShardHome::device;
  const std::int64_t mine_begin = b.shard_begin(rank_, world_), mine_end = mine_begin + b.numel / world_;
  std::int64_t offset = 0;
  for (std::size_t p : b.members) {  // copy what falls in my shard, then drop the whole tensor
    Tensor& t = params_[p].second;
    const std::int64_t n = t.numel();
    const std::int64_t begin = std::max(offset, mine_begin), end = std::min(offset + n, mine_end);
    if (begin < end) {
      Tensor into = b.param_shard.narrow(0, begin - mine_begin, end - begin);
      into.copy_(t.contiguous().view({n}).narrow(0, begin - offset, end - begin));
    }
    t.release_data();
    offset += n;
  }
}

void Partition::attach_gathered(std::size_t bucket) {
  ShardedBucket& b = buckets_[bucket];
  for (std::size_t slot = 0; slot < b.members.size(); ++slot) params_[b.members[slot]].second.set_data(b.params.view(slot));
}

void Partition::release_gathered(std::size_t bucket) {
  ShardedBucket& b = buckets_[bucket];
  for (std::size_t p : b.members) params_[p].second.release_data();
  b.params = FlatBuffer();  // the full buffer goes back to the allocator; the shard stays
}

void Partition::adopt_gradients() {
  for (ShardedBucket& b : buckets_) {
    if (b.grads.numel() == 0)
      b.grads = FlatBuffer(shapes(b), b.params.dtype(), world_, MemTag::grad, b.params.flat().device(), b.numel);
    for (std::size_t slot = 0; slot < b.members.size(); ++slot) {
      Tensor& p = params_[b.members[slot]].second;
      if (p.grad().defined()) continue;  // still ours
      Tensor view = b.grads.view(slot);
      view.zero_();  // an undefined .grad means zero (set_to_none)
      p.set_grad(view);
    }
    b.grad_shard = b.grads.shard_view(rank_);
  }
}

void Partition::allocate_gradient_shards(bool contiguous) {
  TagScope scope(MemTag::grad);
  const DType dtype = params_.front().second.dtype();
  const Device device = params_.front().second.device();
  if (contiguous) {
    std::int64_t total = 0;
    for (const ShardedBucket& b : buckets_) total += b.numel / world_;
    Tensor all = Tensor::zeros({total}, dtype, device);
    std::int64_t at = 0;
    for (ShardedBucket& b : buckets_) {
      b.grad_shard = all.narrow(0, at, b.numel / world_);
      at += b.numel / world_;
    }
  } else {
    for (ShardedBucket& b : buckets_) b.grad_shard = Tensor::zeros({b.numel / world_}, dtype, device);
  }
}

void Partition::zero_gradients() {
  for (ShardedBucket& b : buckets_) {
    if (b.grads.numel() > 0) {
      Tensor flat = b.grads.flat();  // a handle on the buffer's storage
      flat.zero_();
    } else if (b.grad_shard.defined()) {
      b.grad_shard.zero_();
    }
  }
}

nn::NamedTensors Partition::piece_params() const {
  nn::NamedTensors out;
  for (const ShardPiece& piece : pieces_)
    out.emplace_back(piece.name, buckets_[piece.bucket].param_shard.narrow(0, offset_in_shard(piece), piece.range.size()));
  return out;
}

std::vector<optim::ParamGroup> Partition::optimizer_groups(float lr, float weight_decay) const {
  optim::ParamGroup decay{"decay", {}, lr, weight_decay}, no_decay{"no_decay", {}, lr, 0.f};
  nn::NamedTensors views = piece_params();
  for (std::size_t i = 0; i < pieces_.size(); ++i) {
    const ShardPiece& piece = pieces_[i];
    const ShardedBucket& b = buckets_[piece.bucket];
    if (!b.grad_shard.defined())
      throw std::logic_error("Partition::optimizer_groups: adopt_gradients() or allocate_gradient_shards() first");
    views[i].second.set_grad(b.grad_shard.narrow(0, offset_in_shard(piece), piece.range.size()));
    (piece.decay ? decay : no_decay).params.push_back(views[i]);
  }
  return {decay, no_decay};
}

}  // namespace minitorch::zero

#include "dist/ddp.h"

#include <chrono>
#include <stdexcept>

#include "minitorch/allocator.h"
#include "minitorch/events.h"
#include "minitorch/not_implemented.h"

namespace minitorch::dist {

std::vector<std::pair<std::size_t, std::size_t>> plan_buckets(const std::vector<std::int64_t>& numels,
                                                              std::int64_t bucket_size) {
  // 0 is DeepSpeed's too: every tensor closes its bucket, so each is reduced alone.
  if (bucket_size < 0) throw std::invalid_argument("DDP: reduce_bucket_size must be at least 0 elements");
  // BEGIN SOLUTION L05.4
  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  std::size_t first = 0;
  std::int64_t filled = 0;
  for (std::size_t i = 0; i < numels.size(); ++i) {
    if (i > first && filled + numels[i] > bucket_size) {  // does not fit: close the bucket
      ranges.emplace_back(first, i);
      first = i;
      filled = 0;
    }
    filled += numels[i];
  }
  if (first < numels.size()) ranges.emplace_back(first, numels.size());
  return ranges;
  // END SOLUTION
}

namespace {
/// Where DDP's buffers for `param` live: where the group's collectives read. MPI reads any host memory, so
/// on a sim rank they sit beside the parameters (the device pool); on a GPU rank with MPI, on the host.
Device bucket_device(const ProcessGroup& group, const Tensor& param) {
  return group.device().is_cpu() && param.device().is_host_memory() ? param.device() : group.device();
}
}  // namespace

DistributedDataParallel::DistributedDataParallel(const nn::NamedTensors& params, ProcessGroup& group,
                                                 std::int64_t bucket_size)
    : group_(group) {
  // Reverse order of use: backward finishes the last layer's gradients first.
  nn::NamedTensors order(params.rbegin(), params.rend());
  std::vector<std::int64_t> numels;
  for (const auto& [name, p] : order) numels.push_back(p.numel());
  for (auto [first, last] : plan_buckets(numels, bucket_size)) {
    Bucket b;
    std::vector<Shape> shapes;
    for (std::size_t i = first; i < last; ++i) {
      b.names.push_back(order[i].first);
      b.params.push_back(order[i].second);
      shapes.push_back(order[i].second.shape());
    }
    // The flat buffers are DDP's only extra memory: Ψ f32 elements plus < N padding per bucket, where the
    // group's collectives run: host memory for MPI (on a GPU rank they are the staging buffers the
    // gradients are copied down into and the averages back up from; on a sim rank, whose memory MPI
    // reads directly, the device pool, as NCCL's are on a GPU), the GPU for NCCL.
    b.buffer = FlatBuffer(shapes, DType::f32, group.size(), MemTag::comm, bucket_device(group, b.params.front()));
    b.first = buckets_.empty() ? 0 : buckets_.back().first + buckets_.back().buffer.numel();
    buckets_.push_back(std::move(b));
  }
  // One hook per parameter counts its bucket down; the last one starts the bucket's all-reduce, and every
  // one lets MPI move the buckets already in flight.
  std::vector<std::vector<Tensor>> members;
  for (const Bucket& b : buckets_) members.push_back(b.params);
  countdown_ = std::make_unique<BucketCountdown>(
      members, [this](std::size_t bi) { on_grad_ready(bi); },
      [this] {
        for (Bucket& o : buckets_)
          if (o.work) o.work->test();
      });
}

DistributedDataParallel::~DistributedDataParallel() {
  for (Bucket& b : buckets_)
    if (b.work) b.work->wait();  // never leave MPI writing into a freed buffer
}

void DistributedDataParallel::broadcast_parameters(int root) {
  for (Bucket& b : buckets_)
    for (Tensor& p : b.params) {
      // MPI moves host memory: a parameter on a GPU travels through a host copy (copy_ uploads it back).
      const Device where = bucket_device(group_, p);
      const bool direct = p.dtype() == DType::f32 && p.is_contiguous() && p.device() == where;
      Tensor t = direct ? p.detach() : p.detach().to(where).to(DType::f32).contiguous();
      group_.broadcast(t, root);
      if (!direct) p.detach().copy_(t);
    }
}

double DistributedDataParallel::now_ms() const {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count() - t0_;
}

void DistributedDataParallel::begin_backward() {
  t0_ = 0;
  t0_ = now_ms();
  in_backward_ = true;
}

void DistributedDataParallel::end_backward() {
  in_backward_ = false;
  if (sync_) timing_.backward_ms = now_ms();
}

// ---------------------------------------------------------------------------------------------
// Communication: everything below runs on the hooks' and finish()'s side; compute never waits here.

// No_sync (set_sync(false)) disarms the countdown: backward accumulates locally and this is never called.
void DistributedDataParallel::on_grad_ready(std::size_t bi) { launch(buckets_[bi], in_backward_); }

void DistributedDataParallel::launch(Bucket& b, bool in_backward) {
  // BEGIN SOLUTION L05.5
  for (std::size_t i = 0; i < b.params.size(); ++i) {  // flatten: grads → one contiguous f32 buffer
    Tensor slot = b.buffer.view(i);
    Tensor g = b.params[i].grad();
    if (g.defined())
      slot.copy_(g);
    else
      slot.zero_();  // a parameter this backward did not reach contributes zeros
  }
  Tensor flat = b.buffer.flat();
  events::FlatRange what("ddp bucket", b.first, b.first + b.buffer.numel());  // for the traces
  b.work = group_.all_reduce_async(flat, ReduceOp::avg);
  // END SOLUTION
  b.launched_ms = now_ms();
  b.launched_in_backward = in_backward;
  b.launch_order = launched_++;
}

void DistributedDataParallel::finish() {
  if (!sync_) return;
  const double start = now_ms();
  for (Bucket& b : buckets_)
    if (!b.work) launch(b, /*in_backward=*/false);  // a hook that never fired (unused parameter)
  for (Bucket& b : buckets_) b.work->wait();
  const double waited = now_ms();
  for (Bucket& b : buckets_) {
    for (std::size_t i = 0; i < b.params.size(); ++i) {  // unflatten: averaged grads back in place
      Tensor& p = b.params[i];
      Tensor avg = b.buffer.view(i);
      if (!p.grad().defined()) {
        TagScope scope(MemTag::grad);
        p.set_grad(Tensor::zeros(p.shape(), p.dtype(), p.device()));
      }
      Tensor g = p.grad();
      g.copy_(avg);
    }
    b.work.reset();
  }
  countdown_->reset();
  launched_ = 0;
  timing_.wait_ms = waited - start;
  timing_.finish_ms = now_ms() - start;
}

}  // namespace minitorch::dist

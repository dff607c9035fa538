#include "dist/bucket_countdown.h"

namespace minitorch::dist {

BucketCountdown::BucketCountdown(const std::vector<std::vector<Tensor>>& buckets, Ready ready, Poll poll)
    : ready_(std::move(ready)), poll_(std::move(poll)) {
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    size_.push_back(static_cast<int>(buckets[b].size()));
    for (Tensor param : buckets[b]) hooks_.push_back(param.register_grad_hook([this, b](Tensor&) { on_grad_ready(b); }));
  }
  reset();
}

void BucketCountdown::reset() { pending_ = size_; }

void BucketCountdown::on_grad_ready(std::size_t bucket) {
  if (!armed_) return;
  if (--pending_[bucket] == 0) ready_(bucket);
  if (poll_) poll_();
}

}  // namespace minitorch::dist

#include "zero/sharded_strategy.h"

namespace minitorch::zero {

ShardedStrategy::ShardedStrategy(std::shared_ptr<nn::GPT> model, dist::ProcessGroup& group, Partition partition)
    : model_(std::move(model)), group_(group), partition_(std::move(partition)) {
  progress_.resize(partition_.buckets().size());
  bucket_names_ = numbered_buckets(partition_);
}

void ShardedStrategy::open_swap(const StrategyConfig& config) {
  const OffloadConfig& o = config.zero.offload_optimizer;
  const OffloadConfig& p = config.zero.offload_param;
  if (!o.on_nvme() && !p.on_nvme()) return;
  // One swap folder per rank (the config holds both sections to one nvme_path).
  swap_ = std::make_unique<NvmeStore>(o.on_nvme() ? o.nvme_path : p.nvme_path, config.swap_run_id, partition_.rank(),
                                      config.aio);
}

void ShardedStrategy::start_reducer_and_optimizer(const StrategyConfig& config, BucketReducer::Launch launch,
                                                  BucketReducer::Finish finish) {
  reduce_bucket_elements_ = config.zero.reduce_bucket_size;
  // A launched bucket's shard is "reducing" in the frames until the stage's finish records it reduced.
  auto launch_and_mark = [this, launch = std::move(launch)](std::size_t b) {
    std::unique_ptr<dist::Work> work = launch(b);
    progress_.reducing.at(b) = true;
    return work;
  };
  reducer_ = std::make_unique<BucketReducer>(partition_, config.zero.overlap_comm, /*max_in_flight=*/2,
                                             std::move(launch_and_mark), std::move(finish));
  optimizer_ = std::make_unique<ShardedOptimizer>(partition_, config, group_, swap_.get());
  optimizer_->set_frame_source(this);
}

void ShardedStrategy::begin_backward(bool) {
  reducer_->begin_backward(/*reduce=*/true);
  progress_.in_backward = true;
}

void ShardedStrategy::end_backward() {
  reducer_->end_backward();
  progress_.in_backward = false;
}

StepResult ShardedStrategy::step(const StepRequest& r) {
  const StepResult result = optimizer_->step(r);
  progress_.clear();
  return result;
}

trace::RankHoldings ShardedStrategy::holdings() const {
  trace::RankHoldings h;
  for (std::size_t b = 0; b < partition_.buckets().size(); ++b) paint_bucket(b, h);
  paint_optimizer_shard(partition_, optimizer(), h.optim, optimizer_->nvme());
  return h;
}

ModelStateBytes ShardedStrategy::model_state_bytes() const {
  ModelStateBytes bytes;
  for (std::size_t b = 0; b < partition_.buckets().size(); ++b) {
    const ModelStateBytes of_bucket = bucket_bytes(b);
    bytes.param += of_bucket.param;
    bytes.grad += of_bucket.grad;
  }
  bytes.optim = optimizer_->offloaded() ? 0 : optimizer().state_bytes();  // ZeRO-Offload: on the host
  return bytes;
}

ModelStateBytes ShardedStrategy::disk_model_state_bytes() const {
  ModelStateBytes bytes;
  if (const NvmeOptimizer* nvme = optimizer_->nvme()) bytes.optim = nvme->disk_bytes();
  for (std::size_t b = 0; b < partition_.buckets().size(); ++b)  // offload_param "nvme": the shards' files
    if (partition_.buckets()[b].home == ShardHome::disk) bytes.param += swap_->reserved(shard_swap_file(b));
  return bytes;
}

std::optional<SwapStats> ShardedStrategy::swap_stats() const {
  const NvmeOptimizer* nvme = optimizer_->nvme();
  const NvmeStore* swap = optimizer_->swap();
  if (!nvme || !swap) return std::nullopt;
  const NvmeStore::Counters c = swap->counters();
  const NvmeOptimizer::StepTimes t = nvme->last_step_times();
  SwapStats stats{swap->folder(),      swap->direct(),          swap->why_not_direct(),
                  c.bytes_read,        c.bytes_written,         c.read_seconds,
                  c.write_seconds,     static_cast<std::int64_t>(nvme->tiles()), nvme->host_step_bytes(),
                  t.io_seconds,        t.waited_seconds,        {}};
  for (const NvmeStore::Leftover& l : swap->removed_leftovers())
    stats.removed_leftovers.push_back(l.folder + " (" + std::to_string(l.bytes) + " bytes)");
  return stats;
}

}  // namespace minitorch::zero

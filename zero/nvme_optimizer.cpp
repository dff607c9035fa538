#include "zero/nvme_optimizer.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "minitorch/allocator.h"
#include "minitorch/not_implemented.h"
#include "minitorch/host_adamw.h"
#include "minitorch/ops.h"
#include "zero/partition.h"

namespace minitorch::zero {

namespace {
/// The three state files, in the order of a state buffer: master, m, v.
constexpr const char* kFiles[3] = {"optim.master", "optim.exp_avg", "optim.exp_avg_sq"};
constexpr std::int64_t kF32 = 4;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

/// One worker that runs jobs in the order they are submitted (the pipelined step's reads, or its writes).
class NvmeOptimizer::IoThread {
 public:
  IoThread() : thread_([this] { run(); }) {}
  ~IoThread() {
    {
      const std::lock_guard<std::mutex> g(mutex_);
      stop_ = true;
    }
    ready_.notify_one();
    thread_.join();
  }
  std::future<void> submit(std::function<void()> job) {
    std::packaged_task<void()> task(std::move(job));
    std::future<void> done = task.get_future();
    {
      const std::lock_guard<std::mutex> g(mutex_);
      jobs_.push_back(std::move(task));
    }
    ready_.notify_one();
    return done;
  }

 private:
  void run() {
    for (;;) {
      std::packaged_task<void()> job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();  // an exception lands in the job's future
    }
  }
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::packaged_task<void()>> jobs_;
  bool stop_ = false;
  std::thread thread_;  // last: it starts once the rest exists
};

NvmeOptimizer::NvmeOptimizer(std::vector<optim::ParamGroup> groups, const optim::AdamWOptions& options,
                             NvmeStore& store, Options tiles, const std::map<std::string, ParamFile>& on_disk)
    : options_(tiles), store_(store) {
  if (tiles.tile_elements < 0)
    throw std::invalid_argument("NvmeOptimizer: tile_elements must be >= 0, got " + std::to_string(tiles.tile_elements));
  for (std::size_t g = 0; g < groups.size(); ++g)
    for (const auto& [name, piece] : groups[g].params) {
      if (!piece.grad().defined())
        throw std::logic_error("NvmeOptimizer: piece '" + name + "' has no gradient buffer (Partition::optimizer_groups)");
      auto disk = on_disk.find(name);
      pieces_.push_back({name, piece, disk == on_disk.end() ? ParamFile{} : disk->second, piece.grad(), g, owned_});
      owned_ += piece.numel();
      param_dtype_ = piece.dtype(), grad_dtype_ = piece.grad().dtype();
    }
  adamw_ = std::make_unique<optim::AdamW>(std::move(groups), options);
  // The tiles: the owned elements end to end in pieces of tile_elements (0: one piece per tile).
  std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
  if (tiles.tile_elements == 0) {
    for (const Piece& p : pieces_) ranges.emplace_back(p.offset, p.offset + p.param.numel());
  } else {
    for (std::int64_t b = 0; b < owned_; b += tiles.tile_elements) ranges.emplace_back(b, std::min(owned_, b + tiles.tile_elements));
  }
  std::size_t first = 0;  // the first piece that may overlap the next tile
  for (const auto& [b, e] : ranges) {
    Tile t{b, e, {}};
    for (std::size_t i = first; i < pieces_.size() && pieces_[i].offset < e; ++i) {
      const std::int64_t p0 = pieces_[i].offset, p1 = p0 + pieces_[i].param.numel();
      const std::int64_t s0 = std::max(b, p0), s1 = std::min(e, p1);
      if (s0 < s1) t.segments.push_back({i, s0 - p0, s1 - s0, s0 - b});
      if (p1 <= e) first = i + 1;
    }
    if (e > b) tiles_.push_back(std::move(t));
    max_tile_ = std::max(max_tile_, e - b);
  }
  for (const char* f : kFiles) store_.reserve(f, kF32 * owned_);  // a full disk: one error now, naming the file
  if (tiles.pipeline_read) reader_ = std::make_unique<IoThread>();
  if (tiles.pipeline_write) writer_ = std::make_unique<IoThread>();
  refresh_masters();
}

NvmeOptimizer::~NvmeOptimizer() = default;

std::int64_t NvmeOptimizer::host_step_bytes() const {
  const std::int64_t slots = 1 + options_.pipeline_read + options_.pipeline_write;
  const std::int64_t sixteen = param_dtype_ == DType::f32 ? 0 : static_cast<std::int64_t>(dtype_size(grad_dtype_) + dtype_size(param_dtype_));
  return (slots * 3 * kF32 + kF32 + sixteen) * max_tile_;
}

std::int64_t NvmeOptimizer::disk_bytes() const {
  std::int64_t bytes = 0;
  for (const char* f : kFiles) bytes += store_.reserved(f);
  return bytes;
}

Tensor NvmeOptimizer::state_view(const Tensor& slot, int which, std::int64_t length) const {
  return slot.narrow(0, which * max_tile_, length);
}

void NvmeOptimizer::read_tile(const Tile& t, const Tensor& slot) {
  const std::int64_t n = t.end - t.begin;
  for (int f = 0; f < 3; ++f) store_.read(kFiles[f], kF32 * t.begin, state_view(slot, f, n).raw_data(), kF32 * n);
}

void NvmeOptimizer::write_tile(const Tile& t, const Tensor& slot) {
  const std::int64_t n = t.end - t.begin;
  for (int f = 0; f < 3; ++f) store_.write(kFiles[f], kF32 * t.begin, state_view(slot, f, n).raw_data(), kF32 * n);
}

// ---- the step: every tile read, updated on the host, written back ----

void NvmeOptimizer::compute_tile(const Tile& t, const Tensor& slot, float grad_multiplier, const Tensor& grad32,
                                 const Tensor& grad_in, const Tensor& copy16) {
  const std::int64_t n = t.end - t.begin;
  // down: the tile's gradients, widened to f32 (exactly) and × the multiplier, as the device's tiled step does
  Tensor g = grad32.narrow(0, 0, n);
  for (const Segment& s : t.segments) {
    const Tensor src = pieces_[s.piece].grad.narrow(0, s.begin, s.length);
    Tensor into = g.narrow(0, s.at, s.length);
    if (grad_in.defined()) {  // 16-bit: G bytes cross, then widen on the host
      Tensor landed = grad_in.narrow(0, s.at, s.length);
      landed.copy_(src);
      into.copy_(landed);
    } else {
      into.copy_(src);
    }
  }
  if (grad_multiplier != 1.f) ops::scale_(g, grad_multiplier);
  // update: one fused host pass per run of segments of one group (its lr and weight decay)
  float* master = static_cast<float*>(state_view(slot, 0, n).raw_data());
  float* m = static_cast<float*>(state_view(slot, 1, n).raw_data());
  float* v = static_cast<float*>(state_view(slot, 2, n).raw_data());
  const float* grad = static_cast<const float*>(g.raw_data());
  auto* copy = copy16.defined() ? static_cast<std::uint16_t*>(copy16.raw_data()) : nullptr;
  const optim::AdamWOptions& o = adamw_->options();
  for (std::size_t a = 0; a < t.segments.size();) {
    std::size_t b = a;
    std::int64_t len = 0;
    while (b < t.segments.size() && pieces_[t.segments[b].piece].group == pieces_[t.segments[a].piece].group)
      len += t.segments[b++].length;
    const optim::ParamGroup& grp = adamw_->param_groups()[pieces_[t.segments[a].piece].group];
    const std::int64_t at = t.segments[a].at;
    host_adamw_step(master + at, grad + at, DType::f32, m + at, v + at, len,
                    {grp.lr, o.beta1, o.beta2, o.eps, grp.weight_decay, adamw_->step_count()},
                    copy ? copy + at : nullptr, param_dtype_);
    a = b;
  }
  // up: the new values into the pieces (h2d to the device; in place where offload_param keeps them on the host;
  // into the shard's file where it keeps them on disk)
  for (const Segment& s : t.segments) {
    const Tensor src = copy16.defined() ? copy16.narrow(0, s.at, s.length) : state_view(slot, 0, n).narrow(0, s.at, s.length);
    const Piece& p = pieces_[s.piece];
    if (!p.file.file.empty()) {
      const auto width = static_cast<std::int64_t>(dtype_size(param_dtype_));
      store_.write(p.file.file, p.file.offset + s.begin * width, src.raw_data(), s.length * width);
      continue;
    }
    Tensor dst = p.param.narrow(0, s.begin, s.length);
    dst.copy_(src);
  }
  if (tile_hook_) {  // a frame of the tile in host memory (traced runs only)
    staged_ = &t;
    tile_hook_(static_cast<std::size_t>(&t - tiles_.data()));
    staged_ = nullptr;
  }
}

std::vector<NvmeOptimizer::StagedRange> NvmeOptimizer::staged() const {
  std::vector<StagedRange> out;
  if (staged_)
    for (const Segment& s : staged_->segments) out.push_back({pieces_[s.piece].name, s.begin, s.begin + s.length});
  return out;
}

std::size_t NvmeOptimizer::tiles_of_rank(const Partition& partition, int rank, std::int64_t tile_elements) {
  std::int64_t owned = 0;
  std::size_t pieces = 0;
  for (const ShardedBucket& bucket : partition.buckets()) {
    const std::int64_t lo = bucket.shard_begin(rank, partition.world()), hi = lo + bucket.numel / partition.world();
    std::int64_t at = 0;  // where each parameter starts in the bucket
    for (std::size_t p : bucket.members) {
      const std::int64_t n = partition.params()[p].second.numel();
      const std::int64_t overlap = std::min(hi, at + n) - std::max(lo, at);
      if (overlap > 0) owned += overlap, ++pieces;
      at += n;
    }
  }
  return tile_elements > 0 ? static_cast<std::size_t>((owned + tile_elements - 1) / tile_elements) : pieces;
}

void NvmeOptimizer::update(float grad_multiplier) {
  adamw_->begin_step();
  times_ = {};
  const std::size_t slots = 1 + options_.pipeline_read + options_.pipeline_write, n = tiles_.size();
  std::vector<Tensor> state(slots);
  Tensor grad32, grad_in, copy16;
  {
    TagScope scope(MemTag::optim);  // the tiles' master, m, v: the optimizer's state, swapped in
    for (Tensor& s : state) s = Tensor::empty({3 * max_tile_}, DType::f32, Device::cpu());
  }
  {
    TagScope scope(MemTag::optim_temp);  // one tile's gradient (and its 16-bit copies)
    grad32 = Tensor::empty({max_tile_}, DType::f32, Device::cpu());
    if (grad_dtype_ != DType::f32) grad_in = Tensor::empty({max_tile_}, grad_dtype_, Device::cpu());
    if (param_dtype_ != DType::f32) copy16 = Tensor::empty({max_tile_}, param_dtype_, Device::cpu());
  }
  std::vector<std::future<void>> reads(n), writes(n);
  std::vector<double> io(2 * n, 0.0);  // seconds of each tile's read and write
  auto wait = [&](std::future<void>& f) {
    if (!f.valid()) return;
    const auto t0 = std::chrono::steady_clock::now();
    f.get();
    times_.waited_seconds += seconds_since(t0);
  };
  auto read = [&](std::size_t k) {
    const auto t0 = std::chrono::steady_clock::now();
    read_tile(tiles_[k], state[k % slots]);
    io[2 * k] = seconds_since(t0);
  };
  auto write = [&](std::size_t k) {
    const auto t0 = std::chrono::steady_clock::now();
    write_tile(tiles_[k], state[k % slots]);
    io[2 * k + 1] = seconds_since(t0);
  };
  try {
    // BEGIN SOLUTION L11.1
    for (std::size_t k = 0; k < n; ++k) {
      if (reads[k].valid()) {
        wait(reads[k]);  // prefetched while the last tile updated
      } else {
        if (k >= slots) wait(writes[k - slots]);  // the slot's previous tile is out
        read(k);
        times_.waited_seconds += io[2 * k];
      }
      if (options_.pipeline_read && k + 1 < n) {
        if (k + 1 >= slots) wait(writes[k + 1 - slots]);
        reads[k + 1] = reader_->submit([&read, k] { read(k + 1); });
      }
      compute_tile(tiles_[k], state[k % slots], grad_multiplier, grad32, grad_in, copy16);
      if (options_.pipeline_write) {
        writes[k] = writer_->submit([&write, k] { write(k); });
      } else {
        write(k);
        times_.waited_seconds += io[2 * k + 1];
      }
    }
    for (std::future<void>& w : writes) wait(w);
    // END SOLUTION
  } catch (...) {  // the I/O threads must be done with the buffers before they are freed
    for (auto* jobs : {&reads, &writes})
      for (std::future<void>& f : *jobs)
        if (f.valid()) f.wait();
    throw;
  }
  for (double s : io) times_.io_seconds += s;
  if (tile_hook_)
    for (std::size_t k = n; k < hook_calls_; ++k) tile_hook_(k);  // this rank is done: its frames show no tile
}

void NvmeOptimizer::refresh_masters() {
  Tensor buf;
  {
    TagScope scope(MemTag::optim_temp);
    buf = Tensor::empty({max_tile_}, DType::f32, Device::cpu());
  }
  for (const Tile& t : tiles_) {
    for (const Segment& s : t.segments) {
      Tensor into = buf.narrow(0, s.at, s.length);
      TagScope scope(MemTag::optim_temp);  // a 16-bit piece widens through a temporary
      const Piece& p = pieces_[s.piece];
      if (p.file.file.empty()) {
        into.copy_(p.param.narrow(0, s.begin, s.length));
        continue;
      }
      Tensor stored = Tensor::empty({s.length}, param_dtype_, Device::cpu());  // on disk: read it back
      const auto width = static_cast<std::int64_t>(dtype_size(param_dtype_));
      store_.read(p.file.file, p.file.offset + s.begin * width, stored.raw_data(), s.length * width);
      into.copy_(stored);
    }
    store_.write(kFiles[0], kF32 * t.begin, buf.raw_data(), kF32 * (t.end - t.begin));
  }
}

// ---- checkpoints: the states read back whole, under AdamW's names ----

nn::NamedTensors NvmeOptimizer::state_tensors() const {
  nn::NamedTensors state;
  if (adamw_->step_count() == 0) return state;  // as AdamW: no state before the first update
  const bool sixteen = param_dtype_ != DType::f32;
  for (const Piece& p : pieces_) {
    const char* kinds[3] = {"exp_avg.", "exp_avg_sq.", "master."};
    for (int f : {1, 2, 0}) {  // AdamW's order: exp_avg, exp_avg_sq, master
      if (f == 0 && !sixteen) continue;  // an f32 piece is its own master
      Tensor t = Tensor::empty(p.param.shape(), DType::f32, Device::cpu());
      store_.read(kFiles[f], kF32 * p.offset, t.raw_data(), kF32 * p.param.numel());
      state.emplace_back(kinds[f == 0 ? 2 : f - 1] + p.name, t);
    }
  }
  return state;
}

void NvmeOptimizer::load_state(const nn::NamedTensors& state, std::int64_t steps) {
  refresh_masters();  // the parameters were loaded first: an f32 master is the parameter itself
  std::map<std::string, Tensor> given;
  for (const auto& [key, t] : state) {
    if (!given.emplace(key, t).second) throw std::runtime_error("NvmeOptimizer::load_state: key '" + key + "' appears twice");
  }
  const bool sixteen = param_dtype_ != DType::f32;
  std::set<std::string> used;
  for (const Piece& p : pieces_) {
    const std::string keys[3] = {"master." + p.name, "exp_avg." + p.name, "exp_avg_sq." + p.name};
    for (int f = 0; f < 3; ++f) {
      if (f == 0 && !sixteen) continue;
      auto it = given.find(keys[f]);
      if (it == given.end()) {
        if (state.empty()) continue;  // a save from before the first update: m, v start at zero below
        throw std::runtime_error("NvmeOptimizer::load_state: incomplete state for '" + p.name + "' (no '" + keys[f] + "')");
      }
      const Tensor& t = it->second;
      if (t.numel() != p.param.numel() || t.dtype() != DType::f32)
        throw std::runtime_error("NvmeOptimizer::load_state: '" + keys[f] + "' is " + t.describe() + "; the piece has " +
                                 std::to_string(p.param.numel()) + " elements and optimizer states are f32");
      const Tensor host = t.to(Device::cpu()).contiguous();
      store_.write(kFiles[f], kF32 * p.offset, host.raw_data(), kF32 * p.param.numel());
      used.insert(keys[f]);
    }
  }
  for (const auto& [key, t] : given)
    if (!used.contains(key))
      throw std::runtime_error("NvmeOptimizer::load_state: unexpected key '" + key +
                               "' (expected exp_avg.<piece>, exp_avg_sq.<piece>" + (sixteen ? ", master.<piece>" : "") +
                               " of this rank's pieces)");
  if (state.empty()) {  // no saved moments: zeros, as a fresh AdamW starts
    Tensor zeros = Tensor::zeros({max_tile_}, DType::f32, Device::cpu());
    for (const Tile& t : tiles_)
      for (int f = 1; f < 3; ++f) store_.write(kFiles[f], kF32 * t.begin, zeros.raw_data(), kF32 * (t.end - t.begin));
  }
  adamw_->load_state({}, steps);
}

}  // namespace minitorch::zero

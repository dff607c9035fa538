// Lesson 12's runs on the simulated accelerator (gemini_runs.h).
#include "gemini_runs.h"

#include <mpi.h>

#include <algorithm>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

#include "data/batch_sampler.h"
#include "minitorch/allocator.h"
#include "runtime/byte_size.h"
#include "runtime/out_of_memory.h"

using namespace minitorch;

namespace lesson12 {

namespace {

/// Keeps Gemini's chunk events (gemini_load, gemini_evict) and drops the rest: a step emits thousands of
/// allocator events the lesson does not read.
class ChunkEvents : public events::Sink {
 public:
  void on_event(const events::Event& e) override {
    if (!e.name.starts_with("gemini_")) return;
    std::lock_guard<std::mutex> lock(mutex_);
    kept_.push_back({e.name, e.scope, e.bytes});
  }
  std::vector<ChunkEvent> kept() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return kept_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<ChunkEvent> kept_;
};

std::string fraction(double f) {
  char text[16];
  std::snprintf(text, sizeof text, "%.1f", f);
  return text;
}

}  // namespace

std::string Setup::name() const {
  switch (method) {
    case Method::ddp: return "DDP";
    case Method::zero3: return "ZeRO-3";
    case Method::offload_optimizer: return "ZeRO-3 + offload_optimizer cpu";
    case Method::offload_param: return "ZeRO-3 + offload_param cpu";
    case Method::gemini_static:
      if (offload_optim_frac == 0 && offload_param_frac == 0) return "Gemini static";
      return "Gemini static (offload_optim_frac " + fraction(offload_optim_frac) + ", offload_param_frac " +
             fraction(offload_param_frac) + ")";
    case Method::gemini_auto: return "Gemini auto";
  }
  return "?";
}

runtime::Config config_of(const Setup& s, int N) {
  nlohmann::json j = nlohmann::json::parse(R"({
    "train_micro_batch_size_per_gpu": 1, "gradient_clipping": 1.0,
    "optimizer": {"type": "AdamW", "params": {"lr": 2e-3, "betas": [0.9, 0.99], "eps": 1e-8, "weight_decay": 0.1}},
    "model": {"name": "baby"}, "comm": {"timeout_s": 60},
    "training": {"seed": 1337, "tokenizer": "char"}})");
  j["gradient_accumulation_steps"] = s.micro_steps;
  // stage3_param_persistence_threshold 0: the baby's tensors are all below DeepSpeed's default 1e5, which would keep
  // every one whole on the card and leave ZeRO-3 nothing to shard. Gemini ignores the key (it warns): chunks, not
  // tensors, are its units.
  nlohmann::json zero = {{"stage", 3}, {"stage3_param_persistence_threshold", 0}};
  switch (s.method) {
    case Method::ddp: zero = {{"stage", 0}}; break;
    case Method::zero3: break;
    case Method::offload_param: zero["offload_param"] = {{"device", "cpu"}}; [[fallthrough]];
    case Method::offload_optimizer: zero["offload_optimizer"] = {{"device", "cpu"}}; break;
    case Method::gemini_static:
    case Method::gemini_auto: {
      zero = {{"stage", 3}};
      nlohmann::json g = {{"min_chunk_size_m", kMinChunkM}, {"search_range_m", kSearchRangeM}};
      if (s.method == Method::gemini_auto) {
        g["placement_policy"] = "auto";
      } else {
        g["placement_policy"] = "static";
        g["offload_optim_frac"] = s.offload_optim_frac;
        g["offload_param_frac"] = s.offload_param_frac;
      }
      j["gemini"] = g;
      break;
    }
  }
  j["zero_optimization"] = zero;
  if (s.schedule_steps > 0) {  // configs/baby.json's schedule
    j["scheduler"] = {{"type", "WarmupDecayLR"},
                      {"params", {{"warmup_min_lr", 0.0}, {"warmup_max_lr", 2e-3},
                                  {"warmup_num_steps", std::max(1LL, s.schedule_steps / 12)},
                                  {"total_num_steps", s.schedule_steps}, {"warmup_type", "linear"}}}};
    j["training"]["steps"] = s.schedule_steps;
  }
  return runtime::Config::from_json(j.dump(), N, "lesson-12 (" + s.name() + ")");
}
// comm.timeout_s 60: every rank runs the same allocations and fails at the same one; were one rank ever to go on
// alone, the others would end the job after a minute in their collective instead of waiting forever.

data::BatchSampler train_sampler(const data::TextDataset& ds, const runtime::Config& cfg) {
  return data::BatchSampler(ds.tokens_ptr(data::Split::train), cfg.train_micro_batch_size_per_gpu,
                            cfg.model.block_size, cfg.training.seed);
}

std::int64_t Run::chunk_elements() const {
  std::int64_t n = 0;
  for (std::int64_t a : layout.allocated) n += a;
  return n;
}

Run measure(dist::ProcessGroup& world, const data::TextDataset& ds, const Setup& setup, const Measure& how) {
  const runtime::Config cfg = config_of(setup, world.size());
  const data::BatchSampler sampler = train_sampler(ds, cfg);
  Run r;
  r.capacity = how.capacity;
  try {
    std::unique_ptr<runtime::Engine> engine = lesson::engine_on_sim(cfg, ds.tokenizer().vocab_size(), how.capacity, world);
    r.psi = engine->model().num_parameters();
    const gemini::Gemini* g = engine->strategy_as<gemini::Gemini>();
    if (g) {
      r.layout = g->layout();
      const std::int64_t P = engine->plan().bytes.P;
      for (std::int64_t elements : r.layout.allocated) r.shard_bytes.push_back(P * elements / world.size());
    }
    if (how.before) how.before(*engine);
    for (int s = 1; s <= how.steps; ++s) {
      const TransferStats t0 = transfer_stats();
      const gemini::Gemini::AutoStats a0 = g ? g->auto_stats() : gemini::Gemini::AutoStats{};
      const std::int64_t gathers0 = g ? g->gathers() : 0;
      StepRecord step;
      ChunkEvents sink;
      {
        std::optional<events::Attach> listening;  // only during the step whose events the beat prints
        if (s == how.record_step) listening.emplace(sink);
        step.loss = engine->train_batch(sampler);
      }
      const TransferStats t1 = transfer_stats();
      step.h2d = t1.h2d - t0.h2d, step.d2h = t1.d2h - t0.d2h;
      if (g) {
        const gemini::Gemini::AutoStats& a1 = g->auto_stats();
        step.gathers = g->gathers() - gathers0;
        step.loads = a1.loads - a0.loads, step.evictions = a1.evictions - a0.evictions;
        step.refreshes = a1.refreshes - a0.refreshes, step.uncached = a1.uncached_gathers - a0.uncached_gathers;
      }
      if (s == how.record_step) r.events = sink.kept();
      r.steps.push_back(step);
    }
    if (how.after) how.after(*engine);
    if (g) {
      r.auto_stats = g->auto_stats();
      r.schedule = g->schedule();
      r.moment_starts = g->moment_starts();
      r.period_peaks = g->period_peaks();
    }
  } catch (const runtime::OutOfMemoryError& e) {  // the engine's, on every rank at the same allocation
    r.out_of_memory = true;
    r.error = e.what();
  }
  r.device_peak = lesson::card_after(cfg, "lesson-12", setup.name()).peak_total;

  // Every rank's figures to every rank: rank 0 prints its own and says whether the others agree. The error's first
  // line without "of rank r": what was asked and what was in use, equal on every rank?
  std::vector<std::int64_t> mine = {r.out_of_memory, lesson::error_fingerprint(r.error),
                                    static_cast<std::int64_t>(r.steps.size()), r.device_peak};
  // Not d2h: under Gemini a rank brings down the used part of its gradient shards, and the chunks' empty tails
  // fall in the last ranks' shards (beat 5 checks each rank's against its own formula).
  for (const StepRecord& s : r.steps)
    mine.insert(mine.end(), {s.h2d, s.gathers, s.loads, s.evictions, s.refreshes, s.uncached});
  std::vector<std::int64_t> sizes(static_cast<std::size_t>(world.size()));
  const std::int64_t size = static_cast<std::int64_t>(mine.size());
  MPI_Allgather(&size, 1, MPI_INT64_T, sizes.data(), 1, MPI_INT64_T, MPI_COMM_WORLD);
  if (std::any_of(sizes.begin(), sizes.end(), [&](std::int64_t n) { return n != size; })) {
    r.same_on_every_rank = false;  // ranks that stopped at different steps: not comparable figure by figure
    r.ranks_out_of_memory = r.out_of_memory ? world.size() : 0;
    return r;
  }
  const std::vector<std::int64_t> all = lesson::all_ranks(mine, world.size());
  for (int rank = 0; rank < world.size(); ++rank) {
    const std::size_t at = static_cast<std::size_t>(rank) * mine.size();
    r.ranks_out_of_memory += static_cast<int>(all[at]);
    for (std::size_t k = 1; k < mine.size(); ++k) r.same_on_every_rank &= all[at + k] == mine[k];
  }
  return r;
}

std::int64_t used_in_shards(const gemini::GeminiLayout& layout, int rank, int N) {
  std::int64_t n = 0;
  for (std::size_t c = 0; c < layout.size(); ++c) {
    const std::int64_t shard = layout.allocated[c] / N, begin = rank * shard;
    n += std::clamp<std::int64_t>(layout.chunks.chunks[c].used() - begin, 0, shard);
  }
  return n;
}

runtime::BytesPerParameter fp32() { return runtime::bytes_per_parameter(/*bf16=*/false); }

std::string mib(double bytes) { return runtime::format_mib(bytes); }

std::string short_name(const std::string& name) {
  std::string s = name;
  if (s.starts_with("transformer.")) s.erase(0, 12);
  if (s.starts_with("h.")) s.erase(1, 1);  // "h.0.attn" -> "h0.attn"
  for (const auto& [full, brief] : {std::pair<std::string, std::string>{".weight", ".w"}, {".bias", ".b"}})
    if (s.ends_with(full)) s = s.substr(0, s.size() - full.size()) + brief;
  return s;
}

bool on_every_rank(bool ok) {
  int mine = ok, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return all != 0;
}

}  // namespace lesson12

// Lesson 11's runs on the simulated accelerator, with the swap under a temporary folder (infinity_runs.h).
#include "infinity_runs.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "data/batch_sampler.h"
#include "nn/gpt.h"
#include "runtime/byte_size.h"
#include "runtime/out_of_memory.h"
#include "runtime/plan.h"
#include "runtime/run_id.h"
#include "zero/nvme_optimizer.h"
#include "zero/sharded_strategy.h"
#include "zero/stage3.h"

using namespace minitorch;
namespace fs = std::filesystem;

namespace lesson11 {

using lesson::all_ranks;
using lesson::error_fingerprint;
using lesson::lift_sim_capacity;

namespace {
long long ll(std::int64_t v) { return static_cast<long long>(v); }



/// What runtime::estimate.h predicts for this rank of `engine` (stage 3), to the byte: planned from the stage's own
/// Partition and its units, as the run report and minitorch-estimate do.
runtime::ExactOffload predicted(const runtime::Engine& engine) {
  const auto* stage3 = engine.strategy_as<zero::Stage3>();
  if (stage3 == nullptr) throw std::logic_error("lesson-11: every run is ZeRO-3 on several ranks");
  std::vector<bool> persistent(stage3->partition().buckets().size(), true);
  for (const zero::Unit& unit : stage3->units()) persistent[unit.bucket_index()] = false;
  const zero::ZeroConfig& z = engine.config().zero;
  const runtime::BytesPerParameter b = engine.plan().bytes;
  if (!z.offload_optimizer.enabled()) {  // plain ZeRO-3: everything on the card
    runtime::ExactOffload e;
    e.device = runtime::exact_model_states(3, stage3->partition(), b, persistent);
    return e;
  }
  return runtime::exact_offload_states(
      3, stage3->partition(), b, persistent,
      {.param = z.offload_param.enabled(), .param_on_disk = z.offload_param.on_nvme(),
       .nvme = z.offload_optimizer.on_nvme(), .micro_steps = engine.config().gradient_accumulation_steps,
       .tile_elements = z.sub_group_size,
       .slots = 1 + z.offload_optimizer.pipeline_read + z.offload_optimizer.pipeline_write});
}

/// Whether `m`'s measured bytes are `m.exact`'s, every pool and every transfer (and the NVMe step's host bytes).
bool measured_is_exact(const Measured& m, bool nvme) {
  const auto same = [](const zero::ModelStateBytes& a, const zero::ModelStateBytes& b) {
    return a.param == b.param && a.grad == b.grad && a.optim == b.optim;
  };
  const runtime::ExactOffload& e = m.exact;
  return same(m.device, e.device) && same(m.host, e.host) && same(m.disk, e.disk) && m.step.d2h == e.d2h &&
         m.step.h2d == e.h2d && m.step.disk_read == e.disk_read && m.step.disk_write == e.disk_write &&
         (!nvme || m.host_optim_peak + m.host_temp_peak == e.host_step);
}

/// Rank 0's swap folder: each file and its bytes on disk, by name.
std::vector<std::pair<std::string, std::int64_t>> files_in(const std::string& folder) {
  std::vector<std::pair<std::string, std::int64_t>> files;
  for (const auto& e : fs::directory_iterator(folder))
    if (e.is_regular_file()) files.emplace_back(e.path().filename().string(), static_cast<std::int64_t>(e.file_size()));
  std::sort(files.begin(), files.end());
  return files;
}
}  // namespace

// ---- the swap root ----

SwapRoot::SwapRoot(dist::ProcessGroup& world)
    : path_((fs::temp_directory_path() / ("minitorch-lesson11-" + runtime::new_run_id(world))).string()),
      rank0_(world.rank() == 0) {
  if (rank0_) fs::create_directories(path_);
  world.barrier();  // the folder exists before any rank's engine opens its swap in it
}

SwapRoot::~SwapRoot() {
  std::error_code ignored;
  if (rank0_ && !removed_) fs::remove_all(path_, ignored);
}

bool SwapRoot::remove(dist::ProcessGroup& world) {
  world.barrier();  // every rank's engine, and with it its swap folder, is gone
  if (rank0_) fs::remove_all(path_);
  removed_ = true;
  return !fs::exists(path_);
}

// ---- one configuration ----

std::string Setup::name() const {
  std::string s = "ZeRO-3";
  if (optimizer != "none") s += " + offload_optimizer " + optimizer;
  if (param != "none") s += " + offload_param " + param;
  return s;
}

std::string config_json(const Setup& s, const std::string& nvme_path) {
  nlohmann::json zero = {{"stage", 3}, {"reduce_bucket_size", s.bucket}, {"stage3_prefetch_bucket_size", 200000},
                         {"stage3_param_persistence_threshold", 0}};  // every tensor in a unit: nothing stays whole
  if (s.tile > 0) zero["sub_group_size"] = s.tile;
  const auto offload = [&](const std::string& device) {
    nlohmann::json o = {{"device", device}};
    if (device == "nvme") o["nvme_path"] = nvme_path;
    return o;
  };
  if (s.optimizer != "none") {
    zero["offload_optimizer"] = offload(s.optimizer);
    if (s.nvme()) zero["offload_optimizer"]["pipeline_read"] = zero["offload_optimizer"]["pipeline_write"] = s.pipeline;
  }
  if (s.param != "none") zero["offload_param"] = offload(s.param);
  nlohmann::json j = nlohmann::json::parse(R"({
    "train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 4, "gradient_clipping": 1.0,
    "optimizer": {"type": "AdamW", "params": {"lr": 2e-3, "betas": [0.9, 0.99], "eps": 1e-8, "weight_decay": 0.1}},
    "comm": {"timeout_s": 60},
    "training": {"seed": 1337, "tokenizer": "char"}})");
  j["zero_optimization"] = zero;
  j["model"] = {{"name", "baby"}, {"n_layer", s.layers}, {"block_size", s.block_size}, {"n_embd", s.width}};
  return j.dump();
}
// comm.timeout_s 60: every rank runs the same allocations and fails at the same one; were one rank ever to go on
// alone, the others would end the job after a minute in their collective instead of waiting forever.

runtime::BytesPerParameter fp32() { return runtime::bytes_per_parameter(/*bf16=*/false); }

std::string mib(double bytes) { return runtime::format_mib(bytes); }

const char* agrees(std::int64_t measured, std::int64_t predicted) {
  return measured == predicted ? "(= exact)" : "(DIFFERENT)";
}


Measured measure(dist::ProcessGroup& world, const data::TextDataset& ds, const Setup& setup, std::int64_t capacity,
                 const std::string& nvme_path) {
  const runtime::Config cfg =
      runtime::Config::from_json(config_json(setup, nvme_path), world.size(), "lesson-11 (" + setup.name() + ")");
  const data::BatchSampler sampler(ds.tokens_ptr(data::Split::train), cfg.train_micro_batch_size_per_gpu,
                                   cfg.model.block_size, cfg.training.seed);
  Measured m;
  m.micro_steps = static_cast<int>(cfg.gradient_accumulation_steps);
  try {
    std::unique_ptr<runtime::Engine> engine = engine_on_sim(cfg, ds.tokenizer().vocab_size(), capacity, world);
    m.psi = engine->model().num_parameters();
    engine->train_batch(sampler);  // step 1: AdamW makes its states (on the card, the host or the disk)
    m.steps_done = 1;
    reset_peak_memory(Device::cpu());  // the host's peaks of step 2 alone: the tiled step's buffers
    const TransferStats before = transfer_stats();
    engine->train_batch(sampler);  // step 2: what is measured
    m.steps_done = 2;
    const TransferStats after = transfer_stats();
    m.step = {after.h2d - before.h2d, after.d2h - before.d2h, after.io_h2d - before.io_h2d,
              after.io_d2h - before.io_d2h, after.disk_read - before.disk_read, after.disk_write - before.disk_write};
    const MemoryStats host = memory_stats(Device::cpu());
    m.host_optim_peak = host.peak(MemTag::optim);
    m.host_temp_peak = host.peak(MemTag::optim_temp);
    m.device = engine->measured_model_states();
    m.host = engine->measured_host_model_states();
    m.disk = engine->strategy().disk_model_state_bytes();
    m.exact = predicted(*engine);
    const auto* sharded = engine->strategy_as<zero::ShardedStrategy>();
    for (const zero::ShardPiece& p : sharded->partition().pieces()) m.owned += p.range.size();
    for (const zero::Unit& u : engine->strategy_as<zero::Stage3>()->units())
      m.largest_unit = std::max(m.largest_unit, u.numel());
    if (const zero::NvmeOptimizer* nvme = sharded->sharded_optimizer().nvme()) {
      m.host_step_bytes = nvme->host_step_bytes();
      m.tiles = static_cast<std::int64_t>(nvme->tiles());
      m.io_s = nvme->last_step_times().io_seconds;
      m.waited_s = nvme->last_step_times().waited_seconds;
      const zero::NvmeStore& swap = *sharded->sharded_optimizer().swap();
      if (world.rank() == 0) m.files = files_in(swap.folder());
      m.not_direct = swap.why_not_direct();
    }
  } catch (const runtime::OutOfMemoryError& e) {  // the engine's, on every rank at the same allocation
    m.out_of_memory = true;
    m.error = e.what();
  }
  const MemoryStats dev = lesson::card_after(cfg, "lesson-11", setup.name());
  m.device_peak = dev.peak_total;
  m.comm_peak = dev.peak(MemTag::comm);

  // Every rank's numbers to every rank: rank 0 prints its own and says whether the others agree.
  // The error's first line without "of rank r": what was asked and what was in use, equal on every rank?
  const std::int64_t fingerprint = error_fingerprint(m.error);
  const std::vector<std::int64_t> mine = {
      m.out_of_memory, fingerprint,      m.steps_done,    m.device.param,   m.device.grad,     m.device.optim,
      m.host.param,    m.host.grad,      m.host.optim,    m.disk.param,     m.disk.optim,      m.step.h2d,
      m.step.d2h,      m.step.disk_read, m.step.disk_write, m.device_peak,  m.comm_peak,       m.host_optim_peak,
      m.host_temp_peak, m.host_step_bytes, m.tiles,
      m.out_of_memory || measured_is_exact(m, setup.nvme())};  // last: this rank's bytes = its exact prediction
  const std::vector<std::int64_t> all = all_ranks(mine, world.size());
  for (int r = 0; r < world.size(); ++r) {
    const std::size_t at = static_cast<std::size_t>(r) * mine.size();
    m.ranks_out_of_memory += static_cast<int>(all[at]);
    for (std::size_t k = 1; k + 1 < mine.size(); ++k) m.same_on_every_rank &= all[at + k] == mine[k];
    m.exact_on_every_rank &= all[at + mine.size() - 1] == 1;
  }
  return m;
}


// ---- the last beat: the baby GPT on the KJV, its optimizer and parameters on NVMe ----

namespace {
/// configs/zero3_offload.json's batch (micro-batch 1, 4 micro-steps) with configs/baby.json's AdamW, clipping and
/// schedule over `steps`, and `zero` as its zero_optimization.
runtime::Config kjv_config(const std::string& seeds_text, long long steps, const nlohmann::json& zero, int N,
                           const std::string& source) {
  nlohmann::json j = nlohmann::json::parse(seeds_text);
  j.merge_patch(nlohmann::json::parse(R"({
    "gradient_clipping": 1.0,
    "optimizer": {"type": "AdamW", "params": {"lr": 2e-3, "betas": [0.9, 0.99], "eps": 1e-8, "weight_decay": 0.1}},
    "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": 0.0, "warmup_max_lr": 2e-3,
                  "warmup_num_steps": )" + std::to_string(std::max(1LL, steps / 12)) + R"(, "total_num_steps": )" +
                                      std::to_string(steps) + R"(, "warmup_type": "linear"}},
    "model": {"name": "baby"}, "comm": {"timeout_s": 60},
    "training": {"steps": )" + std::to_string(steps) + R"(, "seed": 1337, "tokenizer": "char"}})"));
  j["zero_optimization"] = zero;
  return runtime::Config::from_json(j.dump(), N, source);
}

/// One training run's losses and its last step's bytes.
struct Trained {
  std::vector<float> losses;
  float train = 0, val = 0;
  double ms_per_step = 0;
  std::int64_t tile = 0;  // sub_group_size
  Measured last;          // the pools at the last step, its copies and disk traffic
};

/// `ok` on every rank.
bool on_every_rank(bool ok) {
  int mine = ok, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return all != 0;
}

Trained train(dist::ProcessGroup& world, const data::TextDataset& ds, const runtime::Config& cfg, long long steps,
              bool quick) {
  const data::BatchSampler sampler(ds.tokens_ptr(data::Split::train), cfg.train_micro_batch_size_per_gpu,
                                   cfg.model.block_size, cfg.training.seed);
  data::BatchSampler train_eval(ds.tokens_ptr(data::Split::train), 8, cfg.model.block_size, cfg.training.seed + 2);
  data::BatchSampler val_eval(ds.tokens_ptr(data::Split::val), 8, cfg.model.block_size, cfg.training.seed + 1);
  const std::int64_t eval_iters = quick ? 2 : 20;
  Trained t;
  t.tile = cfg.zero.sub_group_size;
  {
    std::unique_ptr<runtime::Engine> engine = engine_on_sim(cfg, ds.tokenizer().vocab_size(), 0, world);
    const auto t0 = std::chrono::steady_clock::now();
    TransferStats before, after;
    while (engine->global_steps() < steps) {
      reset_peak_memory(Device::cpu());
      before = transfer_stats();
      t.losses.push_back(engine->train_batch(sampler));
      after = transfer_stats();
    }
    t.ms_per_step = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
                    static_cast<double>(steps);
    Measured& m = t.last;
    m.micro_steps = static_cast<int>(cfg.gradient_accumulation_steps);
    const MemoryStats host = memory_stats(Device::cpu());
    m.host_optim_peak = host.peak(MemTag::optim), m.host_temp_peak = host.peak(MemTag::optim_temp);
    m.step = {after.h2d - before.h2d, after.d2h - before.d2h, 0, 0, after.disk_read - before.disk_read,
              after.disk_write - before.disk_write};
    m.psi = engine->model().num_parameters();
    m.device = engine->measured_model_states();
    m.host = engine->measured_host_model_states();
    m.disk = engine->strategy().disk_model_state_bytes();
    m.exact = predicted(*engine);
    t.train = engine->evaluate(train_eval, eval_iters);
    t.val = engine->evaluate(val_eval, eval_iters);
  }
  lift_sim_capacity(cfg);
  return t;
}

/// One row of the closing table: `what`, plain ZeRO-3's measured bytes and formula, the NVMe run's measured, exact
/// and formula.
void row(const char* what, std::int64_t plain, double plain_formula, std::int64_t nvme, std::int64_t exact,
         double formula, const std::string& text) {
  std::printf("  %-22s %10lld %10.0f   %10lld %10lld %10.0f  %s\n", what, ll(plain), plain_formula, ll(nvme), ll(exact),
              formula, text.c_str());
}
}  // namespace

void train_on_nvme(dist::ProcessGroup& world, const data::TextDataset& ds, long long steps, const std::string& nvme_path,
                   bool quick) {
  std::ifstream file("configs/zero3_offload.json");
  if (!file) throw std::runtime_error("configs/zero3_offload.json not found: run the lesson from the repository root");
  const std::string seeds((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  // stage3_param_persistence_threshold 0: the baby's tensors are all below DeepSpeed's default 1e5, which would keep
  // every one of them whole on the card (lesson 10's last beat) and leave offload_param nothing to move.
  const nlohmann::json plain = {{"stage", 3}, {"stage3_param_persistence_threshold", 0}};
  nlohmann::json nvme = plain;
  nvme["offload_optimizer"] = {{"device", "nvme"}, {"nvme_path", nvme_path}};
  nvme["offload_param"] = {{"device", "nvme"}, {"nvme_path", nvme_path}};
  std::printf("zero_optimization: %s\n(nvme_path: a folder under the system's temporary directory, removed at the end)\n\n",
              nvme.dump().c_str());
  const int N = world.size();
  Trained runs[2];
  const char* names[] = {"ZeRO-3", "ZeRO-3 + NVMe"};
  for (int k = 0; k < 2; ++k) {
    const runtime::Config cfg = kjv_config(seeds, steps, k == 0 ? plain : nvme, N, names[k]);
    runs[k] = train(world, ds, cfg, steps, quick);
    std::printf("%-14s %lld steps, %.0f ms/step\n", names[k], steps, runs[k].ms_per_step);
    std::fflush(stdout);
  }
  std::printf("\nstep    ZeRO-3   ZeRO-3 + NVMe\n");
  double worst = 0;
  for (long long i = 1; i <= steps; ++i) {
    const float a = runs[0].losses[static_cast<std::size_t>(i - 1)], b = runs[1].losses[static_cast<std::size_t>(i - 1)];
    worst = std::max(worst, std::abs(static_cast<double>(b) - a) / std::abs(static_cast<double>(a)));
    if (i % 20 == 0 || i == 1 || i == steps) std::printf("%4lld  %8.4f  %8.4f\n", i, a, b);
  }
  for (int k = 0; k < 2; ++k) std::printf("%-14s train loss %.4f, val loss %.4f\n", names[k], runs[k].train, runs[k].val);
  std::printf("max relative difference of the %lld losses: %.1e, %s\n", steps, worst,
              worst <= 1e-6 ? "within fp32's 1e-6" : "ABOVE fp32's 1e-6");

  // The closing table: every pool of the last step, per rank (rank 0's), beside the formulas.
  const Measured& p = runs[0].last;
  const Measured& n = runs[1].last;
  const double psi = static_cast<double>(n.psi);
  const runtime::ModelStateEstimate z3 = runtime::model_state_bytes(3, psi, N, fp32());
  const runtime::NvmeEstimate f = runtime::nvme_state_bytes(psi, N, fp32(), n.micro_steps, "nvme",
                                                            static_cast<double>(runs[1].tile), /*slots=*/1);
  std::printf("\nper rank (rank 0), bytes of the last step:\n  %-22s %21s   %32s\n  %-22s %10s %10s   %10s %10s %10s  %s\n",
              "", "ZeRO-3", "ZeRO-3 + NVMe", "", "measured", "formula", "measured", "exact", "formula",
              "formulas: ZeRO-3; ZeRO-3 + NVMe");
  row("device param", p.device.param, z3.param, n.device.param, n.exact.device.param, f.device.param, "PΨ/N; 0");
  row("device grad", p.device.grad, z3.grad, n.device.grad, n.exact.device.grad, f.device.grad, "GΨ/N; GΨ/N");
  row("device optim", p.device.optim, z3.optim, n.device.optim, n.exact.device.optim, f.device.optim, "KΨ/N; 0");
  row("host model states", p.host.total(), 0, n.host.total(), n.exact.host.total(), f.host.total(), "0; 0 between steps");
  row("host in the step", p.host_optim_peak + p.host_temp_peak, 0, n.host_optim_peak + n.host_temp_peak,
      n.exact.host_step, f.host_step, "0; (12·slots + 4)·t, t = min(sub_group_size, Ψ/N)");
  row("disk param", p.disk.param, 0, n.disk.param, n.exact.disk.param, f.disk.param,
      "0; PΨ/N (exact: each file rounded up to 4 KiB)");
  row("disk optim", p.disk.optim, 0, n.disk.optim, n.exact.disk.optim, f.disk.optim, "0; 12Ψ/N (master, m, v)");
  row("d2h per step", p.step.d2h, 0, n.step.d2h, n.exact.d2h, f.d2h, "0; GΨ/N");
  row("h2d per step", p.step.h2d, 0, n.step.h2d, n.exact.h2d, f.h2d, "0; 2A·PΨ/N");
  row("disk read per step", p.step.disk_read, 0, n.step.disk_read, n.exact.disk_read, f.disk_read, "0; 12Ψ/N + 2A·PΨ/N");
  row("disk write per step", p.step.disk_write, 0, n.step.disk_write, n.exact.disk_write, f.disk_write, "0; 12Ψ/N + PΨ/N");
  const bool plain_exact = p.device.param == p.exact.device.param && p.device.grad == p.exact.device.grad &&
                           p.device.optim == p.exact.device.optim;
  const bool nvme_exact = measured_is_exact(n, true);
  std::printf("measured = exact, every pool and transfer, on every rank: ZeRO-3 %s, ZeRO-3 + NVMe %s\n",
              on_every_rank(plain_exact) ? "yes" : "NO", on_every_rank(nvme_exact) ? "yes" : "NO");
}

}  // namespace lesson11

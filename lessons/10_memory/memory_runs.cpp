// Lesson 10's runs on the simulated accelerator and its printouts (memory_runs.h).
#include "memory_runs.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <functional>
#include <stdexcept>

#include "minitorch/allocator.h"
#include "nn/gpt.h"
#include "runtime/byte_size.h"
#include "runtime/engine.h"
#include "runtime/out_of_memory.h"
#include "runtime/plan.h"

using namespace minitorch;

namespace lesson10 {

using lesson::all_ranks;
using lesson::error_fingerprint;

namespace {
long long ll(std::int64_t v) { return static_cast<long long>(v); }
const runtime::BytesPerParameter kFp32 = runtime::bytes_per_parameter(/*bf16=*/false);  // P, G, K = 4, 4, 8

}  // namespace

std::string Setup::name() const {
  std::string s = stage == 0 ? "DDP" : "ZeRO-" + std::to_string(stage);
  if (offload) s += " + offload";
  if (checkpointing) s += cpu_checkpointing ? " + cpu_checkpointing" : " + checkpointing";
  return s;
}

std::string config_json(const Setup& s) {
  const std::string offload = s.offload ? R"(, "offload_optimizer": {"device": "cpu"})" : "";
  return R"({
    "train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 4, "gradient_clipping": 1.0,
    "optimizer": {"type": "AdamW", "params": {"lr": 2e-3, "betas": [0.9, 0.99], "eps": 1e-8, "weight_decay": 0.1}},
    "zero_optimization": {"stage": )" + std::to_string(s.stage) + R"(, "reduce_bucket_size": 200000,
      "stage3_prefetch_bucket_size": 200000, "stage3_param_persistence_threshold": 0)" + offload + R"(},
    "activation_checkpointing": {"enabled": )" + (s.checkpointing ? "true" : "false") + R"(, "segment_size": 1,
      "cpu_checkpointing": )" + (s.cpu_checkpointing ? "true" : "false") + R"(},
    "model": {"name": "baby", "n_layer": )" + std::to_string(s.layers) + R"(, "block_size": )" +
         std::to_string(s.block_size) + R"(},
    "comm": {"timeout_s": 60},
    "training": {"seed": 1337, "tokenizer": "char"}
  })";
}
// comm.timeout_s 60: every rank runs the same allocations and fails at the same one; were one rank ever to
// go on alone, the others would end the job after a minute in their collective instead of waiting forever.

std::int64_t psi_of(const Setup& setup, std::int64_t V) {
  const runtime::Config cfg = runtime::Config::from_json(config_json(setup), 4);
  return runtime::model_shape(cfg, V).num_parameters();
}

runtime::ActivationShape activation_shape_of(const Setup& setup, std::int64_t V) {
  const runtime::Config cfg = runtime::Config::from_json(config_json(setup), 4);
  return runtime::activation_shape(runtime::model_shape(cfg, V), cfg.train_micro_batch_size_per_gpu, /*half=*/false,
                                   setup.checkpointing ? 1 : 0, setup.cpu_checkpointing);
}

runtime::ModelStateEstimate formula(const Setup& s, double psi, int N) {
  return s.offload ? runtime::offload_state_bytes(s.stage, psi, N, kFp32).device
                   : runtime::model_state_bytes(s.stage, psi, N, kFp32);
}

std::string formula_text(const Setup& s) { return runtime::model_states_text(s.stage, s.offload); }

std::string mib(double bytes) { return runtime::format_mib(bytes); }



Measured measure(dist::ProcessGroup& world, const data::TextDataset& ds, const Setup& setup, std::int64_t capacity) {
  const runtime::Config cfg =
      runtime::Config::from_json(config_json(setup), world.size(), "lesson-10 (" + setup.name() + ")");
  const std::int64_t V = ds.tokenizer().vocab_size();
  const data::BatchSampler sampler(ds.tokens_ptr(data::Split::train), cfg.train_micro_batch_size_per_gpu,
                                   cfg.model.block_size, cfg.training.seed);
  Measured m;
  try {
    std::unique_ptr<runtime::Engine> engine = engine_on_sim(cfg, V, capacity, world);
    m.psi = engine->model().num_parameters();
    engine->train_batch(sampler);    // step 1: AdamW allocates m and v (offload: on the host, with the masters)
    m.steps_done = 1;
    const TransferStats before = transfer_stats();
    engine->train_batch(sampler);    // step 2: what is measured
    m.steps_done = 2;
    const TransferStats after = transfer_stats();
    m.device = engine->measured_model_states();
    m.host = engine->measured_host_model_states();
    m.d2h = after.d2h - before.d2h;
    m.h2d = after.h2d - before.h2d;
    m.step_ms = engine->step_times().step;
  } catch (const runtime::OutOfMemoryError& e) {  // the engine's, on every rank at the same allocation
    m.out_of_memory = true;
    m.error = e.what();
  }
  const MemoryStats dev = lesson::card_after(cfg, "lesson-10", setup.name());
  m.device_peak = dev.peak_total;
  m.activation_peak = dev.peak(MemTag::activation);

  // Every rank's numbers to every rank: rank 0 prints its own and says whether the others agree.
  // The error's first line without "of rank r": what was asked and what was in use, equal on every rank?
  const std::int64_t fingerprint = error_fingerprint(m.error);
  const std::vector<std::int64_t> mine = {m.out_of_memory,  fingerprint,   m.steps_done,
                                          m.device.param, m.device.grad, m.device.optim,
                                          m.host.param,     m.host.grad,    m.host.optim,  m.d2h,
                                          m.h2d,            m.device_peak,  m.activation_peak};
  const std::vector<std::int64_t> all = all_ranks(mine, world.size());
  m.ranks_out_of_memory = 0;
  for (int r = 0; r < world.size(); ++r) {
    const std::size_t at = static_cast<std::size_t>(r) * mine.size();
    m.ranks_out_of_memory += static_cast<int>(all[at]);
    for (std::size_t k = 1; k < mine.size(); ++k) m.same_on_every_rank &= all[at + k] == mine[k];
  }
  return m;
}

void print_model_states(const Measured& m, const Setup& s, int N) {
  const runtime::ModelStateEstimate f = formula(s, static_cast<double>(m.psi), N);
  const bool equal = m.device.param == static_cast<std::int64_t>(f.param) && m.device.grad == static_cast<std::int64_t>(f.grad) &&
                     m.device.optim == static_cast<std::int64_t>(f.optim);
  std::printf("model states on the device, per rank: param %lld + grad %lld + optim %lld = %lld bytes (%s)\n",
              ll(m.device.param), ll(m.device.grad), ll(m.device.optim), ll(m.device.total()),
              mib(static_cast<double>(m.device.total())).c_str());
  std::printf("formula %s, psi = %lld, N = %d: %.0f + %.0f + %.0f = %.0f bytes  %s%s\n", formula_text(s).c_str(), ll(m.psi), N,
              f.param, f.grad, f.optim, f.total(), equal ? "(= measured)" : "(DIFFERENT)",
              m.same_on_every_rank ? ", the same on every rank" : ", ranks DIFFER");
}


void print_table(const std::vector<Setup>& setups, const std::vector<Measured>& runs, int N, std::int64_t capacity) {
  // Columns padded by characters, not bytes: the formulas' Ψ is two bytes of UTF-8.
  const auto cell = [](const std::string& text, std::size_t width) {
    std::size_t chars = 0;
    for (unsigned char c : text) chars += (c & 0xC0) != 0x80;
    return text + std::string(width > chars ? width - chars : 0, ' ');
  };
  const auto two = [](double bytes) {
    char b[32];
    std::snprintf(b, sizeof b, "%.2f", bytes / 1048576.0);
    return std::string(b);
  };
  std::printf("%s%s%s%s%s%s%s\n", cell("per rank, MiB", 37).c_str(), cell("device model states (formula)", 33).c_str(),
              cell("activations", 13).c_str(), cell("device peak", 15).c_str(), cell("host (16Ψ/N)", 15).c_str(),
              cell("d2h (GΨ/N)", 13).c_str(), "h2d (PΨ/N)");
  for (std::size_t i = 0; i < setups.size(); ++i) {
    const Setup& s = setups[i];
    const Measured& m = runs[i];
    const double psi = static_cast<double>(m.psi);
    const std::string states = two(static_cast<double>(m.device.total())) + " (" + formula_text(s) + " = " +
                               two(formula(s, psi, N).total()) + ")";
    std::string host = "0", down = "0", up = "0";
    if (s.offload) {
      const runtime::OffloadEstimate o = runtime::offload_state_bytes(s.stage, psi, N, kFp32);
      // cpu_checkpointing adds each block's (B, T, C) input down in forward and up for its recompute:
      // 4 micro-steps x L blocks x B = 1 x T x C = 128, f32 (docs/design.md §10)
      const double inputs = s.cpu_checkpointing ? 4.0 * static_cast<double>(s.layers * s.block_size) * 128 * 4 : 0;
      host = two(static_cast<double>(m.host.total())) + " (" + two(o.host.total()) + ")";
      down = two(static_cast<double>(m.d2h)) + " (" + two(o.d2h + inputs) + ")";
      up = two(static_cast<double>(m.h2d)) + " (" + two(o.h2d + inputs) + ")";
    }
    const std::string peak = two(static_cast<double>(m.device_peak)) + (m.device_peak <= capacity ? " fits" : " > card");
    std::printf("%s%s%s%s%s%s%s\n", cell(s.name(), 37).c_str(), cell(states, 33).c_str(),
                cell(two(static_cast<double>(m.activation_peak)), 13).c_str(), cell(peak, 15).c_str(),
                cell(host, 15).c_str(), cell(down, 13).c_str(), up.c_str());
  }
}

// ---- the last beat: the seeds' stage-3 offload config on the KJV ----

namespace {
/// configs/zero3_offload.json as it is, with configs/baby.json's AdamW, clipping and schedule over `steps`;
/// `offload` false: the same without offload_optimizer.
runtime::Config seeds_config(const std::string& seeds_text, long long steps, bool offload, int N) {
  nlohmann::json j = nlohmann::json::parse(seeds_text);
  j.merge_patch(nlohmann::json::parse(R"({
    "gradient_clipping": 1.0,
    "optimizer": {"type": "AdamW", "params": {"lr": 2e-3, "betas": [0.9, 0.99], "eps": 1e-8, "weight_decay": 0.1}},
    "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": 0.0, "warmup_max_lr": 2e-3,
                  "warmup_num_steps": )" + std::to_string(std::max(1LL, steps / 12)) + R"(, "total_num_steps": )" +
                                      std::to_string(steps) + R"(, "warmup_type": "linear"}},
    "model": {"name": "baby"}, "comm": {"timeout_s": 60},
    "training": {"steps": )" + std::to_string(steps) + R"(, "seed": 1337, "tokenizer": "char"}})"));
  if (!offload) j["zero_optimization"].erase("offload_optimizer");
  return runtime::Config::from_json(j.dump(), N, offload ? "configs/zero3_offload.json" : "configs/zero3_offload.json without offload");
}
}  // namespace

void train_seeds_config(dist::ProcessGroup& world, const data::TextDataset& ds, long long steps, std::int64_t capacity,
                        bool quick) {
  std::ifstream file("configs/zero3_offload.json");
  if (!file) throw std::runtime_error("configs/zero3_offload.json not found: run the lesson from the repository root");
  const std::string seeds((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::printf("configs/zero3_offload.json: %s", seeds.c_str());
  const std::int64_t V = ds.tokenizer().vocab_size(), eval_iters = quick ? 2 : 20;
  const char* names[] = {"ZeRO-3", "ZeRO-3 + offload"};
  std::vector<std::vector<float>> losses(2);
  float train[2] = {0, 0}, val[2] = {0, 0};
  const int N = world.size();
  Measured off;  // the offloaded run's last step
  std::int64_t largest = 0, threshold = 0;  // its largest tensor, and the config's stage3_param_persistence_threshold
  for (int k = 0; k < 2; ++k) {
    const runtime::Config cfg = seeds_config(seeds, steps, /*offload=*/k == 1, N);
    const data::BatchSampler sampler(ds.tokens_ptr(data::Split::train), cfg.train_micro_batch_size_per_gpu,
                                     cfg.model.block_size, cfg.training.seed);
    data::BatchSampler train_eval(ds.tokens_ptr(data::Split::train), 8, cfg.model.block_size, cfg.training.seed + 2);
    data::BatchSampler val_eval(ds.tokens_ptr(data::Split::val), 8, cfg.model.block_size, cfg.training.seed + 1);
    {
      std::unique_ptr<runtime::Engine> engine = engine_on_sim(cfg, V, capacity, world);
      const auto t0 = std::chrono::steady_clock::now();
      TransferStats before;
      while (engine->global_steps() < steps) {
        before = transfer_stats();
        losses[static_cast<std::size_t>(k)].push_back(engine->train_batch(sampler));
      }
      const TransferStats after = transfer_stats();
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      train[k] = engine->evaluate(train_eval, eval_iters);
      val[k] = engine->evaluate(val_eval, eval_iters);
      if (k == 1) {
        for (const auto& [name, p] : engine->model().named_parameters()) largest = std::max(largest, p.numel());
        threshold = cfg.zero.stage3_param_persistence_threshold;
        off.psi = engine->model().num_parameters();
        off.device = engine->measured_model_states();
        off.host = engine->measured_host_model_states();
        off.d2h = after.d2h - before.d2h;
        off.h2d = after.h2d - before.h2d;
      }
      std::printf("%-17s %lld steps, %.0f ms/step, the device's peak %s\n", names[k], steps, ms / static_cast<double>(steps),
                  mib(static_cast<double>(memory_stats(Device::sim()).peak_total)).c_str());
      std::fflush(stdout);
    }
    lift_sim_capacity(cfg);
  }
  std::printf("\nstep    ZeRO-3   ZeRO-3 + offload\n");
  bool equal = true;
  for (long long i = 1; i <= steps; ++i) {
    const auto at = static_cast<std::size_t>(i - 1);
    equal &= losses[0][at] == losses[1][at];
    if (i % 20 == 0 || i == 1 || i == steps) std::printf("%4lld  %8.4f  %8.4f\n", i, losses[0][at], losses[1][at]);
  }
  for (int k = 0; k < 2; ++k) std::printf("%-17s train loss %.4f, val loss %.4f\n", names[k], train[k], val[k]);
  std::printf("losses of every step: %s\n", equal ? "bit-identical with and without offload" : "DIFFERENT");

  // What the offloaded run held: every tensor of the baby is below stage3_param_persistence_threshold's default.
  const double psi = static_cast<double>(off.psi);
  const runtime::OffloadEstimate f2 = runtime::offload_state_bytes(2, psi, N, kFp32), f3 = runtime::offload_state_bytes(3, psi, N, kFp32);
  std::printf("\nthe baby's largest tensor has %lld elements, under stage3_param_persistence_threshold %lld (DeepSpeed's\n"
              "default, which the seeds' config keeps): ZeRO-3 keeps every tensor of the baby whole on every rank, as\n"
              "stage 2 does, and shards only gradients and optimizer states (beats 4-7 set the threshold to 0)\n",
              ll(largest), ll(threshold));
  std::printf("the offloaded run, per rank: device param %lld + grad %lld + optim %lld; host %lld; d2h %lld, h2d %lld per step\n",
              ll(off.device.param), ll(off.device.grad), ll(off.device.optim), ll(off.host.total()), ll(off.d2h), ll(off.h2d));
  std::printf("formulas: device (P+G)Ψ/N = %.0f if every tensor were sharded; PΨ + GΨ/N = %.0f + %.0f = %.0f %s\n",
              f3.device.total(), f2.device.param, f2.device.grad, f2.device.total(),
              off.device.total() == static_cast<std::int64_t>(f2.device.total()) ? "(= measured)" : "(DIFFERENT)");
  std::printf("          host 16Ψ/N = %.0f %s, d2h GΨ/N = %.0f %s, h2d PΨ/N = %.0f %s\n", f3.host.total(),
              off.host.total() == static_cast<std::int64_t>(f3.host.total()) ? "(= measured)" : "(DIFFERENT)", f3.d2h,
              off.d2h == static_cast<std::int64_t>(f3.d2h) ? "(= measured)" : "(DIFFERENT)", f3.h2d,
              off.h2d == static_cast<std::int64_t>(f3.h2d) ? "(= measured)" : "(DIFFERENT)");
}

}  // namespace lesson10

#include "runtime/out_of_memory.h"

#include <sstream>

#include "minitorch/not_implemented.h"
#include "runtime/activation_formulas.h"
#include "runtime/byte_size.h"
#include "runtime/formulas.h"

namespace minitorch::runtime {

namespace {

std::string mib(double bytes) { return format_mib(bytes); }

double states(int stage, bool offload, double psi, int n, BytesPerParameter b) {
  return offload ? offload_state_bytes(stage, psi, n, b).device.total() : model_state_bytes(stage, psi, n, b).total();
}

/// The activation levers, each from the model's shapes (runtime/activation_formulas.h), never from the bytes a
/// partial forward happened to hold when it failed: this run's micro-batch, half of it, checkpointing.
std::string activation_levers(const MemoryRun& run, double in_use) {
  const Config& c = *run.config;
  const bool half = c.mixed_precision();
  const std::int64_t B = c.train_micro_batch_size_per_gpu;
  const std::int64_t segment = c.activation_checkpointing.enabled ? c.activation_checkpointing.segment_size : 0;
  const bool on_host = c.activation_checkpointing.cpu_checkpointing;
  std::ostringstream os;
  if (run.pipeline_stages > 1) {  // a stage holds its blocks' activations for every micro-batch in flight
    os << "    - activations in use when it failed: " << mib(in_use) << " (a pipeline stage's: per-stage activation "
       << "levers are not computed; lesson 09 counts the micro-batches in flight)\n";
    return os.str();
  }
  const ActivationShape now = activation_shape(run.model, B, half, segment, on_host);
  os << "    - activations of this run, micro-batch " << B << ": " << activation_text(now) << " (in use when it failed: "
     << mib(in_use) << ")\n";
  if (B > 1)
    os << "    - micro-batch " << B / 2 << " with gradient_accumulation_steps " << 2 * c.gradient_accumulation_steps
       << " (the same batch): activations about "
       << mib(activation_bytes(activation_shape(run.model, B / 2, half, segment, on_host)).peak()) << "\n";
  if (segment == 0) {
    const ActivationShape one = activation_shape(run.model, B, half, 1);
    const int e = one.element;
    os << "    - activation checkpointing (segment_size 1): keeps each block's input, B·T·C·L·" << e << " = " << B << "·"
       << one.T << "·" << one.C << "·" << one.L << "·" << e << " = " << mib(static_cast<double>(B * one.T * one.C * one.L * e))
       << ", and recomputes one block at a time: activations about " << mib(activation_bytes(one).peak()) << "\n";
  }
  return os.str();
}

/// Gemini's device model states by its placement (chunk waste aside): static keeps (P+G+K)Ψ/N, less the optimizer's
/// with offload_optim_frac 1.0, less the shards' share offload_param_frac of PΨ/N; auto keeps GΨ/N at the least.
double gemini_state_bytes(const MemoryRun& run, const gemini::GeminiConfig& g, BytesPerParameter b) {
  const double shard = run.psi / run.dp_size;
  if (g.placement_policy == "auto") return b.G * shard;
  if (g.offload_optim_frac < 1) return (b.P + b.G + b.K) * shard;
  return ((1 - g.offload_param_frac) * b.P + b.G) * shard;
}

/// A Gemini run's line and its levers: more of the static placement on the host, or auto placement.
std::string gemini_run_and_levers(const MemoryRun& run, double activations_in_use, std::int64_t capacity) {
  const Config& c = *run.config;
  const gemini::GeminiConfig& g = c.gemini;
  const BytesPerParameter b = bytes_per_parameter(c.mixed_precision());
  const bool is_auto = g.placement_policy == "auto";
  std::ostringstream os;
  os << "  this run: Gemini, placement \"" << g.placement_policy << "\"";
  if (!is_auto) os << " (offload_optim_frac " << g.offload_optim_frac << ", offload_param_frac " << g.offload_param_frac << ")";
  os << ", " << (c.bf16 ? "bf16" : c.fp16.enabled ? "fp16" : "f32") << " (P, G, K = " << b.P << ", " << b.G << ", " << b.K
     << " bytes per parameter), Ψ = " << static_cast<std::int64_t>(run.psi) << ", N = " << run.dp_size
     << ": model states on the device about " << mib(gemini_state_bytes(run, g, b)) << " per rank"
     << (is_auto ? " (GΨ/N; the shards live on the host and are cached as the capacity allows)" : "") << "\n";
  os << "  what would fit in " << mib(static_cast<double>(capacity)) << " (computed for this run):\n";
  const double fits = static_cast<double>(capacity);
  auto lever = [&](const std::string& what, double need, const std::string& text) {
    os << "    - " << what << ": " << text << " = " << mib(need) << " on the device"
       << (need <= fits ? ", leaving " + mib(fits - need) + " for activations and buffers"
                        : ", " + mib(need - fits) + " over the capacity")
       << "\n";
  };
  gemini::GeminiConfig more = g;
  if (!is_auto && g.offload_optim_frac < 1) {
    more.offload_optim_frac = 1;
    lever("gemini.offload_optim_frac 1.0 (the optimizer states on the host)", gemini_state_bytes(run, more, b), "(P+G)Ψ/N");
  }
  if (!is_auto && g.offload_param_frac < 1) {
    more.offload_optim_frac = 1, more.offload_param_frac = 1;
    lever("gemini.offload_optim_frac 1.0 and offload_param_frac 1.0 (every shard on the host, copied up at each gather)",
          gemini_state_bytes(run, more, b), "GΨ/N + the chunks being computed");
  }
  if (!is_auto) {
    more.placement_policy = "auto";
    lever("gemini.placement_policy \"auto\" (every shard on the host, the device caching what the capacity allows)",
          gemini_state_bytes(run, more, b), "GΨ/N + the chunks being computed");
  }
  if (activations_in_use > 0) os << activation_levers(run, activations_in_use);
  return os.str();
}

/// The run, its formula and its levers: the lines after the first.
std::string run_and_levers(const MemoryRun& run, double activations_in_use, std::int64_t capacity) {
  if (run.gemini) return gemini_run_and_levers(run, activations_in_use, capacity);
  const Config& c = *run.config;
  const BytesPerParameter b = bytes_per_parameter(c.mixed_precision());
  const bool off = run.offload;
  const int n = run.dp_size, stage = run.zero_stage;
  std::ostringstream os;
  os << "  this run: ZeRO stage " << stage << (stage == 0 ? (n > 1 ? " (DDP)" : " (one rank)") : "")
     << (off ? (run.nvme ? " + offload_optimizer (nvme)" : " + offload_optimizer") : "")
     << (run.offload_param ? " + offload_param" : "") << ", " << (c.bf16 ? "bf16" : c.fp16.enabled ? "fp16" : "f32")
     << " (P, G, K = " << b.P << ", " << b.G << ", " << b.K << " bytes per parameter), Ψ = "
     << static_cast<std::int64_t>(run.psi) << ", N = " << n << ": model states "
     << (run.offload_param ? std::string("GΨ/N") : model_states_text(stage, off)) << " = "
     << mib(device_model_state_bytes(run)) << " per rank\n";
  os << "  what would fit in " << mib(static_cast<double>(capacity)) << " (computed for this run):\n";
  const double fits = static_cast<double>(capacity);
  // What each lever leaves for activations and buffers (or how far it is over), beside what this run used.
  auto mark = [&](double need) {
    return need <= fits ? ", leaving " + mib(fits - need) + " for activations and buffers"
                        : ", " + mib(need - fits) + " over the capacity";
  };
  // BEGIN SOLUTION L10.3
  if (n > 1) {
    for (int s = stage + 1; s <= 3; ++s) {
      const double need = states(s, off, run.psi, n, b);
      os << "    - ZeRO-" << s << (off ? " + offload_optimizer" : "") << ": " << model_states_text(s, off) << " = "
         << mib(need) << " of model states" << mark(need) << "\n";
    }
    if (!off)
      for (int s = std::max(stage, 1); s <= 3; ++s) {
        const OffloadEstimate e = offload_state_bytes(s, run.psi, n, b);
        os << "    - ZeRO-" << s << " + offload_optimizer (device \"cpu\"): " << model_states_text(s, true) << " = "
           << mib(e.device.total()) << " on the device" << mark(e.device.total()) << "; the host then holds 16Ψ/N = "
           << mib(e.host.total()) << " and each step moves GΨ/N = " << mib(e.d2h) << " down, PΨ/N = " << mib(e.h2d)
           << " up\n";
      }
  } else {
    os << "    - more ranks: ZeRO shards the model states over N data-parallel ranks (mpirun -np N with stage 1-3)\n";
  }
  // END SOLUTION
  if (n > 1 && !run.offload_param) {  // ZeRO-Infinity's lever: the parameter shards leave the device too
    const OffloadEstimate e = offload_param_state_bytes(run.psi, n, b, static_cast<int>(c.gradient_accumulation_steps));
    os << "    - ZeRO-3 + offload_optimizer + offload_param (device \"cpu\"): GΨ/N = " << mib(e.device.total())
       << " on the device, + the units being computed" << mark(e.device.total()) << "; the host then holds (P+G+K)Ψ/N = "
       << mib(e.host.total()) << " and each step moves GΨ/N = " << mib(e.d2h) << " down, 2A·PΨ/N = " << mib(e.h2d)
       << " up\n";
  }
  if (activations_in_use > 0) os << activation_levers(run, activations_in_use);
  return os.str();
}

}  // namespace

MemoryRun memory_run_for(const Config& config, const nn::GPTConfig& model, int rank) {
  return memory_run_for(make_plan(config), config, model, rank);
}

MemoryRun memory_run_for(const Plan& plan, const Config& config, const nn::GPTConfig& model, int rank) {
  MemoryRun run;
  run.rank = rank;
  run.dp_size = plan.grid.data;
  run.zero_stage = plan.zero_stage;
  run.pipeline_stages = plan.grid.pipeline;
  run.offload = plan.offload_optimizer;
  run.offload_param = plan.offload_param;
  run.nvme = config.zero.offload_optimizer.on_nvme();
  run.gemini = plan.gemini;
  run.psi = static_cast<double>(model.num_parameters());
  run.model = model;
  run.config = &config;
  return run;
}

double device_model_state_bytes(const MemoryRun& run) {
  const BytesPerParameter b = bytes_per_parameter(run.config->mixed_precision());
  if (run.gemini) return gemini_state_bytes(run, run.config->gemini, b);
  if (run.nvme)  // as ZeRO-Offload's device (the states are on disk instead of the host)
    return nvme_state_bytes(run.psi, run.dp_size, b, static_cast<int>(run.config->gradient_accumulation_steps),
                            run.config->zero.offload_param.device, 0, 1).device.total();
  if (run.offload_param)  // the gradient shards; the units computing are activations' company, not states
    return offload_param_state_bytes(run.psi, run.dp_size, b, static_cast<int>(run.config->gradient_accumulation_steps)).device.total();
  return states(run.zero_stage, run.offload, run.psi, run.dp_size, b);
}

std::string explain_out_of_memory(const OutOfMemory& e, const MemoryRun& run) {
  std::ostringstream os;
  const MemoryStats& m = e.in_use;
  os << "out of memory on " << e.device.str() << (run.dp_size > 1 ? " of rank " + std::to_string(run.rank) : std::string()) << ": " << mib(static_cast<double>(e.requested))
     << " (" << e.requested << " B) of " << tag_name(e.tag) << " asked for, " << mib(static_cast<double>(m.current_total))
     << " in use of a capacity of " << mib(static_cast<double>(e.capacity)) << " (" << e.capacity << " B)\n  in use:";
  for (int t = 0; t < kNumMemTags; ++t)
    os << " " << tag_name(static_cast<MemTag>(t)) << " " << mib(static_cast<double>(m.current_bytes[static_cast<std::size_t>(t)]))
       << (t + 1 < kNumMemTags ? "," : "\n");
  os << run_and_levers(run, static_cast<double>(m.current(MemTag::activation)), e.capacity);
  std::string text = os.str();
  if (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

void check_model_states_fit(const MemoryRun& run, Device device, std::int64_t capacity) {
  const double need = device_model_state_bytes(run);
  if (capacity <= 0 || need <= static_cast<double>(capacity)) return;
  std::ostringstream os;
  os << "out of memory on " << device.str() << (run.dp_size > 1 ? " of rank " + std::to_string(run.rank) : std::string())
     << " before the first step: the model states alone need "
     << mib(need) << ", more than the capacity of " << mib(static_cast<double>(capacity)) << " (" << capacity << " B)\n"
     << run_and_levers(run, 0, capacity);
  std::string text = os.str();
  if (!text.empty() && text.back() == '\n') text.pop_back();
  throw OutOfMemoryError(text);
}

}  // namespace minitorch::runtime

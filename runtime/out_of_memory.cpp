#include "runtime/out_of_memory.h"

#include <sstream>

#include "minitorch/not_implemented.h"
#include "runtime/byte_size.h"
#include "runtime/formulas.h"

namespace minitorch::runtime {

namespace {

std::string mib(double bytes) { return format_mib(bytes); }

double states(int stage, bool offload, double psi, int n, BytesPerParameter b) {
  return offload ? offload_state_bytes(stage, psi, n, b).device.total() : model_state_bytes(stage, psi, n, b).total();
}

/// The run, its formula and its levers: the lines after the first.
std::string run_and_levers(const MemoryRun& run, double activation_bytes, std::int64_t capacity) {
  const Config& c = *run.config;
  const BytesPerParameter b = bytes_per_parameter(c.mixed_precision());
  const bool off = run.offload;
  const int n = run.dp_size, stage = run.zero_stage;
  std::ostringstream os;
  os << "  this run: ZeRO stage " << stage << (stage == 0 ? (n > 1 ? " (DDP)" : " (one rank)") : "")
     << (off ? " + offload_optimizer" : "") << ", " << (c.bf16 ? "bf16" : c.fp16.enabled ? "fp16" : "f32")
     << " (P, G, K = " << b.P << ", " << b.G << ", " << b.K << " bytes per parameter), Ψ = "
     << static_cast<std::int64_t>(run.psi) << ", N = " << n << ": model states " << model_states_text(stage, off) << " = "
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
  const std::int64_t B = c.train_micro_batch_size_per_gpu, T = run.model.block_size, C = run.model.n_embd,
                     L = run.model.n_layer;
  if (activation_bytes > 0) {
    os << "    - activations in use when it failed: " << mib(activation_bytes) << " (micro-batch " << B << ")\n";
    if (B > 1)
      os << "    - micro-batch " << B / 2 << " with gradient_accumulation_steps " << 2 * c.gradient_accumulation_steps
         << " (the same batch): activations about " << mib(activation_bytes * static_cast<double>(B / 2) / static_cast<double>(B))
         << "\n";
    if (!c.activation_checkpointing.enabled) {
      const double inputs = static_cast<double>(B * T * C * L) * (c.mixed_precision() ? 2 : 4);
      os << "    - activation checkpointing: keeps each block's input (B·T·C·L = " << mib(inputs)
         << ") and recomputes one block at a time: activations about " << mib(inputs + activation_bytes / static_cast<double>(L))
         << "\n";
    }
  }
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
  run.offload = plan.offload_optimizer;
  run.psi = static_cast<double>(model.num_parameters());
  run.model = model;
  run.config = &config;
  return run;
}

double device_model_state_bytes(const MemoryRun& run) {
  const BytesPerParameter b = bytes_per_parameter(run.config->mixed_precision());
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

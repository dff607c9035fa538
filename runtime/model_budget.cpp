/// \file model_budget.cpp
#include "runtime/model_budget.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "runtime/config.h"
#include "runtime/engine.h"

namespace minitorch::runtime {

std::uint64_t available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) : UINT64_MAX;
}

double parameter_count(const nn::GPTConfig& g) {
  const double V = static_cast<double>(g.vocab_size), C = static_cast<double>(g.n_embd),
               T = static_cast<double>(g.block_size), L = static_cast<double>(g.n_layer);
  // Same formula as GPTConfig::num_parameters (gpt.h), in double.
  return g.bias ? V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C : V * C + T * C + L * (12 * C * C + 2 * C) + C;
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB"};
  int u = 0;
  while (bytes >= 1000 && u < 4) bytes /= 1000, ++u;
  char buf[64];
  std::snprintf(buf, sizeof buf, bytes < 1e4 ? "%.1f %s" : "%.1e %s", bytes, units[u]);
  return buf;
}

void check_model_fits(const nn::GPTConfig& g, std::int64_t micro_batch, double bytes_per_param,
                      const std::string& source, std::uint64_t available) {
  const double psi = parameter_count(g);
  const double states = psi * bytes_per_param;
  const double logits = static_cast<double>(micro_batch) * static_cast<double>(g.block_size) *
                        static_cast<double>(g.vocab_size) * 4;
  if (states + logits <= static_cast<double>(available)) return;
  std::ostringstream os;
  os.precision(3);
  os << source << ": model " << g.describe() << " has " << psi << " parameters; at " << bytes_per_param
     << " bytes each" << (bytes_per_param == kTrainBytesPerParam ? " (parameters, gradients, AdamW states)" : "")
     << " it needs " << format_bytes(states);
  if (micro_batch > 0) os << " plus " << format_bytes(logits) << " of logits per micro-batch";
  os << ", more than the " << format_bytes(static_cast<double>(available))
     << " of memory available; lower model.n_layer, n_embd, block_size or vocab_size"
     << (micro_batch > 0 ? " (or train_micro_batch_size_per_gpu)" : "");
  throw ConfigError(os.str());
}

// ---- the model shape a config asks for (runtime/engine.h) ----

nn::GPTConfig model_config(const Config& config, std::int64_t tokenizer_vocab) {
  nn::GPTConfig g = model_shape(config, tokenizer_vocab);
  check_model_fits(g, config.train_micro_batch_size_per_gpu, kTrainBytesPerParam, config.source);  // before allocating
  return g;
}

nn::GPTConfig model_shape(const Config& config, std::int64_t tokenizer_vocab) {
  const ModelConfig& m = config.model;
  nn::GPTConfig g;
  g.n_layer = m.n_layer;
  g.n_head = m.n_head;
  g.n_embd = m.n_embd;
  g.block_size = m.block_size;
  g.bias = m.bias;
  if (m.vocab_size == 0) {
    g.vocab_size = tokenizer_vocab;
  } else {
    if (m.vocab_size < tokenizer_vocab)
      throw ConfigError("model.vocab_size " + std::to_string(m.vocab_size) + " is smaller than the tokenizer's " +
                        std::to_string(tokenizer_vocab) + " tokens; set it to 0 to take the tokenizer's");
    g.vocab_size = m.vocab_size;
  }
  g.validate();
  return g;
}

}  // namespace minitorch::runtime

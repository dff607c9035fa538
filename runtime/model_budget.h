#pragma once
/// \file model_budget.h
/// The memory a model will need, computed before anything is allocated: a config asking for
/// n_layer 1 000 000 must be refused in a millisecond with the figure, not after a minute of
/// allocating gigabytes. Model states take 16 bytes per parameter in both precisions (docs/design.md §4:
/// f32 4 + 4 + 8, bf16 mixed 2 + 2 + 12); a training micro-batch adds its f32 logits (B·T·V·4).
///
/// \code
///   auto g = runtime::model_config(cfg, tokenizer_vocab);   // calls check_model_fits itself
///   runtime::check_model_fits(g, /*micro_batch=*/0, /*bytes_per_param=*/4, "ckpt.safetensors");  // eval
/// \endcode
#include <cstdint>
#include <string>

#include "nn/gpt_config.h"

namespace minitorch::runtime {

/// Bytes per parameter of training: parameters, gradients and AdamW's states (16 in f32 and bf16).
constexpr double kTrainBytesPerParam = 16;

/// Memory this process may use: MemAvailable of /proc/meminfo, else physical pages × page size.
std::uint64_t available_memory_bytes();

/// Ψ of `g` in floating point: never overflows, whatever the sizes (GPTConfig::num_parameters
/// would overflow int64 for absurd ones).
double parameter_count(const nn::GPTConfig& g);

/// Throws ConfigError "<source>: model <shape> has Ψ = ... parameters: ... needs X GB ..., more than
/// the Y GB of memory available; ..." when bytes_per_param·Ψ plus the logits of a micro-batch of
/// `micro_batch` sequences exceed `available` bytes.
void check_model_fits(const nn::GPTConfig& g, std::int64_t micro_batch, double bytes_per_param,
                      const std::string& source, std::uint64_t available = available_memory_bytes());

/// "1.5 GB", "12.0 MB", "3.2e+03 TB" (decimal units).
std::string format_bytes(double bytes);

}  // namespace minitorch::runtime

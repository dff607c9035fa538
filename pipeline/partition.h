#pragma once
/// \file partition.h
/// Which blocks of the GPT each pipeline stage holds (DeepSpeed's `partition_method`). The embeddings go
/// with the first stage, the final LayerNorm and the head with the last; the head's weight is tied to
/// the token embedding, so the first and the last stage both hold it (DeepSpeed's tied layers) and sum
/// its gradients every step (pipeline::Op::reduce_tied), which keeps the split model equal to the whole.
///
/// \code
///   auto plan = minitorch::pipeline::partition_gpt(nn::GPTConfig::named("baby"), /*stages=*/2, "parameters");
///   // plan[0]: embeddings + blocks [0, 2); plan[1]: blocks [2, 4) + ln_f + head
/// \endcode
#include <cstdint>
#include <string>
#include <vector>

#include "nn/gpt_config.h"

namespace minitorch::pipeline {

struct StagePlan {
  int first_block = 0, end_block = 0;   ///< blocks [first_block, end_block)
  bool embeddings = false;              ///< wte and wpe (stage 0)
  bool head = false;                    ///< ln_f and lm_head, whose weight is wte's (the last stage)
  std::int64_t parameters = 0;          ///< elements this stage holds (the tied weight on both ends)
};

/// Elements of the parts in order: [embeddings (wte + wpe), block 0, ..., block L-1, head (ln_f + the
/// tied weight, counted again: the last stage holds a copy)].
std::vector<std::int64_t> layer_parameters(const nn::GPTConfig& config);

/// Splits the GPT's L blocks into `stages` contiguous groups of at least one block each:
///   "uniform"    — blocks as evenly as possible (the first L % P stages get one more);
///   "parameters" — the split that makes the largest stage's parameter count (embeddings and head
///                  included) smallest (DeepSpeed's balanced partition by parameter counts).
/// Throws std::invalid_argument for stages < 1, more stages than blocks, or another method.
std::vector<StagePlan> partition_gpt(const nn::GPTConfig& config, int stages, const std::string& method);

}  // namespace minitorch::pipeline

#pragma once
// Lesson 07's later beats, which do not fit in main.cpp: the paper's 7.5B table from the estimator,
// PyTorch FSDP's sharding strategies beside the ZeRO stages, and the training run at stage 3 next to
// lesson 05's DDP run. Also the prompt's broadcast (only rank 0 reads the keyboard).
#include <cstdint>
#include <functional>
#include <memory>

#include "common/beat.h"
#include "data/text_dataset.h"
#include "dist/process_group.h"
#include "runtime/engine.h"

namespace lesson07 {

/// Beats 5 and 6: model states per rank of the 7.5B model on 1 to 1024 ranks (runtime/formulas.h beside
/// the paper's Table 1 as printed), then FSDP's NO_SHARD / SHARD_GRAD_OP / FULL_SHARD / HYBRID_SHARD
/// next to the stages, with the baby GPT's bytes per rank (`flat` = Ψ + padding) on `N` ranks.
void table_beats(lesson::Beats& beats, double flat, int N);

/// Beat 7's body: trains make_engine(3) and make_engine(0) for `steps` steps each on the same
/// micro-batches, prints both curves and the final train / val losses (`eval_iters` batches of 32).
void train_beat(minitorch::dist::ProcessGroup& world, std::int64_t steps, std::int64_t eval_iters,
                const minitorch::data::TextDataset& ds,
                const std::function<std::unique_ptr<minitorch::runtime::Engine>(int stage)>& make_engine);

}  // namespace lesson07

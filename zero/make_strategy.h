#pragma once
/// \file make_strategy.h
/// The only place a ZeRO stage is chosen: the strategy for `config.zero.stage`. It includes every stage, so it
/// sits above them (each stage includes only zero/strategy.h, the interface), and the runtime calls it once.
#include <memory>

#include "zero/strategy.h"

namespace minitorch::zero {

/// The strategy for `config.zero.stage` on `group` (nullptr: one rank, stage 0 only). Stage 0 = DDP. The
/// stage is the one that runs, already decided by the runtime's plan (runtime/plan.h: stages 1–3 on one
/// data-parallel rank without offload run as stage 0); this function applies no rule of its own.
/// `params`: the parameters this rank trains, a pipeline stage's share of the model (pipeline/); nullptr
/// = all of model->named_parameters(). Stages 0 and 1 take a share; 2 and 3 do not (the config refuses
/// them with pipelines: runtime/config.cpp). Throws std::invalid_argument for a stage that does not exist.
std::unique_ptr<GradientStrategy> make_strategy(std::shared_ptr<nn::GPT> model, const StrategyConfig& config,
                                                dist::ProcessGroup* group, const nn::NamedTensors* params = nullptr);

}  // namespace minitorch::zero

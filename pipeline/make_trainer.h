#pragma once
/// \file make_trainer.h
/// The one place that picks the engine (DeepSpeed's deepspeed.initialize returns a PipelineEngine for a
/// pipelined model, its DeepSpeedEngine otherwise): the plan (runtime/plan.h) says which. It sits in the
/// pipeline layer because that layer knows both engines; the runtime below it knows only its own.
///
/// \code
///   runtime::Plan plan = runtime::make_plan(cfg, overrides);
///   runtime::setup_device(plan);
///   std::unique_ptr<runtime::Trainer> trainer = pipeline::make_trainer(model, cfg, plan, world);
/// \endcode
#include <memory>

#include "dist/process_group.h"
#include "nn/gpt.h"
#include "runtime/config.h"
#include "runtime/out_of_memory.h"
#include "runtime/plan.h"
#include "runtime/trainer.h"

namespace minitorch::pipeline {

/// A pipeline engine over `world` when plan.pipelined(), else the data-parallel engine over `world`
/// (DDP or ZeRO as plan.zero_stage says). Collective over `world`. `model`: the whole GPT, the same on
/// every rank (from the one seed); it is moved to plan.device.
std::unique_ptr<runtime::Trainer> make_trainer(std::shared_ptr<nn::GPT> model, const runtime::Config& config,
                                               const runtime::Plan& plan, dist::ProcessGroup& world);

/// What the pre-step memory check and the out-of-memory explanation count for world rank `world_rank`
/// (runtime::memory_run_for): in a pipeline, Ψ is the parameters its stage trains (pipeline/partition.h:
/// its blocks, plus the embeddings on the first stage and ln_f on the last; the last stage's copy of the
/// tied weight is not trained there), not the whole model's.
runtime::MemoryRun memory_run_for_rank(const runtime::Plan& plan, const runtime::Config& config,
                                       const nn::GPTConfig& model, int world_rank);

}  // namespace minitorch::pipeline

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
#include "runtime/plan.h"
#include "runtime/trainer.h"

namespace minitorch::pipeline {

/// A pipeline engine over `world` when plan.pipelined(), else the data-parallel engine over `world`
/// (DDP or ZeRO as plan.zero_stage says). Collective over `world`. `model`: the whole GPT, the same on
/// every rank (from the one seed); it is moved to plan.device.
std::unique_ptr<runtime::Trainer> make_trainer(std::shared_ptr<nn::GPT> model, const runtime::Config& config,
                                               const runtime::Plan& plan, dist::ProcessGroup& world);

}  // namespace minitorch::pipeline

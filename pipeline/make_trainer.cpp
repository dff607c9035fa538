#include "pipeline/make_trainer.h"

#include "pipeline/engine.h"
#include "runtime/engine.h"

namespace minitorch::pipeline {

std::unique_ptr<runtime::Trainer> make_trainer(std::shared_ptr<nn::GPT> model, const runtime::Config& config,
                                               const runtime::Plan& plan, dist::ProcessGroup& world) {
  if (plan.pipelined()) return std::make_unique<PipelineEngine>(std::move(model), config, plan, world);
  return runtime::initialize(std::move(model), config, plan, &world);
}

}  // namespace minitorch::pipeline

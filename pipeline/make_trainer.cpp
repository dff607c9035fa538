#include "pipeline/make_trainer.h"

#include "pipeline/engine.h"
#include "pipeline/partition.h"
#include "runtime/engine.h"

namespace minitorch::pipeline {

std::unique_ptr<runtime::Trainer> make_trainer(std::shared_ptr<nn::GPT> model, const runtime::Config& config,
                                               const runtime::Plan& plan, dist::ProcessGroup& world) {
  if (plan.pipelined()) return std::make_unique<PipelineEngine>(std::move(model), config, plan, world);
  return runtime::initialize(std::move(model), config, plan, &world);
}

runtime::MemoryRun memory_run_for_rank(const runtime::Plan& plan, const runtime::Config& config,
                                       const nn::GPTConfig& model, int world_rank) {
  if (!plan.pipelined()) return runtime::memory_run_for(plan, config, model, world_rank);
  const int stage = world_rank / plan.grid.data;  // dist/grid.h: consecutive ranks form a stage
  runtime::MemoryRun run = runtime::memory_run_for(plan, config, model, world_rank % plan.grid.data);
  const StagePlan p = partition_gpt(model, plan.grid.pipeline, config.pipeline.partition_method)[static_cast<std::size_t>(stage)];
  const std::int64_t tied_copy = p.head && !p.embeddings ? model.vocab_size * model.n_embd : 0;
  run.psi = static_cast<double>(p.parameters - tied_copy);
  return run;
}

}  // namespace minitorch::pipeline

#include "pipeline/make_trainer.h"

#include "pipeline/engine.h"
#include "pipeline/partition.h"
#include "runtime/engine.h"
#include "tp/gpt.h"

namespace minitorch::pipeline {

std::unique_ptr<runtime::Trainer> make_trainer(std::shared_ptr<nn::GPT> model, const runtime::Config& config,
                                               const runtime::Plan& plan, dist::ProcessGroup& world) {
  if (plan.pipelined()) return std::make_unique<PipelineEngine>(std::move(model), config, plan, world);
  if (plan.tensor_parallel()) {  // data × tensor: each rank keeps its slices, its data-parallel group reduces them
    dist::Grid grid = dist::make_grid(world, 1, plan.grid.tensor);
    auto split = std::make_shared<tp::TensorParallelGPT>(*model, grid.tensor);
    model.reset();  // the whole model's tensors go (unless the caller keeps them)
    return std::make_unique<runtime::Engine>(std::move(split), config, plan, grid.data);
  }
  return runtime::initialize(std::move(model), config, plan, &world);
}

runtime::MemoryRun memory_run_for_rank(const runtime::Plan& plan, const runtime::Config& config,
                                       const nn::GPTConfig& model, int world_rank) {
  if (!plan.pipelined()) return runtime::memory_run_for(plan, config, model, world_rank);
  const int per_stage = plan.grid.data * plan.grid.tensor;  // dist/grid.h: consecutive ranks form a stage
  const int stage = world_rank / per_stage;
  runtime::MemoryRun run = runtime::memory_run_for(plan, config, model, (world_rank % per_stage) / plan.grid.tensor);
  const StagePlan p = partition_gpt(model, plan.grid.pipeline, config.pipeline.partition_method)[static_cast<std::size_t>(stage)];
  const std::int64_t tied_copy = p.head && !p.embeddings ? model.vocab_size * model.n_embd : 0;
  run.psi = static_cast<double>(p.parameters - tied_copy);
  return run;
}

}  // namespace minitorch::pipeline

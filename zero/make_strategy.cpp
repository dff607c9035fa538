#include "zero/make_strategy.h"

#include <stdexcept>

#include "zero/stage0.h"
#include "zero/stage1.h"
#include "zero/stage2.h"
#include "zero/stage3.h"

namespace minitorch::zero {

std::unique_ptr<GradientStrategy> make_strategy(std::shared_ptr<nn::GPT> model, const StrategyConfig& config,
                                                dist::ProcessGroup* group, const nn::NamedTensors* params) {
  const nn::NamedTensors trained = params ? *params : model->named_parameters();
  if (params && config.zero.stage >= 2)
    throw std::invalid_argument("make_strategy: ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism");
  if (config.zero.stage >= 1 && !group)
    throw std::invalid_argument("make_strategy: ZeRO stage " + std::to_string(config.zero.stage) +
                                " needs a process group (one rank: a group of 1)");
  // config.zero.stage is the stage that runs, decided once by the runtime's plan (runtime/plan.h: on one
  // data-parallel rank without offload it is already 0).
  switch (config.zero.stage) {
    case 0: return std::make_unique<Stage0>(std::move(model), config, group, trained);
    case 1: return std::make_unique<Stage1>(std::move(model), config, *group, trained);
    case 2: return std::make_unique<Stage2>(std::move(model), config, *group);
    case 3: return std::make_unique<Stage3>(std::move(model), config, *group);
    default:
      throw std::invalid_argument("make_strategy: zero_optimization.stage " + std::to_string(config.zero.stage) +
                                  " does not exist; the stages are 0 (DDP), 1, 2 and 3");
  }
}

}  // namespace minitorch::zero

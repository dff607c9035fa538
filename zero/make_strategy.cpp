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
  // ZeRO-Offload needs the sharded optimizer, so it runs the stage even on one rank (its shard is everything),
  // as DeepSpeed does; without offload, one rank is single-rank training.
  const bool alone = (!group || group->size() == 1) && !config.zero.offload_optimizer.enabled();
  if (!group && config.zero.offload_optimizer.enabled())
    throw std::invalid_argument("make_strategy: offload_optimizer needs a process group (one rank: a group of 1)");
  switch (config.zero.stage) {
    case 0: return std::make_unique<Stage0>(std::move(model), config, group, trained);
    case 1:  // on one rank the shard is everything: ZeRO-1 with N = 1 is single-rank training
      if (alone) return std::make_unique<Stage0>(std::move(model), config, group, trained);
      return std::make_unique<Stage1>(std::move(model), config, *group, trained);
    case 2:  // the same for stage 2
      if (alone) return std::make_unique<Stage0>(std::move(model), config, group, trained);
      return std::make_unique<Stage2>(std::move(model), config, *group);
    case 3:
      if (alone) return std::make_unique<Stage0>(std::move(model), config, group, trained);
      return std::make_unique<Stage3>(std::move(model), config, *group);
    default:
      throw std::invalid_argument("make_strategy: zero_optimization.stage " + std::to_string(config.zero.stage) +
                                  " does not exist; the stages are 0 (DDP), 1, 2 and 3");
  }
}

}  // namespace minitorch::zero

#pragma once
// Lesson 04: the baby GPT on a device — the engines beats 1, 2 and 6 train, and the run of beat 6 (the same
// 20 steps on cpu and on sim, losses compared bit for bit, the sim pool against the model-state formula).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/batch_sampler.h"
#include "runtime/config.h"
#include "runtime/engine.h"

namespace lesson04 {

/// The baby GPT's run (configs/baby.json's model, optimizer and seed; a constant learning rate, no schedule:
/// 20 steps need none) at micro-batch `B` for `steps` steps, one rank.
minitorch::runtime::Config baby_config(std::int64_t B, std::int64_t steps);

/// The baby GPT, initialised from the config's seed on the host, and its engine on `device` ("cpu" or "sim"),
/// the way the tools build it: the plan on that device, the device set up, the model moved to it by initialize.
std::unique_ptr<minitorch::runtime::Engine> baby_engine(const minitorch::runtime::Config& cfg, std::int64_t V,
                                                        const std::string& device);

/// Beat 6: `steps` steps on cpu, then on sim, from the same seed on the same batches. Prints every 5th step's
/// losses side by side, whether all are equal bit for bit (throws if not: the same kernels on other memory
/// must do the same arithmetic), and the sim pool at the last step against 4Ψ + 4Ψ + 8Ψ and its peak.
struct DeviceRun {
  std::vector<float> cpu_losses, sim_losses;
  std::int64_t psi = 0;
  std::int64_t param = 0, grad = 0, optim = 0;  ///< sim pool, measured at the last step (the engine's)
  std::int64_t peak = 0, activation_peak = 0;   ///< sim pool over the run: the sum, the activation tag
  std::int64_t activation_formula = 0;          ///< lesson 10's formula for this micro-batch
};
DeviceRun train_on_cpu_and_sim(const minitorch::runtime::Config& cfg, std::int64_t V,
                               const minitorch::data::BatchSampler& sampler, std::int64_t steps);

}  // namespace lesson04

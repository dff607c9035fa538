// Lesson 04: the baby GPT on a device (gpt_on_device.h).
#include "gpt_on_device.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "minitorch/allocator.h"
#include "minitorch/random.h"
#include "nn/gpt.h"
#include "runtime/activation_formulas.h"
#include "runtime/plan.h"

namespace lesson04 {

using namespace minitorch;

runtime::Config baby_config(std::int64_t B, std::int64_t steps) {
  const std::string json = R"({
    "train_batch_size": )" + std::to_string(B) + R"(, "gradient_clipping": 1.0,
    "optimizer": {"type": "AdamW", "params": {"lr": 2e-3, "betas": [0.9, 0.99], "eps": 1e-8, "weight_decay": 0.1}},
    "model": {"name": "baby"},
    "training": {"steps": )" + std::to_string(steps) + R"(, "seed": 1337, "tokenizer": "char"}
  })";
  return runtime::Config::from_json(json, 1, "lesson-04 (the baby GPT)");
}

std::unique_ptr<runtime::Engine> baby_engine(const runtime::Config& cfg, std::int64_t V, const std::string& device) {
  runtime::Plan plan = runtime::make_plan(cfg, {.device = device, .device_memory = std::nullopt});
  runtime::setup_device(plan);
  Generator init(cfg.training.seed);  // the same weights on every device
  std::shared_ptr<nn::GPT> model;
  {
    TagScope scope(MemTag::param);
    model = std::make_shared<nn::GPT>(runtime::model_config(cfg, V), init);  // built on the host
  }
  return runtime::initialize(model, cfg, plan);  // as deepspeed.initialize: the model goes to the device
}

namespace {
std::vector<float> train(runtime::Engine& engine, const data::BatchSampler& sampler, std::int64_t steps) {
  std::vector<float> losses;
  while (engine.global_steps() < steps) losses.push_back(engine.train_batch(sampler));
  return losses;
}
bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }
}  // namespace

DeviceRun train_on_cpu_and_sim(const runtime::Config& cfg, std::int64_t V, const data::BatchSampler& sampler,
                               std::int64_t steps) {
  DeviceRun r;
  r.cpu_losses = train(*baby_engine(cfg, V, "cpu"), sampler, steps);
  reset_peak_memory(Device::sim());
  {
    std::unique_ptr<runtime::Engine> engine = baby_engine(cfg, V, "sim");
    r.sim_losses = train(*engine, sampler, steps);
    r.psi = engine->model().num_parameters();
    const zero::ModelStateBytes& m = engine->measured_model_states();  // at the last step, before the update
    r.param = m.param;
    r.grad = m.grad;
    r.optim = m.optim;
    const MemoryStats pool = memory_stats(Device::sim());
    r.peak = pool.peak_total;
    r.activation_peak = pool.peak(MemTag::activation);
    const std::int64_t B = cfg.train_micro_batch_size_per_gpu;
    r.activation_formula = static_cast<std::int64_t>(std::llround(
        runtime::activation_bytes(runtime::activation_shape(engine->model().config(), B, false, 0)).peak()));
  }

  std::printf("step   loss on cpu   loss on sim\n");
  int differ = 0;
  for (std::size_t i = 0; i < r.cpu_losses.size(); ++i) {
    const bool same = same_bits(r.cpu_losses[i], r.sim_losses[i]);
    differ += same ? 0 : 1;
    if (i == 0 || (i + 1) % 5 == 0 || !same)
      std::printf("%4zu   %.9f   %.9f%s\n", i + 1, static_cast<double>(r.cpu_losses[i]),
                  static_cast<double>(r.sim_losses[i]), same ? "" : "   DIFFERENT");
  }
  if (differ)
    throw std::runtime_error(std::to_string(differ) + " of " + std::to_string(steps) +
                             " losses differ between cpu and sim: the same kernels must do the same arithmetic");
  std::printf("all %lld losses equal bit for bit: sim runs the CPU's kernels on memory of its own, in the same order\n",
              static_cast<long long>(steps));

  const std::int64_t psi = r.psi;
  const bool states_equal = r.param == 4 * psi && r.grad == 4 * psi && r.optim == 8 * psi;
  std::printf("the sim pool at the last step, before the update (Ψ = %lld):\n"
              "  param %lld B = 4Ψ, grad %lld B = 4Ψ, optim %lld B = 8Ψ (AdamW's m and v): 16Ψ = %lld B %s\n",
              static_cast<long long>(psi), static_cast<long long>(r.param), static_cast<long long>(r.grad),
              static_cast<long long>(r.optim), static_cast<long long>(16 * psi), states_equal ? "(equal)" : "(DIFFERENT)");
  std::printf("  activations at their peak %lld B, lesson 10's formula for B = %lld: %lld B %s\n",
              static_cast<long long>(r.activation_peak), static_cast<long long>(cfg.train_micro_batch_size_per_gpu),
              static_cast<long long>(r.activation_formula), r.activation_peak == r.activation_formula ? "(equal)" : "(DIFFERENT)");
  std::printf("  the pool's peak %lld B = %.2f MiB, below 16Ψ + that peak (%lld B): the gradients are made in backward\n"
              "  while the activations are freed, so the two never peak together\n",
              static_cast<long long>(r.peak), static_cast<double>(r.peak) / 1048576.0,
              static_cast<long long>(16 * psi + r.activation_peak));
  if (!states_equal || r.activation_peak != r.activation_formula)
    throw std::runtime_error("the sim pool differs from the formulas (see the lines above)");
  return r;
}

}  // namespace lesson04

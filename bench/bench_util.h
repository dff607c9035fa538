#pragma once
// What the multi-rank benchmarks share: "--name value" arguments, medians, and timing an engine's
// train_batch with its wall-clock timers.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "data/batch_sampler.h"
#include "runtime/engine.h"

namespace bench {

inline long long arg(int argc, char** argv, const std::string& name, long long fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (name == argv[i]) return std::atoll(argv[i + 1]);
  return fallback;
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

/// Step times of train_batch and its timers (ms), one entry per timed step.
struct Timed {
  std::vector<double> step, forward, backward, exposed, optim;
  double med_step() const { return median(step); }
  double med_backward() const { return median(backward); }
  double med_exposed() const { return median(exposed); }
  std::string breakdown() const {
    char buf[160];
    std::snprintf(buf, sizeof buf, "forward %.2f | backward %.2f | backward_allreduce %.2f | step %.2f", median(forward),
                  median(backward), median(exposed), median(optim));
    return buf;
  }
};

/// Times `steps` steps of train_batch into `out`.
inline void time_steps(minitorch::runtime::Engine& engine, const minitorch::data::BatchSampler& sampler, long long steps,
                       Timed& out) {
  for (long long s = 0; s < steps; ++s) {
    auto t0 = std::chrono::steady_clock::now();
    engine.train_batch(sampler);
    out.step.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    out.forward.push_back(engine.step_times().forward);
    out.optim.push_back(engine.step_times().step);
    out.backward.push_back(engine.step_times().backward);
    out.exposed.push_back(engine.step_times().backward_allreduce);
  }
}

}  // namespace bench

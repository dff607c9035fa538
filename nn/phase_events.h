#pragma once
/// \file phase_events.h
/// Per-module backward phases for the event sink (minitorch/events.h). Forward phases need nothing:
/// Module::call emits a "forward" span for every module while a sink listens. A backward has no
/// call to wrap, so this installs a pre-backward and a post-backward hook on every module that owns
/// parameters and emits a "backward" begin when the gradient reaches the module's output and the
/// end when all of its parameters' gradients are final — what a step trace draws per layer.
///
/// Installed only by whoever wants them (the trace recorder): hooks add an identity node per module
/// output, which a run without a trace should not pay for.
///
/// \code
///   events::Recorder rec;
///   events::Attach listen(rec);
///   nn::ModulePhaseEvents phases(model);   // hooks removed when `phases` goes
///   autograd::backward(model.loss(x, y));  // rec: forward spans, then backward h.3, h.2, ...
/// \endcode
#include <cstdint>
#include <memory>
#include <vector>

#include "minitorch/hooks.h"
#include "nn/module.h"

namespace minitorch::nn {

class ModulePhaseEvents {
 public:
  /// Hooks every module below `root` that has parameters somewhere in its subtree (containers
  /// without a forward of their own, like `transformer.h`, never see a backward hook fire).
  explicit ModulePhaseEvents(Module& root);
  ModulePhaseEvents(const ModulePhaseEvents&) = delete;
  ModulePhaseEvents& operator=(const ModulePhaseEvents&) = delete;

 private:
  struct Open {
    std::uint64_t id = 0;  ///< the begin event still waiting for its end (0: none)
  };
  std::vector<std::unique_ptr<Open>> open_;
  std::vector<HookHandle> handles_;
};

}  // namespace minitorch::nn

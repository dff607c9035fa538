#include "nn/phase_events.h"

#include "minitorch/events.h"

namespace minitorch::nn {

namespace {
void emit_phase(events::Kind kind, const Module& m, std::uint64_t id) {
  events::Event e;
  e.category = events::Category::compute;
  e.kind = kind;
  e.name = "backward";
  e.scope = m.path();
  e.id = id;
  events::emit(std::move(e));
}
}  // namespace

ModulePhaseEvents::ModulePhaseEvents(Module& root) {
  for (auto& [name, m] : root.named_modules()) {
    if (m == &root || m->parameters().empty()) continue;
    open_.push_back(std::make_unique<Open>());
    Open* open = open_.back().get();
    handles_.push_back(m->register_pre_backward_hook([open](Module& mod, const Tensor&) {
      if (!events::enabled() || open->id != 0) return;
      open->id = events::next_id();
      emit_phase(events::Kind::begin, mod, open->id);
    }));
    handles_.push_back(m->register_post_backward_hook([open](Module& mod) {
      if (open->id == 0) return;
      emit_phase(events::Kind::end, mod, open->id);
      open->id = 0;
    }));
  }
}

}  // namespace minitorch::nn

// Module hooks (nn/hooks.h): the slow path of Module::call, the identity node that carries the
// pre-backward hooks, and the post-backward countdown.
#include "nn/hooks.h"

#include <cstdint>
#include <memory>
#include <vector>

#include "autograd/engine.h"
#include "autograd/node.h"
#include "nn/module.h"

namespace minitorch::nn {

struct ModuleHooks {
  explicit ModuleHooks(Module* m) : owner(m) {}
  Module* owner;  // valid while this lives: the module owns it, nodes and handles hold weak pointers
  HookList<void(Module&, std::span<const Tensor>)> pre_forward;
  HookList<void(Module&, std::span<const Tensor>, const Tensor&)> post_forward;
  HookList<void(Module&, const Tensor&)> pre_backward;
  HookList<void(Module&)> post_backward;

  // ---- the post-backward countdown of the backward that armed it ----
  std::uint64_t armed_in = 0;          // autograd::current_backward_id() when armed; 0: never
  bool fired = false;                  // post-backward has run in that backward
  std::int64_t params_left = 0;        // subtree parameters whose gradient is not final yet
  int children_open = 0;               // armed descendants that have not fired yet
  std::weak_ptr<ModuleHooks> waiting;  // the nearest armed ancestor: it fires after this one
  std::vector<HookHandle> countdown;   // one gradient hook per subtree parameter

  bool has_backward_hooks() const { return !pre_backward.empty() || !post_backward.empty(); }

  /// Pre-backward time: count the subtree's parameters down from here, once per backward.
  static void arm(const std::shared_ptr<ModuleHooks>& h) {
    const std::uint64_t run = autograd::current_backward_id();
    if (h->post_backward.empty() || run == 0 || h->armed_in == run) return;
    h->countdown.clear();  // left over from a backward that threw
    h->armed_in = run;
    h->fired = false;
    h->children_open = 0;
    h->waiting.reset();
    for (const Module* p = h->owner->parent_; p; p = p->parent_)
      if (p->hooks_ && p->hooks_->armed_in == run && !p->hooks_->fired) {
        h->waiting = p->hooks_;
        ++p->hooks_->children_open;
        break;
      }
    std::weak_ptr<ModuleHooks> weak = h;
    h->params_left = 0;
    for (Tensor& p : h->owner->parameters()) {
      if (!p.requires_grad()) continue;  // frozen: never final, never waited for
      ++h->params_left;
      h->countdown.push_back(p.register_grad_hook([weak, run](Tensor&) {
        auto s = weak.lock();
        if (s && s->armed_in == run && --s->params_left == 0) try_fire(s);
      }));
    }
    // Parameters this backward never reaches would hold the module back: give up on them at the end.
    autograd::queue_callback([weak, run] {
      auto s = weak.lock();
      if (!s || s->armed_in != run) return;
      s->params_left = 0;
      try_fire(s);
    });
    if (h->params_left == 0) try_fire(h);
  }

  static void try_fire(const std::shared_ptr<ModuleHooks>& h) {
    if (h->fired || h->params_left > 0 || h->children_open > 0) return;
    h->fired = true;
    h->countdown.clear();  // may run inside one of these hooks: HookList allows removal while calling
    h->post_backward.call(*h->owner);
    if (auto parent = h->waiting.lock(); parent && parent->armed_in == h->armed_in) {
      --parent->children_open;
      try_fire(parent);
    }
  }
};

namespace {
/// out = in: the gradient passes unchanged, after the module's pre-backward hooks have seen it.
struct ModuleBackwardHook : autograd::Node {
  std::weak_ptr<ModuleHooks> hooks;
  const char* name() const override { return "ModuleBackwardHook"; }
  std::vector<Tensor> backward(const Tensor& grad_output) override {
    if (autograd::hooks_enabled())  // autograd::grad fires no hooks
      if (auto h = hooks.lock()) {
        h->pre_backward.call(*h->owner, grad_output);
        ModuleHooks::arm(h);
      }
    return {grad_output};
  }
};
}  // namespace

ModuleHooks& Module::hooks() {
  if (!hooks_) hooks_ = std::make_shared<ModuleHooks>(this);
  return *hooks_;
}

namespace {
/// A handle whose destruction removes hook `id` from the list `member` of `h` (if `h` still lives).
template <typename List>
HookHandle make_handle(const std::shared_ptr<ModuleHooks>& h, List ModuleHooks::*member, std::uint64_t id) {
  std::weak_ptr<ModuleHooks> weak = h;
  return HookHandle([weak, member, id] {
    if (auto s = weak.lock()) ((*s).*member).remove(id);
  });
}
}  // namespace

HookHandle Module::register_pre_forward_hook(PreForwardHook hook) {
  std::uint64_t id = hooks().pre_forward.add(std::move(hook));
  return make_handle(hooks_, &ModuleHooks::pre_forward, id);
}
HookHandle Module::register_post_forward_hook(PostForwardHook hook) {
  std::uint64_t id = hooks().post_forward.add(std::move(hook));
  return make_handle(hooks_, &ModuleHooks::post_forward, id);
}
HookHandle Module::register_pre_backward_hook(PreBackwardHook hook) {
  std::uint64_t id = hooks().pre_backward.add(std::move(hook));
  return make_handle(hooks_, &ModuleHooks::pre_backward, id);
}
HookHandle Module::register_post_backward_hook(PostBackwardHook hook) {
  std::uint64_t id = hooks().post_backward.add(std::move(hook));
  return make_handle(hooks_, &ModuleHooks::post_backward, id);
}

// inputs: what the hooks see; run(body) -> the forward's output
Tensor Module::call_with_hooks(std::span<const Tensor> inputs, Tensor (*run)(void*), void* body) const {
  std::shared_ptr<ModuleHooks> h = hooks_;  // alive even if a hook removes everything
  // Hooks were registered through a non-const Module, so the module itself is not const.
  Module& self = const_cast<Module&>(*this);
  h->pre_forward.call(self, inputs);
  Tensor out = run(body);
  if (h->has_backward_hooks() && autograd::grad_enabled() && autograd::needs_grad(out)) {
    auto node = std::make_shared<ModuleBackwardHook>();
    node->hooks = h;
    out = autograd::record(out.detach(), node, {out});
  }
  h->post_forward.call(self, inputs, out);
  return out;
}

}  // namespace minitorch::nn

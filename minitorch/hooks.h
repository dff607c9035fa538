#pragma once
/// \file hooks.h
/// Ordered, removable callbacks: what tensor gradient hooks (tensor.h) and module hooks (nn/hooks.h)
/// are made of. A HookList keeps its callbacks in registration order and calls them in that order.
/// Registering returns a HookHandle that removes the hook when it is destroyed (RAII), so a hook
/// never outlives the object that installed it (a DDP, a ZeRO-3 engine, a test).
///
/// \code
///   using namespace minitorch;
///   Tensor w = Tensor::ones({3}).set_requires_grad();
///   {
///     HookHandle h = w.register_grad_hook([](Tensor& t) { /* t.grad() is final */ });
///     autograd::backward(autograd::sum(w));   // the hook runs
///   }                                         // h destroyed: the hook is gone
///   autograd::backward(autograd::sum(w));     // no hook runs
/// \endcode
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

namespace minitorch {

/// Owns one registration: destroying the handle (or remove()) unregisters the hook. Move-only.
/// Removing is safe at any time, also while the hooks run (from the hook itself or another one).
/// A handle that outlives what it hooked (a tensor or module already destroyed) removes nothing.
class [[nodiscard]] HookHandle {
 public:
  HookHandle() = default;
  /// `remover` unregisters the hook; it is called at most once.
  explicit HookHandle(std::function<void()> remover) : remover_(std::move(remover)) {}
  HookHandle(HookHandle&& o) noexcept : remover_(std::exchange(o.remover_, nullptr)) {}
  HookHandle& operator=(HookHandle&& o) noexcept {
    if (this != &o) {
      remove();
      remover_ = std::exchange(o.remover_, nullptr);
    }
    return *this;
  }
  HookHandle(const HookHandle&) = delete;
  HookHandle& operator=(const HookHandle&) = delete;
  ~HookHandle() { remove(); }

  /// Unregisters the hook now; later calls do nothing.
  void remove() {
    if (auto r = std::exchange(remover_, nullptr)) r();
  }
  /// True while the handle still holds a registration.
  bool active() const { return static_cast<bool>(remover_); }

 private:
  std::function<void()> remover_;
};

template <typename Signature>
class HookList;

/// Callbacks called in registration order. A callback may add or remove callbacks of the list that
/// is calling it: a removed one that has not run yet is skipped, an added one runs from the next
/// call() on. (Entries are tombstoned while a call is running and compacted when it ends.)
template <typename... Args>
class HookList<void(Args...)> {
 public:
  using Fn = std::function<void(Args...)>;

  /// Appends `fn`; returns the id that remove() takes.
  std::uint64_t add(Fn fn) {
    entries_.push_back({++last_id_, std::make_shared<Fn>(std::move(fn))});
    ++live_;
    return last_id_;
  }
  /// Removes the callback with this id (no-op if it is already gone).
  void remove(std::uint64_t id) {
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
      if (it->id == id && it->fn) {
        it->fn.reset();
        --live_;
        if (calling_ == 0) entries_.erase(it);
        return;
      }
  }
  bool empty() const { return live_ == 0; }
  std::size_t size() const { return live_; }

  /// Calls every callback, in registration order.
  void call(Args... args) {
    if (live_ == 0) return;
    ++calling_;
    struct Done {  // compacts even if a callback throws
      HookList* list;
      ~Done() {
        if (--list->calling_ != 0) return;  // (erase-remove, not std::erase_if: nvcc compiles this as C++17)
        auto& v = list->entries_;
        v.erase(std::remove_if(v.begin(), v.end(), [](const Entry& e) { return !e.fn; }), v.end());
      }
    } done{this};
    for (std::size_t i = 0, n = entries_.size(); i < n; ++i)
      if (std::shared_ptr<Fn> fn = entries_[i].fn) (*fn)(args...);  // a copy: the callback may remove itself
  }

 private:
  struct Entry {
    std::uint64_t id;
    std::shared_ptr<Fn> fn;  // null once removed during a call
  };
  std::vector<Entry> entries_;
  std::uint64_t last_id_ = 0;
  std::size_t live_ = 0;
  int calling_ = 0;  // nesting depth of call()
};

}  // namespace minitorch

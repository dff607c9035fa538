#pragma once
/// \file engine_detail.h
/// What backward() (engine.cpp) and grad() (grad.cpp) share. Internal to autograd/.
#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "autograd/node.h"

namespace minitorch::autograd::detail {

/// One backward() or grad() on this thread, from start to finish. They nest (a node's backward or a
/// hook may start another); the innermost one is current() and owns the queued callbacks.
class GraphTask {
 public:
  explicit GraphTask(bool fire_hooks);
  ~GraphTask();
  GraphTask(const GraphTask&) = delete;
  GraphTask& operator=(const GraphTask&) = delete;

  /// Runs the queued callbacks; call when the run has finished without an error.
  void finish();
  static GraphTask* current();

  const std::uint64_t id;
  const bool fire_hooks;
  std::vector<std::function<void()>> callbacks;

 private:
  GraphTask* outer_;
};

/// Every node reachable from `roots`, each after every node it feeds (a DFS post-order): walk it
/// from the back to run a backward. Reaching a node an earlier backward freed throws, unless the
/// node is in `released_ok` (grad() only needs an input node's incoming gradient, not its backward).
std::vector<std::shared_ptr<Node>> reachable_nodes(const std::vector<std::shared_ptr<Node>>& roots,
                                                   const std::unordered_set<const Node*>* released_ok = nullptr);

/// grad_of[node] += g: in place when the buffer is ours alone, else out of place (a buffer may be
/// shared with another consumer, a leaf's .grad or the caller's grad_root).
void add_grad(std::unordered_map<Node*, Tensor>& grad_of, Node* node, const Tensor& g);

/// Drops what a node saved, and its edges, once its backward has run: activation memory goes as
/// backward proceeds, and a second backward through the node fails loudly.
void release(Node& node);

}  // namespace minitorch::autograd::detail

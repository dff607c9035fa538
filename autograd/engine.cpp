#include "autograd/engine.h"

#include <atomic>
#include <stdexcept>
#include <unordered_map>

#include "autograd/engine_detail.h"
#include "minitorch/not_implemented.h"
#include "minitorch/ops.h"

namespace minitorch::autograd {

namespace {
thread_local bool t_grad_enabled = true;
thread_local detail::GraphTask* t_task = nullptr;  // the innermost backward / grad on this thread
std::atomic<std::uint64_t> g_last_task_id{0};

/// Adds `g` into the leaf's .grad. A fresh gradient we own outright is adopted (re-tagged as
/// `grad`) instead of copied: for GPT-2 that saves a 0.5 GB copy per step.
void accumulate_into_leaf(TensorImpl& leaf, const Tensor& g) {
  if (g.shape() != leaf.shape)
    throw std::logic_error("backward: gradient " + shape_str(g.shape()) + " for leaf " + leaf.name + " of shape " +
                           shape_str(leaf.shape));
  if (leaf.grad) {
    Tensor acc(leaf.grad);
    ops::add_(acc, g);
    return;
  }
  // Adopt only a buffer nobody else can see: one handle (the engine's) on one TensorImpl that is
  // the only view of its storage. A gradient handed to several inputs (add's backward returns dout
  // twice) or the caller's grad_root must be copied, or a later += would write through to them.
  bool adoptable = g.is_contiguous() && g.dtype() == leaf.dtype && g.impl_ptr().use_count() == 1 &&
                   g.storage().use_count() == 1 && g.nbytes() == g.storage()->nbytes();
  if (adoptable) {
    g.storage()->retag(MemTag::grad);
    leaf.grad = g.detach().impl_ptr();
    return;
  }
  TagScope scope(MemTag::grad);
  Tensor fresh = Tensor::empty(leaf.shape, leaf.dtype, g.device());
  fresh.copy_(g);
  leaf.grad = fresh.impl_ptr();
}
}  // namespace

bool grad_enabled() { return t_grad_enabled; }
NoGradGuard::NoGradGuard() : previous_(t_grad_enabled) { t_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { t_grad_enabled = previous_; }

Tensor record(Tensor output, std::shared_ptr<Node> node, std::vector<Tensor> inputs) {
  if (!t_grad_enabled) return output;
  bool any = false;
  std::vector<Edge> edges(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& in = inputs[i];
    if (!needs_grad(in)) continue;
    any = true;
    edges[i].shape = in.shape();
    if (in.is_leaf())
      edges[i].leaf = in.impl_ptr();
    else
      edges[i].producer = in.grad_fn();
  }
  if (!any) return output;
  node->next_edges = std::move(edges);
  node->output_shape = output.shape();
  output.impl().grad_fn = std::move(node);
  output.impl().requires_grad = true;
  return output;
}

// ---------------- what backward() and grad() share ----------------
namespace detail {

GraphTask::GraphTask(bool hooks) : id(++g_last_task_id), fire_hooks(hooks), outer_(t_task) { t_task = this; }
GraphTask::~GraphTask() { t_task = outer_; }
GraphTask* GraphTask::current() { return t_task; }

void GraphTask::finish() {
  for (std::size_t i = 0; i < callbacks.size(); ++i) {  // by index: a callback may queue another
    auto fn = std::move(callbacks[i]);
    fn();
  }
  callbacks.clear();
}

std::vector<std::shared_ptr<Node>> reachable_nodes(const std::vector<std::shared_ptr<Node>>& roots,
                                                   const std::unordered_set<const Node*>* released_ok) {
  // Iterative DFS; a node is appended once all its producers are (post-order).
  // BEGIN SOLUTION L02.1
  std::vector<std::shared_ptr<Node>> order;  // owning: freeing edges later must not free pending nodes
  std::unordered_map<Node*, bool> visited;
  std::vector<std::pair<std::shared_ptr<Node>, std::size_t>> stack;
  for (const auto& root : roots) {
    if (visited[root.get()]) continue;
    visited[root.get()] = true;
    stack.push_back({root, 0});
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (node->released && !(released_ok && released_ok->count(node.get())))
        throw std::runtime_error(std::string("backward: the graph through ") + node->name() +
                                 " was already freed by an earlier backward");
      if (next < node->next_edges.size()) {
        const Edge& e = node->next_edges[next++];
        if (e.producer && !visited[e.producer.get()]) {
          visited[e.producer.get()] = true;
          stack.push_back({e.producer, 0});
        }
        continue;
      }
      order.push_back(node);
      stack.pop_back();
    }
  }
  return order;
  // END SOLUTION
}

void add_grad(std::unordered_map<Node*, Tensor>& grad_of, Node* node, const Tensor& g) {
  auto slot = grad_of.find(node);
  if (slot == grad_of.end())
    grad_of.emplace(node, g);
  else if (slot->second.impl_ptr().use_count() == 1 && slot->second.storage().use_count() == 1 &&
           slot->second.is_contiguous())  // ours alone (not also another node's or a leaf's): add in place
    ops::add_(slot->second, g);
  else
    slot->second = ops::add(slot->second, g);
}

void release(Node& node) {
  node.release_saved();
  node.next_edges.clear();
  node.released = true;
}

}  // namespace detail

void queue_callback(std::function<void()> fn) {
  if (!t_task) throw std::logic_error("queue_callback: no backward is running on this thread");
  t_task->callbacks.push_back(std::move(fn));
}
std::uint64_t current_backward_id() { return t_task ? t_task->id : 0; }
bool hooks_enabled() { return !t_task || t_task->fire_hooks; }

// ---------------- backward ----------------
void backward(const Tensor& root, const Tensor& grad_root) {
  if (!needs_grad(root)) throw std::invalid_argument("backward: the tensor does not require grad (no graph to walk)");
  Tensor g0 = grad_root;
  if (!g0.defined()) {
    if (root.numel() != 1)
      throw std::invalid_argument("backward: grad_root can be implicit only for a one-element tensor, not " +
                                  root.describe());
    g0 = Tensor::ones(root.shape(), DType::f32, root.device());  // where the loss lives (ones_like)
  } else if (g0.shape() != root.shape()) {
    throw std::invalid_argument("backward: grad_root " + g0.describe() + " does not match the root " +
                                root.describe());
  }
  detail::GraphTask task(/*fire_hooks=*/true);
  if (root.is_leaf()) {  // d root / d root
    Tensor leaf = root;
    accumulate_into_leaf(leaf.impl(), g0);
    leaf.impl().grad_hooks.call(leaf);
    task.finish();
    return;
  }

  // 1. Topological order from the root (every node after all nodes that consume its output), and
  //    the number of edges into each leaf: its gradient is final when the last one has run.
  std::vector<std::shared_ptr<Node>> order = detail::reachable_nodes({root.grad_fn()});
  std::unordered_map<TensorImpl*, int> leaf_pending;
  for (const auto& node : order)
    for (const Edge& e : node->next_edges)
      if (e.leaf) ++leaf_pending[e.leaf.get()];

  // 2. Walk in topological order, pushing dL/d(output) through each node.
  std::unordered_map<Node*, Tensor> grad_of;
  grad_of[root.grad_fn().get()] = g0;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* node = it->get();
    auto found = grad_of.find(node);
    std::vector<Tensor> grads;
    if (found != grad_of.end()) {
      Tensor grad_out = std::move(found->second);
      grad_of.erase(found);
      grads = node->backward(grad_out);
      if (grads.size() != node->next_edges.size())
        throw std::logic_error(std::string(node->name()) + " returned the wrong number of gradients");
    } else {
      // No gradient reached this node (every consumer returned an undefined one): it contributes
      // nothing, but its leaves' pending counts must still drop so their hooks fire.
      grads.resize(node->next_edges.size());
    }
    for (std::size_t i = 0; i < grads.size(); ++i) {
      const Edge& e = node->next_edges[i];
      if (e.leaf) {
        TensorImpl& leaf = *e.leaf;
        if (grads[i].defined()) accumulate_into_leaf(leaf, grads[i]);
        if (--leaf_pending[&leaf] == 0 && leaf.grad) {  // final for this backward: fire the hooks now
          Tensor param(e.leaf);
          leaf.grad_hooks.call(param);
        }
      } else if (e.producer && grads[i].defined()) {
        detail::add_grad(grad_of, e.producer.get(), grads[i]);
      }
    }
    // 3. Free what this node saved, and its edges: activation memory goes as backward proceeds.
    detail::release(*node);
  }
  task.finish();
}

}  // namespace minitorch::autograd

// autograd::checkpoint: forward without a graph, backward = recompute + differentiate (checkpoint.h).
#include "autograd/checkpoint.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "autograd/engine.h"
#include "autograd/engine_detail.h"
#include "autograd/node.h"
#include "minitorch/not_implemented.h"

namespace minitorch::autograd {

namespace {

/// What the recompute starts from, one per input that wants a gradient: a node with no edges that keeps
/// dL/dx as the engine summed it there. Not a leaf: a leaf's .grad is rounded to the leaf's dtype
/// (accumulate_into_leaf), so a bf16 or fp16 input would hand back a gradient rounded once more than
/// the unsplit graph passes on (issue 41: the losses moved in bf16 and fp16).
struct RecomputeInput : Node {
  Tensor grad;
  const char* name() const override { return "CheckpointInput"; }
  std::vector<Tensor> backward(const Tensor& grad_output) override {
    grad = grad_output;
    return {};
  }
};

/// The node that stands for a whole segment: it saved the segment's inputs, nothing inside.
struct CheckpointBackward : Node {
  Segment fn;
  std::vector<SavedTensor> inputs;
  std::vector<bool> wants_grad;  // per input: does the outer graph want its gradient?

  const char* name() const override { return "CheckpointBackward"; }
  void release_saved() override {
    inputs.clear();
    fn = nullptr;
  }

  // grad_output: dL/dy, shaped like y.
  std::vector<Tensor> backward(const Tensor& grad_output) override {
    if (!fn) throw std::runtime_error("checkpoint: the segment was already differentiated by an earlier backward");
    // BEGIN SOLUTION L08.2
    // 1. The recompute: y = fn(x) again, recorded this time, from detached copies of the inputs (each the
    //    output of a RecomputeInput, where the nested backward stops).
    std::vector<Tensor> x(inputs.size());
    std::vector<std::shared_ptr<RecomputeInput>> captures(inputs.size());
    std::vector<Tensor> wanted;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      x[i] = inputs[i].get().defined() ? inputs[i].get().detach() : Tensor();
      if (!wants_grad[i]) continue;
      captures[i] = std::make_shared<RecomputeInput>();
      captures[i]->output_shape = x[i].shape();
      x[i].impl().grad_fn = captures[i];
      x[i].impl().requires_grad = true;
      wanted.push_back(x[i]);
    }
    Tensor y = fn(x);
    std::vector<Tensor> grads(inputs.size());
    if (!needs_grad(y)) return grads;  // nothing inside depends on anything that wants a gradient
    // 2. Differentiate it. Inside backward(): a nested backward accumulates the captured parameters'
    //    gradients into their .grad and fires their hooks, and leaves the inputs' at their captures.
    //    Inside grad(): a nested grad() over the inputs; a captured leaf that wants a gradient is an error.
    if (hooks_enabled()) {
      autograd::backward(y, grad_output);
      for (std::size_t i = 0; i < x.size(); ++i)
        if (captures[i]) grads[i] = captures[i]->grad;
      return grads;
    }
    for (const auto& node : detail::reachable_nodes({y.grad_fn()}))
      for (const Edge& e : node->next_edges)
        if (e.leaf)
          throw std::logic_error("checkpoint: autograd::grad through a checkpointed segment that uses a tensor "
                                 "requiring grad other than its inputs ('" + e.leaf->name +
                                 "'): grad() writes no .grad; use backward(), or pass the tensor as an input");
    std::vector<Tensor> g = wanted.empty() ? std::vector<Tensor>{} : autograd::grad({y}, wanted, {grad_output});
    for (std::size_t i = 0, j = 0; i < x.size(); ++i)
      if (wants_grad[i]) grads[i] = g[j++];
    return grads;
    // END SOLUTION
  }
};

}  // namespace

Tensor checkpoint(const Segment& fn, const std::vector<Tensor>& inputs) {
  if (!fn) throw std::invalid_argument("checkpoint: no function given");
  // BEGIN SOLUTION L08.1
  if (!grad_enabled()) return fn(inputs);
  Tensor y;
  {
    NoGradGuard no_graph;  // the segment's activations are freed as soon as they are used
    y = fn(inputs);
  }
  if (!y.defined()) throw std::invalid_argument("checkpoint: the segment returned an undefined tensor");
  auto node = std::make_shared<CheckpointBackward>();
  node->fn = fn;
  for (const Tensor& in : inputs) {
    node->inputs.emplace_back(in);
    node->wants_grad.push_back(needs_grad(in));
  }
  // The output is connected to the graph through the node even when no input needs a gradient: the
  // segment's parameters do (a GPT block's input from a frozen embedding still trains the block).
  y = y.detach();
  if (std::find(node->wants_grad.begin(), node->wants_grad.end(), true) != node->wants_grad.end())
    return record(y, node, inputs);
  node->output_shape = y.shape();
  node->next_edges.resize(inputs.size());
  y.impl().grad_fn = std::move(node);
  y.impl().requires_grad = true;
  return y;
  // END SOLUTION
}

}  // namespace minitorch::autograd

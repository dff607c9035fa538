// autograd::grad: gradients of outputs with respect to chosen inputs, returned instead of
// accumulated. The same walk as backward() (engine.cpp), restricted to the nodes that lie between
// the outputs and the inputs, with no hooks and no .grad.
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "autograd/engine.h"
#include "autograd/engine_detail.h"
#include "minitorch/ops.h"

namespace minitorch::autograd {

namespace {
/// results[i] += g (out of place: g may be shared with other consumers or the caller).
void add_result(std::vector<Tensor>& results, std::size_t i, const Tensor& g, const Shape& shape) {
  if (!g.defined()) return;
  if (g.shape() != shape)
    throw std::logic_error("grad: gradient " + shape_str(g.shape()) + " for an input of shape " + shape_str(shape));
  results[i] = results[i].defined() ? ops::add(results[i], g) : g;
}
}  // namespace

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, bool retain_graph) {
  if (!grad_outputs.empty() && grad_outputs.size() != outputs.size())
    throw std::invalid_argument("grad: " + std::to_string(grad_outputs.size()) + " grad_outputs for " +
                                std::to_string(outputs.size()) + " outputs");
  // Where each input's gradient is read: a leaf's from the edges into it, an intermediate's from
  // what arrives at the node that produced it (one node per tensor).
  std::unordered_map<const TensorImpl*, std::vector<std::size_t>> leaf_inputs;
  std::unordered_map<const Node*, std::vector<std::size_t>> node_inputs;
  std::unordered_set<const Node*> input_nodes;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!needs_grad(inputs[i]))
      throw std::invalid_argument("grad: input " + std::to_string(i) + " does not require grad");
    if (inputs[i].is_leaf())
      leaf_inputs[inputs[i].impl_ptr().get()].push_back(i);
    else
      node_inputs[inputs[i].grad_fn().get()].push_back(i), input_nodes.insert(inputs[i].grad_fn().get());
  }

  detail::GraphTask task(/*fire_hooks=*/false);
  std::vector<Tensor> results(inputs.size());
  std::unordered_map<Node*, Tensor> grad_of;
  std::vector<std::shared_ptr<Node>> roots;
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    const Tensor& out = outputs[k];
    if (!needs_grad(out)) throw std::invalid_argument("grad: output " + std::to_string(k) + " does not require grad");
    Tensor g = grad_outputs.empty() ? Tensor() : grad_outputs[k];
    if (!g.defined()) {
      if (out.numel() != 1)
        throw std::invalid_argument("grad: grad_outputs[" + std::to_string(k) + "] can be implicit only for a " +
                                    "one-element output, not " + out.describe());
      g = Tensor::ones(out.shape(), DType::f32, out.device());
    } else if (g.shape() != out.shape()) {
      throw std::invalid_argument("grad: grad_outputs[" + std::to_string(k) + "] " + g.describe() +
                                  " does not match the output " + out.describe());
    }
    if (out.is_leaf()) {  // d out / d out
      auto hit = leaf_inputs.find(out.impl_ptr().get());
      if (hit != leaf_inputs.end())
        for (std::size_t i : hit->second) add_result(results, i, g, inputs[i].shape());
      continue;
    }
    roots.push_back(out.grad_fn());
    detail::add_grad(grad_of, out.grad_fn().get(), g);
  }

  // 1. The reachable graph, and which nodes lead to an input (only those run their backward).
  std::vector<std::shared_ptr<Node>> order = detail::reachable_nodes(roots, &input_nodes);
  std::unordered_set<const Node*> leads;  // a node whose backward feeds some input's gradient
  for (const auto& node : order)          // post-order: producers are decided before their consumers
    for (const Edge& e : node->next_edges)
      if ((e.leaf && leaf_inputs.count(e.leaf.get())) ||
          (e.producer && (input_nodes.count(e.producer.get()) || leads.count(e.producer.get())))) {
        leads.insert(node.get());
        break;
      }

  // 2. Walk in topological order, as backward() does, reading gradients off at the inputs.
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* node = it->get();
    auto found = grad_of.find(node);
    if (found == grad_of.end()) continue;  // no gradient reached it
    Tensor grad_out = std::move(found->second);
    grad_of.erase(found);
    auto as_input = node_inputs.find(node);
    if (as_input != node_inputs.end())
      for (std::size_t i : as_input->second) add_result(results, i, grad_out, inputs[i].shape());
    if (!leads.count(node)) continue;
    std::vector<Tensor> grads = node->backward(grad_out);
    if (grads.size() != node->next_edges.size())
      throw std::logic_error(std::string(node->name()) + " returned the wrong number of gradients");
    for (std::size_t i = 0; i < grads.size(); ++i) {
      const Edge& e = node->next_edges[i];
      if (!grads[i].defined()) continue;
      if (e.leaf) {
        auto hit = leaf_inputs.find(e.leaf.get());
        if (hit != leaf_inputs.end())
          for (std::size_t j : hit->second) add_result(results, j, grads[i], inputs[j].shape());
      } else if (e.producer && (leads.count(e.producer.get()) || input_nodes.count(e.producer.get()))) {
        detail::add_grad(grad_of, e.producer.get(), grads[i]);
      }
    }
    if (!retain_graph) detail::release(*node);
  }
  task.finish();
  return results;
}

}  // namespace minitorch::autograd

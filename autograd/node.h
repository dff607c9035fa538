#pragma once
/// \file node.h
/// A node of the autograd graph: the op that produced a tensor. It remembers the tensors it read
/// (its edges back toward the leaves) and whatever it saved to compute its backward.
///
/// The whole idea of reverse mode fits here: an op's output holds `grad_fn`; `grad_fn` holds one
/// edge per input (to the node that produced it, or to the leaf itself); backward() walks from the
/// loss to the leaves in reverse topological order, asking each node to turn dL/d(output) into
/// dL/d(input) for every input (the chain rule).
///
/// An edge does not hold the input's data: a node keeps alive only what its backward saved, so
/// activation memory is exactly the saved tensors (as in PyTorch). A saved parameter is the
/// exception that proves the rule: the node refers to the parameter, not to its bytes (SavedTensor).
#include <memory>
#include <optional>
#include <vector>

#include "minitorch/tensor.h"

namespace minitorch::autograd {

struct Node;

/// Where the gradient of one input goes.
struct Edge {
  std::shared_ptr<Node> producer;     ///< the op that made a non-leaf input
  std::shared_ptr<TensorImpl> leaf;   ///< or the leaf to accumulate into
  Shape shape;                        ///< the input's shape (its gradient has this shape)
  /// False for inputs that need no gradient.
  bool defined() const { return producer || leaf; }
};

/// A tensor a backward reads. An activation is kept as a detached view: its bytes stay alive until
/// the node is released. A leaf that requires grad (a parameter) is kept as the parameter itself
/// (its TensorImpl), and get() reads whatever storage it has when backward runs: ZeRO-3 releases a
/// parameter after forward and gathers it again before backward, so the graph must neither pin the
/// old bytes nor read them (a parameter still released at backward time fails in the op that reads it).
///
/// Under SaveOnHost, an activation on a device is kept in host memory instead (one d2h copy) and comes
/// back the first time backward reads it (one h2d copy).
class SavedTensor {
 public:
  SavedTensor() = default;
  /// Saves `t` (may be undefined).
  SavedTensor(const Tensor& t)  // NOLINT: implicit, so `node->w = weight;` reads like before
      : t_(!t.defined() || (t.is_leaf() && t.requires_grad()) ? t : t.detach()) {
    if (save_on_host() && t_.defined() && !t_.device().is_cpu() && !(t.is_leaf() && t.requires_grad())) {
      device_ = t_.device();
      t_ = t_.to(Device::cpu());
    }
  }
  /// The tensor to compute with (on its device: a host-kept activation is copied back on first use).
  const Tensor& get() const {
    if (device_) {
      t_ = t_.to(*device_);
      device_.reset();
    }
    return t_;
  }
  void reset() {
    t_ = Tensor();
    device_.reset();
  }
  /// Whether SaveOnHost is on for this thread.
  static bool save_on_host() { return save_on_host_flag(); }

 private:
  friend class SaveOnHost;
  static bool& save_on_host_flag() {
    static thread_local bool on = false;  // a scope flag, like grad mode
    return on;
  }
  mutable Tensor t_;
  mutable std::optional<Device> device_;  // set while an activation waits in host memory
};

/// While it lives, activations saved for backward on this thread that are on a device (not the host) are
/// kept in host memory and copied back when backward reads them: DeepSpeed's
/// `activation_checkpointing.cpu_checkpointing` (ZeRO-R's P_a+cpu), PyTorch's `save_on_cpu`. The GPT turns
/// it on around its checkpointed segments, whose only saved tensors are their inputs (nn/gpt.h).
class SaveOnHost {
 public:
  explicit SaveOnHost(bool on = true) : previous_(SavedTensor::save_on_host_flag()) { SavedTensor::save_on_host_flag() = on; }
  ~SaveOnHost() { SavedTensor::save_on_host_flag() = previous_; }
  SaveOnHost(const SaveOnHost&) = delete;
  SaveOnHost& operator=(const SaveOnHost&) = delete;

 private:
  bool previous_;
};

struct Node {
  virtual ~Node() = default;
  /// dL/d(inputs[i]) for every input, given dL/d(output). Entries for inputs that need no gradient
  /// may be left undefined.
  virtual std::vector<Tensor> backward(const Tensor& grad_output) = 0;
  /// The op's name, for error messages and traces ("MatmulBackward").
  virtual const char* name() const = 0;
  /// Drops saved tensors once backward has run (frees activation memory).
  virtual void release_saved() {}

  /// One edge per op input, in order; undefined where the input needs no gradient.
  std::vector<Edge> next_edges;
  /// Shape and dtype of the output, to check gradients against.
  Shape output_shape;
  bool released = false;
};

/// True if gradients are being recorded on this thread (see NoGradGuard).
bool grad_enabled();

/// Disables graph recording while it lives (like torch.no_grad()): ops return plain tensors.
/// \code
///   { minitorch::autograd::NoGradGuard guard; auto y = model.forward(x); }  // no graph kept
/// \endcode
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

/// True if `t` takes part in differentiation (a leaf with requires_grad, or an op output in a graph).
inline bool needs_grad(const Tensor& t) { return t.defined() && t.requires_grad(); }

/// Connects `output` to the graph through `node` if grad mode is on and any input needs a gradient;
/// inputs that need none get undefined edges. Returns `output`.
Tensor record(Tensor output, std::shared_ptr<Node> node, std::vector<Tensor> inputs);

}  // namespace minitorch::autograd

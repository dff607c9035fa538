// f and g (tp/regions.h): two autograd nodes around one all-reduce each.
#include "tp/regions.h"

#include <memory>
#include <vector>

#include "autograd/node.h"
#include "minitorch/not_implemented.h"

namespace minitorch::tp {

namespace {
/// A new contiguous tensor holding x's values, all-reduced (sum) over `group`.   x: any view, f32 or bf16
Tensor all_reduced(const Tensor& x, dist::ProcessGroup& group) {
  Tensor out = x.clone();  // the collective works in place, on its own copy
  group.all_reduce(out, dist::ReduceOp::sum);
  return out;
}

struct FBackward : autograd::Node {
  dist::ProcessGroup* group = nullptr;
  const char* name() const override { return "TensorParallelF"; }
  // forward: y = x (on every rank)   =>   dL/dx = sum over the group's ranks of dL/dy
  std::vector<Tensor> backward(const Tensor& grad) override {
    // BEGIN SOLUTION L13.1
    return {all_reduced(grad, *group)};
    // END SOLUTION
  }
};

struct GBackward : autograd::Node {
  const char* name() const override { return "TensorParallelG"; }
  // forward: y = sum over ranks of x_r   =>   dL/dx_r = dL/dy (y is whole on every rank: so is its gradient)
  std::vector<Tensor> backward(const Tensor& grad) override {
    // BEGIN SOLUTION L13.1
    return {grad};
    // END SOLUTION
  }
};
}  // namespace

Tensor f(const Tensor& x, dist::ProcessGroup& group) {
  // BEGIN SOLUTION L13.1
  if (!autograd::grad_enabled() || !autograd::needs_grad(x)) return x;
  auto node = std::make_shared<FBackward>();
  node->group = &group;
  return autograd::record(x.detach(), node, {x});
  // END SOLUTION
}

Tensor g(const Tensor& x, dist::ProcessGroup& group) {
  // BEGIN SOLUTION L13.1
  Tensor y = all_reduced(x, group);
  if (!autograd::grad_enabled() || !autograd::needs_grad(x)) return y;
  return autograd::record(y, std::make_shared<GBackward>(), {x});
  // END SOLUTION
}

}  // namespace minitorch::tp

#include "optim/optimizer.h"

#include <set>
#include <stdexcept>

namespace minitorch::optim {

std::vector<ParamGroup> decay_groups(const NamedTensors& params, float lr, float weight_decay) {
  ParamGroup decay{"decay", {}, lr, weight_decay}, no_decay{"no_decay", {}, lr, 0.f};
  for (const auto& [name, t] : params) (t.dim() >= 2 ? decay : no_decay).params.emplace_back(name, t);
  return {decay, no_decay};
}

Optimizer::Optimizer(std::vector<ParamGroup> groups) : groups_(std::move(groups)) {
  std::set<std::string> names;
  std::set<const TensorImpl*> tensors;
  for (const auto& g : groups_)
    for (const auto& [name, t] : g.params) {
      if (!t.defined()) throw std::invalid_argument("optimizer: parameter '" + name + "' is undefined");
      if (t.dtype() == DType::i32)
        throw std::invalid_argument("optimizer: parameter '" + name + "' is i32; only f32 / bf16 / f16 can be trained");
      if (!t.is_contiguous()) throw std::invalid_argument("optimizer: parameter '" + name + "' is not contiguous");
      if (!names.insert(name).second)
        throw std::invalid_argument("optimizer: parameter name '" + name + "' appears twice");
      if (!tensors.insert(t.impl_ptr().get()).second)
        throw std::invalid_argument("optimizer: parameter '" + name +
                                    "' is a tensor already given under another name (pass tied weights once)");
    }
}

void Optimizer::zero_grad() {
  for (auto& g : groups_)
    for (auto& [name, t] : g.params) t.set_grad(Tensor());
}

void Optimizer::set_lr(float lr) {
  for (auto& g : groups_) g.lr = lr;
}

float Optimizer::lr() const {
  if (groups_.empty()) throw std::logic_error("optimizer: no parameter groups");
  return groups_.front().lr;
}

std::vector<Tensor> Optimizer::parameters() const {
  std::vector<Tensor> out;
  for (const auto& g : groups_)
    for (const auto& [name, t] : g.params) out.push_back(t);
  return out;
}

std::int64_t Optimizer::num_parameters() const {
  std::int64_t n = 0;
  for (const auto& g : groups_)
    for (const auto& [name, t] : g.params) n += t.numel();
  return n;
}

}  // namespace minitorch::optim

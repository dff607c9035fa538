#include "optim/sgd.h"

#include <stdexcept>

#include "minitorch/allocator.h"
#include "minitorch/ops.h"

namespace minitorch::optim {

SGD::SGD(const NamedTensors& params, const SGDOptions& options)
    : Optimizer({ParamGroup{"default", params, options.lr, options.weight_decay}}), options_(options) {
  if (!(options.lr >= 0.f)) throw std::invalid_argument("SGD: invalid learning rate " + std::to_string(options.lr));
  if (!(options.momentum >= 0.f)) throw std::invalid_argument("SGD: invalid momentum " + std::to_string(options.momentum));
  if (!(options.weight_decay >= 0.f))
    throw std::invalid_argument("SGD: invalid weight_decay " + std::to_string(options.weight_decay));
}

void SGD::step() {
  ++step_;
  for (auto& group : groups_)
    for (auto& [name, param] : group.params) {
      Tensor grad = param.grad();
      if (!grad.defined()) continue;
      Tensor d = group.weight_decay != 0.f ? ops::add(grad, ops::affine(param, group.weight_decay)) : grad;  // g + wd p
      if (options_.momentum != 0.f) {
        Tensor& buf = momentum_[name];
        if (!buf.defined()) {
          TagScope scope(MemTag::optim);
          buf = Tensor::empty(param.shape(), DType::f32, param.device());
          buf.copy_(d);
        } else {
          ops::scale_(buf, options_.momentum);
          ops::add_(buf, d);
        }
        d = buf;
      }
      ops::add_(param, d, -group.lr);
    }
}

NamedTensors SGD::state_tensors() const {
  NamedTensors out;
  for (const auto& group : groups_)
    for (const auto& [name, p] : group.params) {
      auto it = momentum_.find(name);
      if (it != momentum_.end() && it->second.defined()) out.emplace_back("momentum_buffer." + name, it->second);
    }
  return out;
}

void SGD::load_state(const NamedTensors& state, std::int64_t step_count) {
  std::map<std::string, Tensor> params;
  for (const auto& group : groups_)
    for (const auto& [name, t] : group.params) params.emplace(name, t);
  const std::string prefix = "momentum_buffer.";
  for (const auto& [key, t] : state) {
    auto p = key.rfind(prefix, 0) == 0 ? params.find(key.substr(prefix.size())) : params.end();
    if (p == params.end()) throw std::runtime_error("SGD::load_state: unexpected key '" + key + "'");
    if (!t.defined() || t.shape() != p->second.shape())
      throw std::runtime_error("SGD::load_state: size mismatch for '" + key + "': state has " +
                               (t.defined() ? shape_str(t.shape()) : std::string("undefined")) +
                               ", the parameter has " + shape_str(p->second.shape()));
  }
  std::map<std::string, Tensor> fresh;
  TagScope scope(MemTag::optim);
  for (const auto& [key, t] : state) {
    Tensor buf = Tensor::empty(t.shape(), DType::f32, params.at(key.substr(prefix.size())).device());
    buf.copy_(t);
    fresh[key.substr(prefix.size())] = buf;
  }
  momentum_ = std::move(fresh);
  step_ = step_count;
}

}  // namespace minitorch::optim

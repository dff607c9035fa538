#include "nn/module.h"

#include <map>
#include <set>
#include <stdexcept>

#include "minitorch/allocator.h"
#include "minitorch/json_limits.h"

namespace minitorch::nn {

void Module::check_local_name(const std::string& name, const char* what) const {
  if (name.empty() || name.find('.') != std::string::npos)
    throw std::invalid_argument(std::string("Module: ") + what + " name '" + name +
                                "' must be non-empty and contain no '.'");
  for (const auto& [n, t] : params_)
    if (n == name) throw std::invalid_argument(std::string("Module: '") + name + "' is already a parameter");
  for (const auto& [n, m] : children_)
    if (n == name) throw std::invalid_argument(std::string("Module: '") + name + "' is already a submodule");
}

Tensor Module::register_parameter(const std::string& name, Tensor param) {
  check_local_name(name, "parameter");
  if (!param.defined()) throw std::invalid_argument("Module: parameter '" + name + "' is an undefined tensor");
  if (!param.is_leaf()) throw std::invalid_argument("Module: parameter '" + name + "' is not a leaf tensor");
  param.storage()->retag(MemTag::param);
  param.set_requires_grad(true);
  if (param.name().empty()) param.set_name(path_prefix() + name);
  params_.emplace_back(name, param);
  return param;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> child) {
  check_local_name(name, "submodule");
  if (!child) throw std::invalid_argument("Module: submodule '" + name + "' is null");
  if (child->parent_) throw std::invalid_argument("Module: submodule '" + name + "' already has a parent");
  // A parameter still called by its path inside `child` gets its path from the root; a tensor that
  // already has a name from elsewhere (a tied weight) keeps it.
  const std::string prefix = path_prefix() + name + ".";
  for (auto& [rel, t] : child->state_dict())
    if (t.name() == rel) t.set_name(prefix + rel);
  child->parent_ = this;
  child->name_in_parent_ = name;
  children_.emplace_back(name, std::move(child));
}

Module::~Module() {
  for (auto& [n, child] : children_) child->parent_ = nullptr;  // a child that outlives us becomes a root
}

std::string Module::path() const {
  std::string p = path_prefix();
  if (!p.empty()) p.pop_back();  // the trailing dot
  return p;
}

std::string Module::path_prefix() const {
  std::string p;
  for (const Module* m = this; m->parent_; m = m->parent_) p = m->name_in_parent_ + "." + p;
  return p;
}

void Module::collect(const std::string& prefix, NamedTensors& out) const {
  for (const auto& [n, t] : params_) out.emplace_back(prefix + n, t);
  for (const auto& [n, m] : children_) m->collect(prefix + n + ".", out);
}

NamedTensors Module::state_dict() const {
  NamedTensors out;
  collect("", out);
  return out;
}

NamedTensors Module::named_parameters() const {
  NamedTensors all = state_dict(), out;
  std::set<const TensorImpl*> seen;
  for (auto& [n, t] : all)
    if (seen.insert(t.impl_ptr().get()).second) out.emplace_back(std::move(n), std::move(t));
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [n, t] : named_parameters()) out.push_back(t);
  return out;
}

std::vector<std::pair<std::string, Module*>> Module::named_modules() {
  std::vector<std::pair<std::string, Module*>> out{{"", this}};
  for (auto& [n, m] : children_)
    for (auto& [sub, ptr] : m->named_modules()) out.emplace_back(sub.empty() ? n : n + "." + sub, ptr);
  return out;
}

Tensor Module::parameter(const std::string& name) const {
  for (const auto& [n, t] : params_)
    if (n == name) return t;
  throw std::invalid_argument("Module: no parameter '" + name + "'");
}

void Module::load_state_dict(const NamedTensors& state, bool strict) {
  NamedTensors mine = state_dict();
  std::map<std::string, Tensor> by_name(mine.begin(), mine.end());
  std::map<std::string, const Tensor*> given;
  for (const auto& [name, t] : state) {
    const std::string n = truncate_for_message(name);  // a key read from a file may be any length
    if (!given.emplace(name, &t).second) throw std::runtime_error("load_state_dict: key '" + n + "' appears twice");
    auto it = by_name.find(name);
    if (it == by_name.end())
      throw std::runtime_error("load_state_dict: unexpected key '" + n + "' (the model has no such parameter)");
    if (!t.defined()) throw std::runtime_error("load_state_dict: key '" + n + "' is an undefined tensor");
    // f32 <-> bf16 converts (a bf16-trained checkpoint evaluates in f32); integers are never weights:
    // an I32 header over float bytes would load as garbage of magnitude 1e9 and train on.
    if ((t.dtype() == DType::i32) != (it->second.dtype() == DType::i32))
      throw std::runtime_error("load_state_dict: dtype mismatch for '" + n + "': checkpoint has " +
                               dtype_name(t.dtype()) + ", the model has " + dtype_name(it->second.dtype()) +
                               (it->second.dtype() == DType::i32 ? "" : " (expected f32, bf16 or f16)"));
    if (t.shape() != it->second.shape())
      throw std::runtime_error("load_state_dict: size mismatch for '" + n + "': checkpoint has " +
                               shape_str(t.shape()) + ", the model has " + shape_str(it->second.shape()));
  }
  if (strict) {
    std::set<const TensorImpl*> present;
    for (const auto& [n, t] : mine)
      if (given.count(n)) present.insert(t.impl_ptr().get());
    for (const auto& [n, t] : mine)
      if (!present.count(t.impl_ptr().get()))
        throw std::runtime_error("load_state_dict: missing key '" + n + "' " + shape_str(t.shape()) +
                                 " (not in the state dict)");
  }
  for (const auto& [n, src] : given) {
    Tensor dst = by_name.at(n);
    if (!dst.same(*src)) dst.copy_(*src);
  }
}

std::int64_t Module::num_parameters() const {
  std::int64_t n = 0;
  for (const auto& [name, t] : named_parameters()) n += t.numel();
  return n;
}

void Module::zero_grad() {
  for (auto& t : parameters()) t.set_grad(Tensor());
}

void Module::to(DType dtype) {
  if (dtype == DType::i32) throw std::invalid_argument("Module::to: parameters must be f32, bf16 or f16, not i32");
  TagScope scope(MemTag::param);
  for (auto& t : parameters()) {
    t.set_grad(Tensor());
    if (t.dtype() == dtype) continue;
    Tensor c = t.to(dtype).contiguous();
    TensorImpl& im = t.impl();
    im.storage = c.storage();
    im.dtype = dtype;
    im.strides = c.strides();
    im.offset = c.offset();
  }
}

void Module::to(Device device) {
  TagScope scope(MemTag::param);
  for (auto& t : parameters()) {
    t.set_grad(Tensor());
    if (t.device() == device) continue;
    Tensor c = t.to(device);
    TensorImpl& im = t.impl();
    im.storage = c.storage();
    im.strides = c.strides();
    im.offset = c.offset();
  }
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [n, m] : children_) m->train(on);
}

}  // namespace minitorch::nn

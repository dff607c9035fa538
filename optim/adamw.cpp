#include "optim/adamw.h"

#include "minitorch/host_adamw.h"

#include <stdexcept>

#include "minitorch/allocator.h"
#include "minitorch/json_limits.h"
#include "minitorch/ops.h"

namespace minitorch::optim {

namespace {
void check_options(const AdamWOptions& o) {
  if (!(o.lr >= 0.f)) throw std::invalid_argument("AdamW: invalid learning rate " + std::to_string(o.lr));
  if (!(o.eps >= 0.f)) throw std::invalid_argument("AdamW: invalid eps " + std::to_string(o.eps));
  if (!(o.beta1 >= 0.f && o.beta1 < 1.f)) throw std::invalid_argument("AdamW: invalid beta1 " + std::to_string(o.beta1));
  if (!(o.beta2 >= 0.f && o.beta2 < 1.f)) throw std::invalid_argument("AdamW: invalid beta2 " + std::to_string(o.beta2));
  if (!(o.weight_decay >= 0.f))
    throw std::invalid_argument("AdamW: invalid weight_decay " + std::to_string(o.weight_decay));
}
}  // namespace

AdamW::AdamW(const NamedTensors& params, const AdamWOptions& options)
    : AdamW(decay_groups(params, options.lr, options.weight_decay), options) {}

AdamW::AdamW(std::vector<ParamGroup> groups, const AdamWOptions& options)
    : Optimizer(std::move(groups)), options_(options) {
  check_options(options_);
}

AdamW::State& AdamW::state_for(const std::string& name, const Tensor& param) {
  State& s = state_[name];
  if (s.m.defined()) return s;
  TagScope scope(MemTag::optim);
  s.m = Tensor::zeros(param.shape(), DType::f32, param.device());
  s.v = Tensor::zeros(param.shape(), DType::f32, param.device());
  if (param.dtype() != DType::f32) {
    s.master = Tensor::empty(param.shape(), DType::f32, param.device());
    s.master.copy_(param);  // exact: bf16 -> f32 widens
  }
  return s;
}

void AdamW::step() {
  begin_step();
  for (std::size_t gi = 0; gi < groups_.size(); ++gi)
    for (auto& [name, param] : groups_[gi].params) {
      Tensor grad = param.grad();
      if (!grad.defined()) continue;
      update(gi, name, param, 0, grad.is_contiguous() ? grad.view({grad.numel()}) : grad.reshape({grad.numel()}));
    }
}

void AdamW::update(std::size_t group, const std::string& name, const Tensor& param, std::int64_t begin,
                   const Tensor& grad) {
  const ParamGroup& g = groups_.at(group);
  const ops::AdamWParams hp{g.lr, options_.beta1, options_.beta2, options_.eps, g.weight_decay, step_};
  State& s = state_for(name, param);
  const std::int64_t n = param.numel(), len = grad.numel();
  if (begin < 0 || begin + len > n)
    throw std::out_of_range("AdamW::update: range [" + std::to_string(begin) + ", " + std::to_string(begin + len) +
                            ") outside '" + name + "' of " + std::to_string(n) + " elements");
  // (len) views of the parameter and its states: every update is 1-D, so a tile may cut anywhere.
  auto range = [&](const Tensor& t) { return t.view({n}).narrow(0, begin, len); };
  Tensor m = range(s.m), v = range(s.v);
  if (on_host_) {  // ZeRO-Offload: the fused host step, the 16-bit copy written in the same pass
    Tensor p = range(param);
    auto c = copies_.find(name);
    Tensor copy = c == copies_.end() ? Tensor() : range(c->second);
    host_adamw_step(p, grad, m, v, hp, copy.defined() ? &copy : nullptr);
  } else if (s.master.defined()) {
    Tensor master = range(s.master);
    ops::adamw_step(master, grad, m, v, hp);  // update in f32
    range(param).copy_(master);               // round to the parameter's dtype (bf16, RNE)
  } else {
    Tensor p = range(param);
    ops::adamw_step(p, grad, m, v, hp);
  }
}

void AdamW::step_on_host(std::map<std::string, Tensor> copies) {
  for (const auto& group : groups_)
    for (const auto& [name, param] : group.params)
      if (param.dtype() != DType::f32 || !param.device().is_cpu())
        throw std::invalid_argument("AdamW::step_on_host: '" + name + "' is " + param.describe() +
                                    "; the host step takes f32 masters in host memory");
  on_host_ = true;
  copies_ = std::move(copies);
}

NamedTensors AdamW::state_tensors() const {
  NamedTensors out;
  for (const auto& group : groups_)
    for (const auto& [name, param] : group.params) {
      auto it = state_.find(name);
      if (it == state_.end() || !it->second.m.defined()) continue;
      out.emplace_back("exp_avg." + name, it->second.m);
      out.emplace_back("exp_avg_sq." + name, it->second.v);
      if (it->second.master.defined()) out.emplace_back("master." + name, it->second.master);
    }
  return out;
}

void AdamW::load_state(const NamedTensors& state, std::int64_t step_count) {
  if (step_count < 0) throw std::runtime_error("AdamW::load_state: negative step count");
  std::map<std::string, Tensor> params;
  for (const auto& group : groups_)
    for (const auto& [name, t] : group.params) params.emplace(name, t);
  // name -> {m, v, master} given
  std::map<std::string, State> given;
  for (const auto& [name, t] : state) {
    const std::string key = truncate_for_message(name);  // for messages: a name read from a file may be any length
    auto dot = name.find('.');
    std::string kind = dot == std::string::npos ? name : name.substr(0, dot);
    std::string pname = dot == std::string::npos ? "" : name.substr(dot + 1);
    auto p = params.find(pname);
    if ((kind != "exp_avg" && kind != "exp_avg_sq" && kind != "master") || p == params.end())
      throw std::runtime_error("AdamW::load_state: unexpected key '" + key +
                               "' (expected exp_avg.<param>, exp_avg_sq.<param> or master.<param> of a parameter "
                               "of this optimizer)");
    if (!t.defined() || t.shape() != p->second.shape())
      throw std::runtime_error("AdamW::load_state: size mismatch for '" + key + "': state has " +
                               (t.defined() ? shape_str(t.shape()) : std::string("undefined")) +
                               ", the parameter has " + shape_str(p->second.shape()));
    // Every state is f32 (state_for); copy_ would convert an I32 tensor's integers, loading garbage.
    if (t.dtype() != DType::f32)
      throw std::runtime_error("AdamW::load_state: '" + key + "' is " + dtype_name(t.dtype()) +
                               "; optimizer states are f32");
    if (kind == "master" && p->second.dtype() == DType::f32)
      throw std::runtime_error("AdamW::load_state: unexpected key '" + key + "': parameter is f32, it has no master");
    Tensor& slot = kind == "exp_avg" ? given[pname].m : kind == "exp_avg_sq" ? given[pname].v : given[pname].master;
    if (slot.defined()) throw std::runtime_error("AdamW::load_state: key '" + key + "' appears twice");
    slot = t;
  }
  for (const auto& [pname, s] : given) {
    bool need_master = params.at(pname).dtype() != DType::f32;
    if (!s.m.defined() || !s.v.defined() || (need_master && !s.master.defined()))
      throw std::runtime_error("AdamW::load_state: incomplete state for '" + pname + "' (needs exp_avg, exp_avg_sq" +
                               (need_master ? ", master" : "") + ")");
  }
  // Everything checked: replace the state.
  state_.clear();
  for (const auto& [pname, s] : given) {
    State& dst = state_for(pname, params.at(pname));
    dst.m.copy_(s.m);
    dst.v.copy_(s.v);
    if (dst.master.defined()) dst.master.copy_(s.master);
  }
  step_ = step_count;
}

bool AdamW::has_state(const std::string& name) const {
  auto it = state_.find(name);
  return it != state_.end() && it->second.m.defined();
}

std::int64_t AdamW::state_bytes() const {
  std::int64_t n = 0;
  for (const auto& [name, s] : state_)
    for (const Tensor* t : {&s.m, &s.v, &s.master})
      if (t->defined()) n += static_cast<std::int64_t>(t->nbytes());
  return n;
}

}  // namespace minitorch::optim

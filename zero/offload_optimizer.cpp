#include "zero/offload_optimizer.h"

#include <map>
#include <stdexcept>
#include <string>

#include "minitorch/allocator.h"
#include "minitorch/events.h"
#include "minitorch/not_implemented.h"
#include "zero/tiled_step.h"

namespace minitorch::zero {

OffloadOptimizer::OffloadOptimizer(std::vector<optim::ParamGroup> groups, const optim::AdamWOptions& options,
                                   const std::set<std::string>& in_place) {
  allocate_staging(groups, in_place);
  // Each piece's f32 master on the host takes its place in the groups: AdamW allocates m, v beside it. A
  // 16-bit piece's step writes its rounded value as it goes: into the staging, or into the piece itself
  // where it lives on the host.
  std::map<std::string, Tensor> copies;
  std::int64_t offset = 0, offset16 = 0;
  for (auto& g : groups)
    for (auto& [name, piece] : g.params) {
      const bool here = in_place.contains(name);
      device_pieces_.emplace_back(name, piece);
      device_grads_.push_back(piece.grad());
      in_place_.push_back(here);
      Tensor master = piece;  // an f32 piece on the host is its own master
      if (!here || piece.dtype() != DType::f32) {
        TagScope scope(MemTag::optim);  // the f32 master: optimizer state, on the host
        master = Tensor::empty(piece.shape(), DType::f32, Device::cpu());
      }
      if (piece.dtype() != DType::f32) {
        if (here) {
          copies[name] = piece;
        } else {
          copies[name] = host_params16_.narrow(0, offset16, piece.numel());
          offset16 += piece.numel();
        }
      }
      master.set_grad(host_grads_.narrow(0, offset, piece.numel()));
      offset += piece.numel();
      masters_.push_back(master);
      piece = master;  // the host AdamW's parameter
    }
  refresh_masters();
  adamw_ = std::make_unique<optim::AdamW>(std::move(groups), options);
  adamw_->step_on_host(std::move(copies));
}

void OffloadOptimizer::allocate_staging(const std::vector<optim::ParamGroup>& groups, const std::set<std::string>& in_place) {
  std::int64_t total = 0, total16 = 0;
  DType grad_dtype = DType::f32, param_dtype = DType::f32;
  for (const auto& g : groups)
    for (const auto& [name, piece] : g.params) {
      total += piece.numel();
      if (!in_place.contains(name)) total16 += piece.numel();
      grad_dtype = piece.grad().dtype(), param_dtype = piece.dtype();
    }
  {
    TagScope scope(MemTag::grad);
    host_grads_ = Tensor::zeros({total}, grad_dtype, Device::cpu());
  }
  if (param_dtype != DType::f32 && total16 > 0) {
    TagScope scope(MemTag::param);
    host_params16_ = Tensor::zeros({total16}, param_dtype, Device::cpu());
  }
}

// ---- the step on the host, between the two copies ----

void OffloadOptimizer::copy_gradients_down() {
  // BEGIN SOLUTION L10.1
  std::int64_t offset = 0;
  for (const Tensor& g : device_grads_) {  // G bytes per element, straight into the staging (no temporary)
    Tensor dst = host_grads_.narrow(0, offset, g.numel());
    dst.copy_(g);
    offset += g.numel();
  }
  // END SOLUTION
}

void OffloadOptimizer::update(float grad_multiplier, std::int64_t tile_elements) {
  {
    events::Span on_host(events::Category::compute, "host_optimizer_step");  // on its own trace thread
    tiled_adamw_step(*adamw_, grad_multiplier, tile_elements);
  }
  copy_parameters_up();
}

void OffloadOptimizer::copy_parameters_up() {
  // BEGIN SOLUTION L10.1
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < masters_.size(); ++i) {
    Tensor& piece = device_pieces_[i].second;
    if (in_place_[i]) continue;  // offload_param: updated where it lives; its unit's next gather copies it up
    if (host_params16_.defined()) {  // the step wrote the rounded values: move P = 2 bytes per element
      piece.copy_(host_params16_.narrow(0, offset, piece.numel()));
    } else {
      piece.copy_(masters_[i]);
    }
    offset += piece.numel();
  }
  // END SOLUTION
}

void OffloadOptimizer::refresh_masters() {
  for (std::size_t i = 0; i < masters_.size(); ++i) {
    if (masters_[i].same(device_pieces_[i].second)) continue;  // an f32 piece on the host: its own master
    TagScope scope(MemTag::optim_temp);  // a 16-bit piece widens through a temporary
    masters_[i].copy_(device_pieces_[i].second);
  }
}

// ---- checkpoints: AdamW's state and the masters ----

nn::NamedTensors OffloadOptimizer::state_tensors() const {
  nn::NamedTensors state = adamw_->state_tensors();
  for (std::size_t i = 0; i < masters_.size(); ++i)  // 16-bit pieces: their masters are state too
    if (device_pieces_[i].second.dtype() != DType::f32 && adamw_->has_state(device_pieces_[i].first))
      state.emplace_back("master." + device_pieces_[i].first, masters_[i]);
  return state;
}

void OffloadOptimizer::load_state(const nn::NamedTensors& state, std::int64_t steps) {
  refresh_masters();  // the parameters were loaded first: an f32 master is the parameter itself
  nn::NamedTensors rest;
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < device_pieces_.size(); ++i) index[device_pieces_[i].first] = i;
  for (const auto& [key, t] : state) {
    auto it = key.starts_with("master.") ? index.find(key.substr(7)) : index.end();
    if (it == index.end()) {
      rest.emplace_back(key, t);
      continue;
    }
    if (device_pieces_[it->second].second.dtype() == DType::f32)
      throw std::runtime_error("load_state: unexpected key '" + key + "': parameter is f32, it has no master");
    masters_[it->second].copy_(t.reshape({t.numel()}));
  }
  adamw_->load_state(rest, steps);
}

}  // namespace minitorch::zero

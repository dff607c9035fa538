#pragma once
/// \file state.h
/// From a tensor-parallel GPT back to the one model (docs/design.md §14): every rank's slices gathered over the
/// tensor group into the full tensors, named and shaped as nanoGPT's state_dict (wte without its padding,
/// lm_head.weight = transformer.wte.weight), on every rank. What a consolidated checkpoint writes and what a
/// 1-rank run loads (`nn::GPT::load_state_dict`); `TensorParallelGPT(full, group)` is the way back.
#include "nn/module.h"
#include "tp/gpt.h"

namespace minitorch::tp {

/// Collective over model.group(): every rank calls it. The tensors are new (f32 or the model's dtype).
nn::NamedTensors full_state_dict(const TensorParallelGPT& model);

}  // namespace minitorch::tp

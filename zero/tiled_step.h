#pragma once
/// \file tiled_step.h
/// The optimizer step in tiles: DeepSpeed's `sub_group_size` at ZeRO-3. The parameters a rank updates
/// (its shard's pieces) are walked as one flat index space, in group and parameter order, and cut
/// into tiles of at most `tile_elements` elements; a tile may hold the end of one piece and the start
/// of the next (`tile_elements` 0, DeepSpeed's sub_group_size 0: one tensor per tile). Per tile, one
/// f32 buffer of the tile's size is allocated under MemTag::optim_temp,
/// filled with the gradient widened (bf16 / f16 → f32) and multiplied by the step's gradient
/// multiplier (clipping × 1/loss-scale), used, and freed before the next tile:
///
///   tile 0: [ piece a ............ | piece b .. ]   f32 temp (tile_elements)  → norm / AdamW → freed
///   tile 1: [ piece b ........ | piece c ...... ]   f32 temp (tile_elements)  → ...
///   tile k: [ c ...... ]                            f32 temp (what is left)
///
/// So the optimizer's temporary peak is 4 · min(tile_elements, Σ elements) bytes, whatever the
/// model: sub_group_size is a memory knob of the optimizer step, not a communication setting.
/// Results do not depend on the tiling (each element is updated once, with the same inputs).
///
/// \code
///   double sq = zero::tiled_sum_squares(adamw, /*tile_elements=*/1000);    // Σ g² of the raw gradients
///   adamw.set_lr(lr);
///   zero::tiled_adamw_step(adamw, /*grad_multiplier=*/coef, 1000);        // begin_step + every tile
/// \endcode
#include <cstdint>

#include <string>
#include <vector>

#include "optim/adamw.h"

namespace minitorch::zero {

/// Σ g² (in double) over the gradients of every parameter of `adamw` that has one, tile by tile; the parameters
/// `excluded` names (a piece "<name>[a:b]" by its parameter's name) are left out (StepRequest::norm_excluded).
double tiled_sum_squares(const optim::AdamW& adamw, std::int64_t tile_elements,
                         const std::vector<std::string>& excluded = {});
/// One AdamW step (AdamW::begin_step, then AdamW::update per piece of each tile) with every gradient
/// multiplied by `grad_multiplier` in f32 on the way; the gradients themselves are not modified.
void tiled_adamw_step(optim::AdamW& adamw, float grad_multiplier, std::int64_t tile_elements);

}  // namespace minitorch::zero

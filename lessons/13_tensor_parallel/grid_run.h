#pragma once
// Lesson 13, beat 6: lesson 05's KJV run on the data × pipeline × tensor grid, beside DDP on the same ranks.
#include <string>

#include "common/beat.h"
#include "dist/process_group.h"

namespace lesson13 {

/// The baby GPT trained on `data` (the KJV) for `steps` optimizer steps twice with one global batch of 4·N
/// sequences: on the grid of `world` (2 tensor ranks, 2 stages when N is a multiple of 4, the rest data-parallel;
/// each data rank accumulates N/d micro-batches of 4) and as DDP over all N ranks (one micro-batch of 4 each).
/// Both draw the same micro-batches, so the losses agree up to the order of float sums. Collective over `world`.
void kjv_run_on_the_grid(lesson::Beats& beats, minitorch::dist::ProcessGroup& world, const std::string& data,
                         long long steps);

}  // namespace lesson13

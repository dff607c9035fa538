#pragma once
// Lesson 13's beats on the GPT: one block of tp::TensorParallelGPT forward and backward with its all-reduces
// counted against 2 + 2 of B·T·C per block (and the whole model's against its formula), and the cross-entropy
// over a vocabulary split in two (tp::vocab_parallel_cross_entropy): its three all-reduces of N floats against
// a gather of the logits.
#include "common/beat.h"
#include "dist/process_group.h"

namespace lesson13 {

/// Beat 3. `tensor`: the tensor group (2 ranks) the baby GPT is split over.
void one_blocks_communication(lesson::Beats& beats, minitorch::dist::ProcessGroup& tensor);
/// Beat 4. `tensor`: the tensor group the vocabulary is split over.
void vocab_parallel_cross_entropy(lesson::Beats& beats, minitorch::dist::ProcessGroup& tensor);

}  // namespace lesson13

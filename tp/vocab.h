#pragma once
/// \file vocab.h
/// How the vocabulary is split across a tensor group (Megatron's `make_vocab_size_divisible_by`): with t > 1
/// ranks V is padded up to a multiple of 128·t so every rank holds Vp / t rows of the embedding (and of
/// the tied lm_head), a multiple of 128; with t = 1 nothing is padded, so every byte count of a plain run
/// stays as it is. Our departure from Megatron (docs/design.md §14): the padded rows are zero, drawn
/// outside the init RNG, and their logits are left out of the softmax, so t = 1 and t = 2 give the same
/// losses; num_parameters stays Ψ (the padding is not a parameter anyone trains).
#include <cstdint>

namespace minitorch::tp {

/// Megatron's default for make_vocab_size_divisible_by.
inline constexpr std::int64_t kVocabMultiple = 128;

/// V padded for `tensor_size` ranks: V itself for 1 rank, else the next multiple of multiple·tensor_size.
std::int64_t padded_vocab_size(std::int64_t V, std::int64_t tensor_size, std::int64_t multiple = kVocabMultiple);

/// The rows of a padded vocabulary of Vp rows that tensor rank `rank` of `size` holds: [start, start + rows),
/// and how many of them are real tokens (< V; the rest is padding).
struct VocabSlice {
  std::int64_t start = 0, rows = 0, valid = 0;
};
VocabSlice vocab_slice(std::int64_t V, std::int64_t Vp, int rank, int size);

}  // namespace minitorch::tp

#include "tp/vocab.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace minitorch::tp {

std::int64_t padded_vocab_size(std::int64_t V, std::int64_t tensor_size, std::int64_t multiple) {
  if (V < 1 || tensor_size < 1 || multiple < 1)
    throw std::invalid_argument("padded_vocab_size: V " + std::to_string(V) + ", tensor size " +
                                std::to_string(tensor_size) + " and multiple " + std::to_string(multiple) +
                                " must be positive");
  if (tensor_size == 1) return V;
  const std::int64_t m = multiple * tensor_size;
  return (V + m - 1) / m * m;
}

VocabSlice vocab_slice(std::int64_t V, std::int64_t Vp, int rank, int size) {
  if (size < 1 || rank < 0 || rank >= size || Vp < V || Vp % size != 0)
    throw std::invalid_argument("vocab_slice: rank " + std::to_string(rank) + " of " + std::to_string(size) +
                                " over a vocabulary of " + std::to_string(V) + " padded to " + std::to_string(Vp) +
                                " (the padded size must be >= V and divisible by the tensor size)");
  VocabSlice s;
  s.rows = Vp / size;
  s.start = s.rows * rank;
  s.valid = std::clamp<std::int64_t>(V - s.start, 0, s.rows);
  return s;
}

}  // namespace minitorch::tp

#include "tp/memory.h"

#include <stdexcept>
#include <string>

#include "tp/vocab.h"

namespace minitorch::tp {

void check_head_split(const nn::GPTConfig& c, int t) {
  if (t < 1 || c.n_head % t != 0)
    throw std::invalid_argument("tensor parallelism: a tensor-parallel size of " + std::to_string(t) +
                                " must divide n_head = " + std::to_string(c.n_head) + " (each rank computes whole heads)");
}

std::int64_t parameters_per_rank(const nn::GPTConfig& c, int t) {
  check_head_split(c, t);
  const std::int64_t C = c.n_embd, b = c.bias ? 1 : 0;
  const std::int64_t Vp = padded_vocab_size(c.vocab_size, t);
  const std::int64_t layer_norm = C + b * C;  // weight, bias
  const std::int64_t block = 2 * layer_norm + (3 * C * C + b * 3 * C) / t + (C * C / t + b * C) +
                             (4 * C * C + b * 4 * C) / t + (4 * C * C / t + b * C);
  return Vp / t * C + c.block_size * C + c.n_layer * block + layer_norm;
}

std::int64_t block_activation_bytes(const nn::GPTConfig& c, std::int64_t B, std::int64_t T, int t, int e) {
  check_head_split(c, t);
  const std::int64_t C = c.n_embd, H = c.n_head, BTC = B * T * C;
  return e * (4 * BTC + (12 * BTC + B * H * T * T) / t) + 4 * 4 * B * T;
}

}  // namespace minitorch::tp

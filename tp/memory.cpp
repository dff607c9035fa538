#include "tp/memory.h"

#include <stdexcept>
#include <string>

#include "dist/process_group.h"
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

TensorTraffic tensor_traffic_per_micro_batch(const nn::GPTConfig& config, std::int64_t B, std::int64_t T, int t,
                                             int rank, int e, bool recompute) {
  const std::int64_t L = config.n_layer, BTC = B * T * config.n_embd, BT = B * T;
  const std::int64_t forward = 1 + 2 * L + (recompute ? 2 * L : 0), backward = 2 * L + 1, loss = 3;
  TensorTraffic r;
  auto add = [&](std::int64_t calls, std::int64_t numel, int bytes_each) {
    const std::int64_t sent = dist::all_reduce_volume(numel, t, rank);
    r.calls += calls;
    r.elements += calls * sent;
    r.bytes += calls * sent * bytes_each;
  };
  add(forward, BTC, e);
  add(loss, BT, 4);
  add(L, BTC, e);             // attention's f: its backward through the 16-bit q, k, v returns e-byte gradients
  add(backward - L, BTC, 4);  // the MLP's and ln_f's f: an f32 gradient times a 16-bit weight stays f32
  return r;
}

}  // namespace minitorch::tp

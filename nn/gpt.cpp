#include "nn/gpt.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "autograd/checkpoint.h"
#include "autograd/functions.h"
#include "autograd/node.h"

namespace minitorch::nn {

namespace ag = minitorch::autograd;

namespace {
void check_tokens(const Tensor& idx, const char* what, std::int64_t block_size) {
  if (!idx.defined() || idx.dtype() != DType::i32 || idx.dim() != 2)
    throw std::invalid_argument(std::string("GPT: ") + what + " must be a (B, T) i32 tensor, got " + idx.describe());
  if (idx.size(1) < 1 || idx.size(1) > block_size)
    throw std::invalid_argument(std::string("GPT: cannot forward a sequence of length ") + std::to_string(idx.size(1)) +
                                ", block size is only " + std::to_string(block_size) + " (" + what + " " +
                                shape_str(idx.shape()) + ")");
}
}  // namespace

GPT::GPT(const GPTConfig& config, Generator& gen) : config_(config) {
  config_.validate();
  const GPTConfig& c = config_;
  // Construction order = registration order = the order weights are drawn from `gen` (see gpt.h).
  transformer = register_module("transformer", std::make_shared<Module>());
  wte = transformer->register_module("wte", std::make_shared<Embedding>(c.vocab_size, c.n_embd, gen));
  wpe = transformer->register_module("wpe", std::make_shared<Embedding>(c.block_size, c.n_embd, gen));
  auto h = transformer->register_module("h", std::make_shared<Module>());
  for (std::int64_t i = 0; i < c.n_layer; ++i)
    blocks.push_back(h->register_module(std::to_string(i), std::make_shared<Block>(c, gen)));
  ln_f = transformer->register_module("ln_f", std::make_shared<LayerNorm>(c.n_embd, c.bias));
  // Weight tying: the head multiplies by the token embedding matrix (one tensor, two names).
  lm_head = register_module("lm_head", std::make_shared<Linear>(wte->weight));
}

GPT::GPT(const GPTConfig& config) : config_(config) { config_.validate(); }

std::vector<std::pair<std::string, Shape>> GPT::parameter_shapes(const GPTConfig& config) {
  config.validate();
  const std::int64_t C = config.n_embd;
  std::vector<std::pair<std::string, Shape>> out;
  // A Linear or LayerNorm registers its weight, then its bias (when the config has biases).
  auto add = [&](const std::string& module, Shape weight, std::int64_t bias) {
    out.emplace_back(module + ".weight", std::move(weight));
    if (config.bias) out.emplace_back(module + ".bias", Shape{bias});
  };
  out.emplace_back("transformer.wte.weight", Shape{config.vocab_size, C});  // lm_head.weight: the same tensor
  out.emplace_back("transformer.wpe.weight", Shape{config.block_size, C});
  for (std::int64_t i = 0; i < config.n_layer; ++i) {
    const std::string h = "transformer.h." + std::to_string(i);
    add(h + ".ln_1", {C}, C);
    add(h + ".attn.c_attn", {3 * C, C}, 3 * C);
    add(h + ".attn.c_proj", {C, C}, C);
    add(h + ".ln_2", {C}, C);
    add(h + ".mlp.c_fc", {4 * C, C}, 4 * C);
    add(h + ".mlp.c_proj", {C, 4 * C}, C);
  }
  add("transformer.ln_f", {C}, C);
  return out;
}

// idx: (B, T) i32 -> x: (B, T, C)
Tensor GPT::embed(const Tensor& idx) const {
  check_tokens(idx, "idx", config_.block_size);
  const std::int64_t T = idx.size(1);
  // Positions by lookup, not as a view of wpe.weight, so wpe's forward runs with its hooks (ZeRO-3
  // gathers the table there) and no view of the parameter outlives the forward.
  Tensor tok = wte->forward(idx);                                 // (B, T, C)
  Tensor positions;
  {
    TransferScope io(TransferPurpose::io);  // on a device, 0..T-1 go up with the tokens: the run's input
    positions = Tensor::arange(T).to(idx.device());
  }
  Tensor pos = wpe->forward(positions);  // (T, C): rows 0..T-1 of wpe
  return ag::add(tok, pos);                                       // (B, T, C), pos broadcast over B
}

// x: (B, T, C) -> logits: (B, T, V)
Tensor GPT::head(const Tensor& x) const { return lm_head->forward(ln_f->forward(x)); }

// idx: (B, T) i32 -> logits: (B, T, V)
Tensor GPT::forward(const Tensor& idx) const {
  return call({idx}, [&] { return head(run_blocks(embed(idx), 0, config_.n_layer)); });
}

// x: (B, T, C) -> (B, T, C)
Tensor GPT::run_block(std::int64_t i, const Tensor& x) const { return blocks[static_cast<std::size_t>(i)]->forward(x); }

Tensor GPT::run_blocks(Tensor x, std::int64_t first, std::int64_t end) const {
  const std::int64_t k = checkpoint_segment_size_;
  if (k == 0) {
    for (std::int64_t i = first; i < end; ++i) x = run_block(i, x);
    return x;
  }
  for (std::int64_t from = first; from < end; from += k) {
    // blocks[from, from + k): x (B, T, C) -> (B, T, C), recomputed in backward
    // The recompute calls run_block on this model: a graph must not outlive the model that recorded it.
    const std::int64_t to = std::min(end, from + k);
    ag::SaveOnHost on_host(checkpoint_on_host_);  // cpu_checkpointing: the input x waits in host memory
    x = ag::checkpoint(
        [this, from, to](const std::vector<Tensor>& in) {
          Tensor h = in[0];
          for (std::int64_t i = from; i < to; ++i) h = run_block(i, h);
          return h;
        },
        {x});
  }
  return x;
}

void GPT::set_checkpoint_segments(std::int64_t segment_size) {
  if (segment_size < 0 || segment_size > config_.n_layer)
    throw std::invalid_argument("GPT: activation checkpointing segments of " + std::to_string(segment_size) +
                                " blocks: need 0 (off) to n_layer = " + std::to_string(config_.n_layer));
  checkpoint_segment_size_ = segment_size;
}

// logits: (B, T, V), targets: (B, T) -> scalar
Tensor GPT::loss_from_logits(const Tensor& logits, const Tensor& targets, std::int32_t ignore_index) {
  if (logits.dim() != 3 || !targets.defined() || targets.dtype() != DType::i32 || targets.dim() != 2 ||
      targets.size(0) != logits.size(0) || targets.size(1) != logits.size(1))
    throw std::invalid_argument("GPT: targets must be (B, T) i32 matching logits " + shape_str(logits.shape()) +
                                ", got " + (targets.defined() ? targets.describe() : std::string("undefined")));
  const std::int64_t BT = logits.size(0) * logits.size(1), V = logits.size(2);
  Tensor flat = ag::reshape(logits, {BT, V});                              // (B*T, V)
  return ag::cross_entropy(flat, targets.reshape({BT}), ignore_index);     // scalar
}

// idx, targets: (B, T) i32 -> scalar
Tensor GPT::loss(const Tensor& idx, const Tensor& targets, std::int32_t ignore_index) const {
  return loss_of_logits(forward(idx), targets, ignore_index);
}

// idx: (B, T0) -> (B, T0 + max_new_tokens)
Tensor GPT::generate(const Tensor& idx, std::int64_t max_new_tokens, float temperature, Generator& gen,
                     std::int64_t top_k, std::int64_t vocab_limit) const {
  if (!idx.defined() || idx.dtype() != DType::i32 || idx.dim() != 2 || idx.size(1) < 1)
    throw std::invalid_argument("GPT::generate: idx must be a non-empty (B, T) i32 tensor, got " +
                                (idx.defined() ? idx.describe() : std::string("undefined")));
  if (!(temperature > 0.f)) throw std::invalid_argument("GPT::generate: temperature must be > 0");
  if (max_new_tokens < 0 || top_k < 0 || vocab_limit < 0)
    throw std::invalid_argument("GPT::generate: max_new_tokens, top_k and vocab_limit must be >= 0");
  if (vocab_limit > config_.vocab_size)
    throw std::invalid_argument("GPT::generate: vocab_limit " + std::to_string(vocab_limit) +
                                " is larger than the model's vocab_size " + std::to_string(config_.vocab_size));
  ag::NoGradGuard no_grad;
  // Padded ids (>= vocab_limit) have logits like any other but no token: only the real ones are drawn.
  const std::int64_t B = idx.size(0), V_all = config_.vocab_size, V = vocab_limit > 0 ? vocab_limit : V_all;
  std::int64_t T = idx.size(1);
  std::vector<std::int32_t> seq = idx.to_int_vector();  // (B, T) row-major; grows by one column per step
  std::vector<double> p(static_cast<std::size_t>(V));
  for (std::int64_t step = 0; step < max_new_tokens; ++step) {
    const std::int64_t Tc = std::min(T, config_.block_size);  // crop the context to block_size
    std::vector<std::int32_t> ctx(static_cast<std::size_t>(B * Tc));
    for (std::int64_t b = 0; b < B; ++b)
      std::copy_n(seq.begin() + b * T + (T - Tc), Tc, ctx.begin() + b * Tc);
    Tensor logits = forward(Tensor::from_ints(ctx, {B, Tc}));            // (B, Tc, V)
    std::vector<float> last = logits.narrow(1, Tc - 1, 1).to_vector();   // (B, 1, V)
    std::vector<std::int32_t> next(static_cast<std::size_t>(B));
    for (std::int64_t b = 0; b < B; ++b) {
      const float* z = last.data() + b * V_all;
      double cut = -std::numeric_limits<double>::infinity();  // keep logits >= the k-th largest
      if (top_k > 0 && top_k < V) {
        std::vector<float> sorted(z, z + V);
        std::nth_element(sorted.begin(), sorted.begin() + (top_k - 1), sorted.end(), std::greater<float>());
        cut = sorted[static_cast<std::size_t>(top_k - 1)];
      }
      double zmax = -std::numeric_limits<double>::infinity();
      for (std::int64_t v = 0; v < V; ++v) zmax = std::max(zmax, static_cast<double>(z[v]) / temperature);
      double total = 0;
      for (std::int64_t v = 0; v < V; ++v) {
        double e = z[v] >= cut ? std::exp(static_cast<double>(z[v]) / temperature - zmax) : 0.0;
        p[static_cast<std::size_t>(v)] = e;
        total += e;
      }
      double u = gen.next_double() * total, acc = 0;
      std::int32_t pick = -1;
      for (std::int64_t v = 0; v < V; ++v) {
        if (p[static_cast<std::size_t>(v)] == 0.0) continue;
        pick = static_cast<std::int32_t>(v);  // the last token with mass, in case rounding leaves u >= acc
        acc += p[static_cast<std::size_t>(v)];
        if (u < acc) break;
      }
      if (pick < 0) throw std::runtime_error("GPT::generate: the logits are not finite (NaN), nothing to sample");
      next[static_cast<std::size_t>(b)] = pick;
    }
    std::vector<std::int32_t> grown(static_cast<std::size_t>(B * (T + 1)));
    for (std::int64_t b = 0; b < B; ++b) {
      std::copy_n(seq.begin() + b * T, T, grown.begin() + b * (T + 1));
      grown[static_cast<std::size_t>(b * (T + 1) + T)] = next[static_cast<std::size_t>(b)];
    }
    seq.swap(grown);
    ++T;
  }
  return Tensor::from_ints(seq, {B, T});
}

}  // namespace minitorch::nn

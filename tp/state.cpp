// Gathering a tensor-parallel GPT's slices into the full tensors (tp/state.h).
#include "tp/state.h"

#include <string>

namespace minitorch::tp {

namespace {
/// The t ranks' `local` (rows, ...) gathered rank after rank: (t·rows, ...).   local: contiguous
Tensor gather_rows(const Tensor& local, dist::ProcessGroup& group) {
  const Tensor flat = group.all_gather(local.contiguous().reshape({local.numel()}), local.numel() * group.size());
  Shape shape = local.shape();
  shape[0] *= group.size();
  return flat.reshape(shape);
}

/// Undoes split_rows(full, r, t, blocks): the gathered (t·n/t, ...) is rank-major [r0: b0 b1 ..][r1: b0 b1 ..];
/// the full tensor is block-major [b0: r0 r1 ..][b1: r0 r1 ..].
Tensor unsplit_rows(const Tensor& local, std::int64_t blocks, dist::ProcessGroup& group) {
  const Tensor gathered = gather_rows(local, group);
  if (blocks == 1) return gathered;
  const std::int64_t t = group.size(), part = local.size(0) / blocks;
  Tensor full = Tensor::empty(gathered.shape(), gathered.dtype());
  for (std::int64_t r = 0; r < t; ++r)
    for (std::int64_t b = 0; b < blocks; ++b) {
      Tensor dst = full.narrow(0, (b * t + r) * part, part);
      dst.copy_(gathered.narrow(0, (r * blocks + b) * part, part));
    }
  return full;
}

/// Undoes the row layer's column split: local (out, in/t) on each rank -> (out, in).
Tensor unsplit_columns(const Tensor& local, dist::ProcessGroup& group) {
  const std::int64_t t = group.size(), out = local.size(0), part = local.size(1);
  const Tensor gathered = gather_rows(local, group);  // (t·out, in/t): rank r's block at rows r·out
  Tensor full = Tensor::empty({out, t * part}, gathered.dtype());
  for (std::int64_t r = 0; r < t; ++r) {
    Tensor dst = full.narrow(1, r * part, part);
    dst.copy_(gathered.narrow(0, r * out, out));
  }
  return full;
}
}  // namespace

nn::NamedTensors full_state_dict(const TensorParallelGPT& m) {
  dist::ProcessGroup& g = m.group();
  nn::NamedTensors out;
  auto add = [&](const std::string& name, const Tensor& t) { out.emplace_back(name, t); };
  const Tensor wte = gather_rows(m.parallel_wte->weight.detach(), g).narrow(0, 0, m.parallel_wte->vocab_size).contiguous();
  add("transformer.wte.weight", wte);
  add("transformer.wpe.weight", m.wpe->weight.detach().clone());
  for (std::size_t i = 0; i < m.parallel_blocks.size(); ++i) {
    const ParallelBlock& b = *m.parallel_blocks[i];
    const std::string h = "transformer.h." + std::to_string(i);
    auto layer_norm = [&](const std::string& name, const nn::LayerNorm& ln) {
      add(name + ".weight", ln.weight.detach().clone());
      if (ln.bias.defined()) add(name + ".bias", ln.bias.detach().clone());
    };
    auto column = [&](const std::string& name, const ColumnParallelLinear& l, std::int64_t blocks) {
      add(name + ".weight", unsplit_rows(l.weight.detach(), blocks, g));
      if (l.bias.defined()) add(name + ".bias", unsplit_rows(l.bias.detach(), blocks, g));
    };
    auto row = [&](const std::string& name, const RowParallelLinear& l) {
      add(name + ".weight", unsplit_columns(l.weight.detach(), g));
      if (l.bias.defined()) add(name + ".bias", l.bias.detach().clone());
    };
    layer_norm(h + ".ln_1", *b.ln_1);
    column(h + ".attn.c_attn", *b.attn->c_attn, 3);
    row(h + ".attn.c_proj", *b.attn->c_proj);
    layer_norm(h + ".ln_2", *b.ln_2);
    column(h + ".mlp.c_fc", *b.mlp->c_fc, 1);
    row(h + ".mlp.c_proj", *b.mlp->c_proj);
  }
  const nn::LayerNorm& ln_f = *m.ln_f;
  add("transformer.ln_f.weight", ln_f.weight.detach().clone());
  if (ln_f.bias.defined()) add("transformer.ln_f.bias", ln_f.bias.detach().clone());
  add("lm_head.weight", wte);  // tied, as nanoGPT's state_dict lists it
  return out;
}

}  // namespace minitorch::tp

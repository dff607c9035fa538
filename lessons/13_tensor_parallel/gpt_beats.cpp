// Lesson 13's beats on the GPT (gpt_beats.h): a split block's all-reduces counted, the vocabulary-parallel loss.
#include "gpt_beats.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include "autograd/functions.h"
#include "nn/gpt.h"
#include "tensor_group.h"
#include "tp/cross_entropy.h"
#include "tp/gpt.h"
#include "tp/vocab.h"

namespace lesson13 {

using namespace minitorch;
namespace ag = autograd;

namespace {
long long ll(std::int64_t v) { return static_cast<long long>(v); }

/// rows·cols ids below `below`, drawn from `gen`.   -> (rows, cols) i32
Tensor random_ids(std::int64_t rows, std::int64_t cols, std::int64_t below, Generator& gen) {
  std::vector<std::int32_t> ids(static_cast<std::size_t>(rows * cols));
  for (std::int32_t& id : ids) id = static_cast<std::int32_t>(gen.next_below(static_cast<std::uint64_t>(below)));
  return Tensor::from_ints(ids, {rows, cols});
}
}  // namespace

// tensor: t = 2 ranks. x, dL/dy: (B, T, C) = (4, 64, 128) whole on every rank; block 0's split weights per rank:
// c_attn (3C/t, C), attn.c_proj (C, C/t), c_fc (4C/t, C), mlp.c_proj (C, 4C/t); idx, targets (B, T) i32
void one_blocks_communication(lesson::Beats& beats, dist::ProcessGroup& tensor) {
  beats.beat("one block's communication: 2 all-reduces forward, 2 backward",
             "tp::TensorParallelGPT splits every block Megatron's way: attention's c_attn by columns (each rank the\n"
             "q, k, v of its H/t heads) and its c_proj by rows; the MLP's c_fc by columns and its c_proj by rows.\n"
             "Between a column layer and its row layer nothing moves: f before each column layer, g after each\n"
             "row layer. Per block 2 all-reduces of the activation (B, T, C) forward (the g's), 2 backward (the\n"
             "f's), counted here by the tensor group's own counters (ProcessGroup::stats(), its log of collectives).");
  const int t = tensor.size(), r = tensor.rank();
  nn::GPTConfig config = nn::GPTConfig::named("baby");
  config.vocab_size = 63;  // the KJV's characters, as in lessons 03-12
  Generator init(1337);
  const nn::GPT full(config, init);  // the unsplit model, the same on every rank
  const tp::TensorParallelGPT split(full, tensor);
  const std::int64_t B = 4, T = config.block_size, C = config.n_embd, L = config.n_layer, BTC = B * T * C;

  std::printf("the baby GPT (L = %lld, H = %lld, C = %lld) split over t = %d ranks; block 0 on this rank:\n", ll(L),
              ll(config.n_head), ll(C), t);
  const nn::NamedTensors whole = full.named_parameters();
  for (const auto& [name, p] : split.named_parameters()) {
    if (!name.starts_with("transformer.h.0.")) continue;
    const auto same = std::find_if(whole.begin(), whole.end(), [&name = name](const auto& w) { return w.first == name; });
    const Shape full_shape = same == whole.end() ? Shape{} : same->second.shape();
    std::printf("  %-34s whole %-10s this rank %-10s %s\n", name.c_str(), shape_str(full_shape).c_str(),
                shape_str(p.shape()).c_str(), p.shape() == full_shape ? "replicated" : "split");
  }

  Generator draw(7);
  Tensor x_ref = Tensor::randn({B, T, C}, draw).set_requires_grad();  // (B, T, C), the same on every rank
  const Tensor weights = Tensor::randn({B, T, C}, draw);              // dL/dy: a loss weighing every output
  Tensor x = x_ref.detach().clone().set_requires_grad();
  const Tensor y_ref = full.run_block(0, x_ref);  // the unsplit block, for comparison
  ag::backward(ag::sum(ag::mul(y_ref, weights)));

  const std::size_t start = tensor.stats().log.size();
  const Tensor y = split.run_block(0, x);
  const std::size_t forward_end = tensor.stats().log.size();
  ag::backward(ag::sum(ag::mul(y, weights)));
  const std::vector<dist::CommRecord> log(tensor.stats().log.begin() + static_cast<std::ptrdiff_t>(start),
                                          tensor.stats().log.end());
  const std::int64_t per_call = dist::all_reduce_volume(BTC, t, r);  // 2(t-1)/t·B·T·C elements sent
  const char* where[] = {"g after attention's c_proj (row)", "g after the MLP's c_proj (row)",
                         "f before the MLP's c_fc (column)", "f before attention's c_attn (column)"};
  std::printf("\nblock 0 forward and backward, x (B, T, C) = (%lld, %lld, %lld), B·T·C = %lld; the tensor group's log:\n",
              ll(B), ll(T), ll(C), ll(BTC));
  std::printf("  %-9s %-11s %-38s %14s %10s\n", "pass", "collective", "where", "elements sent", "bytes");
  std::int64_t forward_calls = 0, backward_calls = 0, bytes = 0, wrong_size = 0;
  for (std::size_t k = 0; k < log.size(); ++k) {
    const bool forward = start + k < forward_end;
    (forward ? forward_calls : backward_calls) += 1;
    bytes += log[k].bytes;
    wrong_size += log[k].op != "all_reduce" || log[k].elements != per_call;
    std::printf("  %-9s %-11s %-38s %14lld %10lld\n", forward ? "forward" : "backward", log[k].op.c_str(),
                k < 4 ? where[k] : "(more than the formula's 4)", ll(log[k].elements), ll(log[k].bytes));
  }
  std::printf("all-reduces: forward %lld, backward %lld; the formula 2 and 2 %s\n", ll(forward_calls), ll(backward_calls),
              verdict(forward_calls == 2 && backward_calls == 2, "formula").c_str());
  std::printf("every one an all-reduce of B·T·C = %lld elements, of which the ring sends 2(t-1)/t·B·T·C = %lld %s\n",
              ll(BTC), ll(per_call), verdict(wrong_size == 0, "formula").c_str());
  std::printf("bytes this rank sent: %lld = 4 × 2(t-1)/t·B·T·C × 4 bytes = 4 × %lld × 4 = %lld %s\n", ll(bytes),
              ll(per_call), ll(16 * per_call), verdict(bytes, 16 * per_call, "formula").c_str());
  const double dy = max_abs_diff(y, y_ref), dx = max_abs_diff(x.grad(), x_ref.grad());
  std::printf("max |y - the unsplit block's y| = %.1e %s\nmax |x.grad - the unsplit block's x.grad| = %.1e %s\n", dy,
              verdict(dy, 1e-4, "unsplit, to float rounding").c_str(), dx, verdict(dx, 1e-4, "unsplit, to float rounding").c_str());

  // The whole model, one micro-batch: the embedding's g, 2 per block, the loss's 3 (beat 4) forward; 2 per block
  // and the f before the LM head backward.
  const Tensor idx = random_ids(B, T, config.vocab_size, draw), targets = random_ids(B, T, config.vocab_size, draw);
  const std::size_t model_start = tensor.stats().log.size();
  const Tensor loss = split.loss(idx, targets);
  const Traffic forward = traffic_since(tensor.stats(), model_start);
  const std::size_t backward_start = tensor.stats().log.size();
  ag::backward(loss);
  const Traffic backward = traffic_since(tensor.stats(), backward_start);
  const std::int64_t BT = B * T, act = dist::all_reduce_volume(BTC, t, r), row = dist::all_reduce_volume(BT, t, r);
  const std::int64_t forward_formula = (1 + 2 * L) * act + 3 * row, backward_formula = (2 * L + 1) * act;
  std::printf("\nthe whole model, one micro-batch (B, T) = (%lld, %lld), L = %lld:\n", ll(B), ll(T), ll(L));
  std::printf("  forward:  %2lld all-reduces, %8lld elements sent; formula 1 + 2L + 3 = %lld: (1 + 2L)·%lld + 3·%lld = %lld %s\n",
              ll(forward.calls), ll(forward.elements), ll(1 + 2 * L + 3), ll(act), ll(row), ll(forward_formula),
              verdict(forward.calls == 1 + 2 * L + 3 && forward.elements == forward_formula, "formula").c_str());
  std::printf("  backward: %2lld all-reduces, %8lld elements sent; formula 2L + 1 = %lld: (2L + 1)·%lld = %lld %s\n",
              ll(backward.calls), ll(backward.elements), ll(2 * L + 1), ll(act), ll(backward_formula),
              verdict(backward.calls == 2 * L + 1 && backward.elements == backward_formula, "formula").c_str());
  ag::NoGradGuard reference_only;
  const float unsplit = full.loss(idx, targets).item();
  const double loss_diff = std::fabs(static_cast<double>(loss.item()) - unsplit);
  std::printf("  loss %.6f, the unsplit model's %.6f %s\n", static_cast<double>(loss.item()), static_cast<double>(unsplit),
              verdict(loss_diff, 1e-5, "unsplit").c_str());
}

// tensor: t = 2 ranks. The whole logits (N, V) on every rank (the reference), this rank's (N, Vp/t), targets (N)
void vocab_parallel_cross_entropy(lesson::Beats& beats, dist::ProcessGroup& tensor) {
  beats.beat("the vocabulary-parallel cross-entropy: 3 all-reduces of N floats, no gathered logits",
             "The LM head is column-parallel over the vocabulary: rank r holds the logits of its Vp/t tokens only, V\n"
             "padded to Vp, a multiple of 128·t (tp::padded_vocab_size; the padded columns never count). Per row i the\n"
             "loss needs the max m_i over all V logits, S_i = the sum of exp(z_ij - m_i) and the target's logit: each\n"
             "rank computes its share, three all-reduces of N floats (max, sum, sum) finish them, and\n"
             "loss_i = ln S_i + m_i - z_i,target. Backward moves nothing: softmax minus one-hot on the rank's own\n"
             "columns. GPT-2's vocabulary, N = B·T = 64 rows of random logits.");
  const int t = tensor.size(), r = tensor.rank();
  const std::int64_t V = 50257, N = 64, Vp = tp::padded_vocab_size(V, t);
  const tp::VocabSlice slice = tp::vocab_slice(V, Vp, r, t);
  const std::vector<float> slices = gather(tensor, std::vector<float>{static_cast<float>(slice.start),
                                                                      static_cast<float>(slice.rows),
                                                                      static_cast<float>(slice.valid)});
  std::printf("V = %lld padded to Vp = tp::padded_vocab_size(%lld, %d) = %lld = 128·%d·%lld\n", ll(V), ll(V), t, ll(Vp),
              t, ll(Vp / (128 * t)));
  for (int q = 0; q < t; ++q) {
    const auto first = static_cast<std::int64_t>(slices[3 * q]), rows = static_cast<std::int64_t>(slices[3 * q + 1]),
               real = static_cast<std::int64_t>(slices[3 * q + 2]);
    std::printf("  rank %d: columns [%lld, %lld): %lld tokens, %lld padding\n", q, ll(first), ll(first + rows), ll(real),
                ll(rows - real));
  }

  Generator gen(2025);
  Tensor full = Tensor::randn({N, V}, gen, 0.f, 2.f).set_requires_grad();  // (N, V): the whole logits, for the check
  const Tensor targets = random_ids(1, N, V, gen).reshape({N});
  Tensor mine = Tensor::zeros({N, slice.rows});  // (N, Vp/t): this rank's columns, the padding left at 0
  if (slice.valid > 0) mine.narrow(1, 0, slice.valid).copy_(full.detach().narrow(1, slice.start, slice.valid));
  mine.set_requires_grad();

  // Two rows by hand, from this rank's columns, what the three all-reduces combine: the first row whose target
  // is rank 0's and the first whose target is another rank's.
  const std::vector<float> z = full.detach().to_vector();
  const std::vector<std::int32_t> target_ids = targets.to_int_vector();
  std::vector<std::int64_t> shown;
  for (bool elsewhere : {false, true})
    for (std::int64_t i = 0; i < N; ++i)
      if ((target_ids[static_cast<std::size_t>(i)] >= slice.rows) == elsewhere) {
        shown.push_back(i);
        break;
      }
  for (std::int64_t i : shown) {
    const float* row = z.data() + i * V + slice.start;
    float local_max = -INFINITY;
    for (std::int64_t j = 0; j < slice.valid; ++j) local_max = std::max(local_max, row[j]);
    const std::vector<float> maxima = gather(tensor, std::vector<float>{local_max});
    const float m = *std::max_element(maxima.begin(), maxima.end());
    double local_sum = 0;
    for (std::int64_t j = 0; j < slice.valid; ++j) local_sum += std::exp(static_cast<double>(row[j]) - m);
    const std::int64_t target = target_ids[static_cast<std::size_t>(i)], owner = target / slice.rows;
    const float local_target = target >= slice.start && target < slice.start + slice.valid ? row[target - slice.start] : 0.f;
    const std::vector<float> sums = gather(tensor, std::vector<float>{static_cast<float>(local_sum), local_target});
    double S = 0, z_target = 0, plain_sum = 0;
    std::vector<float> partial_sums;
    for (int q = 0; q < t; ++q) S += sums[2 * q], z_target += sums[2 * q + 1], partial_sums.push_back(sums[2 * q]);
    for (std::int64_t j = 0; j < V; ++j) plain_sum += std::exp(static_cast<double>(z[i * V + j]) - m);
    const double plain = std::log(plain_sum) + m - z[i * V + target];
    std::printf("row %lld, target %lld (on rank %lld): max per rank %s -> m = %.4f\n"
                "  sum of exp(z - m) per rank %s -> S = %.4f; z_target = %.4f\n"
                "  loss_%lld = ln S + m - z_target = %.6f; from the whole row: %.6f\n",
                ll(i), ll(target), ll(owner), row_text(maxima, "%.4f").c_str(), static_cast<double>(m),
                row_text(partial_sums, "%.4f").c_str(), S, z_target, ll(i), std::log(S) + m - z_target, plain);
  }

  const std::size_t mark = tensor.stats().log.size();
  const Tensor loss = tp::vocab_parallel_cross_entropy(mine, targets, slice, V, tensor);
  const Traffic forward = traffic_since(tensor.stats(), mark);
  const std::size_t backward_mark = tensor.stats().log.size();
  ag::backward(loss);
  const Traffic backward = traffic_since(tensor.stats(), backward_mark);
  const Tensor loss_ref = ag::cross_entropy(full, targets);
  ag::backward(loss_ref);
  const double loss_diff = std::fabs(static_cast<double>(loss.item()) - loss_ref.item());
  const double grad_diff = max_abs_diff(mine.grad().narrow(1, 0, slice.valid), full.grad().narrow(1, slice.start, slice.valid));
  const double padding_grad = slice.valid < slice.rows
                                  ? max_abs_diff(mine.grad().narrow(1, slice.valid, slice.rows - slice.valid),
                                                 Tensor::zeros({N, slice.rows - slice.valid}))
                                  : 0.0;
  const std::int64_t per_row = dist::all_reduce_volume(N, t, r);
  std::printf("\nloss over the %lld rows: %.6f; the plain cross-entropy of the whole (N, V) logits: %.6f %s\n", ll(N),
              static_cast<double>(loss.item()), static_cast<double>(loss_ref.item()),
              verdict(loss_diff, 1e-5, "plain").c_str());
  std::printf("the gradient on this rank's columns against the whole logits': max |difference| %.1e %s;\non its padding: %g\n",
              grad_diff, verdict(grad_diff, 1e-6, "plain").c_str(), padding_grad);
  std::printf("all-reduces: forward %lld, backward %lld\nbytes this rank sent: %lld = 3 × 2(t-1)/t·N × 4 = 3 × %lld × 4 = %lld %s\n",
              ll(forward.calls), ll(backward.calls), ll(forward.bytes), ll(per_row), ll(12 * per_row),
              verdict(forward.calls == 3 && backward.calls == 0 && forward.bytes == 12 * per_row, "formula").c_str());
  const std::int64_t gathered = N * Vp * 4, own = static_cast<std::int64_t>(mine.nbytes());
  std::printf("\nlogits per rank: its own (N, Vp/t) = %lld bytes; gathered whole (N, Vp) = %lld bytes, t = %d times more,\n"
              "and an all-gather to get them sends (t-1)/t·N·Vp·4 = %lld bytes per rank\n",
              ll(own), ll(gathered), t, ll(dist::all_gather_volume(N * Vp, t, r) * 4));
  const std::int64_t gpt2_rows = 8 * 1024;
  std::printf("GPT-2 at B·T = 8 × 1024: gathered %.2f GB of f32 logits per rank against %.2f GB; the gather sends %.0f MB,\n"
              "the three all-reduces %.0f KB\n",
              static_cast<double>(gpt2_rows * Vp * 4) / 1e9, static_cast<double>(gpt2_rows * Vp / t * 4) / 1e9,
              static_cast<double>(dist::all_gather_volume(gpt2_rows * Vp, t, r) * 4) / 1e6,
              static_cast<double>(3 * dist::all_reduce_volume(gpt2_rows, t, r) * 4) / 1e3);
}

}  // namespace lesson13

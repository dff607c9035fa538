// The vocabulary-parallel cross-entropy (tp/cross_entropy.h): three all-reduces of N floats forward,
// none backward. Plain loops over f32 rows, llm.c style: the arithmetic is the lesson.
#include "tp/cross_entropy.h"

#include <cfloat>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/node.h"
#include "minitorch/not_implemented.h"

namespace minitorch::tp {

namespace {
struct VocabParallelCrossEntropyBackward : autograd::Node {
  Tensor probs;               // (N, rows) f32: exp(z − m) / S on the valid columns, 0 on the padding
  std::vector<std::int32_t> local_target;  // (N): the target's column on this rank, or −1 (another rank's, or ignored)
  std::vector<bool> ignored;  // (N)
  std::int64_t count = 0;
  const char* name() const override { return "VocabParallelCrossEntropyBackward"; }
  // loss = mean_i (log S_i + m_i − z_i[t_i])   =>   dz_ij = dloss · (p_ij − [j = t_i]) / count
  std::vector<Tensor> backward(const Tensor& grad) override {
    // BEGIN SOLUTION L13.3
    const std::int64_t N = probs.size(0), rows = probs.size(1);
    const float scale = count > 0 ? grad.to(DType::f32).item() / static_cast<float>(count) : 0.f;
    Tensor dz = Tensor::zeros({N, rows});
    const float* p = probs.data<float>();
    float* d = dz.data<float>();
    for (std::int64_t i = 0; i < N; ++i) {
      if (ignored[static_cast<std::size_t>(i)]) continue;
      for (std::int64_t j = 0; j < rows; ++j) d[i * rows + j] = scale * p[i * rows + j];
      const std::int32_t t = local_target[static_cast<std::size_t>(i)];
      if (t >= 0) d[i * rows + t] -= scale;
    }
    return {dz, Tensor()};
    // END SOLUTION
  }
  void release_saved() override { probs = Tensor(); }
};
}  // namespace

// logits: (N, rows), targets: (N) -> scalar
Tensor vocab_parallel_cross_entropy(const Tensor& logits, const Tensor& targets, const VocabSlice& slice,
                                    std::int64_t vocab_size, dist::ProcessGroup& group, std::int32_t ignore_index) {
  if (!logits.defined() || logits.dim() != 2 || logits.size(1) != slice.rows || !logits.device().is_cpu())
    throw std::invalid_argument("vocab_parallel_cross_entropy: logits must be (N, " + std::to_string(slice.rows) +
                                ") on the CPU (this rank's vocabulary columns), got " +
                                (logits.defined() ? logits.describe() : std::string("undefined")));
  if (!targets.defined() || targets.dtype() != DType::i32 || targets.dim() != 1 || targets.size(0) != logits.size(0))
    throw std::invalid_argument("vocab_parallel_cross_entropy: targets must be (N) i32 with N = " +
                                std::to_string(logits.size(0)));
  // BEGIN SOLUTION L13.3
  const std::int64_t N = logits.size(0), rows = slice.rows, valid = slice.valid;
  const Tensor z = logits.to(DType::f32).contiguous();
  const float* zp = z.data<float>();
  const std::vector<std::int32_t> tg = targets.contiguous().to_int_vector();

  auto node = std::make_shared<VocabParallelCrossEntropyBackward>();
  node->local_target.assign(static_cast<std::size_t>(N), -1);
  node->ignored.assign(static_cast<std::size_t>(N), false);
  Tensor row_max = Tensor::empty({N}), sum_exp = Tensor::empty({N}), target_logit = Tensor::zeros({N});
  float *m = row_max.data<float>(), *s = sum_exp.data<float>(), *zt = target_logit.data<float>();
  for (std::int64_t i = 0; i < N; ++i) {
    const std::int32_t t = tg[static_cast<std::size_t>(i)];
    if (t == ignore_index) {
      node->ignored[static_cast<std::size_t>(i)] = true;
    } else if (t < 0 || t >= vocab_size) {
      throw std::invalid_argument("vocab_parallel_cross_entropy: target " + std::to_string(t) + " at row " +
                                  std::to_string(i) + " is out of range [0, " + std::to_string(vocab_size) +
                                  ") (ignore_index " + std::to_string(ignore_index) + ")");
    } else if (t >= slice.start && t < slice.start + valid) {  // this rank owns the target's column
      node->local_target[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(t - slice.start);
      zt[i] = zp[i * rows + (t - slice.start)];
    }
    // A rank holding only padding contributes −FLT_MAX to the max and 0 to the sum.
    float mi = -FLT_MAX;
    for (std::int64_t j = 0; j < valid; ++j) mi = std::fmax(mi, zp[i * rows + j]);
    m[i] = mi;
  }
  group.all_reduce(row_max, dist::ReduceOp::max);  // m_i over every rank's columns
  // exp(z − m) once: summed here, divided by the global sum below into the probabilities backward keeps
  Tensor probs = Tensor::zeros({N, rows});
  float* p = probs.data<float>();
  for (std::int64_t i = 0; i < N; ++i) {
    float si = 0.f;
    for (std::int64_t j = 0; j < valid; ++j) si += p[i * rows + j] = std::exp(zp[i * rows + j] - m[i]);
    s[i] = si;
  }
  group.all_reduce(sum_exp);       // S_i
  group.all_reduce(target_logit);  // z_i[t_i]: only its owner added a nonzero term

  // loss = mean over counted rows of log S_i + m_i − z_it
  double total = 0.0;
  std::int64_t count = 0;
  for (std::int64_t i = 0; i < N; ++i) {
    for (std::int64_t j = 0; j < valid; ++j) p[i * rows + j] /= s[i];
    if (node->ignored[static_cast<std::size_t>(i)]) continue;
    total += static_cast<double>(std::log(s[i]) + m[i] - zt[i]);
    ++count;
  }
  const float loss_value = count > 0 ? static_cast<float>(total / static_cast<double>(count))
                                     : std::numeric_limits<float>::quiet_NaN();
  Tensor loss = Tensor::full({}, loss_value);
  if (!autograd::grad_enabled() || !autograd::needs_grad(logits)) return loss;
  node->probs = probs;
  node->count = count;
  return autograd::record(loss, node, {logits, targets});
  // END SOLUTION
}

}  // namespace minitorch::tp

// The split layers (tp/layers.h): slicing the full tensors, and the three forwards.
#include "tp/layers.h"

#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/functions.h"
#include "minitorch/allocator.h"
#include "minitorch/not_implemented.h"
#include "tp/regions.h"

namespace minitorch::tp {

namespace ag = autograd;

Tensor split_rows(const Tensor& full, int rank, int size, std::int64_t blocks, const char* what) {
  const std::int64_t n = full.size(0);
  if (blocks < 1 || n % blocks != 0 || (n / blocks) % size != 0)
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(n) + " rows" +
                                (blocks > 1 ? " in " + std::to_string(blocks) + " blocks" : std::string()) +
                                " do not split evenly over a tensor-parallel size of " + std::to_string(size) +
                                " (it must divide " + (blocks > 1 ? "each block" : "them") + ")");
  const std::int64_t block = n / blocks, part = block / size;
  Shape shape = full.shape();
  shape[0] = blocks * part;
  Tensor out = Tensor::empty(shape, full.dtype(), full.device());
  for (std::int64_t b = 0; b < blocks; ++b) {  // block b's slice r: rows b·block + r·part .. + part
    Tensor dst = out.narrow(0, b * part, part);
    dst.copy_(full.narrow(0, b * block + rank * part, part));
  }
  return out;
}

namespace {
// full: (out, in) -> columns [r·in/t, (r+1)·in/t): (out, in/t), contiguous
Tensor split_columns(const Tensor& full, int rank, int size, const char* what) {
  const std::int64_t in = full.size(1);
  if (in % size != 0)
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(in) +
                                " input features do not split evenly over a tensor-parallel size of " +
                                std::to_string(size));
  const std::int64_t part = in / size;
  return full.narrow(1, rank * part, part).contiguous();
}

void check_weight(const Tensor& w, const Tensor& b, const char* what) {
  if (!w.defined() || w.dim() != 2) throw std::invalid_argument(std::string(what) + ": the weight must be (out, in)");
  if (b.defined() && (b.dim() != 1 || b.size(0) != w.size(0)))
    throw std::invalid_argument(std::string(what) + ": bias " + shape_str(b.shape()) + " does not match weight " +
                                shape_str(w.shape()));
}
}  // namespace

// ---------------- ColumnParallelLinear ----------------
ColumnParallelLinear::ColumnParallelLinear(const Tensor& full_weight, const Tensor& full_bias,
                                           dist::ProcessGroup& g, std::int64_t stacked)
    : group(&g) {
  check_weight(full_weight, full_bias, "ColumnParallelLinear");
  TagScope scope(MemTag::param);
  weight = register_parameter("weight", split_rows(full_weight, g.rank(), g.size(), stacked, "ColumnParallelLinear"));
  if (full_bias.defined())
    bias = register_parameter("bias", split_rows(full_bias, g.rank(), g.size(), stacked, "ColumnParallelLinear"));
}

// x: (..., in) -> (..., out/t)
Tensor ColumnParallelLinear::forward(const Tensor& x) const {
  // BEGIN SOLUTION L13.2
  return call({x}, [&] {
    return ag::linear(f(x, *group), weight, bias);  // f: x's gradient summed over the group in backward
  });
  // END SOLUTION
}

// ---------------- RowParallelLinear ----------------
RowParallelLinear::RowParallelLinear(const Tensor& full_weight, const Tensor& full_bias, dist::ProcessGroup& g)
    : group(&g) {
  check_weight(full_weight, full_bias, "RowParallelLinear");
  TagScope scope(MemTag::param);
  weight = register_parameter("weight", split_columns(full_weight, g.rank(), g.size(), "RowParallelLinear"));
  if (full_bias.defined()) bias = register_parameter("bias", full_bias.clone());
}

// x: (..., in/t) -> (..., out)
Tensor RowParallelLinear::forward(const Tensor& x) const {
  // BEGIN SOLUTION L13.2
  return call({x}, [&] {
    Tensor y = g(ag::linear(x, weight, Tensor()), *group);  // the partial products summed: the whole x W^T
    return bias.defined() ? ag::add(y, bias) : y;            // once, after the sum (not t times)
  });
  // END SOLUTION
}

// ---------------- VocabParallelEmbedding ----------------
VocabParallelEmbedding::VocabParallelEmbedding(const Tensor& full_weight, dist::ProcessGroup& g)
    : vocab_size(full_weight.defined() ? full_weight.size(0) : 0), group(&g) {
  if (!full_weight.defined() || full_weight.dim() != 2)
    throw std::invalid_argument("VocabParallelEmbedding: the weight must be (V, C)");
  const std::int64_t Vp = padded_vocab_size(vocab_size, g.size());
  slice = vocab_slice(vocab_size, Vp, g.rank(), g.size());
  TagScope scope(MemTag::param);
  Tensor w = Tensor::zeros({slice.rows, full_weight.size(1)}, full_weight.dtype(), full_weight.device());
  if (slice.valid > 0) {  // the real rows; the padding stays zero
    Tensor dst = w.narrow(0, 0, slice.valid);
    dst.copy_(full_weight.narrow(0, slice.start, slice.valid));
  }
  weight = register_parameter("weight", w);
}

// idx: (...) -> (..., C)
Tensor VocabParallelEmbedding::forward(const Tensor& idx) const {
  // BEGIN SOLUTION L13.2
  return call({idx}, [&] {
    if (!idx.defined() || idx.dtype() != DType::i32 || !idx.device().is_cpu())
      throw std::invalid_argument("VocabParallelEmbedding: ids must be an i32 tensor on the CPU");
    const std::vector<std::int32_t> ids = idx.contiguous().to_int_vector();
    std::vector<std::int32_t> local(ids.size(), 0);
    std::vector<float> mask(ids.size(), 0.f);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] < 0 || ids[i] >= vocab_size)
        throw std::invalid_argument("VocabParallelEmbedding: id " + std::to_string(ids[i]) + " at position " +
                                    std::to_string(i) + " is out of range [0, " + std::to_string(vocab_size) + ")");
      const std::int64_t j = ids[i] - slice.start;
      if (j >= 0 && j < slice.valid) local[i] = static_cast<std::int32_t>(j), mask[i] = 1.f;  // else row 0, masked
    }
    Shape mask_shape = idx.shape();
    mask_shape.push_back(1);
    const Tensor mask_t = Tensor::from_vector(mask, mask_shape).to(weight.dtype());
    // (..., C): this rank's rows, zero where another rank owns the token; summed over the group
    return g(ag::mul(ag::embedding(weight, Tensor::from_ints(local, idx.shape())), mask_t), *group);
  });
  // END SOLUTION
}

}  // namespace minitorch::tp

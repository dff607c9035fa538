#pragma once
/// \file op_table.h
/// The backend op table (ggml's test-backend-ops is the model): every kernel of minitorch/backend.h, with
/// odd, broadcast and strided shapes, in f32, bf16 and f16, forward and backward, each case run on the
/// backend under test and on a reference, outputs compared within the case's tolerance.
///
///   test-backend_ops --backend=cpu    the CPU kernels against the naive reference (reference_backend.h)
///   test-backend_ops --backend=cuda   the CUDA kernels (fast, then naive) against the CPU kernels
///
/// A case's inputs are made on the host from its seed; for a device backend the same bytes are copied
/// to the device and the same view (transpose, narrow, expand) is taken there, so both backends read
/// identical values through different strides.
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "minitorch/backend.h"
#include "minitorch/random.h"
#include "minitorch/tensor.h"

namespace backend_ops {

using minitorch::Backend;
using minitorch::DType;
using minitorch::Shape;
using minitorch::Tensor;

/// |got - want| <= abs + rel * |want|, element by element.
struct Tol {
  double rel, abs;
};
inline constexpr Tol kExact{0, 0};
inline constexpr Tol kElementwise{1e-5, 1e-6};
inline constexpr Tol kReduction{1e-4, 1e-5};  // sums, softmax family, matmul, LayerNorm, AdamW
inline constexpr Tol kHalf{1e-2, 1e-2};       // any bf16 / f16 input or output

/// One input: a base tensor made on the host, then a view of it (identity by default).
struct Input {
  enum class Fill { normal, uniform, ids };
  Shape shape;
  DType dtype = DType::f32;
  Fill fill = Fill::normal;
  double lo = 0, hi = 1;                   // uniform: [lo, hi); ids: [0, hi); normal: std = hi
  std::vector<std::int32_t> fixed_ids;     // ids: these values instead of random ones
  std::function<Tensor(const Tensor&)> view;  // e.g. transpose; applied on the backend's device
};

/// One case: its name (unique; the GoogleTest test name), its inputs, what it runs on a backend, and
/// how close the results must be. `run` returns every result to compare (in-place kernels return the
/// tensors they wrote). With `throws`, both backends must throw std::invalid_argument instead.
struct OpCase {
  std::string name;
  std::vector<Input> inputs;
  std::function<std::vector<Tensor>(Backend&, const std::vector<Tensor>&)> run;
  Tol tol = kElementwise;
  bool throws = false;
};

/// The whole table.
std::vector<OpCase> op_table();

/// The inputs of `c` on `device` (deterministic: the same values for every backend).
std::vector<Tensor> make_inputs(const OpCase& c, std::uint64_t seed, minitorch::Device device);

/// The seed of case `index` of the table (every run of the table gives a case the same inputs).
inline std::uint64_t case_seed(std::size_t index) { return 1000 + index; }

/// "" when `got` (on any device) equals `want` (on the host) within `tol`: dtype, shape, then every element
/// (NaN where the reference has NaN); else what differs, with the first few elements and the worst difference.
std::string compare_result(const Tensor& got, const Tensor& want, Tol tol);

/// How one case went on one backend (lesson 04 prints these; test-backend_ops asserts them one by one).
struct CaseOutcome {
  bool passed = false;
  bool not_implemented = false;   ///< the backend threw minitorch::NotImplemented
  std::string message;            ///< why it failed, or the NotImplemented text
  std::set<std::string> kernels;  ///< the kernels of minitorch/backend_ops.def the case called on the backend
};
/// Runs `c` on `tested` (its inputs made on `device`) and on `reference` (on the host), compares every result;
/// a case marked `throws` passes when both refuse it with std::invalid_argument.
CaseOutcome run_case(const OpCase& c, std::uint64_t seed, Backend& tested, minitorch::Device device, Backend& reference);

}  // namespace backend_ops

#pragma once
/// \file formulas.h
/// The ZeRO paper's numbers as code (docs/design.md §8), so tests, the run report and the lessons compare
/// what a run measured with what the paper predicts — and so the paper's Table 1 comes out of it.
///
/// Ψ = parameters, N = data-parallel ranks, P / G / K = bytes per parameter of the parameters, the
/// gradients and the optimizer states (fp32: 4 / 4 / 8; bf16 mixed precision: 2 / 2 / 12).
///
///   model states per rank   stage 0 (P+G+K)Ψ   1: (P+G)Ψ + KΨ/N   2: PΨ + (G+K)Ψ/N   3: (P+G+K)Ψ/N
///   elements sent per rank per optimizer step, G micro-steps (ring volume, in the travelling dtype):
///                           stage 0, 1: 2(N−1)/N·Ψ   2: (G+1)(N−1)/N·Ψ   3: 3G(N−1)/N·Ψ
///
/// \code
///   auto b = runtime::bytes_per_parameter(/*bf16=*/true);              // {2, 2, 12}
///   double gb = runtime::model_state_bytes(1, 7.5e9, 64, b).total() / 1e9;  // ZeRO-1, 7.5B, N=64: 31.4
/// \endcode
#include <cstdint>

namespace minitorch::runtime {

/// Bytes per parameter of each model state.
struct BytesPerParameter {
  int P = 4, G = 4, K = 8;
};
/// fp32: 4 / 4 / 8 (Adam m, v); bf16: 2 / 2 / 12 (f32 master, m, v).
BytesPerParameter bytes_per_parameter(bool bf16);

/// Model-state bytes per rank (real numbers: Ψ/N need not be whole; the paper's tables use them so).
struct ModelStateEstimate {
  double param = 0, grad = 0, optim = 0;
  double total() const { return param + grad + optim; }
};
ModelStateEstimate model_state_bytes(int stage, double psi, int world, BytesPerParameter b);

/// Elements one rank sends per optimizer step with `micro_steps` of accumulation (ring volume).
double comm_elements_per_step(int stage, double psi, int world, int micro_steps);

}  // namespace minitorch::runtime

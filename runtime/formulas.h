#pragma once
/// \file formulas.h
/// The ZeRO paper's numbers as code (docs/design.md §8), so tests, the run report and the lessons compare
/// what a run measured with what the paper predicts — and so the paper's Table 1 comes out of it.
///
/// Ψ = parameters, N = data-parallel ranks, P / G / K = bytes per parameter of the parameters, the
/// gradients and the optimizer states (fp32: 4 / 4 / 8; bf16 mixed precision: 2 / 2 / 12).
///
///   model states per rank   stage 0 (P+G+K)Ψ   1: (P+G)Ψ + KΨ/N   2: PΨ + (G+K)Ψ/N   3: (P+G+K)Ψ/N
///   elements sent per rank per optimizer step, A micro-steps (gradient_accumulation_steps; ring volume,
///   in the travelling dtype): stage 0, 1: 2(N−1)/N·Ψ   2: (A+1)(N−1)/N·Ψ   3: 3A(N−1)/N·Ψ
///
/// \code
///   auto b = runtime::bytes_per_parameter(/*bf16=*/true);              // {2, 2, 12}
///   double gb = runtime::model_state_bytes(1, 7.5e9, 64, b).total() / 1e9;  // ZeRO-1, 7.5B, N=64: 31.4
/// \endcode
#include <cstdint>
#include <string>

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

/// ZeRO-Offload (zero_optimization.offload_optimizer.device "cpu", stages 1-3; docs/design.md §10): the
/// optimizer's f32 master, m and v of the rank's shard (12 bytes per element in either precision) and a
/// staging copy of its gradient shard (G) live on the host, with, in 16-bit training, the 16-bit copy of
/// the updated shard the host AdamW writes (P = 2; an f32 run uploads the master itself). Per optimizer
/// step the gradient shard goes down once (G·Ψ/N bytes, after accumulation) and the updated parameters
/// come up (P·Ψ/N). Device, host and transfers per rank:
///
///   device   stage 1: (P+G)Ψ        2: PΨ + GΨ/N        3: (P+G)Ψ/N        (no optimizer state)
///   host     16Ψ/N: optim 12Ψ/N, grad GΨ/N, param (P = 2 ? 2 : 0)Ψ/N
///   d2h GΨ/N, h2d PΨ/N per step
struct OffloadEstimate {
  ModelStateEstimate device, host;
  double d2h = 0, h2d = 0;
};
OffloadEstimate offload_state_bytes(int stage, double psi, int world, BytesPerParameter b);

/// ZeRO-Infinity's offload_param "cpu" (stage 3, with offload_optimizer "cpu"; docs/design.md §10): the
/// parameter shards join the optimizer on the host, where the host AdamW updates them in place (an f32
/// shard is its own master; a 16-bit one has an f32 master beside it). A unit's shard goes up before
/// each of its gathers — twice per micro-step, for forward and for backward — and nothing goes up after
/// the step. Per rank, with A micro-steps (the persistent parameters, on the device, left out as
/// everywhere in these formulas: stage3_param_persistence_threshold 0):
///
///   device   GΨ/N: the gradient shards (+ the units being computed)
///   host     (P+G+K)Ψ/N = 16Ψ/N: param PΨ/N, grad GΨ/N (the staging), optim KΨ/N
///   d2h GΨ/N, h2d 2A·PΨ/N per step
OffloadEstimate offload_param_state_bytes(double psi, int world, BytesPerParameter b, int micro_steps);

/// ZeRO-Infinity's optimizer on NVMe (offload_optimizer "nvme", stage 3; docs/design.md §10): master, m and v
/// on disk, 12Ψ/N, read and written once per step, tile by tile; nothing of the optimizer stays in memory
/// between steps, and the step's host buffers are a few tiles (NvmeEstimate::host_step). Per rank:
///
///   device   (P+G)Ψ/N (GΨ/N with offload_param: the shards on the host, PΨ/N, or on disk)
///   disk     12Ψ/N: master, m, v in f32, in either precision (+ PΨ/N, the shards, with offload_param "nvme")
///   disk_read, disk_write 12Ψ/N per step; d2h GΨ/N; h2d PΨ/N (2A·PΨ/N with offload_param); with offload_param
///            "nvme" each gather reads its shard (+ 2A·PΨ/N read) and the step writes the new values (+ PΨ/N)
///   host_step (12·slots + 4 + (G+P in 16-bit))·t, t = min(sub_group_size, Ψ/N), slots = 1 + pipeline_read
///            + pipeline_write: each tile's master, m, v per tile in flight, one tile's gradient and copies
struct NvmeEstimate {
  ModelStateEstimate device, host, disk;
  double d2h = 0, h2d = 0, disk_read = 0, disk_write = 0, host_step = 0;
};
/// `param_device`: offload_param's device, "none", "cpu" or "nvme".
NvmeEstimate nvme_state_bytes(double psi, int world, BytesPerParameter b, int micro_steps, const std::string& param_device,
                              double tile_elements, int slots);

/// The formula of `stage`'s model states on the device, in the paper's letters: "(P+G)Ψ + KΨ/N"; with
/// `offload` (stages 1-3) ZeRO-Offload's: "(P+G)Ψ", "PΨ + GΨ/N", "(P+G)Ψ/N".
std::string model_states_text(int stage, bool offload = false);

/// ZeRO-R's constant buffers (C_B): the most `comm` bytes the gradient reductions of ZeRO-2 and -3 hold at once,
/// whatever the model's size (zero/bucket_reducer.h). A bucket — a ZeRO-3 unit, however wide — is
/// reduce-scattered in chunks of c = ⌊bucket_elements/N⌋ elements per rank (at least 1): N·c packed + c
/// reduced per reduction in flight, G bytes each, and in 16-bit training (G < 4) the f32 copies the reduction
/// sums in, 4 bytes each more:
///
///   in_flight · (G + (G < 4 ? 4 : 0)) · (N + 1) · c          (DeepSpeed keeps 2 in flight with overlap_comm)
///
/// Throws std::invalid_argument for bucket_elements <= 0 (reduce_bucket_size 0: one bucket per tensor, no bound).
std::int64_t reduction_buffer_bytes(std::int64_t bucket_elements, int world, int grad_bytes, int in_flight = 2);

/// Elements one rank sends per optimizer step with `micro_steps` of accumulation (ring volume).
double comm_elements_per_step(int stage, double psi, int world, int micro_steps);

}  // namespace minitorch::runtime

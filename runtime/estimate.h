#pragma once
/// \file estimate.h
/// What `minitorch-estimate` computes (docs/design.md §8, "The estimator"): model-state bytes per
/// rank before anything runs.
///
/// - For any Ψ and N, the ZeRO paper's formulas (runtime/formulas.h), in real numbers, as its Table 1
///   prints them; with CPU offload, which of those bytes stay on the device and which move to the CPU.
/// - DeepSpeed's own estimators, for comparison: they count more than the paper (an fp32 gradient
///   copy, the largest layer gathered whole) and size the CPU too.
/// - For a config on N ranks, the exact bytes each rank's allocator holds at an optimizer step — what
///   the run report's `ranks[i].model_states` shows — planned by the very zero::Partition the stages
///   build, so the estimate and the run cannot disagree.
///
/// \code
///   std::int64_t psi = runtime::parse_parameter_count("7.5B");                  // 7 500 000 000
///   auto b = runtime::bytes_per_parameter(/*bf16=*/true);
///   runtime::Placement p = runtime::offload_placement(2, psi, 64, b, runtime::Offload::optimizer);
///   // p.device.total() = 2Ψ = 15 GB; p.cpu.total() = (G+K)Ψ/N = 1.64 GB
///   zero::Partition plan(runtime::meta_parameters(nn::GPT::parameter_shapes(g)), bucket, rank, N);
///   zero::ModelStateBytes exact = runtime::exact_model_states(1, plan, b);     // ZeRO-1, this rank
/// \endcode
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "minitorch/tensor.h"
#include "nn/module.h"
#include "runtime/formulas.h"
#include "zero/partition.h"
#include "zero/strategy.h"

namespace minitorch::runtime {

/// A parameter count: digits (124439808), a decimal or exponent form (7.5e9), or a number with a
/// suffix K, M, B or T, any case (10^3, 10^6, 10^9, 10^12: "124M", "7.5B", "1T"). Throws ConfigError
/// naming `text` unless it is a whole number from 1 to 10^18.
std::int64_t parse_parameter_count(const std::string& text);
/// 7.5e9 -> "7.5B", 124439808 -> "124439808": a suffix only when it is exact to 2 decimals.
std::string format_parameter_count(std::int64_t psi);

/// Where the optimizer (and with `param`, the parameters too) live: DeepSpeed's offload_optimizer
/// and offload_param with device "cpu".
enum class Offload { none, optimizer, param };
/// Which of the offloaded states live on NVMe instead of the CPU (ZeRO-Infinity's device "nvme", stage 3):
/// the optimizer's (offload_optimizer), or the parameters' too (offload_param; minitorch keeps both on one disk).
enum class OnNvme { none, optimizer, all };

/// One rank's model states split by where they live.
struct Placement {
  bool valid = true;          ///< false: this offload needs another stage (`why` says which)
  std::string why;
  ModelStateEstimate device;  ///< on the accelerator
  ModelStateEstimate cpu;     ///< in host memory
  ModelStateEstimate disk;    ///< on NVMe
  std::string device_text, cpu_text, disk_text;  ///< the formulas, in the paper's letters
};

/// The paper's bytes per rank for `stage` (runtime/formulas.h), placed as ZeRO-Offload and ZeRO-Infinity
/// place them:
///   none       everything on the device
///   optimizer  (stages 1–3) the shard's optimizer states (fp32 master, m, v: KΨ/N) and its reduced
///              gradients (GΨ/N: the CPU runs Adam on them) on the CPU; stage 1 still holds the full
///              gradients on the device until they are reduce-scattered
///   param      (stage 3) parameters too: every sharded state on the CPU, the device only holds the
///              units it gathers to compute (not counted: the paper's formulas count sharded states)
/// `nvme` (stage 3, runtime::nvme_state_bytes): the optimizer's master, m and v on disk, 12Ψ/N, instead of the CPU
/// (no gradient staging there: the step goes a tile at a time), and with OnNvme::all the parameter shards too, PΨ/N;
/// the CPU holds only the step's tiles (NvmeEstimate::host_step, not model states) and, with the parameters on the
/// CPU, their shards. Throws std::invalid_argument for nvme without offload, or OnNvme::all without Offload::param.
Placement offload_placement(int stage, double psi, int world, BytesPerParameter b, Offload offload,
                            OnNvme nvme = OnNvme::none);

/// 2^30 bytes. DeepSpeed's estimators print bytes / 2^30 and call it "GB": it is a GiB.
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

/// The cluster DeepSpeed's estimators take: num_gpus_per_node × num_nodes = N.
struct DeepSpeedTopology {
  int gpus_per_node = 1, nodes = 1;
};
/// N ranks as nodes of `gpus_per_node` GPUs; none: one node of N. Throws ConfigError naming
/// --gpus-per-node when it is more than N or does not divide N: either would estimate another cluster.
DeepSpeedTopology deepspeed_topology(int world, std::optional<int> gpus_per_node);
/// "1 node x 8 GPUs", "2 nodes x 4 GPUs", "1 node x 1 GPU".
std::string topology_text(DeepSpeedTopology t);
/// bytes / 2^30 to 2 decimals, the number DeepSpeed prints as "GB", labelled honestly: "11.28 GiB".
std::string format_gib(double bytes);
/// --zero-init: "0" or "1" (DeepSpeed's zero_init). Throws ConfigError naming the flag otherwise.
bool parse_zero_init(const std::string& text);
/// --buffer-factor: DeepSpeed's additional_buffer_factor, a finite number >= 1 (below 1 the host would
/// be sized for less than the states it holds). Throws ConfigError naming the flag otherwise.
double parse_buffer_factor(const std::string& text);

/// The knobs of DeepSpeed's estimator functions, at their defaults.
struct DeepSpeedOptions {
  bool zero_init = true;       ///< estimate_zero3_model_states_mem_needs' zero_init
  double buffer_factor = 1.5;  ///< additional_buffer_factor
};

/// One of DeepSpeed's estimates: bytes per GPU and per node's CPU, whole numbers as its functions return
/// them (Python's int() of its arithmetic, in its order), before they print bytes / 2^30 as "GB".
struct DeepSpeedEstimate {
  double gpu = 0, cpu = 0;
  std::string gpu_text, cpu_text;
};
/// estimate_zero2_model_states_mem_needs (deepspeed/runtime/zero/stage_1_and_2.py):
///   no offload   GPU 2Ψ + ⌊18Ψ/N⌋ (18 = 16-bit grads 2 + fp32 grads 4 + fp32 params 4 + Adam m, v 8)
///                CPU 4Ψ·gpus_per_node·factor (every process loads the model in fp32)
///   offload      GPU 2Ψ, CPU Ψ·max(4N, 16)·factor
/// N = gpus_per_node × nodes; factor: additional_buffer_factor. The CPU bytes are truncated, as int() does.
DeepSpeedEstimate deepspeed_zero2(double psi, int gpus_per_node, int nodes, bool cpu_offload, double factor = 1.5);
/// The same function's GPU bytes without offload before DeepSpeed v0.14.3 (June 2024; commit f4cb866c2,
/// PR #5099), still the formula of its memory.rst prose: 4Ψ + ⌊16Ψ/N⌋.
double deepspeed_zero2_gpu_before_v0_14_3(double psi, int world);
/// estimate_zero3_model_states_mem_needs (deepspeed/runtime/zero/stage3.py), with L = the largest
/// layer's parameters and 4L its 16-bit parameters and gradients gathered whole:
///   no offload                 GPU 4L + ⌊18Ψ/N⌋   CPU zero_init 4L·gpus_per_node·factor, else 4Ψ·gpus_per_node·factor
///   offload optimizer          GPU 4L + ⌊2Ψ/N⌋    CPU zero_init 16Ψ/nodes·factor, else Ψ·max(4·gpus_per_node, 16/nodes)·factor
///   offload optimizer + param  GPU 4L             CPU zero_init 18Ψ/nodes·factor, else Ψ·max(4·gpus_per_node, 18/nodes)·factor
DeepSpeedEstimate deepspeed_zero3(double psi, double largest_layer, int gpus_per_node, int nodes, bool cpu_offload,
                                  bool cpu_offload_params, bool zero_init = true, double factor = 1.5);

/// Why DeepSpeed's estimates differ from the paper's, as `minitorch-estimate --params` prints them under
/// its table: for the offload shown, the ZeRO-2 and/or ZeRO-3 columns, mixed precision or fp32, the
/// options used, and whether the ZeRO-3 column was left out for want of the largest layer.
std::string deepspeed_notes(Offload offload, bool zero2, bool zero3, bool zero3_needs_layer, bool bf16,
                            DeepSpeedOptions options);

/// DeepSpeed's "largest layer": the most parameter elements one module holds itself (not its
/// children), over modules named by `shapes`' dotted names ("transformer.h.0.mlp.c_fc.weight" belongs
/// to "transformer.h.0.mlp.c_fc"). Returns {elements, module name}. As DeepSpeed's model_to_params
/// (stage3.py): the max over model.modules() of sum(p.numel() for p in m.parameters(recurse=False)), so
/// a Linear's weight and bias together (the module gathered as one), not the largest single tensor.
std::pair<std::int64_t, std::string> largest_layer(const std::vector<std::pair<std::string, Shape>>& shapes);

/// Tensors with the given names and shapes and no storage of their own (expanded views of one
/// scalar): enough for zero::Partition to plan buckets, padding and pieces, which read only names,
/// sizes and ranks. Never adopt them.
nn::NamedTensors meta_parameters(const std::vector<std::pair<std::string, Shape>>& shapes);

/// The bytes rank `plan.rank()` of `plan.world()` holds under the param / grad / optim tags at an
/// optimizer step (after the reduction, before the update) at `stage` 0–3, as the stages allocate them:
///   stage 0 (and any stage on one rank)  P·Ψ, G·Ψ, K·Ψ
///   stage 1   P·(Ψ + padding), G·(Ψ + padding), K·(this rank's piece elements)
///   stage 2   P·(Ψ + padding), G·(Ψ + padding)/N, K·(this rank's piece elements)
///   stage 3   P·(Σ units (numel/N) + Σ persistent buckets numel), G·(Ψ + padding)/N, K·(pieces)
/// Ranks differ only in where the padding falls (the last ranks' shards hold it). Stage 3 plans with
/// zero::plan_units (zero/stage3.h) and needs its `persistent` flags.
zero::ModelStateBytes exact_model_states(int stage, const zero::Partition& plan, BytesPerParameter b,
                                   const std::vector<bool>& persistent = {});

/// ZeRO-Offload's exact bytes for this rank of `plan` (zero_optimization.offload_optimizer.device "cpu",
/// stages 1-3; runtime/formulas.h has the formulas): the device's model states — the stage's parameters
/// and gradients, no optimizer state (on one rank too: offload runs the stage with N = 1) —, the host's
/// (per owned element: optim 12, grad G, param 2 in 16-bit training), and the bytes each optimizer step
/// copies down (G per owned element) and up (P per owned element). What the run report measures.
///
/// With `how.param` (offload_param, stage 3; runtime/formulas.h: offload_param_state_bytes) the units' shards are on
/// the host, P·(Σ units numel/N), updated in place: an f32 piece of a unit is its own master (8 bytes of optim
/// per element, 12 for a 16-bit one), and no 16-bit staging or copy up for them; each unit's shard goes up twice
/// per micro-step (h2d 2A·P·Σ units numel/N, A = `how.micro_steps`). The persistent buckets stay on the device
/// and move as without it.
///
/// With `how.nvme` (offload_optimizer "nvme", stage 3; zero/nvme_optimizer.h) master, m and v are on disk, three
/// files of 4·(owned elements) bytes each rounded up to 4 KiB; the host holds no staging (each tile's gradient
/// comes down and its values go up as the tile is updated) and, during the step, `host_step` bytes: (12·slots
/// + 4 + (G + P in 16-bit training))·t, t the largest tile (`how.tile_elements`, 0: the largest piece), slots
/// = 1 + pipeline_read + pipeline_write. Per step 12 bytes per owned element are read and written.
/// With `how.param_on_disk` too (offload_param "nvme") the units' shards are in files instead, each rounded up to
/// 4 KiB: each gather reads its shard (disk_read + 2A·P·Σ units numel/N) and the step writes the owned values
/// (disk_write + P per owned unit element); the host keeps none of them.
struct OffloadShape {
  bool param = false;              ///< offload_param "cpu" or "nvme"
  bool param_on_disk = false;      ///< offload_param "nvme"
  bool nvme = false;               ///< offload_optimizer "nvme"
  std::int64_t micro_steps = 1;    ///< A, gradient_accumulation_steps
  std::int64_t tile_elements = 0;  ///< sub_group_size
  int slots = 1;                   ///< NVMe state buffers in flight
};
struct ExactOffload {
  zero::ModelStateBytes device, host, disk;
  std::int64_t d2h = 0, h2d = 0, disk_read = 0, disk_write = 0, host_step = 0;
};
ExactOffload exact_offload_states(int stage, const zero::Partition& plan, BytesPerParameter b,
                                  const std::vector<bool>& persistent = {}, const OffloadShape& how = {});

/// One row of the ZeRO paper's Table 1 (GB, K = 12) as printed: P_os, P_os+g, P_os+g+p for one Ψ and N.
struct PaperTable1Row {
  double psi;
  int world;
  std::array<const char*, 3> gb;  ///< ZeRO-1, -2, -3
};
/// The 18 rows (7.5B, 128B, 1T × N = 1, 4, 16, 64, 256, 1024). The paper rounds some cells and
/// truncates others (4187.5 is printed 4187), so a value agrees when it is within one unit of the
/// last printed digit.
const std::vector<PaperTable1Row>& paper_table1();
/// |gb − printed| < one unit of the printed value's last digit.
bool agrees_with_printed(double gb, const std::string& printed);

}  // namespace minitorch::runtime

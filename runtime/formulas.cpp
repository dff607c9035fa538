#include "runtime/formulas.h"

#include "minitorch/not_implemented.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace minitorch::runtime {

BytesPerParameter bytes_per_parameter(bool bf16) { return bf16 ? BytesPerParameter{2, 2, 12} : BytesPerParameter{4, 4, 8}; }

ModelStateEstimate model_state_bytes(int stage, double psi, int world, BytesPerParameter b) {
  if (world < 1) throw std::invalid_argument("model_state_bytes: world must be at least 1");
  const double n = world;
  switch (stage) {
    case 0: return {b.P * psi, b.G * psi, b.K * psi};
    case 1: return {b.P * psi, b.G * psi, b.K * psi / n};      // optimizer states sharded
    case 2: return {b.P * psi, b.G * psi / n, b.K * psi / n};  // + gradients
    case 3: return {b.P * psi / n, b.G * psi / n, b.K * psi / n};  // + parameters
  }
  throw std::invalid_argument("model_state_bytes: ZeRO stage must be 0..3, got " + std::to_string(stage));
}

std::string model_states_text(int stage, bool offload) {
  if (stage < 0 || stage > 3 || (offload && stage == 0))
    throw std::invalid_argument("model_states_text: ZeRO stage must be " + std::string(offload ? "1..3" : "0..3") +
                                ", got " + std::to_string(stage));
  static const char* const plain[] = {"(P+G+K)Ψ", "(P+G)Ψ + KΨ/N", "PΨ + (G+K)Ψ/N", "(P+G+K)Ψ/N"};
  static const char* const offloaded[] = {"", "(P+G)Ψ", "PΨ + GΨ/N", "(P+G)Ψ/N"};
  return (offload ? offloaded : plain)[stage];
}

OffloadEstimate offload_state_bytes(int stage, double psi, int world, BytesPerParameter b) {
  if (stage < 1 || stage > 3)
    throw std::invalid_argument("offload_state_bytes: offload_optimizer needs ZeRO stage 1, 2 or 3, got " + std::to_string(stage));
  // BEGIN SOLUTION L10.2
  const double shard = psi / static_cast<double>(world);
  OffloadEstimate e;
  const ModelStateEstimate on = model_state_bytes(stage, psi, world, b);
  e.device = {on.param, on.grad, 0};
  e.host = {b.P == 2 ? 2 * shard : 0, b.G * shard, 12 * shard};
  e.d2h = b.G * shard;
  e.h2d = b.P * shard;
  return e;
  // END SOLUTION
}

OffloadEstimate offload_param_state_bytes(double psi, int world, BytesPerParameter b, int micro_steps) {
  if (world < 1 || micro_steps < 1)
    throw std::invalid_argument("offload_param_state_bytes: world and micro_steps must be >= 1");
  const double shard = psi / static_cast<double>(world);
  OffloadEstimate e;
  e.device = {0, b.G * shard, 0};
  e.host = {b.P * shard, b.G * shard, b.K * shard};
  e.d2h = b.G * shard;
  e.h2d = 2.0 * micro_steps * b.P * shard;
  return e;
}

NvmeEstimate nvme_state_bytes(double psi, int world, BytesPerParameter b, int micro_steps, const std::string& param_device,
                              double tile_elements, int slots) {
  if (world < 1 || micro_steps < 1 || slots < 1)
    throw std::invalid_argument("nvme_state_bytes: world, micro_steps and slots must be >= 1");
  if (param_device != "none" && param_device != "cpu" && param_device != "nvme")
    throw std::invalid_argument("nvme_state_bytes: offload_param's device is none, cpu or nvme, got " + param_device);
  const double shard = psi / static_cast<double>(world);
  const bool off = param_device != "none", on_disk = param_device == "nvme";
  const double gathers = 2.0 * micro_steps * b.P * shard;  // each unit's shard, before its two gathers per micro-step
  NvmeEstimate e;
  e.device = {off ? 0 : b.P * shard, b.G * shard, 0};
  e.host = {param_device == "cpu" ? b.P * shard : 0, 0, 0};
  e.disk = {on_disk ? b.P * shard : 0, 0, 12 * shard};
  e.d2h = b.G * shard;
  e.h2d = off ? gathers : b.P * shard;
  e.disk_read = 12 * shard + (on_disk ? gathers : 0);
  e.disk_write = 12 * shard + (on_disk ? b.P * shard : 0);
  const double tile = tile_elements > 0 ? std::min(tile_elements, shard) : shard;
  e.host_step = (12.0 * slots + 4 + (b.P == 2 ? b.G + b.P : 0)) * tile;
  return e;
}

std::int64_t reduction_buffer_bytes(std::int64_t bucket_elements, int world, int grad_bytes, int in_flight) {
  if (bucket_elements <= 0 || world < 1 || in_flight < 1)
    throw std::invalid_argument("reduction_buffer_bytes: bucket_elements, world and in_flight must be >= 1 (got " +
                                std::to_string(bucket_elements) + ", " + std::to_string(world) + ", " +
                                std::to_string(in_flight) + ")");
  const std::int64_t c = std::max<std::int64_t>(1, bucket_elements / world);
  const std::int64_t per_element = grad_bytes + (grad_bytes < 4 ? 4 : 0);  // 16-bit: summed through f32 copies
  return in_flight * per_element * (world + 1) * c;
}

double comm_elements_per_step(int stage, double psi, int world, int micro_steps) {
  if (world < 1 || micro_steps < 1) throw std::invalid_argument("comm_elements_per_step: world and micro_steps must be >= 1");
  const double ring = (world - 1.0) / world * psi;  // one reduce-scatter or one all-gather of Ψ
  switch (stage) {
    case 0:
    case 1: return 2 * ring;                  // one all-reduce (= reduce-scatter + all-gather) at the boundary
    case 2: return (micro_steps + 1) * ring;  // a reduce-scatter per micro-step + the parameter all-gather
    case 3: return 3.0 * micro_steps * ring;  // gather for forward and backward, reduce-scatter, per micro-step
  }
  throw std::invalid_argument("comm_elements_per_step: ZeRO stage must be 0..3, got " + std::to_string(stage));
}

}  // namespace minitorch::runtime

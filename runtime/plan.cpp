#include "runtime/plan.h"

#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "minitorch/allocator.h"
#include "nn/gpt.h"
#include "runtime/byte_size.h"
#include "runtime/config_error.h"
#if MINITORCH_WITH_CUDA
#include "cuda/cuda.h"
#endif

namespace minitorch::runtime {

const char* precision_name(Precision p) { return p == Precision::bf16 ? "bf16" : p == Precision::f16 ? "f16" : "f32"; }

int effective_zero_stage(int config_stage, int data_parallel_size, bool offload_optimizer) {
  return data_parallel_size > 1 || offload_optimizer ? config_stage : 0;
}

namespace {

/// The device a name gives (its index still 0 for "cuda": setup_device picks the rank's GPU).
Device parse_device(const std::string& name, const std::string& what) {
  try {
    return Device::parse(name);
  } catch (const std::invalid_argument&) {
    throw ConfigError(what + " '" + name + "' is not a device: use cpu, sim (a simulated accelerator), cuda (one GPU per "
                      "rank) or cuda:N (GPU N)");
  }
}

/// A sim size set (runtime/byte_size.h) needs the sim device: one ConfigError naming where it was set otherwise.
std::int64_t sim_only(std::int64_t value, SimSize which, const std::string& name, const Device& d) {
  if (value > 0 && !d.is_sim())
    throw ConfigError(name + " is " + sim_size_meaning(which) + ": it needs --device sim (or device.type \"sim\"), not " +
                      d.str());
  return value;
}

/// sim's capacity: --device-memory over device.memory.
std::int64_t capacity_of(const Config& config, const PlanOverrides& o, const Device& d) {
  if (!o.device_memory) return sim_only(config.device.memory, SimSize::capacity, "device.memory", d);
  try {
    return sim_only(parse_sim_size(*o.device_memory, SimSize::capacity, "--device-memory"), SimSize::capacity,
                    "--device-memory", d);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(e.what());
  }
}

/// sim's host link (device.link_bandwidth; minitorch-train's --link-bandwidth sets it).
std::int64_t link_of(const Config& config, const Device& d) {
  return sim_only(config.device.link_bandwidth, SimSize::link_bandwidth, "device.link_bandwidth (or --link-bandwidth)", d);
}

/// What runs otherwise than the config says, one line each (the tools print them once, on rank 0).
std::vector<std::string> warnings_of(const Config& c, const Plan& p) {
  std::vector<std::string> w;
  if (p.zero_stage != p.config_zero_stage)
    w.push_back("zero_optimization.stage " + std::to_string(p.config_zero_stage) +
                " on one data-parallel rank runs as single-rank training (stage 0): ZeRO shards the model "
                "states over the data-parallel ranks, and on one rank the shard is the whole model; "
                "run on 2 or more data-parallel ranks (mpirun -np N) to shard them");
  if (c.activation_checkpointing.cpu_checkpointing && p.device.is_cpu())
    w.push_back("activation_checkpointing.cpu_checkpointing keeps checkpoints in host memory, and on --device cpu "
                "they are there already: it has no effect (run on --device sim or cuda to move them off the device)");
  return w;
}

}  // namespace

Plan make_plan(const Config& c, const PlanOverrides& o) {
  Plan p;
  p.grid = {c.world_size, c.data_parallel_size, static_cast<int>(c.pipeline.stages), c.tensor_parallel.size};
  p.config_zero_stage = c.zero.stage;
  p.offload_optimizer = c.zero.offload_optimizer.enabled();
  p.offload_param = c.zero.offload_param.enabled();
  p.gemini = c.gemini.enabled;
  // Gemini keeps its chunks' placement on one rank too (its main use is one device with offload), as offload does.
  p.zero_stage = effective_zero_stage(c.zero.stage, p.grid.data, p.offload_optimizer || p.gemini);
  p.device_name = o.device ? *o.device : c.device.type;
  p.device = parse_device(p.device_name, o.device ? "--device" : "device.type");
  p.device_capacity = capacity_of(c, o, p.device);
  p.link_bandwidth = link_of(c, p.device);
  p.precision = c.bf16 ? Precision::bf16 : c.fp16.enabled ? Precision::f16 : Precision::f32;
  p.bytes = bytes_per_parameter(c.mixed_precision());
  p.micro_batch = c.train_micro_batch_size_per_gpu;
  p.accumulation = c.gradient_accumulation_steps;
  p.global_batch = c.train_batch_size;
  p.activation_checkpointing = c.activation_checkpointing.enabled;
  // Each rank holds a part of the state when the optimizer is sharded or the model is split: a directory
  // of shards. Otherwise one rank writes the whole state to one file.
  p.save_kind = p.zero_stage >= 1 || p.pipelined() || p.tensor_parallel() ? SaveKind::sharded : SaveKind::single_file;
  p.warnings = warnings_of(c, p);
  return p;
}

std::vector<std::string> model_warnings(const Plan& plan, const Config& c, const nn::GPTConfig& model) {
  std::vector<std::string> w;
  if (!plan.offload_param || plan.zero_stage != 3) return w;
  const std::int64_t threshold = c.zero.stage3_param_persistence_threshold;
  std::int64_t kept = 0, total = 0, tensors = 0;
  for (const auto& [name, shape] : nn::GPT::parameter_shapes(model)) {
    std::int64_t n = 1;
    for (std::int64_t d : shape) n *= d;
    total += n;
    if (n <= threshold) kept += n, ++tensors;
  }
  if (kept > 0)
    w.push_back("zero_optimization.offload_param: " + std::to_string(kept) + " of the model's " + std::to_string(total) +
                " parameters (" + std::to_string(tensors) + " tensors of at most stage3_param_persistence_threshold = " +
                std::to_string(threshold) + " elements) stay whole on the device, as DeepSpeed keeps persistent "
                "parameters; only the rest goes to " + (c.zero.offload_param.on_nvme() ? "NVMe" : "the host") +
                ". Set stage3_param_persistence_threshold to 0 to offload every tensor");
  return w;
}

std::string Plan::describe() const {
  std::ostringstream os;
  os << (zero_stage == 0 ? (grid.data > 1 ? std::string("DDP (stage 0)") : std::string("one data-parallel rank (stage 0)"))
                         : "ZeRO stage " + std::to_string(zero_stage))
     << (gemini ? " (Gemini chunks)" : "") << (offload_optimizer ? " + offload_optimizer" : "")
     << (offload_param ? " + offload_param" : "") << " on " << grid.world << " rank" << (grid.world == 1 ? "" : "s")
     << " (data " << grid.data << " x pipeline " << grid.pipeline << " x tensor " << grid.tensor << "), "
     << precision_name(precision) << ", " << device.str();
  if (device_capacity > 0) os << " (" << format_mib(static_cast<double>(device_capacity)) << ")";
  if (link_bandwidth > 0) os << " linked at " << static_cast<double>(link_bandwidth) / 1e9 << " GB/s";
  os << ", micro " << micro_batch << " x accumulation " << accumulation << " x data " << grid.data << " = "
     << global_batch << ", " << (sharded_save() ? "sharded save" : "single-file save");
  return os.str();
}

namespace {

#if MINITORCH_WITH_CUDA
/// This rank's place on its node: Open MPI's OMPI_COMM_WORLD_LOCAL_RANK and _LOCAL_SIZE (0 of 1 without mpirun).
std::pair<int, int> local_rank_from_environment() {
  auto number = [](const char* name, int fallback) {
    const char* v = std::getenv(name);
    if (!v || !*v) return fallback;
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    return (*end == '\0' && n >= 0 && n < 1 << 20) ? static_cast<int>(n) : fallback;
  };
  return {number("OMPI_COMM_WORLD_LOCAL_RANK", 0), number("OMPI_COMM_WORLD_LOCAL_SIZE", 1)};
}
#endif

/// The GPU of this rank, ready: DeepSpeed's launcher gives each rank of a node its own, by local rank.
Device choose_gpu(const std::string& name, Device d) {
  const std::string flag = "--device '" + name + "'";
#if !MINITORCH_WITH_CUDA
  (void)d;
  throw ConfigError(flag + ": this build has no CUDA layer (nvcc was not found when it was configured); "
                    "build where the CUDA toolkit is installed, or use --device cpu");
#else
  std::string why;
  if (!cuda::init(&why)) throw ConfigError(flag + ": no usable CUDA device here (" + why + "); use --device cpu");
  const int count = cuda::device_count();
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::string seen = std::to_string(count) + " GPU" + (count == 1 ? " is" : "s are") + " visible" +
                           (visible ? std::string(" (CUDA_VISIBLE_DEVICES=") + visible + ")" : std::string());
  if (name == "cuda") {  // one GPU per rank, by local rank
    const auto [local_rank, local_size] = local_rank_from_environment();
    if (local_size > count)
      throw ConfigError(flag + ": " + std::to_string(local_size) + " ranks run on this node but only " + seen +
                        ", and each rank takes its own GPU: start at most " + std::to_string(count) +
                        " ranks per node, or name one GPU for all of them (--device cuda:0: they share it)");
    d = Device::cuda(local_rank);
  } else if (d.index >= count) {
    throw ConfigError(flag + ": there is no GPU " + std::to_string(d.index) + ": " + seen);
  }
  cuda::set_current_device(d.index);
  return d;
#endif
}

}  // namespace

Device setup_device(Plan& plan) {
  if (plan.device.is_cuda()) plan.device = choose_gpu(plan.device_name, plan.device);
  if (plan.device.is_sim()) {
    set_memory_capacity(plan.device, plan.device_capacity);
    set_link_bandwidth(plan.device, static_cast<double>(plan.link_bandwidth));
  }
  return plan.device;
}

}  // namespace minitorch::runtime

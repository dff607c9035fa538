#pragma once
// --device for the tools: where a rank computes (docs/design.md, "Devices"). DeepSpeed's launcher gives
// each rank of a node its own GPU, numbered by local rank; `--device cuda` does the same.
#include <cstdlib>
#include <stdexcept>
#include <string>

#include <optional>

#include "minitorch/allocator.h"
#include "minitorch/device.h"
#include "runtime/byte_size.h"
#include "runtime/config.h"
#include "runtime/config_error.h"
#if MINITORCH_WITH_CUDA
#include "cuda/cuda.h"
#endif

namespace minitorch::tools {

/// This rank's place on its node: Open MPI's OMPI_COMM_WORLD_LOCAL_RANK and _LOCAL_SIZE (rank 0 of 1
/// without mpirun).
struct LocalRank {
  int rank = 0, size = 1;
};

inline LocalRank local_rank_from_environment() {
  auto number = [](const char* name, int fallback) {
    const char* v = std::getenv(name);
    if (!v || !*v) return fallback;
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    return (*end == '\0' && n >= 0 && n < 1 << 20) ? static_cast<int>(n) : fallback;
  };
  return {number("OMPI_COMM_WORLD_LOCAL_RANK", 0), number("OMPI_COMM_WORLD_LOCAL_SIZE", 1)};
}

/// The help text of --device and --device-memory.
inline constexpr const char* kDeviceHelp =
    "where each rank computes (overrides the config's device.type): cpu (default); sim = a simulated accelerator (the "
    "CPU kernels, but its own memory pool, with a capacity from --device-memory, and every host<->device copy "
    "counted); cuda = the GPU numbered by the rank's local rank on its node (one rank per GPU, as DeepSpeed's launcher "
    "maps them); cuda:N = GPU N for every rank of the node (ranks share it)";
inline constexpr const char* kDeviceMemoryHelp =
    "the simulated accelerator's capacity per rank (overrides the config's device.memory; --device sim): 24MiB, 1.5GB, or "
    "a number of bytes";

/// The device `--device TEXT` names for this rank, ready to use: for a GPU, the CUDA kernels are registered
/// and it is this thread's current device. A name that is no device, a build without the CUDA layer, a
/// machine without a usable GPU, or more ranks on a node than it has GPUs: one runtime::ConfigError
/// (exit status 2) that says what to do.
inline Device choose_device(const std::string& text, LocalRank local = local_rank_from_environment()) {
  const std::string flag = "--device '" + text + "'";
  Device d;
  try {
    d = Device::parse(text);
  } catch (const std::invalid_argument&) {
    throw runtime::ConfigError(flag + " is not a device: use cpu, sim (a simulated accelerator), cuda (one GPU per rank) "
                               "or cuda:N (GPU N)");
  }
  if (d.is_host_memory()) return d;
#if !MINITORCH_WITH_CUDA
  (void)local;
  throw runtime::ConfigError(flag + ": this build has no CUDA layer (nvcc was not found when it was configured); "
                             "build where the CUDA toolkit is installed, or use --device cpu");
#else
  std::string why;
  if (!cuda::init(&why)) throw runtime::ConfigError(flag + ": no usable CUDA device here (" + why + "); use --device cpu");
  const int count = cuda::device_count();
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::string seen = std::to_string(count) + " GPU" + (count == 1 ? " is" : "s are") + " visible" +
                           (visible ? std::string(" (CUDA_VISIBLE_DEVICES=") + visible + ")" : std::string());
  if (text == "cuda") {  // one GPU per rank, by local rank
    if (local.size > count)
      throw runtime::ConfigError(flag + ": " + std::to_string(local.size) + " ranks run on this node but only " + seen +
                                 ", and each rank takes its own GPU: start at most " + std::to_string(count) +
                                 " ranks per node, or name one GPU for all of them (--device cuda:0: they share it)");
    d = Device::cuda(local.rank);
  } else if (d.index >= count) {
    throw runtime::ConfigError(flag + ": there is no GPU " + std::to_string(d.index) + ": " + seen);
  }
  cuda::set_current_device(d.index);
  return d;
#endif
}

/// The rank's device from the config's `device` section, overridden by --device / --device-memory when
/// given (nullopt: not given), with sim's capacity set. A capacity for anything but sim, or a size that is
/// not one: one runtime::ConfigError.
inline Device setup_device(const runtime::DeviceConfig& config, const std::optional<std::string>& device_flag,
                           const std::optional<std::string>& memory_flag) {
  const Device d = choose_device(device_flag ? *device_flag : config.type);
  std::int64_t capacity = config.memory;
  if (memory_flag) {
    try {
      capacity = runtime::parse_byte_size(*memory_flag);
    } catch (const std::invalid_argument& e) {
      throw runtime::ConfigError("--device-memory: " + std::string(e.what()));
    }
    if (capacity == 0)
      throw runtime::ConfigError("--device-memory 0: give the simulated accelerator's capacity (e.g. 24MiB), or leave the "
                                 "flag out for no limit");
  }
  if (capacity > 0 && !d.is_sim())
    throw runtime::ConfigError(std::string(memory_flag ? "--device-memory" : "device.memory") +
                               " is the simulated accelerator's capacity: it needs --device sim (or device.type \"sim\"), "
                               "not " + d.str());
  if (d.is_sim()) set_memory_capacity(d, capacity);
  return d;
}

}  // namespace minitorch::tools

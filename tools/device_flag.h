#pragma once
// --device for the tools: where a rank computes (docs/design.md, "Devices"). DeepSpeed's launcher gives
// each rank of a node its own GPU, numbered by local rank; `--device cuda` does the same.
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "minitorch/device.h"
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

/// The help text of --device.
inline constexpr const char* kDeviceHelp =
    "where each rank computes: cpu (default); cuda = the GPU numbered by the rank's local rank on its node (one rank "
    "per GPU, as DeepSpeed's launcher maps them); cuda:N = GPU N for every rank of the node (ranks share it)";

/// The device `--device TEXT` names for this rank, ready to use: for a GPU, the CUDA kernels are registered
/// and it is this thread's current device. A name that is no device, a build without the CUDA layer, a
/// machine without a usable GPU, or more ranks on a node than it has GPUs: one runtime::ConfigError
/// (exit status 2) that says what to do.
inline Device choose_device(const std::string& text, LocalRank local = local_rank_from_environment()) {
  const std::string flag = "--device '" + text + "'";
  if (text == "sim")
    throw runtime::ConfigError(flag + ": the simulated accelerator is not available yet; use cpu or cuda");
  Device d;
  try {
    d = Device::parse(text);
  } catch (const std::invalid_argument&) {
    throw runtime::ConfigError(flag + " is not a device: use cpu, cuda (one GPU per rank) or cuda:N (GPU N)");
  }
  if (d.is_cpu()) return d;
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

}  // namespace minitorch::tools

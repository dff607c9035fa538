#pragma once
/// \file device.h
/// Where a tensor's bytes live. Kernels and allocators are chosen by `Device::type`.
///
/// `sim` is a simulated accelerator (docs/design.md §10): its bytes are host memory and the CPU kernels
/// run on them, but the allocator accounts them in a pool of their own, which may have a capacity, and
/// every copy between it and the host is counted like a PCIe transfer.
#include <string>

namespace minitorch {

enum class DeviceType { cpu, cuda, sim };

/// A device: the CPU, CUDA GPU number `index`, or the simulated accelerator.
struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;

  static Device cpu() { return {DeviceType::cpu, 0}; }
  static Device cuda(int index = 0) { return {DeviceType::cuda, index}; }
  static Device sim() { return {DeviceType::sim, 0}; }
  /// Parses "cpu", "sim", "cuda", "cuda:N"; throws std::invalid_argument otherwise.
  static Device parse(const std::string& text);

  bool is_cpu() const { return type == DeviceType::cpu; }
  bool is_cuda() const { return type == DeviceType::cuda; }
  bool is_sim() const { return type == DeviceType::sim; }
  /// Its bytes are host memory, so the CPU kernels (and MPI) work on them directly: cpu and sim.
  bool is_host_memory() const { return type != DeviceType::cuda; }
  /// "cpu", "sim" or "cuda:N".
  std::string str() const;
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

}  // namespace minitorch

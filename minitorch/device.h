#pragma once
/// \file device.h
/// Where a tensor's bytes live. Kernels and allocators are chosen by `Device::type`.
#include <string>

namespace minitorch {

enum class DeviceType { cpu, cuda };

/// A device: the CPU, or CUDA GPU number `index`.
struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;

  static Device cpu() { return {DeviceType::cpu, 0}; }
  static Device cuda(int index = 0) { return {DeviceType::cuda, index}; }
  /// Parses "cpu", "cuda", "cuda:N"; throws std::invalid_argument otherwise.
  static Device parse(const std::string& text);

  bool is_cpu() const { return type == DeviceType::cpu; }
  bool is_cuda() const { return type == DeviceType::cuda; }
  /// "cpu" or "cuda:N".
  std::string str() const;
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

}  // namespace minitorch

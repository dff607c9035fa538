#pragma once
/// \file dtype.h
/// Element types. bf16 is a *storage* type on the CPU: kernels widen it to f32 to compute
/// (docs/design.md §3), so the CPU reproduces the byte layout of mixed-precision training exactly.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace minitorch {

enum class DType : std::uint8_t { f32, bf16, i32 };

/// Bytes per element: f32 4, bf16 2, i32 4.
std::size_t dtype_size(DType t);
/// "f32", "bf16", "i32".
const char* dtype_name(DType t);
/// Parses a dtype name; throws std::invalid_argument naming the valid ones.
DType parse_dtype(const std::string& name);

/// f32 -> bf16 with round-to-nearest-even (the rounding PyTorch and CUDA use). NaN stays NaN.
inline std::uint16_t f32_to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}
/// bf16 -> f32 is exact: the bf16 bits are the top half of an f32.
inline float bf16_to_f32(std::uint16_t h) {
  std::uint32_t u = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace minitorch

#pragma once
/// \file dtype.h
/// Element types. bf16 and f16 are *storage* types on the CPU: kernels widen them to f32 to compute
/// and round back (docs/design.md §3), so the CPU reproduces the byte layout of mixed-precision
/// training exactly. The two 16-bit formats trade range for precision:
///
///   bf16  1 sign, 8 exponent, 7 mantissa bits: f32's range (to 3.4e38), ~3 significant digits
///   f16   1 sign, 5 exponent, 10 mantissa bits: max 65504, normals from 2^-14, subnormals to 2^-24
///
/// f16's narrow range is why fp16 training needs a loss scaler (runtime/loss_scaler.h).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace minitorch {

enum class DType : std::uint8_t { f32, bf16, i32, f16 };

/// Bytes per element: f32 4, bf16 2, i32 4, f16 2.
std::size_t dtype_size(DType t);
/// bf16 or f16: a 16-bit float stored as std::uint16_t bits.
inline bool is_half(DType t) { return t == DType::bf16 || t == DType::f16; }
/// "f32", "bf16", "i32", "f16".
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

/// f32 -> IEEE binary16 with round-to-nearest-even: too large rounds to ±inf (65520 and up), tiny
/// values to subnormals (2^-24 = 0x0001) or ±0, NaN stays a (quiet) NaN.
inline std::uint16_t f32_to_f16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  const std::uint32_t a = u & 0x7fffffffu;  // |f| bits
  if (a > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));  // NaN, quiet
  if (a >= 0x47800000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // >= 2^16 (or inf): inf
  if (a < 0x38800000u) {  // below 2^-14: a subnormal f16 (or 0), in units of 2^-24
    if (a < 0x33000000u) return static_cast<std::uint16_t>(sign);  // <= 2^-25: rounds to 0 (ties to even)
    const std::uint32_t mant = (a & 0x7fffffu) | 0x800000u;          // 24-bit significand
    const int shift = 126 - static_cast<int>(a >> 23);               // 14..24: value = mant · 2^(e-150)
    const std::uint32_t half = 1u << (shift - 1), rest = mant & ((1u << shift) - 1);
    std::uint32_t h = mant >> shift;
    if (rest > half || (rest == half && (h & 1u))) ++h;  // RNE; may carry into the smallest normal
    return static_cast<std::uint16_t>(sign | h);
  }
  // Normal: rebias the exponent (127 -> 15), keep 10 of 23 mantissa bits with RNE; a carry may
  // round up into the next binade, or to inf from 65520 on.
  std::uint32_t h = ((a - 0x38000000u) >> 13);
  const std::uint32_t rest = a & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return static_cast<std::uint16_t>(sign | h);
}
/// IEEE binary16 -> f32 is exact (subnormals become normal f32s).
inline float f16_to_f32(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  std::uint32_t u;
  if (exp == 0x1f) {
    u = sign | 0x7f800000u | (mant << 13);  // inf / NaN
  } else if (exp != 0) {
    u = sign | ((exp + 112) << 23) | (mant << 13);  // normal: rebias 15 -> 127
  } else if (mant == 0) {
    u = sign;  // ±0
  } else {     // subnormal: mant · 2^-24, as an f32 normal
    float f = static_cast<float>(mant) * 5.9604644775390625e-8f;
    std::memcpy(&u, &f, 4);
    u |= sign;
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// The 16-bit float `h` of type t (bf16 or f16) as f32.
inline float half_to_f32(DType t, std::uint16_t h) { return t == DType::f16 ? f16_to_f32(h) : bf16_to_f32(h); }
/// f32 rounded (RNE) to the 16-bit float type t (bf16 or f16).
inline std::uint16_t f32_to_half(DType t, float f) { return t == DType::f16 ? f32_to_f16(f) : f32_to_bf16(f); }

}  // namespace minitorch

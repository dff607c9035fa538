#include "minitorch/strided.h"

#include <cstring>
#include <stdexcept>
#include "minitorch/not_implemented.h"

namespace minitorch {

bool is_row_major(const Shape& shape, const Shape& strides) {
  std::int64_t expected = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1 && strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

namespace {
void require_cpu(const Tensor& t, const char* what) {
  if (!t.device().is_host_memory())
    throw std::invalid_argument(std::string(what) + ": " + t.describe() + " is not in host memory (cpu or sim)");
}
}  // namespace

float load_float(const Tensor& t, std::int64_t off) {
  require_cpu(t, "element read");
  switch (t.dtype()) {
    case DType::f32: return static_cast<const float*>(t.raw_data())[off];
    case DType::bf16:
    case DType::f16: return half_to_f32(t.dtype(), static_cast<const std::uint16_t*>(t.raw_data())[off]);
    case DType::i32: return static_cast<float>(static_cast<const std::int32_t*>(t.raw_data())[off]);
  }
  return 0.f;
}

void load_floats(const Tensor& t, float* out) {
  require_cpu(t, "load_floats");
  if (t.numel() == 0) return;  // no storage behind it: memcpy must not see the null pointer
  if (t.dtype() == DType::f32 && t.is_contiguous()) {
    std::memcpy(out, t.raw_data(), static_cast<std::size_t>(t.numel()) * 4);
    return;
  }
  const void* base = t.raw_data();
  switch (t.dtype()) {
    case DType::f32:
      for_each_offset(t.shape(), t.strides(), [&](std::int64_t i, std::int64_t o) { out[i] = static_cast<const float*>(base)[o]; });
      break;
    case DType::bf16:
    case DType::f16: {
      const DType d = t.dtype();
      for_each_offset(t.shape(), t.strides(), [&](std::int64_t i, std::int64_t o) {
        out[i] = half_to_f32(d, static_cast<const std::uint16_t*>(base)[o]);
      });
      break;
    }
    case DType::i32:
      for_each_offset(t.shape(), t.strides(), [&](std::int64_t i, std::int64_t o) {
        out[i] = static_cast<float>(static_cast<const std::int32_t*>(base)[o]);
      });
      break;
  }
}

void store_floats(Tensor& t, const float* in) {
  require_cpu(t, "store_floats");
  if (t.numel() == 0) return;
  void* base = t.raw_data();
  switch (t.dtype()) {
    case DType::f32:
      if (t.is_contiguous()) {
        std::memcpy(base, in, static_cast<std::size_t>(t.numel()) * 4);
        return;
      }
      for_each_offset(t.shape(), t.strides(), [&](std::int64_t i, std::int64_t o) { static_cast<float*>(base)[o] = in[i]; });
      break;
    case DType::bf16:
    case DType::f16: {
      const DType d = t.dtype();
      for_each_offset(t.shape(), t.strides(), [&](std::int64_t i, std::int64_t o) {
        static_cast<std::uint16_t*>(base)[o] = f32_to_half(d, in[i]);
      });
      break;
    }
    case DType::i32:
      for_each_offset(t.shape(), t.strides(), [&](std::int64_t i, std::int64_t o) {
        static_cast<std::int32_t*>(base)[o] = static_cast<std::int32_t>(in[i]);
      });
      break;
  }
}

void copy_strided(Tensor& dst, const Tensor& src) {
  require_cpu(dst, "copy");
  require_cpu(src, "copy");
  if (dst.numel() == 0) return;
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous()) {
    std::memcpy(dst.raw_data(), src.raw_data(), dst.nbytes());
    return;
  }
  // BEGIN SOLUTION L01.3
  if (dst.dtype() == DType::i32 && src.dtype() == DType::i32) {  // exact, no float round trip
    auto* d = static_cast<std::int32_t*>(dst.raw_data());
    const auto* s = static_cast<const std::int32_t*>(src.raw_data());
    std::vector<std::int64_t> src_off(static_cast<std::size_t>(src.numel()));
    for_each_offset(src.shape(), src.strides(), [&](std::int64_t i, std::int64_t o) { src_off[i] = o; });
    for_each_offset(dst.shape(), dst.strides(), [&](std::int64_t i, std::int64_t o) { d[o] = s[src_off[i]]; });
    return;
  }
  std::vector<float> tmp(static_cast<std::size_t>(src.numel()));
  load_floats(src, tmp.data());
  store_floats(dst, tmp.data());
  // END SOLUTION
}

void fill_strided(Tensor& t, float value) {
  require_cpu(t, "fill_");
  std::int64_t n = t.numel();
  if (t.is_contiguous() && t.dtype() == DType::f32) {
    float* p = static_cast<float*>(t.raw_data());
    for (std::int64_t i = 0; i < n; ++i) p[i] = value;
    return;
  }
  std::vector<float> tmp(static_cast<std::size_t>(n), value);
  store_floats(t, tmp.data());
}

}  // namespace minitorch

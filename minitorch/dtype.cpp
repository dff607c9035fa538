#include "minitorch/dtype.h"

#include <stdexcept>

namespace minitorch {

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::bf16: return 2;
    case DType::i32: return 4;
    case DType::f16: return 2;
  }
  throw std::logic_error("dtype_size: bad dtype");
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::bf16: return "bf16";
    case DType::i32: return "i32";
    case DType::f16: return "f16";
  }
  return "?";
}

DType parse_dtype(const std::string& name) {
  if (name == "f32" || name == "float32" || name == "fp32") return DType::f32;
  if (name == "bf16" || name == "bfloat16") return DType::bf16;
  if (name == "i32" || name == "int32") return DType::i32;
  if (name == "f16" || name == "float16" || name == "fp16" || name == "half") return DType::f16;
  throw std::invalid_argument("unknown dtype '" + name + "' (valid: f32, bf16, f16, i32)");
}

}  // namespace minitorch

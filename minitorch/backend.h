#pragma once
/// \file backend.h
/// The kernels of one device type, behind a virtual interface. `ops::*` (minitorch/ops.h) checks its
/// arguments once and then calls `backend(device).kernel(...)`, so a kernel may assume valid input:
/// shapes agree, dtypes are the ones ops.h allows, every tensor is on this backend's device.
///
/// The CPU kernels (minitorch/cpu_*.cpp) are built in. The CUDA layer implements the same interface
/// and installs it once at start-up with `register_backend(DeviceType::cuda, &its_backend)`.
///
/// Common rules for every kernel:
///   - inputs may be any view (strided, transposed, expanded with stride 0) and f32 or bf16;
///     kernels compute in f32 and return new contiguous tensors;
///   - float results take the dtype of the first tensor argument, except that backward kernels
///     return gradients in dy's dtype (and backend_ops.def says where else);
///   - i32 tensors are only indices / targets.
#include <cstdint>
#include <vector>

#include "minitorch/device.h"
#include "minitorch/ops.h"
#include "minitorch/tensor.h"

namespace minitorch {

/// Binary elementwise ops (NumPy broadcasting).
enum class BinaryOp : std::uint8_t { add, sub, mul, div };
/// Unary elementwise ops; the scalars p0, p1 are: affine (s, t), pow (exponent, -), others unused.
enum class UnaryOp : std::uint8_t { affine, neg, exp, log, tanh, sqrt, pow };

class Backend {
 public:
  virtual ~Backend() = default;
  /// "cpu", "cuda".
  virtual const char* name() const = 0;

  // Every kernel, one pure virtual method each (the list and each kernel's contract: backend_ops.def).
#define MINITORCH_BACKEND_OP(result, name, parameters, arguments) virtual result name parameters = 0;
#include "minitorch/backend_ops.def"
};

/// Installs the kernels for a device type (the CUDA layer calls this once at start-up). The CPU
/// kernels are built in; registering another CPU backend replaces them (e.g. for a test double).
/// `kernels` must outlive every later op; nullptr unregisters.
void register_backend(DeviceType type, Backend* kernels);
/// The kernels for a device; throws std::runtime_error if this build has none for it
/// ("no kernels for cuda:0 in this build (built without CUDA)").
Backend& backend(Device device);
/// The built-in CPU kernels (a function-local static object).
Backend& cpu_backend();

}  // namespace minitorch

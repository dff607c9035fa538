// The backend registry: one slot per device type, the CPU slot pre-filled with the built-in kernels.
#include <array>
#include <atomic>
#include <stdexcept>
#include <string>

#include "minitorch/cpu_backend.h"
#include "minitorch/cpu_util.h"
#include "minitorch/strided.h"

namespace minitorch {

namespace {
// The simulated accelerator's bytes are host memory: it runs the CPU kernels (docs/design.md §10).
std::array<std::atomic<Backend*>, 3>& registry() {
  static std::array<std::atomic<Backend*>, 3> slots{&cpu_backend(), nullptr, &cpu_backend()};
  return slots;
}
std::size_t slot(DeviceType t) { return static_cast<std::size_t>(t); }
}  // namespace

Backend& cpu_backend() {
  static cpu::CpuBackend kernels;
  return kernels;
}

void register_backend(DeviceType type, Backend* kernels) {
  if (type != DeviceType::cuda && kernels == nullptr) kernels = &cpu_backend();  // the CPU always has kernels
  registry()[slot(type)].store(kernels);
}

Backend& backend(Device device) {
  Backend* b = registry()[slot(device.type)].load();
  if (b == nullptr)
    throw std::runtime_error("no kernels for " + device.str() + " in this build" +
                             (device.is_cuda() ? " (built without CUDA)" : ""));
  return *b;
}

namespace cpu {
// The common copies (contiguous(), clone(), to(f32 / bf16)) take the kernels' parallel row walk;
// the rest (strided destinations, i32) the general element walk of minitorch/strided.h.
void CpuBackend::copy_(Tensor& dst, const Tensor& src) {
  if (dst.is_contiguous() && src.dtype() != DType::i32) {
    if (dst.dtype() == DType::f32) return gather_f32(src, fp(dst));
    if (is_half(dst.dtype()) && src.dtype() == DType::f32 && src.is_contiguous())
      return narrow_half(dst.dtype(), cfp(src), static_cast<std::uint16_t*>(dst.raw_data()), dst.numel());
  }
  copy_strided(dst, src);
}
void CpuBackend::fill_(Tensor& t, float value) { fill_strided(t, value); }
}  // namespace cpu

}  // namespace minitorch

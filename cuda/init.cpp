// Start-up of the CUDA layer: finds a device and registers the allocator and the kernels
// (cuda/cuda.h explains why this is an explicit call and not a static initialiser).
#include <cuda_runtime.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "cuda/allocator.h"
#include "cuda/backend.h"
#include "cuda/cuda.h"
#include "minitorch/allocator.h"
#include "minitorch/backend.h"

namespace minitorch::cuda {

namespace {
std::atomic<bool> g_naive{false};

// cudaGetDeviceCount without throwing; `why` gets the runtime's message when there is no device.
int count_devices(std::string* why) {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    if (why)
      *why = std::string("cudaGetDeviceCount failed: ") + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) +
             ")" + (err == cudaErrorInsufficientDriver || err == cudaErrorNoDevice ? " - no GPU / NVIDIA driver here" : "");
    return 0;
  }
  if (n == 0 && why) *why = "cudaGetDeviceCount: 0 devices visible";
  return n;
}
}  // namespace

CudaBackend& cuda_backend() {
  static auto* b = new CudaBackend();  // leaked on purpose, like the allocator
  return *b;
}

int device_count() { return count_devices(nullptr); }

bool init(std::string* reason) {
  static std::once_flag once;
  static bool ok = false;
  static std::string why;
  std::call_once(once, [] {
    if (count_devices(&why) == 0) return;
    if (const char* e = std::getenv("MINITORCH_CUDA_NAIVE"); e && std::strcmp(e, "1") == 0) g_naive = true;
    register_device_allocator(DeviceType::cuda, &caching_allocator());
    register_backend(DeviceType::cuda, &cuda_backend());
    ok = true;
  });
  if (!ok && reason) *reason = why;
  return ok;
}

void set_current_device(int index) { set_device(index); }

void set_naive_kernels(bool on) { g_naive = on; }
bool naive_kernels() { return g_naive; }

}  // namespace minitorch::cuda

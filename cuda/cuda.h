#pragma once
/// \file cuda.h
/// The public face of the CUDA layer (docs/design.md §2: cuda/ depends on minitorch/ only). Nothing here
/// needs the CUDA headers, so any target can include it.
///
/// \code
///   std::string why;
///   if (!minitorch::cuda::init(&why)) throw std::runtime_error("--device cuda: " + why);
///   Tensor x = Tensor::randn({2, 3}, gen).to(Device::cuda());   // cudaMalloc'd (cached) storage
///   Tensor y = ops::softmax(x);                                 // runs cuda/softmax.cu
/// \endcode
///
/// Registration is explicit: a static library's object files that hold only static initialisers
/// are dropped by the linker, so `init()` is called by whoever wants the GPU (the tools will call it
/// for `--device cuda`; the tests call it in their fixture).
#include <cstddef>
#include <string>

namespace minitorch::cuda {

/// Registers the caching device allocator and the CUDA kernels (register_device_allocator,
/// register_backend) if at least one CUDA device is present. Idempotent and thread-safe; later calls
/// return the first answer. Returns false and sets `*reason` (e.g. "cudaGetDeviceCount: no CUDA-capable
/// device is detected") when there is no usable device; then nothing is registered.
bool init(std::string* reason = nullptr);
/// Makes GPU `index` this thread's current device, where the kernels launch (a rank computes on one GPU:
/// `--device cuda:N`). Call after init(); throws std::runtime_error for an index that is not visible.
void set_current_device(int index);
/// Number of visible devices (0 when the driver or a device is missing; never throws).
int device_count();

/// Bytes held in the allocator's free lists (cudaMalloc'd, not in use) on `device`; -1 = all devices.
std::size_t cached_bytes(int device = -1);
/// Bytes obtained from cudaMalloc and not yet returned (in use + cached).
std::size_t reserved_bytes(int device = -1);
/// Returns every cached block to the driver (cudaFree), like torch.cuda.empty_cache().
void empty_cache();

/// Picks the teaching versions of the kernels (one thread per row / per output element, no cuBLAS)
/// instead of the fast ones. Both are tested against the CPU. Default false; also set by the
/// environment variable MINITORCH_CUDA_NAIVE=1 at init().
void set_naive_kernels(bool on);
bool naive_kernels();

}  // namespace minitorch::cuda

#pragma once
/// \file check.h
/// Error handling for CUDA runtime and cuBLAS calls: every call is wrapped, and a failure throws
/// std::runtime_error naming the file, the line, the call and the driver's message.
#include <cuda_runtime.h>
#include <cublas_v2.h>

#include <stdexcept>
#include <string>

namespace minitorch::cuda {

[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line) {
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " +
                           cudaGetErrorName(err) + ": " + cudaGetErrorString(err));
}
[[noreturn]] inline void throw_cublas_error(cublasStatus_t st, const char* call, const char* file, int line) {
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: cuBLAS status " +
                           std::to_string(static_cast<int>(st)) + " (" + cublasGetStatusString(st) + ")");
}

}  // namespace minitorch::cuda

/// MT_CUDA_CHECK(cudaMalloc(&p, n));  throws std::runtime_error("file:line: cudaMalloc(&p, n) failed: ...")
#define MT_CUDA_CHECK(call)                                                                  \
  do {                                                                                       \
    cudaError_t mt_err_ = (call);                                                            \
    if (mt_err_ != cudaSuccess) ::minitorch::cuda::throw_cuda_error(mt_err_, #call, __FILE__, __LINE__); \
  } while (0)
/// After a kernel launch: catches bad launch configurations (asynchronous faults surface later).
#define MT_CUDA_CHECK_LAUNCH() MT_CUDA_CHECK(cudaGetLastError())
#define MT_CUBLAS_CHECK(call)                                                                \
  do {                                                                                       \
    cublasStatus_t mt_st_ = (call);                                                          \
    if (mt_st_ != CUBLAS_STATUS_SUCCESS) ::minitorch::cuda::throw_cublas_error(mt_st_, #call, __FILE__, __LINE__); \
  } while (0)

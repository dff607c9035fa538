// Argument checks shared by the collectives: one clear std::invalid_argument per bad argument.
#include "dist/checks.h"

#include <cstdint>
#include <stdexcept>

namespace minitorch::dist::detail {

void check_tensor(const Tensor& t, const char* op, bool reduction, const char* arg, Device device) {
  std::string problem;
  if (!t.defined())
    problem = "an undefined tensor";
  else if (t.device() != device && !(device.is_cpu() && t.device().is_host_memory()))  // MPI: any host memory
    problem = "a tensor on " + t.device().str() +
              (device.is_cpu() ? " (the MPI backend takes tensors in host memory: cpu or sim)" : " (the NCCL backend takes tensors on its GPU)");
  else if (!t.is_contiguous())
    problem = "a non-contiguous view (call .contiguous() first)";
  else if (reduction && t.dtype() != DType::f32 && !is_half(t.dtype()))
    problem = std::string("dtype ") + dtype_name(t.dtype()) + " (reductions take f32, bf16 or f16)";
  if (problem.empty()) return;
  const std::string where = std::string(op) + ": " + (arg ? std::string(arg) + ": " : std::string());
  throw std::invalid_argument(where + "expected a contiguous " + (device.is_cpu() ? "CPU" : device.str()) +
                              " tensor, got " + problem +
                              (t.defined() ? ": " + t.describe() : std::string()));
}

void check_peer(int peer, int size, const char* op, const char* what) {
  if (peer < 0 || peer >= size)
    throw std::invalid_argument(std::string(op) + ": " + what + " " + std::to_string(peer) +
                                " is not a rank of this group of " + std::to_string(size));
}

void check_p2p(int peer, int tag, int rank, int size, const char* op, const char* what) {
  check_peer(peer, size, op, what);
  if (peer == rank)
    throw std::invalid_argument(std::string(op) + ": rank " + std::to_string(rank) + " cannot " +
                                (std::string(what) == "source" ? "receive from" : "send to") + " itself");
  if (tag < 0 || tag > 32767)
    throw std::invalid_argument(std::string(op) + ": tag " + std::to_string(tag) + " is not in [0, 32767]");
}

bool overlaps(const Tensor& a, const Tensor& b) {
  if (a.numel() == 0 || b.numel() == 0) return false;
  // Both are contiguous (checked before): each is one byte range.
  const auto a0 = reinterpret_cast<std::uintptr_t>(a.raw_data()), b0 = reinterpret_cast<std::uintptr_t>(b.raw_data());
  return a0 < b0 + b.nbytes() && b0 < a0 + a.nbytes();
}

}  // namespace minitorch::dist::detail

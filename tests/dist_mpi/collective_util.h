#pragma once
// Helpers the multi-rank suites share: rank-dependent data patterns every rank can recompute, the
// chunk split written out independently of dist::chunk_size, bit-exact comparison, and a watchdog for
// tests of things that used to hang.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dist/process_group.h"

namespace mt_mpi {

namespace dist = minitorch::dist;
using minitorch::Tensor;

inline constexpr dist::Algorithm kAlgorithms[] = {dist::Algorithm::mpi, dist::Algorithm::ring};

/// Small integers, exact in f32 (and bf16) and in any summation order.
inline float int_pattern(int rank, std::int64_t i) { return static_cast<float>((rank * 7 + i * 3) % 17 - 8); }

/// Pseudo-random floats in [-1, 1): sums of these depend on the summation order.
inline float float_pattern(int rank, std::int64_t i) {
  std::uint64_t h = static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(rank + 1) * 0xBF58476D1CE4E5B9ull;
  h ^= h >> 31;
  h *= 0x94D049BB133111EBull;
  h ^= h >> 29;
  return static_cast<float>(h >> 40) / static_cast<float>(1 << 24) * 2.f - 1.f;
}

using Pattern = float (*)(int, std::int64_t);

/// (numel) f32: element k is p(rank, first + k).
inline Tensor filled(Pattern p, int rank, std::int64_t numel, std::int64_t first = 0) {
  std::vector<float> v(static_cast<std::size_t>(numel));
  for (std::int64_t i = 0; i < numel; ++i) v[static_cast<std::size_t>(i)] = p(rank, first + i);
  return Tensor::from_vector(v, {numel});
}

/// The element-wise sum over ranks 0..N−1, in rank order.
inline std::vector<float> direct_sum(Pattern p, int world, std::int64_t numel) {
  std::vector<float> s(static_cast<std::size_t>(numel), 0.f);
  for (int r = 0; r < world; ++r)
    for (std::int64_t i = 0; i < numel; ++i) s[static_cast<std::size_t>(i)] += p(r, i);
  return s;
}

/// Chunk arithmetic written out again here, independently of dist::chunk_size.
inline std::int64_t my_chunk(std::int64_t numel, int n, int r) { return numel / n + (r < numel % n ? 1 : 0); }
inline std::int64_t my_offset(std::int64_t numel, int n, int r) {
  std::int64_t off = 0;
  for (int q = 0; q < r; ++q) off += my_chunk(numel, n, q);
  return off;
}

/// Sets a group's algorithm for one test and resets its stats; restores mpi afterwards.
struct UseAlgorithm {
  dist::ProcessGroup& g;
  UseAlgorithm(dist::ProcessGroup& group, dist::Algorithm a) : g(group) {
    g.set_algorithm(a);
    g.stats().reset();
  }
  ~UseAlgorithm() {
    g.set_algorithm(dist::Algorithm::mpi);
    g.stats().reset();
  }
};

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  // An empty vector's data() may be null, and memcmp on null is undefined even for 0 bytes (UBSan).
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

inline std::string tag(dist::Algorithm a, std::int64_t numel) {
  return std::string(dist::algorithm_name(a)) + " numel " + std::to_string(numel);
}

/// Ends this process (exit code 3, with a message) if the scope it guards lasts longer than `seconds`:
/// a test of something that used to deadlock fails in seconds instead of at ctest's timeout (mpirun
/// then takes the other ranks down). Uses no MPI, so it may fire while the main thread sits in MPI.
class Watchdog {
 public:
  Watchdog(std::string what, int seconds) : what_(std::move(what)) {
    thread_ = std::thread([this, seconds] {
      std::unique_lock<std::mutex> lock(m_);
      if (cv_.wait_for(lock, std::chrono::seconds(seconds), [this] { return done_; })) return;
      std::fprintf(stderr, "watchdog: %s still running after %d s (deadlock?)\n", what_.c_str(), seconds);
      std::fflush(stderr);
      std::_Exit(3);
    });
  }
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(m_);
      done_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  std::string what_;
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace mt_mpi

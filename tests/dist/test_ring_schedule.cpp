// Lesson 05 — the arithmetic under the collectives, in one process: the chunk split, the ring-volume
// formulas, and the hand-written ring itself run on N threads that pass messages through mailboxes
// (no MPI at all), so the schedule can be checked for every N, not just the 2 and 4 of the mpirun suite.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "dist/process_group.h"
#include "dist/ring.h"
#include "test_util.h"

namespace dist = minitorch::dist;
namespace ring = minitorch::dist::ring;

TEST(L05_CollectivesChunks, FirstRanksGetTheExtraElements) {
  // 10 over 4: 3 3 2 2 at 0 3 6 8.
  const std::int64_t sizes[] = {3, 3, 2, 2}, offsets[] = {0, 3, 6, 8};
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(dist::chunk_size(10, 4, r), sizes[r]);
    EXPECT_EQ(dist::chunk_offset(10, 4, r), offsets[r]);
  }
  // Fewer elements than ranks: the last ranks own nothing.
  EXPECT_EQ(dist::chunk_size(1, 4, 0), 1);
  EXPECT_EQ(dist::chunk_size(1, 4, 3), 0);
  EXPECT_EQ(dist::chunk_offset(1, 4, 3), 1);
  EXPECT_EQ(dist::chunk_size(0, 3, 1), 0);
}

TEST(L05_CollectivesChunks, ChunksTileTheBufferForAnySize) {
  for (int n = 1; n <= 9; ++n)
    for (std::int64_t numel : {0, 1, 2, 7, 8, 9, 100, 1000003}) {
      std::int64_t next = 0, largest = 0, smallest = numel;
      for (int r = 0; r < n; ++r) {
        EXPECT_EQ(dist::chunk_offset(numel, n, r), next) << numel << " over " << n;
        next += dist::chunk_size(numel, n, r);
        largest = std::max(largest, dist::chunk_size(numel, n, r));
        smallest = std::min(smallest, dist::chunk_size(numel, n, r));
      }
      EXPECT_EQ(next, numel);
      EXPECT_LE(largest - smallest, 1);
      EXPECT_EQ(largest, dist::chunk_size(numel, n, 0));
    }
}

TEST(L05_CollectivesChunks, BadArgumentsAreRejected) {
  EXPECT_THROW(dist::chunk_size(10, 0, 0), std::invalid_argument);
  EXPECT_THROW(dist::chunk_size(10, 4, 4), std::invalid_argument);
  EXPECT_THROW(dist::chunk_offset(-1, 4, 0), std::invalid_argument);
  EXPECT_THROW(dist::broadcast_volume(10, 4, 0, 5), std::invalid_argument);
  EXPECT_EQ(dist::parse_algorithm("ring"), dist::Algorithm::ring);
  EXPECT_EQ(dist::parse_algorithm("mpi"), dist::Algorithm::mpi);
  EXPECT_TRUE(mt_test::contains(mt_test::error_of([] { dist::parse_algorithm("tree"); }), "expected mpi or ring"));
  EXPECT_STREQ(dist::algorithm_name(dist::Algorithm::ring), "ring");
}

TEST(L05_CollectivesChunks, VolumesAreTheRingFormula) {
  // N | numel: (N−1)/N·numel per phase, twice for all-reduce.
  for (int n : {1, 2, 4, 8})
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(dist::reduce_scatter_volume(800, n, r), 800 * (n - 1) / n);
      EXPECT_EQ(dist::all_gather_volume(800, n, r), 800 * (n - 1) / n);
      EXPECT_EQ(dist::all_reduce_volume(800, n, r), 2 * 800 * (n - 1) / n);
    }
  // 10 over 4 (chunks 3 3 2 2): rank 1 sends all but its 3 in reduce-scatter, all but rank 2's 2 in
  // all-gather; rank 3 sends all but its 2, then all but rank 0's 3.
  EXPECT_EQ(dist::reduce_scatter_volume(10, 4, 1), 7);
  EXPECT_EQ(dist::all_gather_volume(10, 4, 1), 8);
  EXPECT_EQ(dist::reduce_scatter_volume(10, 4, 3), 8);
  EXPECT_EQ(dist::all_gather_volume(10, 4, 3), 7);
  // Broadcast: a chain from the root; the rank before the root sends nothing.
  EXPECT_EQ(dist::broadcast_volume(10, 4, 2, 2), 10);
  EXPECT_EQ(dist::broadcast_volume(10, 4, 1, 2), 0);
  EXPECT_EQ(dist::broadcast_volume(10, 1, 0, 0), 0);
}

namespace {

/// N ranks as threads; rank r's inbox holds what its left neighbour sent. Sends never block.
struct ThreadRing {
  struct Inbox {
    std::mutex m;
    std::condition_variable cv;
    std::deque<std::vector<float>> messages;
  };
  explicit ThreadRing(int n) : inboxes(static_cast<std::size_t>(n)), sent(static_cast<std::size_t>(n), 0) {}
  std::vector<Inbox> inboxes;
  std::vector<std::int64_t> sent;  // elements each rank sent

  ring::Shift shift_for(int rank) {
    const int n = static_cast<int>(inboxes.size());
    return [this, rank, n](const float* send, std::int64_t send_n, float* recv, std::int64_t recv_n) {
      Inbox& right = inboxes[static_cast<std::size_t>((rank + 1) % n)];
      {
        std::lock_guard<std::mutex> lock(right.m);
        right.messages.emplace_back(send, send + send_n);
      }
      right.cv.notify_one();
      sent[static_cast<std::size_t>(rank)] += send_n;
      Inbox& mine = inboxes[static_cast<std::size_t>(rank)];
      std::unique_lock<std::mutex> lock(mine.m);
      mine.cv.wait(lock, [&] { return !mine.messages.empty(); });
      std::vector<float> msg = std::move(mine.messages.front());
      mine.messages.pop_front();
      if (static_cast<std::int64_t>(msg.size()) != recv_n)
        throw std::logic_error("ring: rank " + std::to_string(rank) + " was sent " + std::to_string(msg.size()) +
                               " elements by its left neighbour but receives " + std::to_string(recv_n) +
                               " (both sides of a step must move the same chunk)");
      if (recv_n) std::memcpy(recv, msg.data(), msg.size() * sizeof(float));
    };
  }

  /// Runs fn(rank, shift) on N threads; the first exception a rank throws (a lab stub's NotImplemented)
  /// is rethrown here, after every thread has ended, so that the test fails instead of the process.
  template <typename F>
  void run(F fn) {
    std::vector<std::thread> threads;
    std::vector<std::exception_ptr> errors(inboxes.size());
    for (int r = 0; r < static_cast<int>(inboxes.size()); ++r)
      threads.emplace_back([&, r] {
        try {
          fn(r, shift_for(r));
        } catch (...) {
          errors[static_cast<std::size_t>(r)] = std::current_exception();
        }
      });
    for (auto& t : threads) t.join();
    for (auto& e : errors)
      if (e) std::rethrow_exception(e);
  }
};

float value(int rank, std::int64_t i) { return static_cast<float>((rank * 5 + i * 11) % 23 - 11); }

/// A rank's buffer inside guard zones: `n` elements between kGuard sentinels on either side, so that a wrong
/// ring writing past its buffer (by up to kGuard elements) is reported as such by the test, not left to
/// corrupt the heap and crash the binary.
class Guarded {
 public:
  static constexpr std::int64_t kGuard = 256;  // more than any chunk these tests use (97 elements at most)
  Guarded(std::int64_t n, float fill) : n_(n), block_(static_cast<std::size_t>(n + 2 * kGuard), sentinel()) {
    std::fill(data(), data() + n, fill);
  }
  float* data() { return block_.data() + kGuard; }
  const float* data() const { return block_.data() + kGuard; }
  float& operator[](std::int64_t i) { return data()[i]; }
  float operator[](std::int64_t i) const { return data()[i]; }
  std::int64_t size() const { return n_; }
  /// "" or what was written outside: "wrote outside its 24 elements: at index 24 (1 past the end), ...".
  std::string overruns() const {
    std::vector<std::int64_t> bad;
    for (std::int64_t i = -kGuard; i < n_ + kGuard; ++i)
      if ((i < 0 || i >= n_) && std::bit_cast<std::uint32_t>(block_[static_cast<std::size_t>(i + kGuard)]) != kSentinelBits)
        bad.push_back(i);
    if (bad.empty()) return "";
    std::string out = "wrote outside its " + std::to_string(n_) + " elements (" + std::to_string(bad.size()) +
                      " elements written out of bounds), at index";
    for (std::size_t k = 0; k < std::min<std::size_t>(bad.size(), 3); ++k) out += " " + std::to_string(bad[k]);
    return out + (bad.size() > 3 ? " ..." : "");
  }

 private:
  static constexpr std::uint32_t kSentinelBits = 0x7fc0dead;  // a NaN no arithmetic produces
  static float sentinel() { return std::bit_cast<float>(kSentinelBits); }
  std::int64_t n_;
  std::vector<float> block_;
};

/// The chunk element `i` of `numel` elements over `n` ranks belongs to.
int chunk_of(std::int64_t numel, int n, std::int64_t i) {
  for (int r = 0; r < n; ++r)
    if (i < dist::chunk_offset(numel, n, r) + dist::chunk_size(numel, n, r)) return r;
  return -1;
}

/// A test's failures, at most kShown of them printed: a wrong ring fails in every case and on every rank, and a
/// student needs the first few whole, then how many more (not hundreds of lines).
class FailureCap {
 public:
  static constexpr int kShown = 4;
  ~FailureCap() {
    if (hidden_ > 0) ADD_FAILURE() << hidden_ << " more failures like these, not shown";
  }
  void check(bool ok, const std::string& message) {
    if (ok) return;
    if (shown_ < kShown) {
      ++shown_;
      ADD_FAILURE() << message;
    } else {
      ++hidden_;
    }
  }
  /// What a rank sent against the ring formula (the byte accounting records the formula).
  void sent(const std::string& where, std::int64_t elements, std::int64_t formula) {
    check(elements == formula, where + ": sent " + std::to_string(elements) + " elements, the ring formula says " +
                                   std::to_string(formula));
  }
  /// `message` (from wrong_elements or Guarded::overruns) is a failure unless empty.
  void empty(const std::string& message, const std::string& where = "") {
    check(message.empty(), where + message);
  }

 private:
  int shown_ = 0, hidden_ = 0;
};

/// Compares `count` elements of rank `rank`'s buffer, from `first`, with `want(i)`: "" when all match, else one
/// message a student can act on — N, numel, rank, which chunk, the first three wrong elements with expected
/// and actual value, and how many in all (a wrong ring gets a few lines per case, not one per element).
/// `base`: the index in the whole buffer of got[0] (a chunk-sized output), for the message.
std::string wrong_elements(const char* what, int n, std::int64_t numel, int rank, std::int64_t first, std::int64_t count,
                           const float* got, const std::function<float(std::int64_t)>& want, std::int64_t base = 0) {
  std::int64_t wrong = 0;
  std::string shown;
  for (std::int64_t i = first; i < first + count; ++i) {
    const float expected = want(i), actual = got[i];
    if (expected == actual || (std::isnan(expected) && std::isnan(actual))) continue;
    if (++wrong <= 3) {
      std::ostringstream one;
      one << "; element " << base + i << " (chunk " << chunk_of(numel, n, base + i) << "): expected " << expected << ", got " << actual;
      shown += one.str();
    }
  }
  if (wrong == 0) return "";
  return std::string(what) + " with N=" + std::to_string(n) + " ranks, numel " + std::to_string(numel) + ": rank " +
         std::to_string(rank) + " has " + std::to_string(wrong) + " of " + std::to_string(count) + " elements wrong in [" +
         std::to_string(base + first) + ", " + std::to_string(base + first + count) + ")" + shown + (wrong > 3 ? "; ..." : "");
}

}  // namespace

TEST(L05_T3_Ring, AllReduceOnThreadsForAnyRankCount) {
  FailureCap cap;
  for (int n : {1, 2, 3, 4, 5, 7})
    for (std::int64_t numel : {std::int64_t{0}, std::int64_t{1}, std::int64_t{n - 1}, std::int64_t{7}, std::int64_t{1001}}) {
      ThreadRing net(n);
      std::vector<Guarded> data;
      for (int r = 0; r < n; ++r) {
        data.emplace_back(numel, 0.f);
        for (std::int64_t i = 0; i < numel; ++i) data.back()[i] = value(r, i);
      }
      net.run([&](int r, const ring::Shift& shift) {
        ring::all_reduce(data[static_cast<std::size_t>(r)].data(), numel, r, n, shift);
      });
      auto sum = [&](std::int64_t i) {
        float s = 0;
        for (int q = 0; q < n; ++q) s += value(q, i);
        return s;
      };
      const std::string where = "all-reduce with N=" + std::to_string(n) + " ranks, numel " + std::to_string(numel) + ": rank ";
      for (int r = 0; r < n; ++r) {
        const Guarded& d = data[static_cast<std::size_t>(r)];
        const std::string bounds = d.overruns();
        cap.empty(bounds, where + std::to_string(r) + " ");
        cap.empty(wrong_elements("all-reduce", n, numel, r, 0, numel, d.data(), sum));
        // What the ring really sent is what the byte accounting records.
        cap.sent(where + std::to_string(r), net.sent[static_cast<std::size_t>(r)], dist::all_reduce_volume(numel, n, r));
      }
    }
}

TEST(L05_T1_Ring, ReduceScatterOnThreads) {
  FailureCap cap;
  for (int n : {2, 3, 4, 6})
    for (std::int64_t numel : {std::int64_t{1}, std::int64_t{5}, std::int64_t{97}}) {
      // Reduce-scatter: rank r's chunk r holds the sum.
      ThreadRing rs_net(n);
      std::vector<Guarded> data;
      for (int r = 0; r < n; ++r) {
        data.emplace_back(numel, 0.f);
        for (std::int64_t i = 0; i < numel; ++i) data.back()[i] = value(r, i);
      }
      rs_net.run([&](int r, const ring::Shift& shift) {
        ring::reduce_scatter(data[static_cast<std::size_t>(r)].data(), numel, r, n, shift);
      });
      auto sum = [&](std::int64_t i) {
        float s = 0;
        for (int q = 0; q < n; ++q) s += value(q, i);
        return s;
      };
      const std::string where = "reduce-scatter with N=" + std::to_string(n) + " ranks, numel " + std::to_string(numel) + ": rank ";
      for (int r = 0; r < n; ++r) {
        const Guarded& d = data[static_cast<std::size_t>(r)];
        const std::string bounds = d.overruns();
        cap.empty(bounds, where + std::to_string(r) + " ");
        cap.empty(wrong_elements("reduce-scatter (its own chunk)", n, numel, r, dist::chunk_offset(numel, n, r),
                                    dist::chunk_size(numel, n, r), d.data(), sum));
        cap.sent(where + std::to_string(r), rs_net.sent[static_cast<std::size_t>(r)], dist::reduce_scatter_volume(numel, n, r));
      }
    }
}

TEST(L05_T2_Ring, AllGatherOnThreads) {
  FailureCap cap;
  for (int n : {2, 3, 4, 6})
    for (std::int64_t numel : {std::int64_t{1}, std::int64_t{5}, std::int64_t{97}}) {
      // All-gather: each rank starts with only its own chunk (the rest NaN) and ends with all.
      ThreadRing ag_net(n);
      std::vector<Guarded> parts;
      for (int r = 0; r < n; ++r) {
        parts.emplace_back(numel, NAN);
        for (std::int64_t i = dist::chunk_offset(numel, n, r); i < dist::chunk_offset(numel, n, r) + dist::chunk_size(numel, n, r); ++i)
          parts.back()[i] = static_cast<float>(i);
      }
      ag_net.run([&](int r, const ring::Shift& shift) {
        ring::all_gather(parts[static_cast<std::size_t>(r)].data(), numel, r, n, shift);
      });
      const std::string where = "all-gather with N=" + std::to_string(n) + " ranks, numel " + std::to_string(numel) + ": rank ";
      for (int r = 0; r < n; ++r) {
        const Guarded& p = parts[static_cast<std::size_t>(r)];
        const std::string bounds = p.overruns();
        cap.empty(bounds, where + std::to_string(r) + " ");
        cap.empty(wrong_elements("all-gather", n, numel, r, 0, numel, p.data(),
                                    [](std::int64_t i) { return static_cast<float>(i); }));
        cap.sent(where + std::to_string(r), ag_net.sent[static_cast<std::size_t>(r)], dist::all_gather_volume(numel, n, r));
      }
    }
}

TEST(L05_RingSchedule, EveryChunkVisitsEveryRankOnce) {
  // Reduce-scatter: over N−1 steps rank r sends every chunk but its own, and what it receives at
  // step s is what its left neighbour sends at step s.
  for (int n : {2, 3, 4, 5}) {
    for (int r = 0; r < n; ++r) {
      std::vector<int> sent_count(static_cast<std::size_t>(n), 0);
      for (int s = 0; s < n - 1; ++s) {
        ++sent_count[static_cast<std::size_t>(ring::reduce_scatter_send_chunk(r, n, s))];
        EXPECT_EQ(ring::reduce_scatter_recv_chunk(r, n, s), ring::reduce_scatter_send_chunk((r + n - 1) % n, n, s));
        EXPECT_EQ(ring::all_gather_recv_chunk(r, n, s), ring::all_gather_send_chunk((r + n - 1) % n, n, s));
      }
      for (int c = 0; c < n; ++c) EXPECT_EQ(sent_count[static_cast<std::size_t>(c)], c == r ? 0 : 1);
      EXPECT_EQ(ring::reduce_scatter_recv_chunk(r, n, n - 2), r);  // the last chunk it completes is its own
    }
  }
}

TEST(L05_T1_Ring, ReduceScatterIntoAChunkLeavesTheInputAlone) {
  FailureCap cap;
  // The out-of-place ring (what reduce_scatter_into runs): the input is read only, the output is one
  // chunk, and the sums are bit for bit those of the in-place ring (same order: received + own).
  for (int n : {1, 2, 3, 4, 5})
    for (std::int64_t numel : {std::int64_t{0}, std::int64_t{1}, std::int64_t{n + 1}, std::int64_t{97}}) {
      auto noisy = [](int r, std::int64_t i) { return std::sin(static_cast<float>(r * 131 + i)) * 1e3f; };
      std::vector<Guarded> input, in_place, output;
      for (int r = 0; r < n; ++r) {
        input.emplace_back(numel, 0.f);
        in_place.emplace_back(numel, 0.f);
        for (std::int64_t i = 0; i < numel; ++i) input.back()[i] = in_place.back()[i] = noisy(r, i);
        output.emplace_back(dist::chunk_size(numel, n, r), NAN);  // exactly one chunk, guarded either side
      }
      ThreadRing out_net(n), in_net(n);
      out_net.run([&](int r, const ring::Shift& shift) {
        ring::reduce_scatter(input[static_cast<std::size_t>(r)].data(), output[static_cast<std::size_t>(r)].data(), numel, r, n, shift);
      });
      in_net.run([&](int r, const ring::Shift& shift) {
        ring::reduce_scatter(in_place[static_cast<std::size_t>(r)].data(), numel, r, n, shift);
      });
      const std::string where = "reduce-scatter into a chunk with N=" + std::to_string(n) + " ranks, numel " + std::to_string(numel) + ": rank ";
      for (int r = 0; r < n; ++r) {
        const auto R = static_cast<std::size_t>(r);
        const std::int64_t off = dist::chunk_offset(numel, n, r), m = dist::chunk_size(numel, n, r);
        const std::string out_bounds = output[R].overruns(), in_bounds = in_place[R].overruns();
        cap.empty(out_bounds, where + std::to_string(r) + ": its output chunk: ");
        cap.empty(in_bounds, where + std::to_string(r) + ": the in-place buffer: ");
        cap.empty(wrong_elements("the input (read only) after reduce-scatter into a chunk", n, numel, r, 0, numel,
                                    input[R].data(), [&](std::int64_t i) { return noisy(r, i); }));
        // The output is bit for bit the in-place ring's own chunk, and in place only that chunk changes.
        cap.empty(wrong_elements("reduce-scatter into a chunk against the in-place ring", n, numel, r, 0, m,
                                    output[R].data(), [&](std::int64_t i) { return in_place[R][off + i]; }, off));
        int changed = 0;
        for (std::int64_t i = 0; i < numel; ++i) changed += (i < off || i >= off + m) && in_place[R][i] != noisy(r, i);
        cap.check(changed == 0, where + std::to_string(r) + ": " + std::to_string(changed) +
                                    " elements of other ranks' chunks changed in place");
        cap.sent(where + std::to_string(r), out_net.sent[R], dist::reduce_scatter_volume(numel, n, r));
        // And the sum itself, in ring order: starting at the owner's right neighbour.
        cap.empty(wrong_elements("reduce-scatter into a chunk, summed in ring order", n, numel, r, 0, m, output[R].data(),
                                    [&](std::int64_t i) {
                                      float acc = noisy((r + 1) % n, off + i);
                                      for (int k = 2; k <= n; ++k) acc = acc + noisy((r + k) % n, off + i);
                                      return acc;
                                    },
                                    off));
      }
    }
}

// Lesson 05 — the arithmetic under the collectives, in one process: the chunk split, the ring-volume
// formulas, and the hand-written ring itself run on N threads that pass messages through mailboxes
// (no MPI at all), so the schedule can be checked for every N, not just the 2 and 4 of the mpirun suite.
#include <gtest/gtest.h>

#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
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
      if (static_cast<std::int64_t>(msg.size()) != recv_n) throw std::logic_error("ring: message of the wrong size");
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

}  // namespace

TEST(L05_T3_Ring, AllReduceOnThreadsForAnyRankCount) {
  for (int n : {1, 2, 3, 4, 5, 7})
    for (std::int64_t numel : {std::int64_t{0}, std::int64_t{1}, std::int64_t{n - 1}, std::int64_t{7}, std::int64_t{1001}}) {
      ThreadRing net(n);
      std::vector<std::vector<float>> data(static_cast<std::size_t>(n));
      for (int r = 0; r < n; ++r)
        for (std::int64_t i = 0; i < numel; ++i) data[static_cast<std::size_t>(r)].push_back(value(r, i));
      net.run([&](int r, const ring::Shift& shift) {
        ring::all_reduce(data[static_cast<std::size_t>(r)].data(), numel, r, n, shift);
      });
      for (int r = 0; r < n; ++r) {
        int wrong = 0;
        for (std::int64_t i = 0; i < numel; ++i) {
          float sum = 0;
          for (int q = 0; q < n; ++q) sum += value(q, i);
          wrong += data[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)] != sum;
        }
        EXPECT_EQ(wrong, 0) << "rank " << r << " of " << n << ", numel " << numel;
        // What the ring really sent is what the byte accounting records.
        EXPECT_EQ(net.sent[static_cast<std::size_t>(r)], dist::all_reduce_volume(numel, n, r)) << n << " " << numel;
      }
    }
}

TEST(L05_T1_Ring, ReduceScatterOnThreads) {
  for (int n : {2, 3, 4, 6})
    for (std::int64_t numel : {std::int64_t{1}, std::int64_t{5}, std::int64_t{97}}) {
      // Reduce-scatter: rank r's chunk r holds the sum.
      ThreadRing rs_net(n);
      std::vector<std::vector<float>> data(static_cast<std::size_t>(n));
      for (int r = 0; r < n; ++r)
        for (std::int64_t i = 0; i < numel; ++i) data[static_cast<std::size_t>(r)].push_back(value(r, i));
      rs_net.run([&](int r, const ring::Shift& shift) {
        ring::reduce_scatter(data[static_cast<std::size_t>(r)].data(), numel, r, n, shift);
      });
      for (int r = 0; r < n; ++r) {
        const std::int64_t off = dist::chunk_offset(numel, n, r);
        for (std::int64_t i = off; i < off + dist::chunk_size(numel, n, r); ++i) {
          float sum = 0;
          for (int q = 0; q < n; ++q) sum += value(q, i);
          EXPECT_EQ(data[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)], sum);
        }
        EXPECT_EQ(rs_net.sent[static_cast<std::size_t>(r)], dist::reduce_scatter_volume(numel, n, r));
      }
    }
}

TEST(L05_T2_Ring, AllGatherOnThreads) {
  for (int n : {2, 3, 4, 6})
    for (std::int64_t numel : {std::int64_t{1}, std::int64_t{5}, std::int64_t{97}}) {
      // All-gather: each rank starts with only its own chunk (the rest NaN) and ends with all.
      ThreadRing ag_net(n);
      std::vector<std::vector<float>> parts(static_cast<std::size_t>(n), std::vector<float>(static_cast<std::size_t>(numel), NAN));
      for (int r = 0; r < n; ++r)
        for (std::int64_t i = dist::chunk_offset(numel, n, r); i < dist::chunk_offset(numel, n, r) + dist::chunk_size(numel, n, r); ++i)
          parts[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)] = static_cast<float>(i);
      ag_net.run([&](int r, const ring::Shift& shift) {
        ring::all_gather(parts[static_cast<std::size_t>(r)].data(), numel, r, n, shift);
      });
      for (int r = 0; r < n; ++r) {
        for (std::int64_t i = 0; i < numel; ++i) EXPECT_EQ(parts[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)], static_cast<float>(i));
        EXPECT_EQ(ag_net.sent[static_cast<std::size_t>(r)], dist::all_gather_volume(numel, n, r));
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
  // The out-of-place ring (what reduce_scatter_into runs): the input is read only, the output is one
  // chunk, and the sums are bit for bit those of the in-place ring (same order: received + own).
  for (int n : {1, 2, 3, 4, 5})
    for (std::int64_t numel : {std::int64_t{0}, std::int64_t{1}, std::int64_t{n + 1}, std::int64_t{97}}) {
      auto noisy = [](int r, std::int64_t i) { return std::sin(static_cast<float>(r * 131 + i)) * 1e3f; };
      std::vector<std::vector<float>> input(static_cast<std::size_t>(n)), in_place(static_cast<std::size_t>(n)),
          output(static_cast<std::size_t>(n));
      for (int r = 0; r < n; ++r) {
        for (std::int64_t i = 0; i < numel; ++i) input[static_cast<std::size_t>(r)].push_back(noisy(r, i));
        in_place[static_cast<std::size_t>(r)] = input[static_cast<std::size_t>(r)];
        output[static_cast<std::size_t>(r)].assign(static_cast<std::size_t>(dist::chunk_size(numel, n, r)), NAN);
      }
      const auto original = input;
      ThreadRing out_net(n), in_net(n);
      out_net.run([&](int r, const ring::Shift& shift) {
        ring::reduce_scatter(input[static_cast<std::size_t>(r)].data(), output[static_cast<std::size_t>(r)].data(), numel, r, n, shift);
      });
      in_net.run([&](int r, const ring::Shift& shift) {
        ring::reduce_scatter(in_place[static_cast<std::size_t>(r)].data(), numel, r, n, shift);
      });
      for (int r = 0; r < n; ++r) {
        const auto R = static_cast<std::size_t>(r);
        const std::int64_t off = dist::chunk_offset(numel, n, r), m = dist::chunk_size(numel, n, r);
        EXPECT_EQ(input[R], original[R]) << "input changed: rank " << r << " of " << n;
        // (m == 0: an empty chunk's data() may be null, and memcmp on null is undefined even for 0 bytes)
        EXPECT_TRUE(m == 0 || std::memcmp(output[R].data(), in_place[R].data() + off,
                                          static_cast<std::size_t>(m) * sizeof(float)) == 0)
            << "rank " << r << " of " << n << ", numel " << numel;
        // In place, only the rank's own chunk changes.
        int changed = 0;
        for (std::int64_t i = 0; i < numel; ++i)
          changed += (i < off || i >= off + m) && in_place[R][static_cast<std::size_t>(i)] != original[R][static_cast<std::size_t>(i)];
        EXPECT_EQ(changed, 0) << "rank " << r << " of " << n;
        EXPECT_EQ(out_net.sent[R], dist::reduce_scatter_volume(numel, n, r));
        // And the sum itself, in ring order: starting at the owner's right neighbour.
        for (std::int64_t i = off; i < off + m; ++i) {
          float acc = noisy((r + 1) % n, i);
          for (int k = 2; k <= n; ++k) acc = acc + noisy((r + k) % n, i);
          EXPECT_EQ(output[R][static_cast<std::size_t>(i - off)], acc) << "rank " << r << " of " << n << " element " << i;
        }
      }
    }
}

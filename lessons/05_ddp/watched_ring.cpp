// The ring collectives of dist/ring.h, run live on every rank and watched: which chunk each rank sends
// and receives at each step, the partial sums, and the bytes each rank's counter measured.
#include "watched_ring.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "minitorch/tensor.h"

using namespace minitorch;

namespace lesson05 {

namespace {
constexpr int kRingTag = 5;              // point-to-point tag of the watched ring's messages
constexpr std::int64_t kPerChunk = 2;    // the beats run on 2N floats: two per chunk

using ChunkOf = int (*)(int rank, int world, int step);  // ring.h's schedule: which chunk at which step

// Rank r's element i: (i+1)·10^r, so each decimal digit of a sum says which ranks are in it.
float value(int r, std::int64_t i) { return static_cast<float>(static_cast<double>(i + 1) * std::pow(10.0, r)); }

// "[ 5005  6006]": n values, each `width` wide.
std::string values(const float* v, std::int64_t n, int width) {
  std::string s = "[";
  char buf[32];
  for (std::int64_t i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof buf, " %*.0f", width, static_cast<double>(v[i]));
    s += buf;
  }
  return s + "]";
}

// Rank 0 prints every rank's steps of one phase: the chunk it sent right, the chunk that came from the
// left and, in the reduce-scatter (`adds`), the rank's own share added to it. Collective (gathers).
void print_steps(dist::ProcessGroup& world, const std::vector<RingStep>& seen, ChunkOf send_chunk, ChunkOf recv_chunk,
                 bool adds, int width) {
  const int N = world.size();
  std::vector<float> mine;  // per step: sent (kPerChunk), received (kPerChunk)
  for (const RingStep& s : seen) {
    mine.insert(mine.end(), s.sent.begin(), s.sent.end());
    mine.insert(mine.end(), s.received.begin(), s.received.end());
  }
  const std::vector<float> all = gather(world, mine);
  const std::size_t per_rank = mine.size();
  for (int step = 0; step < N - 1; ++step) {
    std::printf("step %d/%d\n", step + 1, N - 1);
    for (int r = 0; r < N; ++r) {
      const float* sent = &all[static_cast<std::size_t>(r) * per_rank + static_cast<std::size_t>(step) * 2 * kPerChunk];
      const float* got = sent + kPerChunk;
      const int sc = send_chunk(r, N, step), rc = recv_chunk(r, N, step);
      std::printf("  rank %d: sends chunk %d %s to rank %d | gets chunk %d %s", r, sc,
                  values(sent, kPerChunk, width).c_str(), (r + 1) % N, rc, values(got, kPerChunk, width).c_str());
      if (adds) {  // what ring::reduce_scatter computes next: received + own
        float own[kPerChunk], sum[kPerChunk];
        for (std::int64_t i = 0; i < kPerChunk; ++i) {
          own[i] = value(r, rc * kPerChunk + i);
          sum[i] = got[i] + own[i];
        }
        std::printf(" + own %s = %s", values(own, kPerChunk, width).c_str(), values(sum, kPerChunk, width).c_str());
      }
      std::printf("\n");
    }
  }
}
}  // namespace

std::vector<float> gather(dist::ProcessGroup& g, const std::vector<float>& mine) {
  dist::NoRecordScope bookkeeping(g);
  const auto k = static_cast<std::int64_t>(mine.size());
  return g.all_gather(Tensor::from_vector(mine, {k}), k * g.size()).to_vector();
}

dist::ring::Shift counted_shift(dist::ProcessGroup& g, std::vector<RingStep>* seen) {
  return [&g, seen](const float* send, std::int64_t send_n, float* recv, std::int64_t recv_n) {
    const int right = (g.rank() + 1) % g.size(), left = (g.rank() + g.size() - 1) % g.size();
    Tensor out = Tensor::from_vector(std::vector<float>(send, send + send_n), {send_n});  // (send_n)
    Tensor in = Tensor::zeros({recv_n});                                                   // (recv_n)
    auto receiving = g.irecv(in, left, kRingTag);
    auto sending = g.isend(out, right, kRingTag);  // g.stats() records send_n elements here
    receiving->wait();
    sending->wait();
    const float* got = in.data<float>();
    std::copy(got, got + recv_n, recv);
    if (seen) seen->push_back({std::vector<float>(send, send + send_n), std::vector<float>(got, got + recv_n)});
  };
}

/// What the three beats of the ring share: this rank's buffer and the bytes each phase sent.
struct Ring {
  int N = 0, rank = 0;
  std::int64_t numel = 0;      ///< (2N) floats per rank: chunk c = elements 2c, 2c+1
  std::string full_sum;        ///< "1111": every rank's digit in a complete sum
  int width = 0;               ///< the printed width of a value
  std::vector<float> data;     ///< (2N) this rank's buffer
  std::int64_t rs_bytes = 0, ag_bytes = 0, recorded = 0;  ///< sent by each phase; recorded by world.all_reduce
};

Ring ring_on(dist::ProcessGroup& world) {
  Ring r;
  r.N = world.size();
  r.rank = world.rank();
  r.numel = kPerChunk * r.N;
  char full_sum[32];
  std::snprintf(full_sum, sizeof full_sum, "%.0f", static_cast<double>((std::pow(10.0, r.N) - 1) / 9));  // "1111"
  r.full_sum = full_sum;
  r.width = static_cast<int>(std::to_string(r.numel).size() + r.full_sum.size() - 1);
  r.data.resize(static_cast<std::size_t>(r.numel));
  for (std::int64_t i = 0; i < r.numel; ++i) r.data[static_cast<std::size_t>(i)] = value(r.rank, i);
  return r;
}

void reduce_scatter_beat(lesson::Beats& beats, dist::ProcessGroup& world, Ring& r) {
  namespace ring = dist::ring;
  const int N = r.N, rank = r.rank, width = r.width;
  const std::int64_t numel = r.numel;
  std::vector<float>& data = r.data;
  std::vector<RingStep> seen;
  beats.beat("the ring, phase 1: reduce-scatter, step by step",
             "An all-reduce moves no more than it must when the ranks sit on a ring: rank r sends only to\n"
             "r+1 and receives only from r-1 (mod N). The buffer is cut into N chunks. At each of N-1 steps\n"
             "every rank sends one chunk's partial sum to the right and adds its own share to the chunk that\n"
             "arrives from the left; afterwards rank r holds chunk r summed over all ranks. This runs\n"
             "ring::reduce_scatter (dist/ring.h) on each rank, its sends going through world.isend.");
  std::printf("%d ranks, %lld floats each, chunk c = elements 2c and 2c+1. Rank r holds (i+1)*10^r, so each\n"
              "digit of a sum says which ranks are in it (%s = all %d):\n",
              N, static_cast<long long>(numel), r.full_sum.c_str(), N);
  for (int q = 0; q < N; ++q) {
    std::printf("  rank %d:", q);
    for (int c = 0; c < N; ++c) {
      const float own[kPerChunk] = {value(q, c * kPerChunk), value(q, c * kPerChunk + 1)};
      std::printf("  chunk %d %s", c, values(own, kPerChunk, width).c_str());
    }
    std::printf("\n");
  }
  const std::int64_t before_rs = world.stats().bytes;
  ring::reduce_scatter(data.data(), numel, rank, N, counted_shift(world, &seen));  // chunk `rank` is now the sum
  r.rs_bytes = world.stats().bytes - before_rs;
  print_steps(world, seen, ring::reduce_scatter_send_chunk, ring::reduce_scatter_recv_chunk, /*adds=*/true, width);
  const std::vector<float> all = gather(world, data);  // (N, 2N)
  std::printf("after %d steps rank r holds chunk r complete:", N - 1);
  for (int q = 0; q < N; ++q) {
    const float* own_chunk = &all[static_cast<std::size_t>(q * numel + q * kPerChunk)];  // rank q's chunk q
    std::printf("  rank %d chunk %d %s", q, q, values(own_chunk, kPerChunk, width).c_str());
  }
  std::printf("\n(the other chunks of each rank's buffer hold partial sums it no longer needs)\n");

}

void all_gather_beat(lesson::Beats& beats, dist::ProcessGroup& world, Ring& r) {
  namespace ring = dist::ring;
  const int N = r.N, rank = r.rank, width = r.width;
  const std::int64_t numel = r.numel;
  std::vector<float>& data = r.data;
  beats.beat("the ring, phase 2: all-gather, step by step",
             "Now every rank has one finished chunk and needs the others. In N-1 more steps each rank\n"
             "forwards the finished chunk it got last (its own first) to the right: nothing is added, the\n"
             "chunks just travel round the ring. Reduce-scatter + all-gather = all-reduce.");
  std::vector<RingStep> seen;
  const std::int64_t before_ag = world.stats().bytes;
  ring::all_gather(data.data(), numel, rank, N, counted_shift(world, &seen));  // every chunk is now the sum
  r.ag_bytes = world.stats().bytes - before_ag;
  print_steps(world, seen, ring::all_gather_send_chunk, ring::all_gather_recv_chunk, /*adds=*/false, width);
  const std::vector<float> all = gather(world, data);  // (N, 2N)
  int right = 0;  // ranks whose whole buffer is the element-wise sum
  for (int q0 = 0; q0 < N; ++q0) {
    bool ok = true;
    for (std::int64_t i = 0; i < numel; ++i) {
      float sum = 0;
      for (int q = 0; q < N; ++q) sum += value(q, i);
      ok = ok && all[static_cast<std::size_t>(q0 * numel + i)] == sum;
    }
    right += ok;
  }
  std::printf("every rank now holds %s: the sum on %d of %d ranks\n", values(all.data(), numel, width).c_str(), right, N);
  // ProcessGroup's all_reduce runs these same two functions when its algorithm is ring.
  Tensor t = Tensor::zeros({numel});  // (2N) this rank's original buffer again
  for (std::int64_t i = 0; i < numel; ++i) t.data<float>()[i] = value(rank, i);
  const dist::Algorithm was = world.algorithm();
  world.set_algorithm(dist::Algorithm::ring);
  const std::int64_t before_ar = world.stats().bytes;
  world.all_reduce(t);
  r.recorded = world.stats().bytes - before_ar;
  world.set_algorithm(was);
  const bool same = t.to_vector() == data;
  std::printf("world.all_reduce(t) with Algorithm::ring (dist/mpi_group.cpp calls ring::all_reduce): %s on rank 0\n",
              same ? "the same" : "DIFFERENT");

}

void bytes_beat(lesson::Beats& beats, dist::ProcessGroup& world, const Ring& r) {
  const int N = r.N;
  const std::int64_t numel = r.numel;
  beats.beat("bytes each rank sent: the counter against (N-1)/N * numel * 4 per phase",
             "Each step a rank sends one chunk, numel/N floats, and there are N-1 steps per phase: (N-1)/N of\n"
             "the buffer per phase, 2(N-1)/N in all, whatever N is. That is why the ring is bandwidth-optimal,\n"
             "and it is the volume world.stats() records for every all-reduce (process_group.h).");
  const std::int64_t rs_bytes = r.rs_bytes, ag_bytes = r.ag_bytes;
  const std::vector<float> counts =
      gather(world, {static_cast<float>(rs_bytes), static_cast<float>(ag_bytes), static_cast<float>(r.recorded)});
  std::printf("bytes sent, counted by world.stats() as each isend of the ring went out:\n");
  std::printf("rank   reduce-scatter   all-gather   all-reduce   recorded by world.all_reduce\n");
  bool all_equal = true;
  for (int q = 0; q < N; ++q) {
    const auto rs = static_cast<long long>(counts[static_cast<std::size_t>(3 * q)]);
    const auto ag = static_cast<long long>(counts[static_cast<std::size_t>(3 * q + 1)]);
    const auto rec = static_cast<long long>(counts[static_cast<std::size_t>(3 * q + 2)]);
    std::printf("%4d   %14lld   %10lld   %10lld   %28lld\n", q, rs, ag, rs + ag, rec);
    all_equal = all_equal && rs + ag == static_cast<long long>(rs_bytes + ag_bytes) && rec == rs + ag;
  }
  const std::int64_t phase = (N - 1) * numel * 4 / N, formula = 2 * (N - 1) * numel * 4 / N;
  std::printf("per phase: (N-1)/N * numel * 4 = %d/%d * %lld * 4 = %lld bytes\n", N - 1, N, static_cast<long long>(numel),
              static_cast<long long>(phase));
  std::printf("all-reduce: measured %lld bytes per rank%s\n", static_cast<long long>(rs_bytes + ag_bytes),
              all_equal ? " (every rank the same, and what world.all_reduce records)" : " on rank 0 (ranks DIFFER)");
  std::printf("formula 2*(%d-1)/%d * %lld * 4 = %lld bytes  %s\n", N, N, static_cast<long long>(numel),
              static_cast<long long>(formula), rs_bytes + ag_bytes == formula ? "(equal)" : "(DIFFERENT)");
}

void ring_beats(lesson::Beats& beats, dist::ProcessGroup& world) {
  Ring r = ring_on(world);
  reduce_scatter_beat(beats, world, r);
  all_gather_beat(beats, world, r);
  bytes_beat(beats, world, r);
}

}  // namespace lesson05

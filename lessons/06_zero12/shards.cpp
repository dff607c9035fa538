// Lesson 06's printouts: the partition every rank holds, one step's collectives from the event sink,
// the backward timeline, model-state bytes against the formulas, and the paper's Table 1.
#include "shards.h"

#include <algorithm>
#include <cstdio>

#include "minitorch/tensor.h"
#include "runtime/estimate.h"
#include "runtime/report.h"

using namespace minitorch;

namespace lesson06 {

namespace {
constexpr std::int64_t kLow = std::int64_t{1} << 23;  // a float holds every integer below 2^24 exactly

long long ll(std::int64_t v) { return static_cast<long long>(v); }


/// "transformer.h.3.mlp.c_fc.weight[0:16000]": piece k of rank r as rank 0 rebuilds it from numbers.
std::string piece_name(const zero::Partition& part, std::int64_t param, std::int64_t a, std::int64_t b) {
  return part.params()[static_cast<std::size_t>(param)].first + "[" + std::to_string(a) + ":" + std::to_string(b) + "]";
}

const char* stage_name(int stage) {
  static const char* names[] = {"DDP", "ZeRO-1", "ZeRO-2", "ZeRO-3"};
  return names[stage];
}
}  // namespace

std::vector<std::int64_t> gather(dist::ProcessGroup& g, const std::vector<std::int64_t>& mine) {
  dist::NoRecordScope bookkeeping(g);
  std::vector<float> halves;  // (2k) v / 2^23, v mod 2^23
  for (std::int64_t v : mine) {
    halves.push_back(static_cast<float>(v / kLow));
    halves.push_back(static_cast<float>(v % kLow));
  }
  const auto k = static_cast<std::int64_t>(halves.size());
  const std::vector<float> all = g.all_gather(Tensor::from_vector(halves, {k}), k * g.size()).to_vector();
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < all.size(); i += 2)
    out.push_back(static_cast<std::int64_t>(all[i]) * kLow + static_cast<std::int64_t>(all[i + 1]));
  return out;
}

// ---- the partition ----

void print_partition(dist::ProcessGroup& world, const zero::Partition& part) {
  const int N = world.size();
  const auto& buckets = part.buckets();
  std::printf("bucket   elements  padding   shard = elements/N   tensors (reverse order of use)\n");
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    const zero::ShardedBucket& k = buckets[b];
    std::printf("%6zu   %8lld  %7lld   %18lld   %2zu: %s ... %s\n", b, ll(k.numel), ll(k.params.padding()),
                ll(k.numel / N), k.members.size(), part.params()[k.members.front()].first.c_str(),
                part.params()[k.members.back()].first.c_str());
  }
  std::printf("psi = %lld, padding %lld: %lld elements in the flat buffers\n", ll(part.numel()), ll(part.padding()),
              ll(part.numel() + part.padding()));
  // Per bucket: shard begin, end, pieces, elements, first piece (param, a, b), last piece (param, a, b).
  constexpr std::size_t kPer = 10;
  std::vector<std::int64_t> mine;
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    std::vector<const zero::ShardPiece*> in;
    std::int64_t elements = 0;
    for (const zero::ShardPiece& p : part.pieces())
      if (p.bucket == b) in.push_back(&p), elements += p.range.size();
    const std::int64_t begin = buckets[b].shard_begin(part.rank(), N);
    mine.insert(mine.end(), {begin, begin + buckets[b].numel / N, static_cast<std::int64_t>(in.size()), elements});
    for (const zero::ShardPiece* p : {in.empty() ? nullptr : in.front(), in.empty() ? nullptr : in.back()})
      if (!p) mine.insert(mine.end(), {0, 0, 0});  // a shard of padding only (tiny buckets on many ranks)
      else mine.insert(mine.end(), {static_cast<std::int64_t>(p->param), p->param_offset, p->param_offset + p->range.size()});
  }
  const std::vector<std::int64_t> all = gather(world, mine);
  const std::size_t per_rank = mine.size();
  std::printf("\nrank r owns shard r of every bucket; its pieces are the parts of parameters inside it,\n"
              "named <param>[a:b] (a, b: offsets inside the flattened parameter):\n");
  std::vector<std::int64_t> owned(static_cast<std::size_t>(N), 0);
  for (std::size_t b = 0; b < buckets.size(); ++b)
    for (int r = 0; r < N; ++r) {
      const std::int64_t* v = &all[static_cast<std::size_t>(r) * per_rank + b * kPer];
      owned[static_cast<std::size_t>(r)] += v[3];
      std::printf("bucket %zu rank %d [%6lld, %6lld) %2lld piece%s: %s", b, r, ll(v[0]), ll(v[1]), ll(v[2]),
                  v[2] == 1 ? " " : "s", v[2] == 0 ? "(padding only)" : piece_name(part, v[4], v[5], v[6]).c_str());
      if (v[2] > 1) std::printf(" ... %s", piece_name(part, v[7], v[8], v[9]).c_str());
      std::printf("\n");
    }
  std::int64_t total = 0;
  std::printf("elements each rank's AdamW updates:");
  for (int r = 0; r < N; ++r) {
    std::printf(" rank %d %lld", r, ll(owned[static_cast<std::size_t>(r)]));
    total += owned[static_cast<std::size_t>(r)];
  }
  std::printf("\nsum over the ranks %lld %s psi %lld%s\n", ll(total), total == part.numel() ? "=" : "!=", ll(part.numel()),
              total == part.numel() ? ": every parameter element has exactly one owner" : " (DIFFERENT)");
}

// ---- one step's collectives ----

std::vector<events::Event> collectives(const std::vector<events::Event>& recorded) {
  std::vector<events::Event> out;
  const auto& ops = runtime::RunReport::kOps;  // the engine's "reduce_gradients" span is comm too, but no collective
  for (const events::Event& e : recorded)
    if (e.category == events::Category::comm && e.kind == events::Kind::begin &&
        std::find(ops.begin(), ops.end(), e.name) != ops.end())
      out.push_back(e);
  return out;
}

void print_step_traffic(dist::ProcessGroup& world, const zero::Partition& part,
                        const std::vector<events::Event>& recorded, double formula_elements) {
  const int N = world.size();
  std::vector<events::Event> comm = collectives(recorded);
  for (const events::Event& e : recorded)  // where the update happens: the engine's optimizer_step span
    if (e.category == events::Category::compute && e.name == "optimizer_step" && e.kind == events::Kind::begin)
      comm.insert(std::find_if(comm.begin(), comm.end(), [&](const events::Event& c) { return c.time_us >= e.time_us; }),
                  e);
  std::int64_t mine = 0;
  for (const zero::ShardPiece& p : part.pieces()) mine += p.range.size();
  std::printf("rank 0's collectives in this step, in the order it started them (its event sink):\n");
  std::printf("collective       of                           elements       bytes   ring: (N-1)/N * numel\n");
  std::size_t scattered = 0, gathered = 0;  // the k-th of each is bucket k
  std::int64_t grad_bytes = 0, other_bytes = 0;
  for (const events::Event& e : comm) {
    if (e.category == events::Category::compute) {
      std::printf("optimizer_step: the norm from one scalar, clip, AdamW on rank 0's %lld elements, gather:\n",
                  ll(mine));
      continue;
    }
    const bool rs = e.name == "reduce_scatter", ag = e.name == "all_gather";
    std::string of = "sum of g^2 (1 scalar)";
    std::int64_t numel = 0;
    if ((rs || ag) && (rs ? scattered : gathered) < part.buckets().size()) {
      const std::size_t b = rs ? scattered++ : gathered++;
      numel = part.buckets()[b].numel;
      of = "bucket " + std::to_string(b) + (rs ? " grads" : " params") + " (" + std::to_string(numel) + ")";
    }
    (rs || ag ? grad_bytes : other_bytes) += e.bytes;
    std::printf("%-15s  %-26s  %8lld  %10lld", e.name.c_str(), of.c_str(), ll(e.elements), ll(e.bytes));
    if (numel > 0) std::printf("   %d/%d * %lld = %lld", N - 1, N, ll(numel), ll((N - 1) * numel / N));
    std::printf("\n");
  }
  const std::vector<std::int64_t> all = gather(world, {grad_bytes, other_bytes});
  int same = 0;
  const auto formula = static_cast<std::int64_t>(formula_elements * 4);
  for (int r = 0; r < N; ++r) same += all[static_cast<std::size_t>(2 * r)] == formula;
  std::printf("reduce-scatters + all-gathers, per rank:");
  for (int r = 0; r < N; ++r) std::printf(" rank %d %lld", r, ll(all[static_cast<std::size_t>(2 * r)]));
  std::printf(" bytes (the norm's scalar: %lld bytes on rank 0)\n", ll(other_bytes));
  std::printf("measured %lld bytes per rank on %d of %d ranks\n", ll(grad_bytes), same, N);
  std::printf("formula %.0f elements * 4 = %lld bytes  %s\n", formula_elements, ll(formula),
              same == N ? "(equal)" : "(DIFFERENT)");
}

void print_backward_timeline(const std::vector<events::Event>& recorded) {
  double t0 = -1;
  std::uint64_t backward_id = 0;
  std::size_t scattered = 0;
  std::printf("rank 0, ms after its backward began:\n");
  for (const events::Event& e : recorded) {
    const bool engine_backward = e.category == events::Category::compute && e.name == "backward" && e.scope.empty();
    if (engine_backward && e.kind == events::Kind::begin && t0 < 0) {
      t0 = e.time_us, backward_id = e.id;
      std::printf("%8.2f  backward starts at the loss\n", 0.0);
    } else if (t0 < 0) {
      continue;
    } else if (engine_backward && e.kind == events::Kind::end && e.id == backward_id) {
      std::printf("%8.2f  backward returns\n", (e.time_us - t0) / 1e3);
      break;
    } else if (e.category == events::Category::compute && e.name == "backward" && e.kind == events::Kind::end &&
               std::count(e.scope.begin(), e.scope.end(), '.') <= 2) {  // blocks and the outer modules
      std::printf("%8.2f    %s: gradients final\n", (e.time_us - t0) / 1e3, e.scope.c_str());
    } else if (e.category == events::Category::comm && e.kind == events::Kind::begin && e.name == "reduce_scatter") {
      const std::size_t b = scattered++;
      std::printf("%8.2f      -> reduce_scatter bucket %zu starts: %lld elements, %lld bytes\n", (e.time_us - t0) / 1e3,
                  b, ll(e.elements), ll(e.bytes));
    }
  }
}

// ---- bytes of model states ----

void print_model_states(dist::ProcessGroup& world, int stage, const zero::ModelStateBytes& measured,
                        const zero::ModelStateBytes& planned, std::int64_t psi, runtime::BytesPerParameter b) {
  const int N = world.size();
  const runtime::ModelStateEstimate f = runtime::model_state_bytes(stage, static_cast<double>(psi), N, b);
  const std::vector<std::int64_t> all =
      gather(world, {measured.param, measured.grad, measured.optim, planned.param, planned.grad, planned.optim});
  std::printf("%s: bytes of model states per rank at the step (allocator tags param / grad / optim):\n",
              stage_name(stage));
  std::printf("rank       param        grad       optim       total   estimator's plan\n");
  int as_planned = 0, as_formula = 0;
  for (int r = 0; r < N; ++r) {
    const std::int64_t* m = &all[static_cast<std::size_t>(6 * r)];
    const std::int64_t total = m[0] + m[1] + m[2], plan = m[3] + m[4] + m[5];
    std::printf("%4d  %10lld  %10lld  %10lld  %10lld   %10lld\n", r, ll(m[0]), ll(m[1]), ll(m[2]), ll(total), ll(plan));
    as_planned += m[0] == m[3] && m[1] == m[4] && m[2] == m[5];
    as_formula += static_cast<double>(m[0]) == f.param && static_cast<double>(m[1]) == f.grad &&
                  static_cast<double>(m[2]) == f.optim;
  }
  std::printf("formula %s with P=%d G=%d K=%d, psi=%lld, N=%d: %.0f + %.0f + %.0f = %.0f bytes = %.2f psi\n",
              runtime::model_states_text(stage).c_str(), b.P, b.G, b.K, ll(psi), N, f.param, f.grad, f.optim, f.total(),
              f.total() / static_cast<double>(psi));
  std::printf("measured = the estimator's plan on %d of %d ranks, = the formula on %d of %d ranks  %s\n", as_planned, N,
              as_formula, N,
              as_planned == N && as_formula == N ? "(equal)"
              : as_planned == N                  ? "(the formula leaves out the padding)"
                                                 : "(DIFFERENT)");
}

void print_table1_7_5b() {
  const runtime::BytesPerParameter b = runtime::bytes_per_parameter(/*bf16=*/true);
  std::printf("psi = 7.5B, bf16 mixed precision (P=%d G=%d K=%d), GB (1e9 bytes) per rank; [the paper's Table 1]\n",
              b.P, b.G, b.K);
  std::printf("%6s  %7s  %16s  %16s  %16s\n", "N", "DDP", "ZeRO-1", "ZeRO-2", "ZeRO-3");
  int agree = 0, cells = 0;
  for (const runtime::PaperTable1Row& row : runtime::paper_table1()) {
    if (row.psi != 7.5e9) continue;
    std::printf("%6d  %7.1f", row.world, runtime::model_state_bytes(0, row.psi, row.world, b).total() / 1e9);
    for (int stage = 1; stage <= 3; ++stage) {
      const double gb = runtime::model_state_bytes(stage, row.psi, row.world, b).total() / 1e9;
      const char* printed = row.gb[static_cast<std::size_t>(stage - 1)];
      agree += runtime::agrees_with_printed(gb, printed), ++cells;
      char cell[40];
      std::snprintf(cell, sizeof cell, "%.2f [%s]", gb, printed);
      std::printf("  %16s", cell);
    }
    std::printf("\n");
  }
  std::printf("%d of %d cells within one unit of the paper's last printed digit\n", agree, cells);
}

}  // namespace lesson06

#include "unit_trace.h"

#include <cstdio>

#include "minitorch/allocator.h"
#include "nn/parameter_names.h"
#include "runtime/estimate.h"

using namespace minitorch;

namespace lesson07 {

std::vector<double> gather(dist::ProcessGroup& g, const std::vector<double>& mine) {
  dist::NoRecordScope bookkeeping(g);
  const auto k = static_cast<std::int64_t>(mine.size());
  std::vector<float> hi(mine.size()), lo(mine.size());  // a double as two floats: byte counts stay exact
  for (std::size_t i = 0; i < mine.size(); ++i) {
    hi[i] = static_cast<float>(mine[i]);
    lo[i] = static_cast<float>(mine[i] - static_cast<double>(hi[i]));
  }
  const std::vector<float> H = g.all_gather(Tensor::from_vector(hi, {k}), k * g.size()).to_vector();  // (k·N)
  const std::vector<float> L = g.all_gather(Tensor::from_vector(lo, {k}), k * g.size()).to_vector();  // (k·N)
  std::vector<double> all(H.size());
  for (std::size_t i = 0; i < H.size(); ++i) all[i] = static_cast<double>(H[i]) + static_cast<double>(L[i]);
  return all;
}

void print_owners(const zero::Stage3& s3, const nn::GPT& model, const runtime::Config& cfg) {
  const nn::NamedTensors meta = runtime::meta_parameters(nn::GPT::parameter_shapes(model.config()));
  const zero::UnitPlan plan = zero::plan_units(meta, model.blocks.size(), cfg.strategy());
  const int N = s3.partition().world();
  std::printf("who holds what: rank r keeps shard r of every unit, the same slice of p, g, m and v\n");
  for (const zero::Unit& unit : s3.units()) {
    const std::size_t b = unit.bucket_index();
    if (b > plan.units[1]) break;  // the blocks are all alike: h.0 stands for them
    const std::int64_t n = unit.numel();
    std::printf("%-5s %6lld elements = %d shards of %lld%s\n", unit.name().c_str(), static_cast<long long>(n), N,
                static_cast<long long>(n / N), b == plan.units[0] ? "" : " (every block alike)");
    for (int r = 0; r < N; ++r) {
      const zero::Partition mine(meta, plan.buckets, r, N);  // what rank r plans for itself
      std::vector<std::string> names;
      for (const zero::ShardPiece& p : mine.pieces())
        if (p.bucket == b) names.push_back(p.name);
      std::printf("  rank %d [%6lld, %6lld) %zu piece%s: %s", r, static_cast<long long>(r * (n / N)),
                  static_cast<long long>((r + 1) * (n / N)), names.size(), names.size() == 1 ? "" : "s",
                  names.front().c_str());
      if (names.size() > 2) std::printf(" ...");
      if (names.size() > 1) std::printf(" %s", names.back().c_str());
      std::printf("\n");
    }
  }
}

std::vector<double> planned_totals(const nn::GPT& model, const runtime::Config& cfg, int N) {
  const nn::NamedTensors meta = runtime::meta_parameters(nn::GPT::parameter_shapes(model.config()));
  const zero::UnitPlan plan = zero::plan_units(meta, model.blocks.size(), cfg.strategy());
  std::vector<double> totals;
  for (int r = 0; r < N; ++r) {
    const zero::Partition mine(meta, plan.buckets, r, N);
    totals.push_back(double(runtime::exact_model_states(3, mine, runtime::bytes_per_parameter(false), plan.persistent).total()));
  }
  return totals;
}

void UnitTrace::print_header() const {
  std::printf("%-58s", "event (S sharded, g gathering, G gathered)");
  for (const zero::Unit& unit : s3_.units()) std::printf(" %5s", unit.name().c_str());
  std::printf("   param pool\n");
}

std::string UnitTrace::states(const zero::Unit* changing, char now, std::int64_t not_yet_freed) const {
  std::string out;
  char cell[32];
  for (const zero::Unit& unit : s3_.units()) {
    char c = "SgG"[static_cast<int>(unit.state())];
    if (&unit == changing) c = now;
    std::snprintf(cell, sizeof cell, " %5c", c);
    out += cell;
  }
  std::snprintf(cell, sizeof cell, "  %9lld B", static_cast<long long>(memory_stats().current(MemTag::param) + not_yet_freed));
  return out + cell;
}

void UnitTrace::line(const std::string& what, const std::string& tail) const {
  std::printf("%-58s%s\n", what.c_str(), tail.c_str());
}

void UnitTrace::flush() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!gather_.active) return;
  const bool prefetch = s3_.prefetched() > gather_.prefetched;
  line((prefetch ? "  prefetch " : "  gather   ") + gather_.what, gather_.tail);
  gather_.active = false;
}

const zero::Unit* UnitTrace::gathering_now() const {
  for (const zero::Unit& unit : s3_.units())  // gather_async has made the full buffer, and not yet said "gathering"
    if (unit.state() == zero::Unit::State::sharded && unit.bucket().params.numel() > 0) return &unit;
  return nullptr;
}

const zero::Unit* UnitTrace::releasing_now() const {
  for (const zero::Unit& unit : s3_.units())  // release(): still "gathered", its parameters already dropped
    if (unit.state() == zero::Unit::State::gathered && unit.parameters().front().second.is_released()) return &unit;
  return nullptr;
}

void UnitTrace::on_event(const events::Event& e) {
  using events::Category, events::Kind;
  // Only the main thread's events matter here: the unit hooks, the collectives and the gathers'
  // buffers (tag param). Kernel threads allocate activations; those are skipped before the lock.
  const bool param_memory = e.category == Category::memory && e.tag == MemTag::param;
  const bool comm = e.category == Category::comm;
  const bool compute_begin = e.category == Category::compute && e.kind == Kind::begin;
  if (!param_memory && !comm && !compute_begin) return;
  if (gather_.active && !(comm && e.kind == Kind::end && e.id == gather_.id)) flush();
  std::lock_guard<std::mutex> lock(mutex_);
  char text[160];
  if (compute_begin) {
    if (e.micro_step >= 0 && (e.name == "forward" || e.name == "backward")) {  // the engine's own span
      line(e.name == "forward" ? "engine forward: model.loss(idx, targets)" : "engine backward: autograd from the loss",
           states());
    } else if (!pending_forward_.empty() && e.scope.starts_with(pending_forward_ + ".")) {
      // The block's first sub-module begins: its pre-forward hook has run (the unit gathered, the next
      // one's prefetch started), so this is when the block really computes.
      line("forward " + pending_forward_, states());
      pending_forward_.clear();
    } else if (nn::block_of_module(e.scope) >= 0) {
      // A block's forward span opens before its pre-forward hook gathers it: wait for its body. Its
      // backward (nn::ModulePhaseEvents' hook, registered after Stage3's) comes once it is gathered.
      if (e.name == "forward") pending_forward_ = e.scope;
      else line(e.name + " " + e.scope, states());
    }
    return;
  }
  if (comm && e.kind == Kind::begin) {
    if (e.name == "all_gather") {
      const zero::Unit* unit = gathering_now();
      if (!unit) return;
      std::snprintf(text, sizeof text, "%-5s all-gather %7lld elements %8lld B", unit->name().c_str(),
                    static_cast<long long>(e.elements), static_cast<long long>(e.bytes));
      gather_ = {true, e.id, s3_.prefetched(), text, states(unit, 'g')};
    } else if (e.name == "reduce_scatter") {
      std::snprintf(text, sizeof text, "reduce-scatter %7lld elements %8lld B", static_cast<long long>(e.elements),
                    static_cast<long long>(e.bytes));
      pending_rs_ = text;
    } else if (e.name == "all_reduce") {
      std::snprintf(text, sizeof text, "  %s of %lld elements (the gradient norm)", e.name.c_str(),
                    static_cast<long long>(e.elements));
      line(text, states());
    }
    return;
  }
  if (!param_memory || e.kind != Kind::free) return;
  const zero::Unit* unit = releasing_now();  // a unit's full buffer going back
  if (!unit) return;
  if (!pending_rs_.empty()) {
    line("  grads " + unit->name() + " " + pending_rs_, states(nullptr, ' ', e.bytes));
    pending_rs_.clear();
  }
  std::snprintf(text, sizeof text, "  release  %-5s free %8lld B", unit->name().c_str(), static_cast<long long>(e.bytes));
  line(text, states(unit, 'S'));
}

}  // namespace lesson07

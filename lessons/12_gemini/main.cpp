// Lesson 12: Gemini, chunks that move. mpirun -np 4 build/bin/lesson-12 [--auto] [--quick] [--beat N] [--data TEXT]
// [--steps N] (make lesson-12 starts it on 4 ranks)
// Colossal-AI's Gemini on 4 `sim` ranks: why a static offload copies every shard up at every gather whatever the
// card; the baby GPT packed into chunks whose tensors' states gather and release them; the warm-up iteration's record
// (the schedule of chunk uses, each period's peak beyond the model data); Belady's OPT against LRU on that schedule
// and live; the bytes each method moves per step, beside its formula; and the baby trained on the KJV on a card too
// small for DDP and ZeRO-3, with ZeRO-3's losses. Every figure measured on real tensors.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/beat.h"
#include "common/ranks.h"
#include "gemini/eviction.h"
#include "gemini/layout.h"
#include "gemini_runs.h"
#include "minitorch/hooks.h"
#include "nn/gpt.h"

using namespace minitorch;
using lesson12::Measure;
using lesson12::Method;
using lesson12::mib;
using lesson12::Run;
using lesson12::Setup;
using lesson12::short_name;
using gemini::TensorState;

struct Options {
  std::string data = "datasets/kjv.txt";
  long long steps = 200;
};

// What the beats hand on: the corpus, and the runs that beat 5's table shows again.
struct State {
  State(const Options& opt, dist::ProcessGroup& world)
      : ds(data::TextDataset::load(opt.data, "char", 64)), N(world.size()) {}
  data::TextDataset ds;
  int N;
  Run offload_param, gemini_static, auto_free;  // beat 1
  Run zero3, offload_optimizer;                 // beat 5
  Run auto_tight, auto_roomy;                   // beats 3 and 4: Gemini auto on two cards
  std::int64_t tight = 0, roomy = 0;            // their capacities, bytes per rank
};

long long ll(std::int64_t v) { return static_cast<long long>(v); }

Setup setup(Method m) {
  Setup s;
  s.method = m;
  return s;
}
Setup static_offloaded() {
  Setup s = setup(Method::gemini_static);
  s.offload_optim_frac = s.offload_param_frac = 1.0;
  return s;
}

const char* agrees(std::int64_t measured, double formula) {
  return static_cast<double>(measured) == formula ? "(= formula)" : "(DIFFERENT)";
}

/// The bytes of one chunk's shard when every chunk has the same size (the search's packing), else -1.
std::int64_t uniform_shard(const Run& r) {
  if (r.shard_bytes.empty()) return -1;
  for (std::int64_t b : r.shard_bytes)
    if (b != r.shard_bytes.front()) return -1;
  return r.shard_bytes.front();
}

/// "out of memory on 4 of 4 ranks ...", with the error's first line and what was in use.
void print_out_of_memory(const Run& r, const State& s) {
  std::printf("out of memory on %d of %d ranks in step %zu, %s\n", r.ranks_out_of_memory, s.N, r.steps.size() + 1,
              r.same_on_every_rank ? "every rank at the same allocation with the same bytes in use"
                                   : "the ranks at DIFFERENT allocations");
  lesson::print_error_lines(r.error, {"in use:", "this run:"});
}

/// `item` at the end of `list`, after `separator` unless the list is empty.
void append(std::string& list, const std::string& item, const char* separator) {
  if (!list.empty()) list += separator;
  list += item;
}

/// A capacity: `share` of `bytes`, down to a whole KiB.
std::int64_t share_of(double share, std::int64_t bytes) {
  return static_cast<std::int64_t>(share * static_cast<double>(bytes)) / 1024 * 1024;
}

// ---- beat 1: why static offload wastes ----

void why_static_offload_wastes(lesson::Beats& beats, dist::ProcessGroup& world, State& s) {
  beats.beat("why static offload wastes: the same bytes up every step, whatever the card",
             "ZeRO-Infinity's offload_param keeps every parameter shard in host memory and copies it up before each\n"
             "of its gathers, twice per micro-step (forward, backward): 2A·P·Ψ/N bytes a step, however much room the\n"
             "card has. Gemini packs the parameters into chunks; static placement with every shard on the host copies\n"
             "as much, a shard per gather. Auto placement keeps copies of as many shards on the card as fit: with room\n"
             "for all of them only the refresh after the optimizer's step goes up, P·Ψ'/N (Ψ': the chunks' elements).");
  const Setup zi = setup(Method::offload_param);
  s.offload_param = lesson12::measure(world, s.ds, zi, {.steps = 2});
  s.gemini_static = lesson12::measure(world, s.ds, static_offloaded(), {.steps = 2});
  s.auto_free = lesson12::measure(world, s.ds, setup(Method::gemini_auto), {.steps = 2});
  const Run &z = s.offload_param, &g = s.gemini_static, &a = s.auto_free;
  const int A = zi.micro_steps, P = lesson12::fp32().P;
  const std::int64_t shard = uniform_shard(a), chunk = a.layout.allocated.front();
  std::printf("the baby GPT (L = 4, T = 64, C = 128), Ψ = %lld, on N = %d sim ranks; A = %d micro-steps of one\n"
              "sequence, f32 (P = %d bytes). Gemini's chunks (beat 2): %zu of %lld elements, Ψ' = %lld, a shard P·%lld/N\n"
              "= %lld bytes\n\n",
              ll(z.psi), s.N, A, P, a.layout.size(), ll(chunk), ll(a.chunk_elements()), ll(chunk), ll(shard));
  std::printf("per rank, bytes up (h2d) in one step, the second:\n");
  const double zf = runtime::offload_param_state_bytes(static_cast<double>(z.psi), s.N, lesson12::fp32(), A).h2d;
  std::printf("  %-42s %9lld  2A·P·Ψ/N = 2·%d·%d·%lld/%d = %.0f %s\n", "ZeRO-3 + offload_param cpu", ll(z.step(2).h2d),
              A, P, ll(z.psi), s.N, zf, agrees(z.step(2).h2d, zf));
  const std::int64_t gs = g.step(2).gathers;
  std::printf("  %-42s %9lld  gathers × P·chunk/N = %lld × %lld = %lld %s\n", "Gemini static, offload_param_frac 1.0",
              ll(g.step(2).h2d), ll(gs), ll(shard), ll(gs * shard), agrees(g.step(2).h2d, static_cast<double>(gs * shard)));
  const double af = static_cast<double>(P * a.chunk_elements() / s.N);
  std::printf("  %-42s %9lld  P·Ψ'/N = %d·%lld/%d = %.0f %s, the %lld cached shards refreshed\n",
              "Gemini auto, no capacity limit", ll(a.step(2).h2d), P, ll(a.chunk_elements()), s.N, af,
              agrees(a.step(2).h2d, af), ll(a.step(2).refreshes));
  std::printf("ZeRO-3 + offload_param moves %.1f× what Gemini auto moves with room for every shard. On any card the\n"
              "same: its placement is fixed before the first step. Gemini static moves more than ZeRO-Infinity: a chunk\n"
              "that straddles two blocks is gathered once for each in forward (beat 2), and the chunks carry their waste.\n",
              static_cast<double>(z.step(2).h2d) / static_cast<double>(a.step(2).h2d));
}

// ---- beat 2: chunks and tensor states ----

/// Which parts of the model chunk c's tensors belong to: "outer", "h0", "h0+h1", "outer+h0".
std::vector<std::string> chunk_parts(const gemini::GeminiLayout& layout, const nn::NamedTensors& params) {
  std::vector<std::string> parts;
  for (const gemini::PlannedChunk& chunk : layout.chunks.chunks) {
    std::vector<std::string> seen;
    for (const gemini::ChunkSlot& slot : chunk.slots) {
      const std::string n = short_name(params[slot.param].first);
      const std::string part = n[0] == 'h' && std::isdigit(static_cast<unsigned char>(n[1])) ? n.substr(0, n.find('.'))
                                                                                              : "outer";
      if (std::find(seen.begin(), seen.end(), part) == seen.end()) seen.push_back(part);
    }
    std::string text;
    for (const std::string& p : seen) append(text, p, "+");
    parts.push_back(text);
  }
  return parts;
}

/// The gathers of one micro-step by the rules of gemini/gemini.h, from the layout alone. Forward: the outer chunks
/// at the model's pre-forward, held to its end; each block's chunks not gathered yet at its pre-forward, released at
/// its post-forward (their tensors all HOLD) unless an outer tensor computes. Backward: a chunk stays gathered until
/// all its tensors are READY_FOR_REDUCE, so every chunk once.
struct GatherCount {
  std::int64_t forward = 0, backward = 0, shared = 0;  // shared: chunks of two blocks without outer tensors
};
GatherCount predicted_gathers(const std::vector<std::string>& parts, std::size_t layers) {
  GatherCount n;
  std::set<std::size_t> gathered;
  auto has = [&](std::size_t c, const std::string& part) {
    const std::string& p = parts[c];
    for (std::size_t at = p.find(part); at != std::string::npos; at = p.find(part, at + 1))
      if ((at == 0 || p[at - 1] == '+') && (at + part.size() == p.size() || p[at + part.size()] == '+')) return true;
    return false;
  };
  for (std::size_t c = 0; c < parts.size(); ++c)
    if (has(c, "outer")) gathered.insert(c), ++n.forward;
  for (std::size_t k = 0; k < layers; ++k) {
    std::string block = "h";
    block += std::to_string(k);
    for (std::size_t c = 0; c < parts.size(); ++c)
      if (has(c, block) && gathered.insert(c).second) ++n.forward;
    for (std::size_t c = 0; c < parts.size(); ++c)
      if (has(c, block) && !has(c, "outer")) gathered.erase(c);
  }
  n.backward = static_cast<std::int64_t>(parts.size());
  for (const std::string& p : parts) n.shared += p.find('+') != std::string::npos && !p.starts_with("outer");
  return n;
}

void print_states(const gemini::Gemini& g, const std::vector<std::string>& parts, const char* moment) {
  std::printf("%s:\n  %-5s %-9s %5s %8s %5s %15s %17s  %s\n", moment, "chunk", "holds", "FREE", "COMPUTE", "HOLD",
              "HOLD_AFTER_BWD", "READY_FOR_REDUCE", "gathered");
  for (std::size_t c = 0; c < g.layout().size(); ++c) {
    const gemini::ChunkStates& st = g.states(c);
    std::printf("  %-5zu %-9s %5zu %8zu %5zu %15zu %17zu  %s\n", c, parts[c].c_str(), st.count(TensorState::free),
                st.count(TensorState::compute), st.count(TensorState::hold), st.count(TensorState::hold_after_bwd),
                st.count(TensorState::ready_for_reduce), g.gathered(c) ? "yes" : "-");
  }
}

void chunks_and_states(lesson::Beats& beats, dist::ProcessGroup& world, State& s) {
  beats.beat("chunks and tensor states, step by step",
             "plan_gemini puts the parameters in order of use (the outer tensors wte, wpe, ln_f first, then block by\n"
             "block) and packs them into chunks of one size, the size Colossal-AI's search picks for the least waste.\n"
             "Each chunk is a ZeRO-3 unit, but its tensors' states gather and release it: a module's pre-forward or\n"
             "pre-backward puts its tensors in COMPUTE and gathers their chunks; its post-forward puts them in HOLD and\n"
             "releases a chunk whose tensors all HOLD; a final gradient makes a tensor READY_FOR_REDUCE, and a chunk\n"
             "whose tensors all are is reduce-scattered, its tensors HOLD again, and released.");
  const Setup plain = setup(Method::gemini_static);
  const runtime::Config cfg = lesson12::config_of(plain, s.N);
  Generator init(cfg.training.seed);
  const nn::GPT model(runtime::model_config(cfg, s.ds.tokenizer().vocab_size()), init);  // for names and sizes
  const nn::NamedTensors params = model.named_parameters();
  const gemini::GeminiConfig colossal;  // Colossal-AI's defaults
  const gemini::GeminiLayout one = gemini::plan_gemini(params, s.N, colossal);
  std::printf("plan_gemini on the baby's %zu tensors (Ψ = %lld), N = %d:\n", params.size(), ll(model.num_parameters()), s.N);
  std::printf("  Colossal-AI's defaults (min_chunk_size_m %.0f, search_range_m %.0f: × 2^20 elements): %zu chunk of %lld\n"
              "  elements, kept gathered on every rank: %s — nothing sharded, plain data parallelism\n",
              colossal.min_chunk_size_m, colossal.search_range_m, one.size(), ll(one.chunks.chunks.front().size),
              one.keep_gathered.front() ? "yes" : "NO");
  const gemini::GeminiLayout layout = gemini::plan_gemini(params, s.N, cfg.gemini);
  std::int64_t largest = 0;  // the search starts at the largest tensor, or min_chunk_size_m if more
  for (const auto& [name, t] : params) largest = std::max(largest, t.numel());
  const auto from = std::max(largest, static_cast<std::int64_t>(cfg.gemini.min_chunk_size_m * static_cast<double>(gemini::kMega)));
  std::printf("  min_chunk_size_m %.4f, search_range_m %.4f: sizes from %lld up to %lld more, in steps of 1024;\n"
              "  chunk_size %lld wastes the least (%lld of %lld elements): %zu chunks, smaller than a block, Ψ' = %lld\n",
              cfg.gemini.min_chunk_size_m, cfg.gemini.search_range_m, ll(from),
              ll(static_cast<std::int64_t>(cfg.gemini.search_range_m * static_cast<double>(gemini::kMega))),
              ll(layout.search.chunk_size), ll(layout.search.waste), ll(layout.search.total), layout.size(),
              ll([&] {
                std::int64_t n = 0;
                for (std::int64_t e : layout.allocated) n += e;
                return n;
              }()));
  const std::vector<std::string> parts = chunk_parts(layout, params);
  std::printf("  %-5s %6s %6s %6s  %s\n", "chunk", "size", "used", "waste", "tensors, in order of use");
  for (std::size_t c = 0; c < layout.size(); ++c) {
    const gemini::PlannedChunk& chunk = layout.chunks.chunks[c];
    std::string names;
    for (const gemini::ChunkSlot& slot : chunk.slots) append(names, short_name(params[slot.param].first), " ");
    std::printf("  %-5zu %6lld %6lld %6lld  %s\n", c, ll(chunk.size), ll(chunk.used()), ll(chunk.waste()), names.c_str());
  }

  // One step of Gemini static (every chunk sharded, on the card), watched by hooks registered after Gemini's own:
  // they run after it, so they see the states its hook just set.
  std::printf("\none step of %s, A = %d micro-steps; the first micro-step seen from two hooks:\n\n", plain.name().c_str(),
              plain.micro_steps);
  std::vector<HookHandle> watching;  // outlive the engine: a handle whose module is gone removes nothing
  bool forward_seen = false, backward_seen = false;
  const Run run = lesson12::measure(world, s.ds, plain, {.steps = 1, .before = [&](runtime::Engine& engine) {
    const gemini::Gemini* g = engine.strategy_as<gemini::Gemini>();
    nn::GPT& gpt = engine.model();
    watching.push_back(gpt.blocks[1]->register_pre_forward_hook([&, g](nn::Module&, std::span<const Tensor>) {
      if (std::exchange(forward_seen, true)) return;
      print_states(*g, parts, "block 1's pre-forward: outer tensors COMPUTE for the whole forward, block 0's HOLD");
    }));
    watching.push_back(gpt.blocks[0]->register_pre_backward_hook([&, g](nn::Module&, const Tensor&) {
      if (std::exchange(backward_seen, true)) return;
      print_states(*g, parts, "\nblock 0's pre-backward: blocks 3-1 done (READY_FOR_REDUCE, or reduced: HOLD)");
    }));
  }});
  const GatherCount n = predicted_gathers(parts, model.blocks.size());
  const std::int64_t predicted = plain.micro_steps * (n.forward + n.backward);
  std::printf("\ngathers in the step (Gemini::gathers): %lld = A × (forward %lld + backward %lld) = %d × %lld = %lld %s\n"
              "forward gathers the %lld chunks shared by two blocks twice (released between the blocks: their tensors all\n"
              "HOLD); backward once (a chunk waits, gathered, until all its tensors are READY_FOR_REDUCE)\n",
              ll(run.step(1).gathers), ll(n.forward), ll(n.backward), plain.micro_steps, ll(n.forward + n.backward),
              ll(predicted), run.step(1).gathers == predicted ? "(= the rules)" : "(DIFFERENT)", ll(n.shared));
}

// ---- beat 3: the warm-up's statistics ----

/// What moment k of the schedule is: the model's own hooks and each block's, forward then backward.
std::string moment_name(std::size_t k, std::size_t moments, std::size_t layers) {
  if (moments != 2 * (layers + 1)) return "moment " + std::to_string(k);
  if (k == 0) return "model pre-forward";
  if (k <= layers) return "block " + std::to_string(k - 1) + " pre-forward";
  if (k == layers + 1) return "model pre-backward";
  return "block " + std::to_string(2 * layers + 1 - k) + " pre-backward";
}

void the_warmup_statistics(lesson::Beats& beats, dist::ProcessGroup& world, State& s) {
  beats.beat("the warm-up's statistics: the schedule and each period's peak",
             "Auto placement keeps every shard in host memory and caches copies on the card. The first micro-step is\n"
             "the warm-up: it records the order in which chunks are used (the schedule; one moment per module hook)\n"
             "and, per moment, the peak the period after it adds beyond the model data — activations, local gradients,\n"
             "buffers. Afterwards, before each moment, the model data may use capacity × steady_cuda_cap_ratio − the\n"
             "next period's peak: what the coming modules will need is known before they run.");
  // The cards of beats 3-5: shares of Gemini auto's peak with every shard cached (beat 1).
  s.tight = share_of(1.0, s.auto_free.device_peak);
  s.roomy = share_of(1.1, s.auto_free.device_peak);
  std::printf("the cards of beats 3-5: %s and %s per rank, 100 %% and 110 %% of Gemini auto's peak with every shard\n"
              "cached (%s, beat 1)\n",
              mib(static_cast<double>(s.tight)).c_str(), mib(static_cast<double>(s.roomy)).c_str(),
              mib(static_cast<double>(s.auto_free.device_peak)).c_str());
  const Setup a = setup(Method::gemini_auto);
  s.auto_tight = lesson12::measure(world, s.ds, a, {.steps = 3, .capacity = s.tight, .record_step = 3});
  const Run& r = s.auto_tight;
  if (r.out_of_memory) {
    print_out_of_memory(r, s);
    return;
  }
  const double ratio = gemini::GeminiConfig{}.steady_cuda_cap_ratio;
  std::printf("Gemini auto on the %s card, one step recorded (%zu uses in %zu moments):\n",
              mib(static_cast<double>(s.tight)).c_str(), r.schedule.size(), r.moment_starts.size());
  std::printf("  %-6s %-21s %-18s %s\n", "moment", "hook", "chunks used", "period peak beyond the model data");
  std::int64_t largest = 0;
  for (std::size_t k = 0; k < r.moment_starts.size(); ++k) {
    const std::size_t end = k + 1 < r.moment_starts.size() ? r.moment_starts[k + 1] : r.schedule.size();
    std::string uses;
    for (std::size_t u = r.moment_starts[k]; u < end; ++u) append(uses, std::to_string(r.schedule[u]), " ");
    const std::int64_t peak = k < r.period_peaks.size() ? r.period_peaks[k] : 0;
    largest = std::max(largest, peak);
    std::printf("  %-6zu %-21s %-18s %9lld bytes\n", k, moment_name(k, r.moment_starts.size(), 4).c_str(), uses.c_str(),
                ll(peak));
  }
  std::printf("the largest period peak: %lld bytes = auto_stats().warmup_non_model_peak %lld %s (the report's\n"
              "warmup_non_model_peak)\n",
              ll(largest), ll(r.auto_stats.warmup_non_model_peak),
              largest == r.auto_stats.warmup_non_model_peak ? "(= the largest)" : "(DIFFERENT)");
  // Two moments' room: the smallest and the largest period ahead.
  const auto [lo, hi] = std::minmax_element(r.period_peaks.begin(), r.period_peaks.end());
  std::printf("the room for model data before a moment, after the warm-up: capacity × steady_cuda_cap_ratio − the next\n"
              "period's peak\n");
  for (auto it : {lo, hi}) {
    const std::size_t k = static_cast<std::size_t>(it - r.period_peaks.begin());
    std::printf("  before moment %zu (%s): %lld × %.1f − %lld = %.0f bytes\n", k,
                moment_name(k, r.moment_starts.size(), 4).c_str(), ll(s.tight), ratio, ll(*it),
                static_cast<double>(s.tight) * ratio - static_cast<double>(*it));
  }
  std::printf("during the warm-up itself, capacity × (1 − warmup_non_model_data_ratio) = %lld × %.1f = %.0f bytes\n",
              ll(s.tight), 1 - gemini::GeminiConfig{}.warmup_non_model_data_ratio,
              static_cast<double>(s.tight) * (1 - gemini::GeminiConfig{}.warmup_non_model_data_ratio));
}

// ---- beat 4: OPT against LRU ----

void print_auto_steps(const Run& r, std::int64_t capacity) {
  std::printf("Gemini auto on a %s card:\n  %-5s %6s %10s %10s %17s\n", mib(static_cast<double>(capacity)).c_str(),
              "step", "loads", "evictions", "refreshes", "uncached gathers");
  for (std::size_t k = 0; k < r.steps.size(); ++k)
    std::printf("  %-5zu %6lld %10lld %10lld %17lld\n", k + 1, ll(r.steps[k].loads), ll(r.steps[k].evictions),
                ll(r.steps[k].refreshes), ll(r.steps[k].uncached));
}

void opt_against_lru(lesson::Beats& beats, dist::ProcessGroup& world, State& s) {
  beats.beat("OPT against LRU on the recorded schedule",
             "After the warm-up every iteration uses the chunks in the recorded order, so the manager knows the future:\n"
             "it evicts the cached shard whose next use is farthest away (Belady's OPT), where a manager without the\n"
             "record could only evict the least recently used (LRU). gemini::replay plays one iteration of the\n"
             "schedule with room for a given number of chunks, starting empty, and counts the loads.");
  const Run& r = s.auto_tight;
  if (r.out_of_memory) return;
  const gemini::UseSchedule schedule(r.schedule);
  std::printf("replay(UseSchedule(g.schedule()), room, Eviction::opt / Eviction::lru): %zu uses of %zu chunks\n",
              r.schedule.size(), r.layout.size());
  std::printf("  %-5s %9s %9s\n", "room", "OPT loads", "LRU loads");
  bool never_worse = true;
  for (std::size_t room = 1; room <= r.layout.size(); ++room) {
    const gemini::Replay opt = gemini::replay(schedule, room, gemini::Eviction::opt);
    const gemini::Replay lru = gemini::replay(schedule, room, gemini::Eviction::lru);
    never_worse &= opt.loads <= lru.loads;
    std::printf("  %-5zu %9zu %9zu\n", room, opt.loads, lru.loads);
  }
  std::printf("OPT loads <= LRU loads at every room: %s\n\n", never_worse ? "yes" : "NO");

  // Live: the card's room is bytes, not chunks, and changes with the period ahead; OPT picks each victim.
  s.auto_roomy = lesson12::measure(world, s.ds, setup(Method::gemini_auto), {.steps = 3, .capacity = s.roomy});
  for (const auto& [run, capacity] : {std::pair{&s.auto_roomy, s.roomy}, std::pair{&s.auto_tight, s.tight}}) {
    if (run->out_of_memory) {
      print_out_of_memory(*run, s);
      continue;
    }
    print_auto_steps(*run, capacity);
  }
  std::printf("step 1's first micro-step is the warm-up (LRU in a room of capacity × 0.2, what it loads copied up again\n"
              "when evicted and used); after it OPT evicts under the recorded peaks, and from step 2 on every step is the same\n");
  int shown = 0;
  std::printf("\nthe trace events of step 3 on the %s card (an events::Sink attached during the step, as\n"
              "events::Recorder is): %zu gemini_load and gemini_evict events; the first two evictions:\n",
              mib(static_cast<double>(s.tight)).c_str(), r.events.size());
  for (const lesson12::ChunkEvent& e : r.events) {
    if (e.name != "gemini_evict" || shown == 2) continue;
    std::printf("  %s  %s, %lld bytes\n", e.name.c_str(), e.scope.c_str(), ll(e.bytes));
    ++shown;
  }
  if (shown == 0) std::printf("  (none: the card held every shard it needed)\n");
}

// ---- beat 5: the bytes moved ----

void the_bytes_moved(lesson::Beats& beats, dist::ProcessGroup& world, State& s) {
  beats.beat("the bytes moved: every method's copies per step beside its formula",
             "Per rank and step, h2d (host to device) and d2h. ZeRO-Offload brings the gradient shard down and the\n"
             "updated shard up once; offload_param copies each shard up at every gather; Gemini static with every\n"
             "shard on the host copies a shard per gather; Gemini auto copies up a shard when it loads it into the\n"
             "cache, when it refreshes a cached one after the step, or when a gather finds it not cached.");
  s.zero3 = lesson12::measure(world, s.ds, setup(Method::zero3), {.steps = 2});
  s.offload_optimizer = lesson12::measure(world, s.ds, setup(Method::offload_optimizer), {.steps = 2});
  const int A = Setup{}.micro_steps;
  const runtime::BytesPerParameter b = lesson12::fp32();
  const double psi = static_cast<double>(s.zero3.psi);
  const runtime::OffloadEstimate zo = runtime::offload_state_bytes(3, psi, s.N, b);
  const runtime::OffloadEstimate zp = runtime::offload_param_state_bytes(psi, s.N, b, A);
  const std::int64_t shard = uniform_shard(s.auto_free);
  // Each rank's own: the used elements of its shards (rank 0's are full: the chunks' tails fall in the last ranks').
  const std::int64_t used = lesson12::used_in_shards(s.auto_free.layout, world.rank(), s.N);
  const double gemini_d2h = static_cast<double>(b.G * used);
  std::printf("Ψ = %lld, Ψ' = %lld, N = %d, A = %d, fp32 (P, G = %d, %d); a chunk's shard P·%lld/N = %lld bytes\n",
              ll(s.zero3.psi), ll(s.auto_free.chunk_elements()), s.N, A, b.P, b.G, ll(s.auto_free.layout.allocated.front()),
              ll(shard));
  std::printf("  %-40s %9s %9s %9s %9s  %s\n", "rank 0, bytes in one step", "h2d", "formula", "d2h", "formula",
              "the formulas: h2d; d2h");
  struct Row {
    std::string name;
    const Run* run;
    int step;
    double h2d, d2h;
    std::string text;
  };
  const Run &st = s.gemini_static, &af = s.auto_free, &tight = s.auto_tight;
  std::vector<Row> rows = {
      {"ZeRO-3", &s.zero3, 2, 0, 0, "0; 0"},
      {"ZeRO-3 + offload_optimizer cpu", &s.offload_optimizer, 2, zo.h2d, zo.d2h, "PΨ/N; GΨ/N"},
      {"ZeRO-3 + offload_param cpu", &s.offload_param, 2, zp.h2d, zp.d2h, "2A·PΨ/N; GΨ/N"},
      {"Gemini static (optim 1.0, param 1.0)", &st, 2, static_cast<double>(st.step(2).gathers * shard), gemini_d2h,
       "gathers × P·chunk/N (" + std::to_string(st.step(2).gathers) + " gathers); G·u"},
      {"Gemini auto, no limit", &af, 2, static_cast<double>(af.step(2).refreshes * shard), gemini_d2h,
       "P·Ψ'/N (" + std::to_string(af.step(2).refreshes) + " refreshes); G·u"}};
  if (!tight.out_of_memory) {
    const lesson12::StepRecord& t = tight.step(3);
    rows.push_back({"Gemini auto, " + mib(static_cast<double>(s.tight)) + " card, step 3", &tight, 3,
                    static_cast<double>(shard * (t.loads + t.refreshes + t.uncached)), gemini_d2h,
                    "P·chunk/N × (loads + refreshes + uncached) = " + std::to_string(shard) + " × (" +
                        std::to_string(t.loads) + " + " + std::to_string(t.refreshes) + " + " +
                        std::to_string(t.uncached) + "); G·u"});
  }
  bool exact = true, same = true;
  for (const Row& row : rows) {
    const lesson12::StepRecord& m = row.run->step(row.step);
    const bool equal = static_cast<double>(m.h2d) == row.h2d && static_cast<double>(m.d2h) == row.d2h;
    std::printf("  %-40s %9lld %9.0f %9lld %9.0f  %s %s\n", row.name.c_str(), ll(m.h2d), row.h2d, ll(m.d2h), row.d2h,
                equal ? "(= formulas)" : "(DIFFERENT)", row.text.c_str());
    exact &= equal, same &= row.run->same_on_every_rank;
  }
  std::printf("u: the used elements of the rank's shards (rank 0: %lld = Ψ'/N; a chunk's empty tail lies in the last\n"
              "ranks' shards, whose gradients come down without it)\n",
              ll(used));
  std::printf("every rank: measured = formulas, to the byte: %s; the same h2d on every rank: %s\n",
              lesson12::on_every_rank(exact) ? "yes" : "NO", same ? "yes" : "NO");
  // docs/report.md's equation, for every step of every auto run, on every rank.
  bool holds = true;
  for (const Run* run : {&s.auto_free, &s.auto_tight, &s.auto_roomy}) {
    if (run->out_of_memory) continue;
    for (const lesson12::StepRecord& m : run->steps) holds &= m.h2d == shard * (m.loads + m.refreshes + m.uncached);
  }
  std::printf("Gemini auto: h2d = shard bytes × (loads + refreshes + uncached_gathers) at every step of its three runs,\n"
              "on every rank: %s\n",
              lesson12::on_every_rank(holds) ? "yes" : "NO");
}

// ---- beat 6: the baby GPT on the KJV on a card too small for DDP and ZeRO-3 ----

void train_where_zero3_cannot(lesson::Beats& beats, dist::ProcessGroup& world, const Options& opt, State& s) {
  beats.beat("train the baby GPT on the KJV on a card too small for DDP and ZeRO-3",
             "Plain ZeRO-3 trains first without a limit, to measure its peak. The card: a little more than Gemini auto\n"
             "needs with every shard cached (beat 1), far below ZeRO-3's peak. DDP and ZeRO-3 run out of memory there,\n"
             "on every rank at the same allocation; Gemini auto trains, its optimizer on the host and as many shards\n"
             "cached as the room allows. Where the bytes live changes, not the arithmetic: Gemini's losses are\n"
             "ZeRO-3's (fp32: within 1e-6 relative).");
  const long long steps = opt.steps;
  Setup zero3 = setup(Method::zero3), ddp = setup(Method::ddp), gem = setup(Method::gemini_auto);
  zero3.schedule_steps = ddp.schedule_steps = gem.schedule_steps = steps;
  const int n = static_cast<int>(steps);
  auto timed = [&](const Setup& setup, std::int64_t capacity) {
    const auto t0 = std::chrono::steady_clock::now();
    Run r = lesson12::measure(world, s.ds, setup, {.steps = n, .capacity = capacity});
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return std::pair{r, ms / static_cast<double>(std::max<std::size_t>(1, r.steps.size()))};
  };
  const auto [plain, plain_ms] = timed(zero3, 0);
  const std::int64_t card = share_of(1.05, s.auto_free.device_peak);
  std::printf("ZeRO-3 without a limit: %lld steps, %.0f ms/step, the device's peak %s\n"
              "the card: 105 %% of Gemini auto's peak with every shard cached (%s, beat 1) = %s (%lld bytes), %.0f %% of\n"
              "ZeRO-3's peak\n\n",
              steps, plain_ms, mib(static_cast<double>(plain.device_peak)).c_str(),
              mib(static_cast<double>(s.auto_free.device_peak)).c_str(), mib(static_cast<double>(card)).c_str(), ll(card),
              100.0 * static_cast<double>(card) / static_cast<double>(plain.device_peak));
  for (const Setup& fails : {ddp, zero3}) {
    std::printf("%s on the %s card:\n", fails.name().c_str(), mib(static_cast<double>(card)).c_str());
    const Run r = lesson12::measure(world, s.ds, fails, {.steps = 3, .capacity = card});  // AdamW's states: step 2
    if (r.out_of_memory) print_out_of_memory(r, s);
    else std::printf("fits: the device's peak %s\n", mib(static_cast<double>(r.device_peak)).c_str());
  }
  const auto [g, g_ms] = timed(gem, card);
  std::printf("\n%s on the %s card:\n", gem.name().c_str(), mib(static_cast<double>(card)).c_str());
  if (g.out_of_memory) {
    print_out_of_memory(g, s);
    return;
  }
  std::int64_t loads = 0, evictions = 0, uncached = 0;
  for (const lesson12::StepRecord& m : g.steps) loads += m.loads, evictions += m.evictions, uncached += m.uncached;
  std::printf("fits: %lld steps, %.0f ms/step, the device's peak %s of %s; %lld loads, %lld evictions, %lld uncached\n"
              "gathers in all\n",
              steps, g_ms, mib(static_cast<double>(g.device_peak)).c_str(), mib(static_cast<double>(card)).c_str(),
              ll(loads), ll(evictions), ll(uncached));
  std::printf("\nstep    ZeRO-3   Gemini auto\n");
  double worst = 0;
  for (long long i = 1; i <= steps; ++i) {
    const double a = plain.step(static_cast<int>(i)).loss, b = g.step(static_cast<int>(i)).loss;
    worst = std::max(worst, std::abs(b - a) / std::abs(a));
    if (i % 20 == 0 || i == 1 || i == steps) std::printf("%4lld  %8.4f  %8.4f\n", i, a, b);
  }
  std::printf("max relative difference of the %lld losses: %.1e, %s\n", steps, worst,
              worst <= 1e-6 ? "within fp32's 1e-6" : "ABOVE fp32's 1e-6");
}

// The lesson's six beats on every rank (rank 0 prints); main() below parses the options and runs it.
int run(lesson::Beats& beats, dist::ProcessGroup& world, const Options& opt) {
  const lesson::RanksLesson lesson12{
      .number = "12", .ranks_do = "Gemini shards every chunk over them", .data = opt.data};
  return lesson::run_on_ranks(world, lesson12, [&] {
    State s(opt, world);
    why_static_offload_wastes(beats, world, s);
    chunks_and_states(beats, world, s);
    the_warmup_statistics(beats, world, s);
    opt_against_lru(beats, world, s);
    the_bytes_moved(beats, world, s);
    train_where_zero3_cannot(beats, world, opt, s);
  });
}

int main(int argc, char** argv) {
  Options opt;
  return lesson::main_on_ranks(argc, argv, "Lesson 12: Gemini, chunks that move", 6, [&](lesson::Beats& beats) {
    beats.option("--data", opt.data, "FILE", "the text to train on; `make data` writes the KJV");
    beats.option("--steps", opt.steps, "optimizer steps of each training run of the last beat", /*quick=*/10);
  }, [&](lesson::Beats& beats, dist::ProcessGroup& world) { return run(beats, world, opt); });
}

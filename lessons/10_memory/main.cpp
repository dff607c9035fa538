// Lesson 10: memory, a card at a time. mpirun -np 4 build/bin/lesson-10 [--auto] [--quick] [--beat N] [--data TEXT]
// [--steps N] [--device-memory SIZE] (make lesson-10 starts it on 4 ranks)
// Every rank computes on the simulated accelerator (`sim`: the CPU's kernels, a memory pool of its own with a
// capacity, every host<->device copy counted). On a 16 MiB card DDP runs out of memory — the engine's real
// error, on every rank —, ZeRO-2 fits; a deeper GPT needs ZeRO-3, a longer sequence activation checkpointing,
// and ZeRO-Offload moves the optimizer to the host for host bytes and copies per step. Every beat prints the
// bytes measured beside the formula; a table closes the story, and the baby GPT trains on the KJV with the
// seeds' configs/zero3_offload.json: the losses of ZeRO-3 without offload, bit for bit.
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/beat.h"
#include "common/ranks.h"
#include "memory_runs.h"
#include "runtime/byte_size.h"

using namespace minitorch;
using lesson10::Measured;
using lesson10::mib;
using lesson10::Setup;

struct Options {
  std::string data = "datasets/kjv.txt", memory = "16MiB";
  long long steps = 200;
};

// What the beats hand on: the corpus, the card, and the three GPTs of the story.
struct State {
  State(const Options& opt, dist::ProcessGroup& world)
      : ds(data::TextDataset::load(opt.data, "char", 64)), V(ds.tokenizer().vocab_size()), N(world.size()),
        capacity(card(opt.memory)) {}
  static std::int64_t card(const std::string& size) {
    try {
      return runtime::parse_byte_size(size);  // "16MiB", "24 MiB", "1.5GB", bytes
    } catch (const std::invalid_argument& e) {
      throw lesson::UsageError(std::string("--device-memory: ") + e.what());
    }
  }
  data::TextDataset ds;
  std::int64_t V;
  int N;
  std::int64_t capacity;  // bytes per rank
  const Setup baby{4, 64}, deeper{8, 64}, longer{8, 128};  // L blocks, T tokens (C = 128, H = 4, micro-batch 1)
  Measured checkpointed, offloaded;  // beats 5 and 6: ZeRO-3 + checkpointing at T = 128, without and with offload
};

Setup with(Setup s, int stage, bool offload = false, bool checkpointing = false, bool on_host = false) {
  s.stage = stage, s.offload = offload, s.checkpointing = checkpointing, s.cpu_checkpointing = on_host;
  return s;
}

/// "fits: peak 9.63 MiB of the 16.00 MiB card" or what ran out, on how many ranks.
void print_outcome(const Measured& m, const State& s) {
  if (m.out_of_memory)
    std::printf("out of memory on %d of %d ranks in step %d, %s\n", m.ranks_out_of_memory, s.N, m.steps_done + 1,
                m.same_on_every_rank ? "every rank at the same allocation with the same bytes in use"
                                     : "the ranks at DIFFERENT allocations");
  else
    std::printf("fits: the device's peak %s of the %s card, activations at most %s\n",
                mib(static_cast<double>(m.device_peak)).c_str(), mib(static_cast<double>(s.capacity)).c_str(),
                mib(static_cast<double>(m.activation_peak)).c_str());
}

void a_card_per_rank(lesson::Beats& beats, State& s) {
  beats.beat("a card per rank, and what the formulas say must fit on it",
             "Each rank computes on `sim`, a simulated accelerator with its own memory pool and a capacity:\n"
             "16 MiB (--device-memory) standing in for a 16 GB card. Per parameter DDP holds P + G + K =\n"
             "4 + 4 + 8 bytes (fp32), ZeRO shards them over N ranks (runtime/formulas.h); what is left of the card\n"
             "must hold the activations.");
  const double psi = static_cast<double>(lesson10::psi_of(s.baby, s.V));
  std::printf("the baby GPT (L = 4, C = 128, H = 4 heads, T = 64, micro-batch B = 1), psi = %.0f, on N = %d ranks; the card %s (%lld B)\n",
              psi, s.N, mib(static_cast<double>(s.capacity)).c_str(), static_cast<long long>(s.capacity));
  for (int stage = 0; stage <= 3; ++stage) {
    const Setup z = with(s.baby, stage);
    std::printf("  %-7s %-14s = %s\n", z.name().c_str(), lesson10::formula_text(z).c_str(),
                mib(lesson10::formula(z, psi, s.N).total()).c_str());
  }
  // DDP also keeps its buckets (lesson 05): psi f32 elements the gradients are all-reduced in, on the device.
  const double ddp = 16 * psi + 4 * psi;
  std::printf("DDP: 16 psi of model states + 4 psi of buckets = %s, leaving %s of the card for activations\n",
              mib(ddp).c_str(), mib(static_cast<double>(s.capacity) - ddp).c_str());
  // Lesson 08's block, and what a whole step adds to it, from the shapes (runtime/activation_formulas.h).
  std::printf("activations of one micro-batch, from the shapes (runtime/activation_formulas.h):\n  %s\n",
              runtime::activation_text(lesson10::activation_shape_of(s.baby, s.V)).c_str());
}

void ddp_runs_out_of_memory(lesson::Beats& beats, dist::ProcessGroup& world, State& s) {
  beats.beat("DDP on the card: out of memory, the real error",
             "Lesson 05's DDP on the card. The model goes to the device, DDP adds its buckets, AdamW\n"
             "allocates m and v at the first step. Every rank runs the same allocations, so every rank fails at\n"
             "the same one, and the engine's OutOfMemoryError says what was asked, what is in use, this run's\n"
             "formula and the levers, computed for this run.");
  const Measured m = lesson10::measure(world, s.ds, with(s.baby, 0), s.capacity);
  print_outcome(m, s);
  if (m.out_of_memory) std::printf("\nrank 0's error, as the engine wrote it:\n\n%s\n", m.error.c_str());
}

void zero2_fits(lesson::Beats& beats, dist::ProcessGroup& world, State& s) {
  beats.beat("ZeRO-2 fits",
             "The first lever of the list: ZeRO-2 keeps the parameters whole and only its shard of the gradients\n"
             "and of AdamW's state: PΨ + (G+K)Ψ/N. No buckets: a bucket's gradients live in a comm buffer only\n"
             "while it is reduce-scattered (lesson 06).");
  const Setup z2 = with(s.baby, 2);
  const Measured m = lesson10::measure(world, s.ds, z2, s.capacity);
  print_outcome(m, s);
  if (!m.out_of_memory) lesson10::print_model_states(m, z2, s.N);
}

void a_deeper_gpt_needs_zero3(lesson::Beats& beats, dist::ProcessGroup& world, State& s) {
  beats.beat("a deeper GPT: ZeRO-2 runs out, ZeRO-3 fits",
             "Twice the blocks (L = 8): psi doubles, and so does ZeRO-2's PΨ, the whole parameters on every\n"
             "rank. ZeRO-3 shards them too, (P+G+K)Ψ/N, and gathers one unit (a block) at a time while it runs.");
  const Setup z2 = with(s.deeper, 2), z3 = with(s.deeper, 3);
  std::printf("%s, L = 8, psi = %lld:\n", z2.name().c_str(), static_cast<long long>(lesson10::psi_of(z2, s.V)));
  const Measured a = lesson10::measure(world, s.ds, z2, s.capacity);
  print_outcome(a, s);
  if (a.out_of_memory) lesson10::print_error_lines(a.error, {"this run:", "- ZeRO-3:"});
  std::printf("\n%s:\n", z3.name().c_str());
  const Measured b = lesson10::measure(world, s.ds, z3, s.capacity);
  print_outcome(b, s);
  if (!b.out_of_memory) lesson10::print_model_states(b, z3, s.N);
}

void a_longer_sequence_needs_checkpointing(lesson::Beats& beats, dist::ProcessGroup& world, State& s) {
  beats.beat("a longer sequence: the activations run out, checkpointing fits",
             "T = 128 instead of 64: the model states barely change (wpe grows), the activations more than double\n"
             "(the attention's B·H·T² grows fourfold). Activation checkpointing (lesson 08) keeps each block's input\n"
             "and recomputes one block at a time in backward.");
  const Setup z3 = with(s.longer, 3), ac = with(s.longer, 3, false, true);
  std::printf("%s, L = 8, T = 128:\n", z3.name().c_str());
  const Measured a = lesson10::measure(world, s.ds, z3, s.capacity);
  print_outcome(a, s);
  if (a.out_of_memory)
    lesson10::print_error_lines(a.error, {"in use:", "activations of this run", "activation checkpointing"});
  std::printf("\n%s:\n", ac.name().c_str());
  const Measured& b = s.checkpointed = lesson10::measure(world, s.ds, ac, s.capacity);
  print_outcome(b, s);
  const runtime::ActivationShape shape = lesson10::activation_shape_of(ac, s.V);
  std::printf("activations by the formula, L·x + a + the last block's backward (bytes):\n  %s\n  measured: %s\n",
              runtime::activation_text(shape).c_str(), mib(static_cast<double>(b.activation_peak)).c_str());
  if (!b.out_of_memory) lesson10::print_model_states(b, ac, s.N);
}

void offload_trades_device_bytes(lesson::Beats& beats, dist::ProcessGroup& world, State& s) {
  beats.beat("ZeRO-Offload: device bytes traded for host bytes and copies",
             "offload_optimizer {device: cpu}: AdamW runs on the host over f32 masters of this rank's shard (m, v\n"
             "there too). Once per optimizer step the reduced gradient shard goes down (d2h, GΨ/N) and the updated\n"
             "parameters come up (h2d, PΨ/N). The device keeps (P+G)Ψ/N; the host holds 16Ψ/N.");
  const Setup off = with(s.longer, 3, true, true);
  const Measured& a = s.checkpointed;  // beat 5's run: the same without offload
  const Measured& m = s.offloaded = lesson10::measure(world, s.ds, off, s.capacity);
  print_outcome(m, s);
  if (m.out_of_memory) return;
  lesson10::print_model_states(m, off, s.N);
  const double psi = static_cast<double>(m.psi);
  const runtime::OffloadEstimate f = runtime::offload_state_bytes(3, psi, s.N, runtime::bytes_per_parameter(false));
  const auto same = [](std::int64_t measured, double formula) {
    return measured == static_cast<std::int64_t>(formula) ? "(= formula)" : "(DIFFERENT)";
  };
  std::printf("host, per rank: param %lld + grad %lld + optim %lld = %lld bytes; 16Ψ/N = 12 (master, m, v) + 4 (the\n"
              "  gradient's staging) per owned element = %.0f  %s\n",
              static_cast<long long>(m.host.param), static_cast<long long>(m.host.grad),
              static_cast<long long>(m.host.optim), static_cast<long long>(m.host.total()), f.host.total(),
              same(m.host.total(), f.host.total()));
  std::printf("copied per optimizer step (4 micro-steps): d2h %lld bytes, GΨ/N = %.0f %s; h2d %lld bytes, PΨ/N = %.0f %s\n",
              static_cast<long long>(m.d2h), f.d2h, same(m.d2h, f.d2h), static_cast<long long>(m.h2d), f.h2d,
              same(m.h2d, f.h2d));
  std::printf("the device's peak: %s with offload, %s without: the %s of AdamW's state moved to the host\n",
              mib(static_cast<double>(m.device_peak)).c_str(), mib(static_cast<double>(a.device_peak)).c_str(),
              mib(static_cast<double>(a.device.optim)).c_str());
  std::printf("optimizer step: %.1f ms on the host with its copies, %.1f ms on the device (on sim both are this\n"
              "CPU: a GPU's AdamW would be far faster than the host's, the price offload pays each step)\n",
              m.step_ms, a.step_ms);
}

void the_closing_table(lesson::Beats& beats, dist::ProcessGroup& world, State& s) {
  beats.beat("the closing table: L = 8, T = 128, every lever",
             "The last GPT of the story at every configuration, measured per rank without a capacity (so that\n"
             "what does not fit is measured too), each figure beside its formula: model states on the device,\n"
             "activations, the device's peak against the card, the host's bytes, the copies of a step.");
  const std::vector<Setup> setups = {with(s.longer, 0),       with(s.longer, 2),
                                     with(s.longer, 3),       with(s.longer, 3, true),
                                     with(s.longer, 3, true, true), with(s.longer, 3, true, true, true)};
  std::vector<Measured> runs;
  for (std::size_t i = 0; i < setups.size(); ++i)
    // Beat 6's run (offload + checkpointing), if it fit the card: then the capacity changed nothing it measured.
    runs.push_back(i == 4 && !s.offloaded.out_of_memory ? s.offloaded : lesson10::measure(world, s.ds, setups[i], 0));
  std::printf("psi = %lld, N = %d, the card %s; in parentheses the formula\n", static_cast<long long>(runs[0].psi),
              s.N, mib(static_cast<double>(s.capacity)).c_str());
  lesson10::print_table(setups, runs, s.N, s.capacity);
  bool same = true;
  for (const Measured& m : runs) same &= m.same_on_every_rank;
  std::printf("every rank measured the same bytes: %s\n", same ? "yes" : "NO");
}

void train_the_seeds_offload_config(lesson::Beats& beats, dist::ProcessGroup& world, const Options& opt, State& s) {
  beats.beat("train the baby GPT on the KJV with configs/zero3_offload.json",
             "The seeds' config as it is (micro-batch 1, 4 micro-steps, ZeRO-3, offload_optimizer cpu), with\n"
             "configs/baby.json's AdamW and schedule, on the card; and the same without offload. Offload moves\n"
             "where AdamW runs, not the math: the same losses, bit for bit in fp32.");
  lesson10::train_seeds_config(world, s.ds, opt.steps, s.capacity, beats.quick());
}

// The lesson's eight beats on every rank (rank 0 prints); main() below parses the options and runs it.
int run(lesson::Beats& beats, dist::ProcessGroup& world, const Options& opt) {
  const lesson::RanksLesson lesson10{.number = "10", .ranks_do = "ZeRO shards the model states over them", .data = opt.data};
  return lesson::run_on_ranks(world, lesson10, [&] {
    State s(opt, world);
    a_card_per_rank(beats, s);
    ddp_runs_out_of_memory(beats, world, s);
    zero2_fits(beats, world, s);
    a_deeper_gpt_needs_zero3(beats, world, s);
    a_longer_sequence_needs_checkpointing(beats, world, s);
    offload_trades_device_bytes(beats, world, s);
    the_closing_table(beats, world, s);
    train_the_seeds_offload_config(beats, world, opt, s);
  });
}

int main(int argc, char** argv) {
  Options opt;
  return lesson::main_on_ranks(argc, argv, "Lesson 10: memory, one card at a time", 8, [&](lesson::Beats& beats) {
    beats.option("--data", opt.data, "FILE", "the text to train on; `make data` writes the KJV");
    beats.option("--steps", opt.steps, "optimizer steps of each training run of the last beat", /*quick=*/10);
    beats.option("--device-memory", opt.memory, "SIZE", "each rank's card: the capacity of its sim pool");
  }, [&](lesson::Beats& beats, dist::ProcessGroup& world) { return run(beats, world, opt); });
}

// Lesson 11: ZeRO-Infinity, beyond the card. mpirun -np 4 build/bin/lesson-11 [--auto] [--quick] [--beat N]
// [--data TEXT] [--steps N] [--device-memory SIZE] (make lesson-11 starts it on 4 ranks)
// The memory wall first, in numbers: what a card, its host and an NVMe disk must hold per rank for 1B to 1T
// parameters. Then live on 4 `sim` ranks: offload_param moves the parameter shards off a card too small for
// ZeRO-Offload; offload_optimizer and offload_param "nvme" put them in swap files under a temporary folder, the
// step walks them tile by tile and the host holds a few tiles, whatever the model; ZeRO-R's constant buffers
// bound the reduction's bytes, whatever the model's width; and the baby GPT trains on the KJV with everything
// on disk, with the losses of plain ZeRO-3. Every figure measured beside its formula.
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/beat.h"
#include "common/ranks.h"
#include "infinity_runs.h"
#include "runtime/byte_size.h"
#include "zero/config.h"

using namespace minitorch;
using lesson11::Measured;
using lesson11::mib;
using lesson11::Setup;

struct Options {
  std::string data = "datasets/kjv.txt", memory = "10MiB";
  long long steps = 200;
};

// What the beats hand on: the corpus, the card, the swap's folder, and beat 3's run (beat 4's first row).
struct State {
  State(const Options& opt, dist::ProcessGroup& world)
      : ds(data::TextDataset::load(opt.data, "char", 64)), N(world.size()), capacity(card(opt.memory)), swap(world) {}
  static std::int64_t card(const std::string& size) {
    try {
      return runtime::parse_byte_size(size);  // "10MiB", "24 MiB", "1.5GB", bytes
    } catch (const std::invalid_argument& e) {
      throw lesson::UsageError(std::string("--device-memory: ") + e.what());
    }
  }
  data::TextDataset ds;
  int N;
  std::int64_t capacity;  // bytes per rank
  lesson11::SwapRoot swap;
  Measured on_disk;  // beat 3: the baby with its optimizer and parameters on NVMe, tiles of 20000
};

Setup gpt(long long layers, long long width = 128) {
  Setup s;
  s.layers = layers, s.width = width;
  return s;
}
Setup offloaded(Setup s, const std::string& optimizer, const std::string& param, long long tile = 0, bool pipeline = false) {
  s.optimizer = optimizer, s.param = param, s.tile = tile, s.pipeline = pipeline;
  return s;
}

/// "out of memory on 4 of 4 ranks ..." or "fits: ...".
void print_outcome(const Measured& m, const State& s) {
  if (m.out_of_memory)
    std::printf("out of memory on %d of %d ranks in step %d, %s\n", m.ranks_out_of_memory, s.N, m.steps_done + 1,
                m.same_on_every_rank ? "every rank at the same allocation with the same bytes in use"
                                     : "the ranks at DIFFERENT allocations");
  else
    std::printf("fits: the device's peak %s of the %s card\n", mib(static_cast<double>(m.device_peak)).c_str(),
                mib(static_cast<double>(s.capacity)).c_str());
}

/// One pool's bytes: measured, runtime::exact_offload_states' (to the byte), and the formula in real numbers (Ψ/N
/// need not be whole), with `note` after it.
void pool(const char* what, std::int64_t measured, std::int64_t exact, double formula, const std::string& text,
          const std::string& note = "") {
  char value[48] = "";
  if (text != "0") std::snprintf(value, sizeof value, " = %.0f", formula);  // "0" needs no value
  std::printf("  %-20s %10lld %10lld %s  %s%s%s\n", what, static_cast<long long>(measured),
              static_cast<long long>(exact), lesson11::agrees(measured, exact), text.c_str(), value,
              note.empty() ? "" : ("  " + note).c_str());
}

void print_pools_header() { std::printf("  %-20s %10s %10s\n", "per rank, bytes", "measured", "exact"); }

void print_every_rank(const Measured& m) {
  std::printf("every rank: measured = exact, to the byte: %s; the same bytes on every rank: %s\n",
              m.exact_on_every_rank ? "yes" : "NO", m.same_on_every_rank ? "yes" : "NO");
}

// ---- beat 1: the memory wall ----

/// One node of beat 1, after NVIDIA's DGX A100: 8 cards of 80 GB, 1 TB of DRAM, 30 TB of NVMe.
struct Node {
  int cards = 8;
  double card = 80e9, host = 1e12, disk = 30e12;  // bytes: one card's, the node's DRAM, the node's NVMe
};

/// Where beat 1 puts the model states: ZeRO-3 on the cards, + offload_optimizer "cpu", + offload_param "cpu", both
/// on "nvme" (in tiles of DeepSpeed's default sub_group_size).
enum class Placement { zero3, optimizer_on_host, params_on_host, both_on_nvme };

/// Bytes one rank of N holds in each pool, bf16 with AdamW, under `where`.
struct Pools {
  double device = 0, host = 0, disk = 0;
};
Pools pools(Placement where, double psi, int N) {
  const runtime::BytesPerParameter b = runtime::bytes_per_parameter(/*bf16=*/true);
  switch (where) {
    case Placement::zero3:
      return {runtime::model_state_bytes(3, psi, N, b).total(), 0, 0};
    case Placement::optimizer_on_host: {
      const runtime::OffloadEstimate e = runtime::offload_state_bytes(3, psi, N, b);
      return {e.device.total(), e.host.total(), 0};
    }
    case Placement::params_on_host: {
      const runtime::OffloadEstimate e = runtime::offload_param_state_bytes(psi, N, b, /*micro_steps=*/1);
      return {e.device.total(), e.host.total(), 0};
    }
    case Placement::both_on_nvme: break;
  }
  const double tile = static_cast<double>(zero::ZeroConfig{}.sub_group_size);
  const runtime::NvmeEstimate e = runtime::nvme_state_bytes(psi, N, b, 1, "nvme", tile, /*slots=*/1);
  return {e.device.total(), e.host.total() + e.host_step, e.disk.total()};  // the host's peak: during the step
}

/// Which pools of one rank of `node` are too small for `p`: "" if none, else "the card", "the card and the host".
std::string over(const Pools& p, const Node& node) {
  std::vector<std::string> small;
  if (p.device > node.card) small.push_back("the card");
  if (p.host > node.host / node.cards) small.push_back("the host");
  if (p.disk > node.disk / node.cards) small.push_back("the disk");
  std::string s;
  for (std::size_t i = 0; i < small.size(); ++i) s += (i == 0 ? "" : i + 1 == small.size() ? " and " : ", ") + small[i];
  return s;
}

void the_memory_wall(lesson::Beats& beats) {
  beats.beat("the memory wall: a card, its host and a disk, for 1B to 1T parameters",
             "ZeRO-3 shards the model states over N cards, (P+G+K)Ψ/N each; ZeRO-Offload puts the optimizer in the\n"
             "host's memory, ZeRO-Infinity the parameters too, or both on NVMe. Per rank, bf16 with AdamW (P, G, K =\n"
             "2, 2, 12), from runtime/formulas.h: which placement fits one node, and how many nodes each needs.");
  const Node node;
  const runtime::BytesPerParameter b = runtime::bytes_per_parameter(true);
  std::printf("one node: %d cards of %.0f GB, %.0f GB of host memory, %.0f TB of NVMe; per rank %.0f, %.0f and %.0f GB"
              " (GB = 1e9 bytes)\n",
              node.cards, node.card / 1e9, node.host / 1e9, node.disk / 1e12, node.card / 1e9,
              node.host / node.cards / 1e9, node.disk / node.cards / 1e9);
  const int PGK = b.P + b.G + b.K, host = 12 + b.G + b.P, host_step = 12 + 4 + b.G + b.P;
  const std::vector<std::pair<Placement, std::string>> placements = {
      {Placement::zero3, "ZeRO-3: device (P+G+K)Ψ/N = " + std::to_string(PGK) + "Ψ/N"},
      {Placement::optimizer_on_host, "+ offload_optimizer cpu: device (P+G)Ψ/N = " + std::to_string(b.P + b.G) +
                                         "Ψ/N, host " + std::to_string(host) + "Ψ/N (master, m, v 12 + the gradients'"
                                         " staging G + the updated 16-bit copy P)"},
      {Placement::params_on_host, "+ offload_param cpu: device GΨ/N = " + std::to_string(b.G) + "Ψ/N, host (P+G+K)Ψ/N = " +
                                      std::to_string(PGK) + "Ψ/N (the shards updated in place)"},
      {Placement::both_on_nvme, "both on nvme: device GΨ/N = " + std::to_string(b.G) + "Ψ/N, disk (P+12)Ψ/N = " +
                                    std::to_string(b.P + 12) + "Ψ/N, host 0 between steps and (12 + 4 + G + P)·t = " +
                                    std::to_string(host_step) + "t in the step, t = min(sub_group_size, Ψ/N), " +
                                    "sub_group_size " + std::to_string(zero::ZeroConfig{}.sub_group_size)}};
  for (const auto& [where, formulas] : placements) {
    std::printf("\n%s\n  %7s %12s %12s %12s   %-34s %s\n", formulas.c_str(), "Ψ", "device GB", "host GB", "disk GB",
                "on one node", "nodes needed");
    for (const char* size : {"1B", "10B", "100B", "1T"}) {
      const double psi = static_cast<double>(runtime::parse_parameter_count(size));
      const Pools p = pools(where, psi, node.cards);
      int nodes = 1;  // the fewest nodes whose ranks hold it: every term shrinks with N but the tile
      while (nodes < 1000000 && !over(pools(where, psi, nodes * node.cards), node).empty()) ++nodes;
      const std::string too_small = over(p, node);
      std::printf("  %6s %12.2f %12.2f %12.2f   %-34s %d (N = %d)\n", size, p.device / 1e9, p.host / 1e9, p.disk / 1e9,
                  too_small.empty() ? "fits" : ("too big for " + too_small).c_str(), nodes, nodes * node.cards);
    }
  }
  std::printf("\nThe device's figures are model states only: the units being computed (a block gathered whole, its\n"
              "gradients) and the activations come on top.\n");
}

// ---- beat 2: offload_param "cpu" ----

void offload_param_moves_the_shards(lesson::Beats& beats, dist::ProcessGroup& world, State& s) {
  beats.beat("offload_param: the parameter shards leave the card",
             "ZeRO-Offload (lesson 10) keeps (P+G)Ψ/N on the card: the parameter shards and the gradient shards.\n"
             "ZeRO-Infinity's offload_param moves the parameter shards to the host: a unit's gather copies the\n"
             "host shard up into its slot of the full buffer and all-gathers from there; the host AdamW updates the\n"
             "shard in place. The card keeps GΨ/N; each micro-step copies every shard up twice (forward, backward).");
  const Setup opt = offloaded(gpt(8), "cpu", "none"), both = offloaded(gpt(8), "cpu", "cpu");
  std::printf("%s, L = %lld, T = %lld, C = %lld, on a %s card:\n", opt.name().c_str(), opt.layers, opt.block_size,
              opt.width, mib(static_cast<double>(s.capacity)).c_str());
  const Measured a = lesson11::measure(world, s.ds, opt, s.capacity, s.swap.path());
  print_outcome(a, s);
  if (a.out_of_memory) lesson11::print_error_lines(a.error, {"in use:", "this run:", "offload_param"});
  std::printf("\n%s:\n", both.name().c_str());
  const Measured m = lesson11::measure(world, s.ds, both, s.capacity, s.swap.path());
  print_outcome(m, s);
  if (m.out_of_memory) return;
  const runtime::OffloadEstimate f =
      runtime::offload_param_state_bytes(static_cast<double>(m.psi), s.N, lesson11::fp32(), m.micro_steps);
  const runtime::BytesPerParameter b = lesson11::fp32();
  std::printf("psi = %lld, N = %d, A = %d micro-steps, fp32 (P, G, K = %d, %d, %d):\n", static_cast<long long>(m.psi), s.N,
              m.micro_steps, b.P, b.G, b.K);
  print_pools_header();
  pool("device param", m.device.param, m.exact.device.param, f.device.param, "0", "(between gathers)");
  pool("device grad", m.device.grad, m.exact.device.grad, f.device.grad, "GΨ/N");
  pool("host param", m.host.param, m.exact.host.param, f.host.param, "PΨ/N");
  pool("host grad", m.host.grad, m.exact.host.grad, f.host.grad, "GΨ/N", "(the staging)");
  pool("host optim", m.host.optim, m.exact.host.optim, f.host.optim, "KΨ/N", "(m, v: an f32 shard is its own master)");
  pool("d2h per step", m.step.d2h, m.exact.d2h, f.d2h, "GΨ/N");
  pool("h2d per step", m.step.h2d, m.exact.h2d, f.h2d, "2A·PΨ/N");
  print_every_rank(m);
  // ZeRO-Offload alone once more, on a card without a limit: the peak it needed.
  const Measured free = lesson11::measure(world, s.ds, opt, 0, s.swap.path());
  std::printf("the device's peak: %s with offload_param; %s with offload_optimizer alone (measured without a\n"
              "capacity): the parameter shards' PΨ/N = %s left the card\n",
              mib(static_cast<double>(m.device_peak)).c_str(), mib(static_cast<double>(free.device_peak)).c_str(),
              mib(f.host.param).c_str());
}

// ---- beat 3: the swap on NVMe ----

void the_swap_on_nvme(lesson::Beats& beats, dist::ProcessGroup& world, State& s) {
  beats.beat("NVMe: the optimizer and the parameters in swap files",
             "offload_optimizer and offload_param {device: nvme, nvme_path}: each rank's f32 master, m and v (12 bytes\n"
             "per owned element) and its parameter shards live in files of its swap folder. A gather reads the\n"
             "unit's shard into a host buffer and copies it up; the step walks the shard in tiles of sub_group_size\n"
             "elements: read master, m, v; bring the gradient down; AdamW on the host; write the new values into the\n"
             "shard's file and master, m, v back. Between steps nothing of the model is in memory but GΨ/N.");
  const Setup nvme = offloaded(gpt(4), "nvme", "nvme", 20000);
  const Measured& m = s.on_disk = lesson11::measure(world, s.ds, nvme, 0, s.swap.path());
  std::printf("%s, the baby (L = %lld), sub_group_size %lld, psi = %lld: %lld elements per rank in %lld tiles\n",
              nvme.name().c_str(), nvme.layers, nvme.tile, static_cast<long long>(m.psi), static_cast<long long>(m.owned),
              static_cast<long long>(m.tiles));
  std::printf("rank 0's swap folder, <nvme_path>/minitorch-swap/<run id>/rank0/:\n");
  for (const auto& [file, bytes] : m.files)
    std::printf("  %-24s %8lld bytes\n", file.c_str(), static_cast<long long>(bytes));
  if (!m.not_direct.empty()) std::printf("(here the files are not O_DIRECT: %s)\n", m.not_direct.c_str());
  const runtime::NvmeEstimate f = runtime::nvme_state_bytes(static_cast<double>(m.psi), s.N, lesson11::fp32(),
                                                            m.micro_steps, "nvme", static_cast<double>(nvme.tile), 1);
  print_pools_header();
  pool("device param", m.device.param, m.exact.device.param, f.device.param, "0", "(between gathers)");
  pool("device grad", m.device.grad, m.exact.device.grad, f.device.grad, "GΨ/N");
  pool("host model states", m.host.total(), m.exact.host.total(), f.host.total(), "0", "(between steps)");
  pool("disk param", m.disk.param, m.exact.disk.param, f.disk.param, "PΨ/N", "(exact: each file rounded up to 4 KiB)");
  pool("disk optim", m.disk.optim, m.exact.disk.optim, f.disk.optim, "12Ψ/N", "(master, m, v; rounded up likewise)");
  pool("d2h per step", m.step.d2h, m.exact.d2h, f.d2h, "GΨ/N");
  pool("h2d per step", m.step.h2d, m.exact.h2d, f.h2d, "2A·PΨ/N");
  pool("disk read per step", m.step.disk_read, m.exact.disk_read, f.disk_read, "12Ψ/N + 2A·PΨ/N");
  pool("disk write per step", m.step.disk_write, m.exact.disk_write, f.disk_write, "12Ψ/N + PΨ/N");
  print_every_rank(m);
}

// ---- beat 4: memory-centric tiling ----

void tiles_bound_the_host(lesson::Beats& beats, dist::ProcessGroup& world, State& s) {
  beats.beat("memory-centric tiling: the host holds tiles, not the model",
             "During the step the host holds a state buffer of 12 bytes per element (master, m, v) per tile in\n"
             "flight and one tile's f32 gradient: (12·slots + 4)·t bytes, t = min(sub_group_size, Ψ/N). With\n"
             "pipeline_read the next tile's read, with pipeline_write the last one's write, run on threads of their\n"
             "own while this tile updates: slots = 3, the I/O hidden behind the update. The model's size is not in it.");
  const std::vector<Setup> setups = {
      offloaded(gpt(4), "nvme", "nvme", 5000),        offloaded(gpt(4), "nvme", "nvme", 10000),
      offloaded(gpt(4), "nvme", "nvme", 20000),       offloaded(gpt(4), "nvme", "nvme", 20000, true),
      offloaded(gpt(8), "nvme", "nvme", 20000)};
  std::vector<std::pair<Setup, Measured>> runs;
  for (const Setup& setup : setups)  // beat 3's run is the third row
    runs.emplace_back(setup, setup.layers == 4 && setup.tile == 20000 && !setup.pipeline
                                 ? s.on_disk
                                 : lesson11::measure(world, s.ds, setup, 0, s.swap.path()));
  std::printf("  %-3s %9s %8s %6s %6s %14s %14s   %-28s %10s %11s\n", "L", "Ψ/N", "tile t", "tiles", "slots",
              "host optim", "optim_temp", "(12·slots + 4)·t", "disk read", "I/O hidden");
  bool exact = true, same = true;
  for (const auto& [setup, m] : runs) {
    const runtime::NvmeEstimate f = runtime::nvme_state_bytes(static_cast<double>(m.psi), s.N, lesson11::fp32(),
                                                              m.micro_steps, "nvme", static_cast<double>(setup.tile),
                                                              setup.slots());
    const std::int64_t peak = m.host_optim_peak + m.host_temp_peak;
    char formula[64];
    std::snprintf(formula, sizeof formula, "%.0f %s", f.host_step,
                  peak == m.host_step_bytes && peak == static_cast<std::int64_t>(f.host_step) ? "(= peak)" : "(DIFFERENT)");
    // The share of the I/O the main thread did not wait for: measured time, it varies from run to run.
    const double hidden = m.io_s > 0 ? 100.0 * (1.0 - m.waited_s / m.io_s) : 0.0;
    std::printf("  %-3lld %8lld %8lld %6lld %6d %14lld %14lld   %-26s %10lld %10.0f%%\n", setup.layers,
                static_cast<long long>(m.owned), setup.tile, static_cast<long long>(m.tiles), setup.slots(),
                static_cast<long long>(m.host_optim_peak), static_cast<long long>(m.host_temp_peak), formula,
                static_cast<long long>(m.step.disk_read), hidden);
    exact &= m.exact_on_every_rank, same &= m.same_on_every_rank;
  }
  std::printf("host optim: the state buffers, slots·12t; optim_temp: one tile's gradient, 4t; their sum is the tiled\n"
              "step's NvmeOptimizer::host_step_bytes() on every row\n");
  std::printf("every rank: measured = exact, to the byte: %s; the same bytes on every rank: %s\n", exact ? "yes" : "NO",
              same ? "yes" : "NO");
}

// ---- beat 5: constant buffers ----

void constant_buffers(lesson::Beats& beats, dist::ProcessGroup& world, State& s) {
  beats.beat("constant buffers: the reduction's bytes do not grow with the model",
             "ZeRO-R's C_B. A ZeRO-3 unit is a whole block, however wide; its gradients are reduce-scattered in\n"
             "chunks of at most reduce_bucket_size elements: each rank's shard cut into slices of c = bucket/N, N·c\n"
             "elements packed and c reduced per chunk, two reductions in flight. The comm buffers stay under a bound\n"
             "that depends on reduce_bucket_size and N alone, not on the model's depth or width.");
  constexpr long long kBucket = 20000;  // reduce_bucket_size: far below a block of the baby (12C² + 13C elements)
  constexpr int kInFlight = 2;          // reductions in flight at once: two, as DeepSpeed's overlap_comm keeps
  const int G = lesson11::fp32().G;
  const std::int64_t bound = runtime::reduction_buffer_bytes(kBucket, s.N, G, kInFlight);
  std::printf("plain ZeRO-3, reduce_bucket_size %lld, fp32: the bound (runtime::reduction_buffer_bytes)\n"
              "  in flight · G · (N + 1) · c = %d · %d · %d · %lld = %lld bytes\n",
              kBucket, kInFlight, G, s.N + 1, kBucket / s.N, static_cast<long long>(bound));
  std::printf("  %-3s %5s %9s %14s %16s   %s\n", "L", "C", "psi", "largest unit", "comm peak", "a whole unit, twice");
  bool under = true, same = true;
  std::int64_t first = -1;
  for (const Setup& setup : {gpt(2), gpt(8), gpt(2, 256)}) {
    Setup z = setup;
    z.bucket = kBucket;
    const Measured m = lesson11::measure(world, s.ds, z, 0, s.swap.path());
    // Without chunks a reduction packs the whole unit and reduces its shard: in flight · G · (1 + 1/N) · numel.
    const double whole = kInFlight * G * (1.0 + 1.0 / s.N) * static_cast<double>(m.largest_unit);
    std::printf("  %-3lld %5lld %9lld %14lld %9lld bytes %s   %.0f bytes\n", z.layers, z.width,
                static_cast<long long>(m.psi), static_cast<long long>(m.largest_unit), static_cast<long long>(m.comm_peak),
                m.comm_peak <= bound ? "<= bound" : "> BOUND", whole);
    under &= m.comm_peak <= bound, same &= m.same_on_every_rank;
    if (z.width == 128) {
      if (first >= 0 && m.comm_peak != first) same = false;
      first = m.comm_peak;
    }
  }
  std::printf("the comm peak at L = 2 and L = 8 the same, every run under the bound, the same on every rank: %s\n",
              under && same ? "yes" : "NO");
}

// ---- beat 6: the baby GPT on the KJV, everything on NVMe ----

void train_with_everything_on_nvme(lesson::Beats& beats, dist::ProcessGroup& world, const Options& opt, State& s) {
  beats.beat("train the baby GPT on the KJV with the optimizer and the parameters on NVMe",
             "configs/zero3_offload.json's batch (micro-batch 1, 4 micro-steps) and configs/baby.json's AdamW and\n"
             "schedule, as plain ZeRO-3 and with offload_optimizer and offload_param on nvme: where the bytes live\n"
             "changes, not the math. The same losses (fp32: within 1e-6 relative), and every pool beside its formula.");
  lesson11::train_on_nvme(world, s.ds, opt.steps, s.swap.path(), beats.quick());
  const bool gone = s.swap.remove(world);
  std::printf("the swap's temporary folder removed: %s\n", gone ? "yes" : "NO");
}

// The lesson's six beats on every rank (rank 0 prints); main() below parses the options and runs it.
int run(lesson::Beats& beats, dist::ProcessGroup& world, const Options& opt) {
  const lesson::RanksLesson lesson11{
      .number = "11", .ranks_do = "ZeRO-3 shards the model states over them", .data = opt.data};
  return lesson::run_on_ranks(world, lesson11, [&] {
    State s(opt, world);
    the_memory_wall(beats);
    offload_param_moves_the_shards(beats, world, s);
    the_swap_on_nvme(beats, world, s);
    tiles_bound_the_host(beats, world, s);
    constant_buffers(beats, world, s);
    train_with_everything_on_nvme(beats, world, opt, s);
  });
}

int main(int argc, char** argv) {
  Options opt;
  return lesson::main_on_ranks(argc, argv, "Lesson 11: ZeRO-Infinity, beyond the card", 6, [&](lesson::Beats& beats) {
    beats.option("--data", opt.data, "FILE", "the text to train on; `make data` writes the KJV");
    beats.option("--steps", opt.steps, "optimizer steps of each training run of the last beat", /*quick=*/10);
    beats.option("--device-memory", opt.memory, "SIZE", "each rank's card in beat 2: the capacity of its sim pool");
  }, [&](lesson::Beats& beats, dist::ProcessGroup& world) { return run(beats, world, opt); });
}

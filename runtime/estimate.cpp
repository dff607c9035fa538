#include "runtime/estimate.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>

#include "runtime/config.h"

namespace minitorch::runtime {

std::int64_t parse_parameter_count(const std::string& text) {
  const std::string what = "'" + text +
                           "' is not a number of parameters (write it as 124439808, 7.5e9, or with a suffix "
                           "K, M, B or T: 124M, 7.5B, 1T)";
  std::string digits = text;
  double unit = 1;
  if (!digits.empty()) {
    switch (std::toupper(static_cast<unsigned char>(digits.back()))) {
      case 'K': unit = 1e3; break;
      case 'M': unit = 1e6; break;
      case 'B': unit = 1e9; break;
      case 'T': unit = 1e12; break;
      default: break;
    }
    if (unit != 1) digits.pop_back();
  }
  // from_chars takes no sign, "inf" or "nan" as a number only when written so: refuse them by hand.
  if (digits.empty() || !(std::isdigit(static_cast<unsigned char>(digits.front())) || digits.front() == '.'))
    throw ConfigError(what);
  double v = 0;
  const char* end = digits.data() + digits.size();
  auto [p, ec] = std::from_chars(digits.data(), end, v);
  if (ec != std::errc() || p != end || !std::isfinite(v)) throw ConfigError(what);
  v *= unit;
  // Whole to the count's precision: 7.5e9 is whole, 1.5 is not, 0.1234567M is not.
  if (!(v >= 1) || v > 1e18 || std::abs(v - std::round(v)) > 1e-9 * v)
    throw ConfigError("'" + text + "' must be a whole number of parameters from 1 to 1e18");
  return static_cast<std::int64_t>(std::llround(v));
}

std::string format_parameter_count(std::int64_t psi) {
  static const std::array<std::pair<std::int64_t, char>, 4> units = {
      {{1'000'000'000'000, 'T'}, {1'000'000'000, 'B'}, {1'000'000, 'M'}, {1'000, 'K'}}};
  for (auto [unit, suffix] : units) {
    if (psi < unit) continue;
    if (psi % (unit / 100) != 0) break;  // 124439808 reads better whole than as 124.439808M
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(psi) / static_cast<double>(unit));
    std::string s = buf;
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
    return s + suffix;
  }
  return std::to_string(psi);
}

Placement offload_placement(int stage, double psi, int world, BytesPerParameter b, Offload offload, OnNvme nvme) {
  const ModelStateEstimate all = model_state_bytes(stage, psi, world, b);  // validates stage and world
  Placement p;
  p.disk_text.assign(1, '0');
  if (nvme != OnNvme::none) {
    if (offload == Offload::none) throw std::invalid_argument("offload_placement: NVMe holds offloaded states: give an offload");
    if (nvme == OnNvme::all && offload != Offload::param)
      throw std::invalid_argument("offload_placement: the parameters on NVMe need Offload::param");
    if (stage != 3) {
      p.valid = false;
      p.why = "NVMe offload needs ZeRO stage 3";
      return p;
    }
    const bool params_off = offload == Offload::param;
    const NvmeEstimate e = nvme_state_bytes(psi, world, b, /*micro_steps=*/1,
                                            !params_off ? "none" : nvme == OnNvme::all ? "nvme" : "cpu",
                                            /*tile_elements=*/0, /*slots=*/1);
    p.device = e.device;
    p.cpu = e.host;
    p.disk = e.disk;
    p.device_text = params_off ? "GΨ/N (+ the units being computed)" : "(P+G)Ψ/N";
    p.cpu_text = params_off && nvme == OnNvme::optimizer ? "PΨ/N (+ the step's tiles)" : "the step's tiles";
    p.disk_text = nvme == OnNvme::all ? "(P+12)Ψ/N" : "12Ψ/N";
    return p;
  }
  switch (offload) {
    case Offload::none:
      p.device = all;
      p.device_text = model_states_text(stage);
      p.cpu_text.assign(1, '0');  // not = "0": GCC 12 warns -Wrestrict falsely on that
      return p;
    case Offload::optimizer:
      if (stage == 0) {
        p.valid = false;
        p.why = "offload_optimizer needs ZeRO stage 1, 2 or 3";
        return p;
      }
      {  // what minitorch's ZeRO-Offload holds (runtime/formulas.h, docs/design.md §10): the host runs AdamW
         // on this rank's shard (f32 master, m, v) with a staging copy of its gradients (and of its 16-bit
         // parameters); the device keeps the stage's parameters and gradients.
        const OffloadEstimate e = offload_state_bytes(stage, psi, world, b);
        p.device = e.device;
        p.cpu = e.host;
        p.device_text = model_states_text(stage, /*offload=*/true);
        p.cpu_text = "16Ψ/N";
      }
      return p;
    case Offload::param:
      if (stage != 3) {
        p.valid = false;
        p.why = "offload_param needs ZeRO stage 3";
        return p;
      }
      {  // ZeRO-Infinity's offload_param with offload_optimizer (runtime/formulas.h): the shards and the
         // optimizer on the host; the device keeps the reduced gradient shards (and the units computing).
        const OffloadEstimate e = offload_param_state_bytes(psi, world, b, /*micro_steps=*/1);
        p.device = e.device;
        p.cpu = e.host;
        p.device_text = "GΨ/N (+ the units being computed)";
        p.cpu_text = "(P+G+K)Ψ/N";
      }
      return p;
  }
  throw std::invalid_argument("offload_placement: unknown offload");
}

DeepSpeedTopology deepspeed_topology(int world, std::optional<int> gpus_per_node) {
  if (!gpus_per_node) return {world, 1};
  const int g = *gpus_per_node;
  if (g > world)
    throw ConfigError("--gpus-per-node " + std::to_string(g) + " is more than --ranks " + std::to_string(world) +
                      ": DeepSpeed's estimate would be for a node of " + std::to_string(g) +
                      " GPUs, not for these ranks (give at most " + std::to_string(world) + ")");
  if (world % g != 0)
    throw ConfigError("--ranks " + std::to_string(world) + " is not a whole number of nodes of --gpus-per-node " +
                      std::to_string(g));
  return {g, world / g};
}

std::string topology_text(DeepSpeedTopology t) {
  return std::to_string(t.nodes) + (t.nodes == 1 ? " node x " : " nodes x ") + std::to_string(t.gpus_per_node) +
         (t.gpus_per_node == 1 ? " GPU" : " GPUs");
}

std::string format_gib(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / kGiB);  // DeepSpeed: f"{bytes/2**30:6.2f}GB"
  return buf;
}

bool parse_zero_init(const std::string& text) {
  if (text == "0" || text == "1") return text == "1";
  throw ConfigError("--zero-init must be 0 or 1 (DeepSpeed's zero_init), got '" + text + "'");
}

double parse_buffer_factor(const std::string& text) {
  double v = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || p != end || !std::isfinite(v) || v < 1)
    throw ConfigError("--buffer-factor must be a number of at least 1 (DeepSpeed's additional_buffer_factor, "
                      "default 1.5), got '" + text + "'");
  return v;
}

namespace {
/// "·1.5": the factor as the formulas print it.
std::string times(double factor) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "·%g", factor);
  return buf;
}
}  // namespace

// The arithmetic follows DeepSpeed's Python term by term and in its order (int products exact, then the
// float factors), and truncates where it returns int(), so the bytes are the ones it prints.
DeepSpeedEstimate deepspeed_zero2(double psi, int gpus_per_node, int nodes, bool cpu_offload, double factor) {
  const double total = static_cast<double>(gpus_per_node) * nodes;
  DeepSpeedEstimate e;
  if (cpu_offload) {
    e.gpu = 2 * psi;
    e.gpu_text = "2Ψ";
    e.cpu = std::trunc(psi * std::max(4 * total, 16.0) * factor);
    e.cpu_text = "Ψ·max(4N, 16)" + times(factor);
  } else {
    e.gpu = 2 * psi + std::trunc(18 * psi / total);
    e.gpu_text = "2Ψ + 18Ψ/N";
    e.cpu = std::trunc(psi * 4 * gpus_per_node * factor);
    e.cpu_text = "4Ψ·gpus_per_node" + times(factor);
  }
  return e;
}

double deepspeed_zero2_gpu_before_v0_14_3(double psi, int world) { return 4 * psi + std::trunc(16 * psi / world); }

DeepSpeedEstimate deepspeed_zero3(double psi, double largest_layer, int gpus_per_node, int nodes, bool cpu_offload,
                                  bool cpu_offload_params, bool zero_init, double factor) {
  const double total = static_cast<double>(gpus_per_node) * nodes, per_node = 1.0 / nodes;  // its gpus_factor
  const double layer = 4 * largest_layer;
  DeepSpeedEstimate e;
  if (cpu_offload) {
    const int k = cpu_offload_params ? 18 : 16;  // fp32 grads, params, m, v (+ 16-bit params when they move too)
    const std::string ks = std::to_string(k);
    e.gpu = cpu_offload_params ? layer : layer + std::trunc(2 * psi / total);
    e.gpu_text = cpu_offload_params ? "4L" : "4L + 2Ψ/N";
    e.cpu = std::trunc(zero_init ? psi * k * per_node * factor
                                 : psi * std::max(4.0 * gpus_per_node, k * per_node) * factor);
    e.cpu_text = (zero_init ? ks + "Ψ/nodes" : "Ψ·max(4·gpus_per_node, " + ks + "/nodes)") + times(factor);
  } else {
    e.gpu = layer + std::trunc(18 * psi / total);
    e.gpu_text = "4L + 18Ψ/N";
    e.cpu = std::trunc((zero_init ? largest_layer : psi) * 4 * gpus_per_node * factor);
    e.cpu_text = (zero_init ? "4L·gpus_per_node" : "4Ψ·gpus_per_node") + times(factor);
  }
  return e;
}

std::string deepspeed_notes(Offload offload, bool zero2, bool zero3, bool zero3_needs_layer, bool bf16,
                            DeepSpeedOptions options) {
  std::string s;
  const auto add = [&s](const std::string& line) { s += line + "\n"; };
  char opts[160];
  std::snprintf(opts, sizeof opts, "  zero_init = %d (--zero-init), additional_buffer_factor %g (--buffer-factor).",
                options.zero_init ? 1 : 0, options.buffer_factor);
  add("  DeepSpeed's estimate_zero2_model_states_mem_needs (runtime/zero/stage_1_and_2.py) and");
  add("  estimate_zero3_model_states_mem_needs (runtime/zero/stage3.py), written here from their formulas: N GPUs as");
  add("  nodes of --gpus-per-node (default: one node of N), the product printed as nodes x GPUs;");
  add(opts);
  add("  GiB = bytes / 2^30, the number DeepSpeed prints and calls \"GB\" (--json has the exact bytes); the paper's");
  add("  table above is in GB = 1e9 bytes. DeepSpeed has no ZeRO-1 estimator.");
  if (zero3_needs_layer)
    add("  ZeRO-3 left out: DeepSpeed's estimate needs the largest layer's parameters; give --largest-layer L.");
  add(std::string("  Why they differ from the paper's") +
      (bf16 ? ":" : " (they assume 16-bit training whatever the run; the table above is fp32):"));
  if (offload == Offload::none) {
    if (zero2) {
      add("  - ZeRO-2: 2Ψ + 18Ψ/N against the paper's 2Ψ + 14Ψ/N: DeepSpeed's 18 = 16-bit gradients 2 + an fp32 copy of");
      add("    the gradients 4 (its optimizer steps on fp32 gradients) + fp32 parameters 4 + Adam m, v 8; the paper's");
      add("    G + K = 2 + 12 has no fp32 gradients. Before DeepSpeed v0.14.3 (June 2024, commit f4cb866c2, PR #5099;");
      add("    still in its memory.rst) it was 4Ψ + 16Ψ/N: the 16-bit gradients counted whole on every GPU, as in ZeRO-1.");
    }
    if (zero3) {
      add("  - ZeRO-3: 18Ψ/N against the paper's 16Ψ/N, the fp32 gradient copy again, plus 4L: the largest layer's L");
      add("    parameters gathered whole in 16 bits with their gradients (2 + 2 bytes) while it computes; the paper");
      add("    counts only the sharded states.");
    }
    add("  - per CPU: the paper counts device memory only. DeepSpeed sizes the host for loading the model: 4 bytes per");
    add(std::string("    parameter in each GPU's process of a node") +
        (zero3 && options.zero_init ? " (ZeRO-3 with zero_init: of the largest layer only)" : "") + ", x the factor.");
    return s;
  }
  if (zero2 && offload == Offload::optimizer)
    add("  - ZeRO-2 per GPU: 2Ψ, the paper's PΨ: only the 16-bit parameters stay on the device.");
  if (zero3) {
    add(std::string("  - ZeRO-3 per GPU: ") +
        (offload == Offload::optimizer ? "2Ψ/N, the paper's PΨ/N," : "nothing sharded, as here,") +
        " plus 4L: the largest layer gathered whole in");
    add("    16 bits with its gradients while it computes, which the paper's formulas leave out.");
  }
  const std::string k = offload == Offload::param ? "18" : "16";
  add(std::string("  - per CPU: the CPU row above is one rank's shard, ") +
      (offload == Offload::param ? "(P+G+K)Ψ/N" : "(G+K)Ψ/N") + " with 16-bit gradients. DeepSpeed sizes a");
  add("    node's host for the shards with fp32 gradients, " + k + " bytes per parameter (ZeRO-3 divides them");
  add("    over the nodes, ZeRO-2 does not), or for the processes loading the model in fp32, 4 bytes per");
  add(std::string("    parameter per GPU, when that is more (ZeRO-2 always, ZeRO-3 only with zero_init 0") +
      (zero3 && options.zero_init ? ", not here" : "") + "), x the factor.");
  return s;
}

std::pair<std::int64_t, std::string> largest_layer(const std::vector<std::pair<std::string, Shape>>& shapes) {
  std::map<std::string, std::int64_t> per_module;
  for (const auto& [name, shape] : shapes) {
    const std::size_t dot = name.rfind('.');
    per_module[dot == std::string::npos ? std::string() : name.substr(0, dot)] += shape_numel(shape);
  }
  std::pair<std::int64_t, std::string> best{0, ""};
  for (const auto& [module, n] : per_module)
    if (n > best.first) best = {n, module};
  return best;
}

nn::NamedTensors meta_parameters(const std::vector<std::pair<std::string, Shape>>& shapes) {
  const Tensor one = Tensor::scalar(0.f);  // every "parameter" is a stride-0 view of this one element
  nn::NamedTensors out;
  out.reserve(shapes.size());
  for (const auto& [name, shape] : shapes) out.emplace_back(name, one.expand(shape));
  return out;
}

zero::ModelStateBytes exact_model_states(int stage, const zero::Partition& plan, BytesPerParameter b,
                                   const std::vector<bool>& persistent) {
  if (stage < 0 || stage > 3) throw std::invalid_argument("exact_model_states: stage " + std::to_string(stage) + " (0-3)");
  const std::int64_t psi = plan.numel(), n = plan.world();
  if (stage == 0 || n == 1)  // one rank trains without a partition, whatever the stage (zero/strategy.cpp)
    return {b.P * psi, b.G * psi, b.K * psi};
  const std::int64_t flat = psi + plan.padding();
  std::int64_t mine = 0;  // AdamW keeps master, m, v for the pieces only: never for padding
  for (const zero::ShardPiece& piece : plan.pieces()) mine += piece.range.size();
  if (stage == 1) return {b.P * flat, b.G * flat, b.K * mine};
  if (stage == 2) return {b.P * flat, b.G * flat / n, b.K * mine};
  // Stage 3: a unit's shard, a persistent bucket whole (zero/stage3.h); gradients sharded everywhere.
  if (persistent.size() != plan.buckets().size())
    throw std::invalid_argument("exact_model_states: stage 3 needs the persistent flag of every bucket (zero::plan_units)");
  std::int64_t param = 0;
  for (std::size_t i = 0; i < plan.buckets().size(); ++i)
    param += persistent[i] ? plan.buckets()[i].numel : plan.buckets()[i].numel / n;
  return {b.P * param, b.G * flat / n, b.K * mine};
}

ExactOffload exact_offload_states(int stage, const zero::Partition& plan, BytesPerParameter b,
                                  const std::vector<bool>& persistent, const OffloadShape& how) {
  if (stage < 1 || stage > 3)
    throw std::invalid_argument("exact_offload_states: offload_optimizer needs stage 1, 2 or 3, got " + std::to_string(stage));
  if ((how.param || how.nvme) && stage != 3)
    throw std::invalid_argument("exact_offload_states: offload_param and NVMe need stage 3, got " + std::to_string(stage));
  if (stage == 3 && persistent.size() != plan.buckets().size())
    throw std::invalid_argument("exact_offload_states: stage 3 needs the persistent flag of every bucket (zero::plan_units)");
  const std::int64_t n = plan.world(), flat = plan.numel() + plan.padding();
  const auto is_unit = [&](std::size_t bucket) { return stage == 3 && !persistent[bucket]; };
  // This rank's owned elements (AdamW keeps master, m, v for the pieces only, never for padding), of them those
  // in a unit's shard (stage 3), and the largest piece (a tile of sub_group_size 0).
  std::int64_t mine = 0, mine_in_units = 0, largest_piece = 0;
  for (const zero::ShardPiece& piece : plan.pieces()) {
    mine += piece.range.size();
    largest_piece = std::max(largest_piece, piece.range.size());
    if (is_unit(piece.bucket)) mine_in_units += piece.range.size();
  }
  const std::int64_t mine_on_device = mine - (how.param ? mine_in_units : 0);
  constexpr std::int64_t kBlock = 4096;  // a swap file's size is rounded up to it
  auto file_bytes = [](std::int64_t bytes) { return (bytes + kBlock - 1) / kBlock * kBlock; };
  std::int64_t param = b.P * flat, unit_shards = 0, unit_files = 0;  // stages 1 and 2: every parameter; 3: below
  if (stage == 3) {
    param = 0;
    for (std::size_t i = 0; i < plan.buckets().size(); ++i) {
      if (is_unit(i)) {
        unit_shards += plan.buckets()[i].numel / n;
        unit_files += file_bytes(b.P * (plan.buckets()[i].numel / n));
      } else {
        param += b.P * plan.buckets()[i].numel;  // a persistent bucket, whole
      }
    }
    if (!how.param) param += b.P * unit_shards;
  }
  ExactOffload e;
  e.device = {param, stage == 1 ? b.G * flat : b.G * flat / n, 0};
  e.d2h = b.G * mine;
  // Up: the new values of the pieces on the device; with offload_param each unit's shard before its two gathers.
  e.h2d = b.P * mine_on_device + (how.param ? 2 * how.micro_steps * b.P * unit_shards : 0);
  const bool on_disk = how.param && how.param_on_disk;
  const std::int64_t host_param = how.param && !on_disk ? b.P * unit_shards : 0;
  if (how.nvme) {  // master, m, v on disk; nothing staged on the host between steps
    e.host = {host_param, 0, 0};
    e.disk = {on_disk ? unit_files : 0, 0, 3 * file_bytes(4 * mine)};
    e.disk_read = 12 * mine + (on_disk ? 2 * how.micro_steps * b.P * unit_shards : 0);
    e.disk_write = 12 * mine + (on_disk ? b.P * mine_in_units : 0);
    const std::int64_t tile = how.tile_elements > 0 ? std::min(how.tile_elements, mine) : largest_piece;
    e.host_step = (12 * how.slots + 4 + (b.P == 2 ? b.G + b.P : 0)) * tile;
  } else {  // ZeRO-Offload's staging and AdamW on the host (an f32 unit piece on the host is its own master)
    const std::int64_t in_place = mine - mine_on_device;  // offload_param's unit pieces, updated where they live
    e.host = {host_param + (b.P == 2 ? 2 * mine_on_device : 0), b.G * mine,
              (b.P == 2 ? 12 : 8) * in_place + 12 * mine_on_device};
  }
  return e;
}

const std::vector<PaperTable1Row>& paper_table1() {
  // ZeRO paper (arXiv:1910.02054), Table 1, as printed: P_os, P_os+g, P_os+g+p in GB.
  static const std::vector<PaperTable1Row> rows = {
      {7.5e9, 1, {"120", "120", "120"}},      {128e9, 1, {"2048", "2048", "2048"}},
      {1e12, 1, {"16000", "16000", "16000"}}, {7.5e9, 4, {"52.5", "41.3", "30"}},
      {128e9, 4, {"896", "704", "512"}},      {1e12, 4, {"7000", "5500", "4000"}},
      {7.5e9, 16, {"35.6", "21.6", "7.5"}},   {128e9, 16, {"608", "368", "128"}},
      {1e12, 16, {"4750", "2875", "1000"}},   {7.5e9, 64, {"31.4", "16.6", "1.88"}},
      {128e9, 64, {"536", "284", "32"}},      {1e12, 64, {"4187", "2218", "250"}},
      {7.5e9, 256, {"30.4", "15.4", "0.47"}}, {128e9, 256, {"518", "263", "8"}},
      {1e12, 256, {"4046", "2054", "62.5"}},  {7.5e9, 1024, {"30.1", "15.1", "0.12"}},
      {128e9, 1024, {"513", "257", "2"}},     {1e12, 1024, {"4011", "2013", "15.6"}},
  };
  return rows;
}

bool agrees_with_printed(double gb, const std::string& printed) {
  const std::size_t dot = printed.find('.');
  const int decimals = dot == std::string::npos ? 0 : static_cast<int>(printed.size() - dot - 1);
  return std::abs(gb - std::stod(printed)) < std::pow(10.0, -decimals);
}

}  // namespace minitorch::runtime

// minitorch-estimate --params P[,P...] --ranks N[,N...] [--stage S] [--bf16|--fp32] [--offload optimizer|param]
//                    [--gpus-per-node G] [--largest-layer L] [--zero-init 0|1] [--buffer-factor F] [--json]
// minitorch-estimate --config CONFIG.json --ranks N[,N...] [--data TEXT] [--stage S] [--gpus-per-node G]
//                    [--zero-init 0|1] [--buffer-factor F] [--json]
// minitorch-estimate --table1 [--stage S] [--json]
// Model-state bytes per rank for DDP and each ZeRO stage, before anything runs (docs/design.md §8, "The
// estimator"): the paper's formulas in GB = 1e9 bytes, DeepSpeed's estimators in GiB = 2^30 bytes (the
// number DeepSpeed prints as "GB"; --json has their exact bytes):
// - --params: the ZeRO paper's formulas in real numbers (mixed precision, K = 12, unless --fp32); with
//   --offload, what stays on the device and what moves to the CPU (an estimate: offload is not
//   implemented in training yet); beside them DeepSpeed's own estimators and why they differ.
// - --table1: the paper's Table 1 (7.5B, 128B, 1T on 1 to 1024 ranks), each cell beside the printed one.
// - --config: the exact bytes every rank of a run of CONFIG on N ranks measures at its optimizer steps
//   (the run report's ranks[i].model_states), planned by the stages' own zero::Partition.
// Exit status: 0 done, 2 usage or configuration error, 1 any other error.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "data/text_dataset.h"
#include "data/tokenizer.h"
#include "nn/gpt.h"
#include "runtime/engine.h"
#include "runtime/estimate.h"
#include "zero/stage3.h"

using namespace minitorch;
using runtime::ConfigError;
using json = nlohmann::ordered_json;

namespace {

constexpr double kGB = 1e9;
constexpr const char* kOffloadNote =
    "(offload_optimizer as minitorch runs it, docs/design.md §10; offload_param: an estimate, not implemented yet)";
const char* const kStageName[4] = {"DDP", "ZeRO-1", "ZeRO-2", "ZeRO-3"};
const char* const kPaperName[4] = {"DP baseline", "P_os", "P_os+g", "P_os+g+p"};

// ---- reading the options ----

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  if (!s.empty() && s.back() == ',') out.emplace_back();  // "4," has an empty last item
  return out;
}

/// A comma list of whole numbers from 1 to 2^24 (`option` names the flag in the error).
std::vector<int> parse_counts(const std::string& option, const std::string& text) {
  std::vector<int> out;
  for (const std::string& item : split(text)) {
    if (!cli::decimal<int>(1)(item).empty() || std::stoi(item) > (1 << 24))
      throw ConfigError(option + " '" + text + "': '" + item + "' is not a whole number from 1 to 16777216");
    out.push_back(std::stoi(item));
  }
  if (out.empty()) throw ConfigError(option + " is empty: give N or a list N,N,...");
  return out;
}

std::vector<std::int64_t> parse_params(const std::string& text) {
  std::vector<std::int64_t> out;
  for (const std::string& item : split(text)) {
    try {
      out.push_back(runtime::parse_parameter_count(item));
    } catch (const ConfigError& e) {
      throw ConfigError(std::string("--params: ") + e.what());
    }
  }
  if (out.empty()) throw ConfigError("--params is empty: give P or a list P,P,...");
  return out;
}

/// The stages to show: all four, or the one --stage names.
std::vector<int> parse_stages(const std::optional<std::string>& text) {
  if (!text) return {0, 1, 2, 3};
  if (*text == "0" || *text == "1" || *text == "2" || *text == "3") return {std::stoi(*text)};
  throw ConfigError("--stage must be 0 (DDP), 1, 2 or 3, got '" + *text + "'");
}

// ---- formatting ----

/// Up to 6 significant digits, never an exponent: 31.4062, 1.875, 4187.5, 16000, 1536000.
std::string gb(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, bytes / kGB < 1e6 ? "%.6g" : "%.0f", bytes / kGB);
  return buf;
}

/// A table line without the padding after its last cell.
void print_line(std::string line) {
  while (!line.empty() && line.back() == ' ') line.pop_back();
  std::printf("%s\n", line.c_str());
}

/// 3300352 -> "3,300,352" (v >= 0).
std::string commas(std::int64_t v) {
  const std::string digits = std::to_string(v);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

/// Columns on the screen: UTF-8 continuation bytes take none (Ψ is two bytes, one column).
std::size_t columns(const std::string& s) {
  return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}
std::string pad(const std::string& s, std::size_t width, bool right = false) {
  const std::size_t w = columns(s);
  if (w >= width) return s + " ";
  const std::string fill(width - w, ' ');
  return right ? fill + s + " " : s + fill + " ";
}

json bytes_json(const runtime::ModelStateEstimate& e) {
  return {{"param", e.param}, {"grad", e.grad}, {"optim", e.optim}, {"total", e.total()}};
}
json bytes_json(const zero::ModelStateBytes& b) {
  return {{"param", b.param}, {"grad", b.grad}, {"optim", b.optim}, {"total", b.total()}};
}

std::string offload_name(runtime::Offload o) {
  return o == runtime::Offload::none ? "none" : o == runtime::Offload::optimizer ? "optimizer" : "param";
}

void print_precision(bool bf16) {
  const runtime::BytesPerParameter b = runtime::bytes_per_parameter(bf16);
  if (bf16)
    std::printf("precision: mixed (16-bit parameters and gradients; fp32 master, Adam m and v): P = %d, G = %d, K = %d "
                "bytes per parameter (the paper's mixed-precision Adam)\n", b.P, b.G, b.K);
  else
    std::printf("precision: fp32 (parameters, gradients; Adam m and v): P = %d, G = %d, K = %d bytes per parameter\n",
                b.P, b.G, b.K);
}

// ---- DeepSpeed's estimators beside the paper's ----

/// The DeepSpeed columns to show: ZeRO-2's, ZeRO-3's (only with a largest layer: never L = 0).
struct DeepSpeedColumns {
  bool zero2 = false, zero3 = false;
};

/// Whole bytes as a JSON integer while they fit (always, for Ψ up to 10^17).
json exact_bytes(double v) { return v < 9.2e18 ? json(static_cast<std::int64_t>(v)) : json(v); }

json estimate_json(const runtime::DeepSpeedEstimate& e) {
  return {{"gpu", exact_bytes(e.gpu)}, {"cpu", exact_bytes(e.cpu)}, {"gpu_gib", e.gpu / runtime::kGiB},
          {"cpu_gib", e.cpu / runtime::kGiB}, {"gpu_text", e.gpu_text}, {"cpu_text", e.cpu_text}};
}

/// DeepSpeed's estimates for Ψ on N GPUs: the JSON (exact bytes) and the text cells (GiB).
json deepspeed_row(double psi, int world, std::optional<int> gpus_per_node, std::optional<std::int64_t> largest,
                   runtime::Offload offload, DeepSpeedColumns show, runtime::DeepSpeedOptions opt,
                   std::vector<std::string>* cells) {
  const runtime::DeepSpeedTopology t = runtime::deepspeed_topology(world, gpus_per_node);
  json j = {{"gpus_per_node", t.gpus_per_node}, {"nodes", t.nodes}, {"topology", runtime::topology_text(t)},
            {"zero_init", opt.zero_init}, {"buffer_factor", opt.buffer_factor},
            {"largest_layer", largest ? json(*largest) : json(nullptr)}};
  cells->push_back(runtime::topology_text(t));
  if (show.zero2) {
    if (offload == runtime::Offload::param) {
      j["zero2"] = nullptr;  // offload_param needs stage 3
      cells->insert(cells->end(), {"n/a", "n/a"});
    } else {
      const runtime::DeepSpeedEstimate e = runtime::deepspeed_zero2(
          psi, t.gpus_per_node, t.nodes, offload == runtime::Offload::optimizer, opt.buffer_factor);
      j["zero2"] = estimate_json(e);
      cells->insert(cells->end(), {runtime::format_gib(e.gpu), runtime::format_gib(e.cpu)});
      if (offload == runtime::Offload::none) {
        const double old = runtime::deepspeed_zero2_gpu_before_v0_14_3(psi, world);
        j["zero2"]["gpu_before_v0_14_3"] = exact_bytes(old);
        cells->push_back(runtime::format_gib(old));
      }
    }
  }
  if (show.zero3) {
    const runtime::DeepSpeedEstimate e = runtime::deepspeed_zero3(
        psi, static_cast<double>(*largest), t.gpus_per_node, t.nodes, offload != runtime::Offload::none,
        offload == runtime::Offload::param, opt.zero_init, opt.buffer_factor);
    j["zero3"] = estimate_json(e);
    cells->insert(cells->end(), {runtime::format_gib(e.gpu), runtime::format_gib(e.cpu)});
  }
  return j;
}

/// The headers of deepspeed_row's cells, two lines each (name, formula).
std::vector<std::pair<std::string, std::string>> deepspeed_headers(runtime::Offload offload, DeepSpeedColumns show,
                                                                   runtime::DeepSpeedOptions opt) {
  std::vector<std::pair<std::string, std::string>> h = {{"nodes x GPUs", ""}};
  if (show.zero2) {
    if (offload == runtime::Offload::param) {
      h.insert(h.end(), {{"ZeRO-2 per GPU", "(no offload_param)"}, {"ZeRO-2 per CPU", ""}});
    } else {
      const runtime::DeepSpeedEstimate e =
          runtime::deepspeed_zero2(1, 1, 1, offload == runtime::Offload::optimizer, opt.buffer_factor);
      h.insert(h.end(), {{"ZeRO-2 per GPU", e.gpu_text}, {"ZeRO-2 per CPU", e.cpu_text}});
      if (offload == runtime::Offload::none) h.emplace_back("ZeRO-2 <v0.14.3", "4Ψ + 16Ψ/N");
    }
  }
  if (show.zero3) {
    const runtime::DeepSpeedEstimate e = runtime::deepspeed_zero3(
        1, 1, 1, 1, offload != runtime::Offload::none, offload == runtime::Offload::param, opt.zero_init, opt.buffer_factor);
    h.insert(h.end(), {{"ZeRO-3 per GPU", e.gpu_text}, {"ZeRO-3 per CPU", e.cpu_text}});
  }
  return h;
}

// ---- --params and --table1 ----

struct ParamsRequest {
  std::vector<std::int64_t> psis;
  std::vector<int> ranks;
  std::vector<int> stages;
  bool bf16 = true;
  runtime::Offload offload = runtime::Offload::none;
  std::optional<int> gpus_per_node;
  std::optional<std::int64_t> largest;
  runtime::DeepSpeedOptions ds_options;
  bool table1 = false;
  bool as_json = false;
};

const runtime::PaperTable1Row* paper_row(double psi, int world) {
  for (const auto& row : runtime::paper_table1())
    if (row.psi == psi && row.world == world) return &row;
  return nullptr;
}

void estimate_params(const ParamsRequest& q) {
  const runtime::BytesPerParameter b = runtime::bytes_per_parameter(q.bf16);
  const bool offload = q.offload != runtime::Offload::none;
  const bool want3 = std::count(q.stages.begin(), q.stages.end(), 3) > 0;
  // DeepSpeed's ZeRO-3 estimate without L would be a number for no model: asked for alone (--stage 3) it is
  // an error; beside the other stages its columns are left out, and the notes say so.
  if (want3 && !q.largest && q.stages.size() == 1)
    throw ConfigError("DeepSpeed's ZeRO-3 estimate needs the largest layer's parameters (its largest_layer_params): "
                      "give --largest-layer L, or --config CONFIG to take it from the model");
  const DeepSpeedColumns ds{std::count(q.stages.begin(), q.stages.end(), 2) > 0, want3 && q.largest.has_value()};

  json out = {{"format", "minitorch-estimate-1"},
              {"gb", kGB},
              {"gib", runtime::kGiB},
              {"precision", q.bf16 ? "mixed" : "fp32"},
              {"bytes_per_parameter", {{"P", b.P}, {"G", b.G}, {"K", b.K}}},
              {"offload", offload_name(q.offload)}};
  if (offload) out["note"] = kOffloadNote;
  json rows = json::array();
  std::vector<std::string> ds_lines;  // DeepSpeed's estimates, printed after the paper's table
  std::vector<std::string> not_applicable;
  std::vector<std::string> disagree;  // --table1 cells off the printed value by more than its last digit
  const std::size_t wds = 20;

  // The paper's table: one row per (Ψ, N) (two with offload: device, CPU), one column per stage.
  const std::size_t wpsi = 8, wn = 6, wwhere = 8, wcell = q.table1 ? 24 : 20;
  std::string head1 = pad("Ψ", wpsi, true) + pad("N", wn, true), head2 = pad("", wpsi) + pad("", wn);
  if (offload) head1 += pad("where", wwhere), head2 += pad("", wwhere);
  for (int s : q.stages) {
    const runtime::Placement p = runtime::offload_placement(s, 1, 1, b, q.offload);
    head1 += pad(std::string(kStageName[s]) + (s == 0 ? " (stage 0)" : ""), wcell);
    head2 += pad(!p.valid ? "n/a" : offload ? p.device_text + " | " + p.cpu_text : p.device_text, wcell);
  }
  if (!q.as_json) {
    std::printf("Model states per rank, in GB (1e9 bytes): the ZeRO paper's formulas (§3.1, docs/design.md §8)%s\n",
                q.table1 ? ", beside its Table 1 as printed [in brackets]" : "");
    print_precision(q.bf16);
    if (offload)
      std::printf("offload %s: %s %s\n", offload_name(q.offload).c_str(),
                  q.offload == runtime::Offload::optimizer
                      ? "each rank's optimizer states (fp32 master, m, v) and a staging copy of its gradient shard live on the "
                        "CPU, which runs AdamW (ZeRO-Offload); the device keeps the stage's parameters and gradients"
                      : "parameters, gradients and optimizer states of each rank's shard on the CPU (ZeRO-Infinity); "
                        "the device holds only the units it gathers",
                  kOffloadNote);
    std::printf("\n");
    print_line(head1);
    print_line(head2);
  }

  for (std::int64_t psi_int : q.psis) {
    const double psi = static_cast<double>(psi_int);
    for (int world : q.ranks) {
      json row = {{"params", psi_int}, {"ranks", world}};
      const runtime::PaperTable1Row* paper = q.table1 ? paper_row(psi, world) : nullptr;
      std::string device_line = pad(runtime::format_parameter_count(psi_int), wpsi, true) + pad(std::to_string(world), wn, true);
      std::string cpu_line = pad("", wpsi) + pad("", wn);
      if (offload) device_line += pad("device", wwhere), cpu_line += pad("CPU", wwhere);
      json stages = json::array();
      for (int s : q.stages) {
        const runtime::Placement p = runtime::offload_placement(s, psi, world, b, q.offload);
        json st = {{"stage", s}, {"name", kStageName[s]}, {"paper_name", kPaperName[s]}, {"valid", p.valid}};
        if (!p.valid) {
          st["why"] = p.why;
          if (std::find(not_applicable.begin(), not_applicable.end(), p.why) == not_applicable.end())
            not_applicable.push_back(p.why);
          device_line += pad("n/a", wcell);
          cpu_line += pad("n/a", wcell);
        } else {
          st["formula"] = p.device_text;
          st["device"] = bytes_json(p.device);
          st["cpu"] = bytes_json(p.cpu);
          st["cpu_formula"] = p.cpu_text;
          st["gb"] = p.device.total() / kGB;
          std::string cell = gb(p.device.total()) + " GB";
          if (paper && s >= 1) {
            const char* printed = paper->gb[static_cast<std::size_t>(s - 1)];
            st["paper_gb"] = printed;
            st["agrees_with_paper"] = runtime::agrees_with_printed(p.device.total() / kGB, printed);
            if (!st["agrees_with_paper"].get<bool>()) disagree.push_back(device_line.substr(0, wpsi + wn) + kStageName[s]);
            cell += std::string(" [") + printed + "]";
          }
          device_line += pad(cell, wcell);
          cpu_line += pad(gb(p.cpu.total()) + " GB", wcell);
        }
        stages.push_back(st);
      }
      row["stages"] = stages;
      std::vector<std::string> ds_cells;
      if (ds.zero2 || want3)
        row["deepspeed"] =
            deepspeed_row(psi, world, q.gpus_per_node, q.largest, q.offload, ds, q.ds_options, &ds_cells);
      if (want3 && !ds.zero3) row["deepspeed"]["zero3"] = nullptr, row["deepspeed"]["zero3_needs"] = "--largest-layer";
      std::string ds_line = pad(runtime::format_parameter_count(psi_int), wpsi, true) + pad(std::to_string(world), wn, true);
      for (const std::string& c : ds_cells) ds_line += pad(c, wds);
      ds_lines.push_back(ds_line);
      rows.push_back(row);
      if (!q.as_json) {
        print_line(device_line);
        if (offload) print_line(cpu_line);
      }
    }
  }
  out["rows"] = rows;
  if (q.as_json) {
    std::printf("%s\n", out.dump(2).c_str());
    return;
  }
  for (const std::string& why : not_applicable) std::printf("n/a: %s\n", why.c_str());
  if (q.table1) {
    std::printf("\nThe paper prints Table 1 rounded (41.25 as 41.3) or truncated (4187.5 as 4187). Its DP=1 row is the\n"
                "DDP baseline (2+2+K)Ψ. ");
    if (disagree.empty()) std::printf("Every cell here is within one unit of its last printed digit.\n");
    else {
      std::printf("Cells off by more than one unit of the last printed digit:\n");
      for (const std::string& d : disagree) std::printf("  %s\n", d.c_str());
    }
  }

  if (!ds.zero2 && !want3) {
    std::printf("\nDeepSpeed has estimators for ZeRO-2 and ZeRO-3 only (--stage 2 or 3 shows them).\n");
    return;
  }
  std::string dh1 = pad("Ψ", wpsi, true) + pad("N", wn, true), dh2 = pad("", wpsi) + pad("", wn);
  for (const auto& [name, formula] : deepspeed_headers(q.offload, ds, q.ds_options))
    dh1 += pad(name, wds), dh2 += pad(formula, wds);
  std::string title = "\nDeepSpeed's own estimates";
  if (offload) title += " with offload_" + offload_name(q.offload);
  if (q.offload == runtime::Offload::param) title += " (and offload_optimizer: its estimator pairs them)";
  title += ", in GiB (bytes / 2^30: DeepSpeed prints these numbers as \"GB\")";
  if (q.largest) title += ", L = largest layer = " + commas(*q.largest) + " parameters";
  std::printf("%s:\n", title.c_str());
  print_line(dh1);
  print_line(dh2);
  for (const std::string& line : ds_lines) print_line(line);
  std::printf("\n");
  std::printf("%s", runtime::deepspeed_notes(q.offload, ds.zero2, ds.zero3, want3 && !ds.zero3, q.bf16, q.ds_options).c_str());
}

// ---- --config ----

/// Consecutive ranks whose bytes are equal: {first, last, bytes}.
struct RankRun {
  int first, last;
  zero::ModelStateBytes bytes;
};
std::vector<RankRun> runs_of(const std::vector<zero::ModelStateBytes>& per_rank) {
  std::vector<RankRun> out;
  for (int r = 0; r < static_cast<int>(per_rank.size()); ++r) {
    const zero::ModelStateBytes& m = per_rank[static_cast<std::size_t>(r)];
    if (!out.empty() && out.back().bytes.param == m.param && out.back().bytes.grad == m.grad &&
        out.back().bytes.optim == m.optim)
      out.back().last = r;
    else
      out.push_back({r, r, m});
  }
  return out;
}

void estimate_config(const std::string& path, const std::vector<int>& ranks, const std::vector<int>& stages,
                     std::string data_path, std::optional<int> gpus_per_node, runtime::DeepSpeedOptions ds_options,
                     bool as_json) {
  json out = {{"format", "minitorch-estimate-1"}, {"gb", kGB}, {"gib", runtime::kGiB}, {"config", path}};
  json rows = json::array();
  std::shared_ptr<const data::Tokenizer> tokenizer;  // the run's: learnt from the data (char) or fixed (byte)
  bool warned = false, all_bf16 = true;
  for (int world : ranks) {
    runtime::Config cfg = runtime::Config::from_file(path, world);  // the batch arithmetic depends on N: as the run reads it
    if (!warned) {  // the config's own warnings, once; in the JSON so that stdout stays one object
      if (as_json) out["warnings"] = cfg.warnings;
      else for (const auto& w : cfg.warnings) tools::warn(w);
    }
    warned = true;
    if (!tokenizer) {
      if (data_path.empty()) data_path = cfg.training.data.empty() ? "datasets/kjv.txt" : cfg.training.data;
      const std::string text = cfg.training.tokenizer == "byte" ? std::string() : data::read_text_file(data_path);
      tokenizer = data::make_tokenizer(cfg.training.tokenizer, text);
    }
    const nn::GPTConfig g = runtime::model_shape(cfg, tokenizer->vocab_size());
    const auto shapes = nn::GPT::parameter_shapes(g);
    const nn::NamedTensors meta = runtime::meta_parameters(shapes);
    const runtime::BytesPerParameter b = runtime::bytes_per_parameter(cfg.mixed_precision());  // fp16: bf16's layout
    all_bf16 &= cfg.mixed_precision();
    const auto [layer, layer_name] = runtime::largest_layer(shapes);

    // The plan every rank of the run makes (zero/stage1.cpp, stage2.cpp, stage3.cpp): the same calls.
    std::vector<std::vector<zero::ModelStateBytes>> exact(4);
    const bool offload = cfg.zero.offload_optimizer.enabled();
    std::vector<std::vector<runtime::ExactOffload>> offloaded(4);  // the config's offload, stages 1-3
    std::int64_t psi = 0, padding = 0;
    std::size_t buckets = 0;
    const zero::UnitPlan units = zero::plan_units(meta, static_cast<std::size_t>(g.n_layer), cfg.strategy());
    for (int r = 0; r < world; ++r) {
      const zero::Partition plan(meta, cfg.zero.reduce_bucket_size, r, world);
      psi = plan.numel(), padding = plan.padding(), buckets = plan.buckets().size();
      for (int s = 0; s <= 2; ++s) exact[static_cast<std::size_t>(s)].push_back(runtime::exact_model_states(s, plan, b));
      const zero::Partition plan3(meta, units.buckets, r, world);
      exact[3].push_back(runtime::exact_model_states(3, plan3, b, units.persistent));
      if (offload) {
        for (int s = 1; s <= 2; ++s) offloaded[static_cast<std::size_t>(s)].push_back(runtime::exact_offload_states(s, plan, b));
        offloaded[3].push_back(runtime::exact_offload_states(3, plan3, b, units.persistent));
      }
    }

    json row = {{"ranks", world},
                {"config_stage", cfg.zero.stage},
                {"model", g.describe()},
                {"params", psi},
                {"vocab_size", g.vocab_size},
                {"precision", cfg.bf16 ? "bf16" : cfg.fp16.enabled ? "f16" : "f32"},
                {"bytes_per_parameter", {{"P", b.P}, {"G", b.G}, {"K", b.K}}},
                {"reduce_bucket_size", cfg.zero.reduce_bucket_size},
                {"buckets", buckets},
                {"padding", world > 1 ? padding : 0}};
    if (!as_json) {
      std::printf("%s on %d rank%s: the config runs stage %d (%s)\n", path.c_str(), world, world == 1 ? "" : "s",
                  cfg.zero.stage, world == 1 ? "one rank, no partition" : kStageName[cfg.zero.stage]);
      std::printf("  model    %s: Ψ = %s parameters (vocabulary: %s)\n", g.describe().c_str(), commas(psi).c_str(),
                  cfg.model.vocab_size != 0
                      ? ("model.vocab_size " + std::to_string(g.vocab_size)).c_str()
                      : (std::to_string(g.vocab_size) + " tokens, the " + cfg.training.tokenizer + " tokenizer" +
                         (cfg.training.tokenizer == "byte" ? std::string() : " of " + data_path))
                            .c_str());
      std::printf("  dtype    %s (bf16.enabled %s, fp16.enabled %s): P = %d, G = %d, K = %d bytes per parameter\n",
                  cfg.bf16 ? "bf16 mixed precision" : cfg.fp16.enabled ? "f16 mixed precision" : "f32",
                  cfg.bf16 ? "true" : "false", cfg.fp16.enabled ? "true" : "false", b.P, b.G, b.K);
      if (world > 1)
        std::printf("  layout   reduce_bucket_size %s elements: %zu bucket%s, %s element%s of padding in all (each bucket "
                    "padded to a multiple of N = %d; stages 1 and 2)\n",
                    commas(cfg.zero.reduce_bucket_size).c_str(), buckets, buckets == 1 ? "" : "s",
                    commas(padding).c_str(), padding == 1 ? "" : "s", world);
      std::printf("\n  bytes per rank at an optimizer step (after the reduction, before the update): what the run report's\n"
                  "  ranks[i].model_states measures from step 2 on (AdamW allocates its states at its first update, so\n"
                  "  step 1 measures optim = 0)\n");
      std::printf("    %s%s%s%s%s%s%s\n", pad("stage", 15).c_str(), pad("ranks", 9).c_str(), pad("param", 13, true).c_str(),
                  pad("grad", 13, true).c_str(), pad("optim", 13, true).c_str(), pad("total", 14, true).c_str(),
                  " the paper's formula (real numbers)");
    }
    json st_rows = json::array();
    for (int s : stages) {
      const runtime::ModelStateEstimate f = runtime::model_state_bytes(s, static_cast<double>(psi), world, b);
      json st = {{"stage", s},
                 {"name", kStageName[s]},
                 {"implemented", true},
                 {"formula", runtime::model_states_text(s)},
                 {"formula_bytes", bytes_json(f)}};
      const std::string mark = s == cfg.zero.stage ? "  * " : "    ";
      const std::string name = std::string(kStageName[s]) + (s == 0 ? " (stage 0)" : "");
      const std::string formula = runtime::model_states_text(s) + " = " + commas(static_cast<std::int64_t>(f.total()));
      {
        json per_rank = json::array();
        const auto& ex = exact[static_cast<std::size_t>(s)];
        for (int r = 0; r < world; ++r) {
          json e = bytes_json(ex[static_cast<std::size_t>(r)]);
          e["rank"] = r;
          per_rank.push_back(e);
        }
        st["exact"] = per_rank;
        if (!as_json) {
          bool first = true;
          for (const RankRun& run : runs_of(ex)) {
            const std::string who = run.first == run.last ? std::to_string(run.first)
                                                          : std::to_string(run.first) + "-" + std::to_string(run.last);
            print_line((first ? mark : "    ") + pad(first ? name : "", 15) + pad(who, 9) +
                       pad(commas(run.bytes.param), 13, true) + pad(commas(run.bytes.grad), 13, true) +
                       pad(commas(run.bytes.optim), 13, true) + pad(commas(run.bytes.total()), 14, true) +
                       (first ? " " + formula : ""));
            first = false;
          }
        }
      }
      st_rows.push_back(st);
    }
    row["stages"] = st_rows;
    if (offload) {  // ZeRO-Offload: what moves to the host, and what each step copies (docs/design.md §10)
      json off_rows = json::array();
      if (!as_json)
        std::printf("\n  with the config's offload_optimizer (device \"cpu\"): the device keeps no optimizer state; the host\n"
                    "  holds 16 bytes per owned element; each step copies the gradient shard down and the updated shard up\n"
                    "    %s%s%s%s%s%s the formulas\n",
                    pad("stage", 15).c_str(), pad("ranks", 9).c_str(), pad("device", 13, true).c_str(),
                    pad("host", 13, true).c_str(), pad("d2h/step", 13, true).c_str(), pad("h2d/step", 13, true).c_str());
      for (int s : stages) {
        if (s == 0) continue;
        const auto& ex = offloaded[static_cast<std::size_t>(s)];
        json per_rank = json::array();
        for (int r = 0; r < world; ++r) {
          const runtime::ExactOffload& e = ex[static_cast<std::size_t>(r)];
          per_rank.push_back({{"rank", r}, {"device", bytes_json(e.device)}, {"host", bytes_json(e.host)},
                              {"d2h", e.d2h}, {"h2d", e.h2d}});
        }
        off_rows.push_back({{"stage", s}, {"exact", per_rank}});
        if (as_json) continue;
        const std::string device_text = runtime::model_states_text(s, /*offload=*/true);
        int first = 0;
        for (int r = 1; r <= world; ++r) {  // runs of ranks with the same bytes
          const auto& a = ex[static_cast<std::size_t>(first)];
          if (r < world) {
            const auto& c = ex[static_cast<std::size_t>(r)];
            if (c.device.total() == a.device.total() && c.host.total() == a.host.total() && c.d2h == a.d2h) continue;
          }
          const std::string who = first == r - 1 ? std::to_string(first) : std::to_string(first) + "-" + std::to_string(r - 1);
          print_line(std::string(s == cfg.zero.stage ? "  * " : "    ") + pad(first == 0 ? kStageName[s] : "", 15) +
                     pad(who, 9) + pad(commas(a.device.total()), 13, true) + pad(commas(a.host.total()), 13, true) +
                     pad(commas(a.d2h), 13, true) + pad(commas(a.h2d), 13, true) +
                     (first == 0 ? std::string(" ") + device_text + ", 16Ψ/N, GΨ/N, PΨ/N" : std::string()));
          first = r;
        }
      }
      row["offload"] = off_rows;
    }

    // DeepSpeed's estimators for this model, with the config's offload.
    const bool any2 = std::count(stages.begin(), stages.end(), 2) > 0, any3 = std::count(stages.begin(), stages.end(), 3) > 0;
    if (any2 || any3) {
      std::vector<std::string> cells;
      row["deepspeed"] = deepspeed_row(static_cast<double>(psi), world, gpus_per_node, layer,
                                       offload ? runtime::Offload::optimizer : runtime::Offload::none,
                                       {any2, any3}, ds_options, &cells);
      row["deepspeed"]["largest_layer_module"] = layer_name;
      if (!as_json) {
        std::printf("\n  DeepSpeed's own estimates for this model on %s (zero_init %d, additional_buffer_factor %g;\n"
                    "  L = largest layer = %s parameters, %s):\n",
                    row["deepspeed"]["topology"].get<std::string>().c_str(), ds_options.zero_init ? 1 : 0,
                    ds_options.buffer_factor, commas(layer).c_str(), layer_name.c_str());
        const auto print = [](const char* what, const json& e) {
          const auto gpu = e["gpu"].get<std::int64_t>(), cpu = e["cpu"].get<std::int64_t>();
          std::printf("    %s  %s = %s bytes (%s) per GPU, %s = %s bytes (%s) per CPU\n", what,
                      e["gpu_text"].get<std::string>().c_str(), commas(gpu).c_str(),
                      runtime::format_gib(static_cast<double>(gpu)).c_str(), e["cpu_text"].get<std::string>().c_str(),
                      commas(cpu).c_str(), runtime::format_gib(static_cast<double>(cpu)).c_str());
        };
        if (any2) print("ZeRO-2", row["deepspeed"]["zero2"]);
        if (any3) print("ZeRO-3", row["deepspeed"]["zero3"]);
      }
    }
    if (!as_json) std::printf("\n");
    rows.push_back(row);
  }
  if (as_json) {
    out["rows"] = rows;
    std::printf("%s\n", out.dump(2).c_str());
    return;
  }
  std::printf("  * the config's stage. Ranks differ only where the padding falls (the last ranks' shards hold it);\n"
              "  the paper's formula has no padding. ZeRO-3 keeps tensors of at most stage3_param_persistence_threshold\n"
              "  elements whole on every rank (the default 1e5 keeps the whole baby GPT whole).\n"
              "  DeepSpeed's estimators assume 16-bit training%s and count more than the paper: an fp32 copy of the\n"
              "  gradients (its 18 = 2 + 4 + 4 + 8 bytes per parameter against the paper's G + K = 2 + 12) and at\n"
              "  stage 3 the largest layer gathered whole (4L); --params Ψ --ranks N prints the whole comparison.\n"
              "  GiB = bytes / 2^30, the number DeepSpeed prints and calls \"GB\".\n",
              all_bf16 ? "" : " (whatever the config's dtype)");
}

}  // namespace

int main(int argc, char** argv) {
  cli::Parser parser{"minitorch-estimate: model-state bytes per rank for DDP and each ZeRO stage (the paper's in GB = "
                     "1e9 bytes; DeepSpeed's estimators in GiB = 2^30 bytes, which DeepSpeed prints as \"GB\")"};
  std::optional<std::string> params, ranks, stage, offload, config, data, gpus_per_node, largest, zero_init, factor;
  bool bf16 = false, fp32 = false, table1 = false, as_json = false;
  parser.option("--params", params, "parameter counts, e.g. 124M,7.5B,1T or 7.5e9 (a comma list)");
  parser.option("--ranks", ranks, "data-parallel ranks N, e.g. 1,4,16,64 (a comma list)");
  parser.option("--stage", stage, "show only this stage: 0 (DDP), 1, 2 or 3 (default: all four)");
  parser.flag("--bf16", bf16, "mixed precision: P = G = 2, K = 12 (the default, the paper's)");
  parser.flag("--fp32", fp32, "fp32: P = G = 4, K = 8");
  parser.option("--offload", offload,
                 "optimizer (ZeRO-Offload: optimizer states and reduced gradients on the CPU; stages 1-3) or param "
                 "(ZeRO-Infinity: every sharded state on the CPU; stage 3): device and CPU bytes, an estimate only");
  parser.option("--config", config, "a DeepSpeed-style config: the exact bytes its run measures on each rank");
  parser.option("--data", data, "with --config: the text its char tokenizer learns the vocabulary from "
                                 "(default: training.data, else datasets/kjv.txt)");
  parser.option("--gpus-per-node", gpus_per_node,
                "DeepSpeed's num_gpus_per_node: N ranks as N/G nodes of G GPUs (G at most N and dividing it; "
                "default: one node of N)");
  parser.option("--largest-layer", largest,
                "with --params: the largest layer's parameters (DeepSpeed's largest_layer_params, L in 4L), needed "
                "for DeepSpeed's ZeRO-3 estimate; --config takes it from the model");
  parser.option("--zero-init", zero_init, "DeepSpeed's zero_init for its ZeRO-3 CPU estimate: 1 (default) or 0");
  parser.option("--buffer-factor", factor, "DeepSpeed's additional_buffer_factor for its CPU estimates (default 1.5)");
  parser.flag("--table1", table1, "the ZeRO paper's Table 1: 7.5B, 128B, 1T on 1, 4, 16, 64, 256, 1024 ranks");
  parser.flag("--json", as_json, "machine-readable output (one JSON object)");
  return tools::run_tool(parser, argc, argv, [&] {
    const int modes = (params ? 1 : 0) + (config ? 1 : 0) + (table1 ? 1 : 0);
    if (modes != 1)
      throw ConfigError("give one of --params P --ranks N, --config CONFIG --ranks N, or --table1");
    if (bf16 && fp32) throw ConfigError("--bf16 and --fp32 exclude each other");
    const std::vector<int> stages = parse_stages(stage);
    std::optional<int> gpn;
    if (gpus_per_node) {
      const std::vector<int> g = parse_counts("--gpus-per-node", *gpus_per_node);
      if (g.size() != 1) throw ConfigError("--gpus-per-node takes one number, got '" + *gpus_per_node + "'");
      gpn = g[0];
    }
    if (data && !config) throw ConfigError("--data goes with --config (it gives the tokenizer's vocabulary)");
    runtime::DeepSpeedOptions ds_options;
    if (zero_init) ds_options.zero_init = runtime::parse_zero_init(*zero_init);
    if (factor) ds_options.buffer_factor = runtime::parse_buffer_factor(*factor);
    // A --gpus-per-node that does not fit every N fails before any output.
    const auto check_topology = [&](const std::vector<int>& worlds) {
      for (int world : worlds) runtime::deepspeed_topology(world, gpn);
      return worlds;
    };

    if (config) {
      if (!ranks) throw ConfigError("--config needs --ranks N: the run's number of ranks");
      if (bf16 || fp32) throw ConfigError("--bf16/--fp32 do not go with --config: its bf16.enabled decides the precision");
      if (offload)
        throw ConfigError("--offload does not go with --config: the config's zero_optimization.offload_optimizer decides");
      if (largest) throw ConfigError("--largest-layer does not go with --config: it is computed from the model");
      estimate_config(*config, check_topology(parse_counts("--ranks", *ranks)), stages, data.value_or(""), gpn,
                      ds_options, as_json);
      return;
    }
    ParamsRequest q;
    q.stages = stages;
    q.bf16 = !fp32;
    q.gpus_per_node = gpn;
    q.as_json = as_json;
    q.ds_options = ds_options;
    if (offload) {
      if (*offload == "optimizer") q.offload = runtime::Offload::optimizer;
      else if (*offload == "param") q.offload = runtime::Offload::param;
      else throw ConfigError("--offload must be 'optimizer' or 'param', got '" + *offload + "'");
    }
    if (largest) {
      try {
        q.largest = runtime::parse_parameter_count(*largest);
      } catch (const ConfigError& e) {
        throw ConfigError(std::string("--largest-layer: ") + e.what());
      }
    }
    if (table1) {
      if (ranks) throw ConfigError("--table1 sets the ranks itself (1, 4, 16, 64, 256, 1024); drop --ranks");
      if (fp32 || offload) throw ConfigError("--table1 is the paper's mixed precision without offload; drop --fp32/--offload");
      q.table1 = true;
      q.psis = {7'500'000'000, 128'000'000'000, 1'000'000'000'000};
      q.ranks = check_topology({1, 4, 16, 64, 256, 1024});
    } else {
      if (!ranks) throw ConfigError("--params needs --ranks N (a comma list: 1,4,16,64)");
      q.psis = parse_params(*params);
      q.ranks = check_topology(parse_counts("--ranks", *ranks));
    }
    estimate_params(q);
  });
}

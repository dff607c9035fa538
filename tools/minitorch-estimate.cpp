// minitorch-estimate --params P[,P...] --ranks N[,N...] [--stage S] [--bf16|--fp32] [--offload optimizer|param]
//                    [--nvme optimizer|all]
//                    [--gpus-per-node G] [--largest-layer L] [--zero-init 0|1] [--buffer-factor F] [--json]
// minitorch-estimate --config CONFIG.json --ranks N[,N...] [--data TEXT] [--stage S] [--gpus-per-node G]
//                    [--zero-init 0|1] [--buffer-factor F] [--json]
// minitorch-estimate --table1 [--stage S] [--json]
// Model-state bytes per rank for DDP and each ZeRO stage, before anything runs (docs/design.md §8, "The
// estimator"): the paper's formulas in GB = 1e9 bytes, DeepSpeed's estimators in GiB = 2^30 bytes (the
// number DeepSpeed prints as "GB"; --json has their exact bytes):
// - --params: the ZeRO paper's formulas in real numbers (mixed precision, K = 12, unless --fp32); with
//   --offload, what stays on the device and what moves to the CPU (with --nvme: to NVMe), as the runs measure
//   them; beside them DeepSpeed's own estimators and why they differ.
// - --table1: the paper's Table 1 (7.5B, 128B, 1T on 1 to 1024 ranks), each cell beside the printed one.
// - --config: the exact bytes every rank of a run of CONFIG on N ranks measures at its optimizer steps
//   (the run report's ranks[i].model_states), planned by the stages' own zero::Partition.
// Exit status: 0 done, 2 usage or configuration error, 1 any other error.
// This file reads and checks the command line; tools/estimate/ computes the estimates and prints them.
#include <cstdio>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli_common.h"
#include "runtime/estimate.h"
#include "tools/estimate/config.h"
#include "tools/estimate/params.h"

using namespace minitorch;
using runtime::ConfigError;

namespace {

/// The command line as given.
struct Options {
  std::optional<std::string> params, ranks, stage, offload, nvme, config, data, gpus_per_node, largest, zero_init, factor;
  bool bf16 = false, fp32 = false, table1 = false, as_json = false;
};

void add_options(cli::Parser& parser, Options& o) {
  parser.option("--params", o.params, "parameter counts, e.g. 124M,7.5B,1T or 7.5e9 (a comma list)");
  parser.option("--ranks", o.ranks, "data-parallel ranks N, e.g. 1,4,16,64 (a comma list)");
  parser.option("--stage", o.stage, "show only this stage: 0 (DDP), 1, 2 or 3 (default: all four)");
  parser.flag("--bf16", o.bf16, "mixed precision: P = G = 2, K = 12 (the default, the paper's)");
  parser.flag("--fp32", o.fp32, "fp32: P = G = 4, K = 8");
  parser.option("--offload", o.offload,
                "optimizer (ZeRO-Offload: optimizer states and reduced gradients on the CPU; stages 1-3) or param "
                "(ZeRO-Infinity: the parameter shards on the CPU too; stage 3): device and CPU bytes, the formulas");
  parser.option("--nvme", o.nvme,
                "with --offload (stage 3): optimizer (its states in files on NVMe, the step a tile at a time) or all "
                "(with --offload param: the parameter shards there too): device, CPU and NVMe bytes");
  parser.option("--config", o.config, "a DeepSpeed-style config: the exact bytes its run measures on each rank");
  parser.option("--data", o.data, "with --config: the text its char tokenizer learns the vocabulary from "
                                  "(default: training.data, else datasets/kjv.txt)");
  parser.option("--gpus-per-node", o.gpus_per_node,
                "DeepSpeed's num_gpus_per_node: N ranks as N/G nodes of G GPUs (G at most N and dividing it; "
                "default: one node of N)");
  parser.option("--largest-layer", o.largest,
                "with --params: the largest layer's parameters (DeepSpeed's largest_layer_params, L in 4L), needed "
                "for DeepSpeed's ZeRO-3 estimate; --config takes it from the model");
  parser.option("--zero-init", o.zero_init, "DeepSpeed's zero_init for its ZeRO-3 CPU estimate: 1 (default) or 0");
  parser.option("--buffer-factor", o.factor, "DeepSpeed's additional_buffer_factor for its CPU estimates (default 1.5)");
  parser.flag("--table1", o.table1, "the ZeRO paper's Table 1: 7.5B, 128B, 1T on 1, 4, 16, 64, 256, 1024 ranks");
  parser.flag("--json", o.as_json, "machine-readable output (one JSON object)");
}

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

/// A parameter count, its errors naming `option`.
std::int64_t parse_count_of(const std::string& option, const std::string& text) {
  try {
    return runtime::parse_parameter_count(text);
  } catch (const ConfigError& e) {
    throw ConfigError(option + ": " + e.what());
  }
}

std::vector<std::int64_t> parse_params(const std::string& text) {
  std::vector<std::int64_t> out;
  for (const std::string& item : split(text)) out.push_back(parse_count_of("--params", item));
  if (out.empty()) throw ConfigError("--params is empty: give P or a list P,P,...");
  return out;
}

/// The stages to show: all four, or the one --stage names.
std::vector<int> parse_stages(const std::optional<std::string>& text) {
  if (!text) return {0, 1, 2, 3};
  if (*text == "0" || *text == "1" || *text == "2" || *text == "3") return {std::stoi(*text)};
  throw ConfigError("--stage must be 0 (DDP), 1, 2 or 3, got '" + *text + "'");
}

std::optional<int> parse_gpus_per_node(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  const std::vector<int> g = parse_counts("--gpus-per-node", *text);
  if (g.size() != 1) throw ConfigError("--gpus-per-node takes one number, got '" + *text + "'");
  return g[0];
}

runtime::OnNvme parse_nvme(const std::optional<std::string>& text, runtime::Offload offload) {
  if (!text) return runtime::OnNvme::none;
  if (*text != "optimizer" && *text != "all") throw ConfigError("--nvme must be 'optimizer' or 'all', got '" + *text + "'");
  if (offload == runtime::Offload::none)
    throw ConfigError("--nvme puts offloaded states on NVMe: give --offload optimizer or --offload param too");
  if (*text == "all" && offload != runtime::Offload::param)
    throw ConfigError("--nvme all puts the parameters on NVMe too: give --offload param (or --nvme optimizer)");
  return *text == "all" ? runtime::OnNvme::all : runtime::OnNvme::optimizer;
}

runtime::Offload parse_offload(const std::optional<std::string>& text) {
  if (!text) return runtime::Offload::none;
  if (*text == "optimizer") return runtime::Offload::optimizer;
  if (*text == "param") return runtime::Offload::param;
  throw ConfigError("--offload must be 'optimizer' or 'param', got '" + *text + "'");
}

// ---- the modes ----

/// What every mode reads the same way.
struct Shared {
  std::vector<int> stages;
  std::optional<int> gpus_per_node;
  runtime::DeepSpeedOptions ds_options;
};

/// The ranks, each checked against --gpus-per-node: one that does not fit fails before any output.
std::vector<int> checked_ranks(const std::vector<int>& worlds, std::optional<int> gpus_per_node) {
  for (int world : worlds) runtime::deepspeed_topology(world, gpus_per_node);
  return worlds;
}

void run_config(const Options& o, const Shared& s) {
  if (!o.ranks) throw ConfigError("--config needs --ranks N: the run's number of ranks");
  if (o.bf16 || o.fp32) throw ConfigError("--bf16/--fp32 do not go with --config: its bf16.enabled decides the precision");
  if (o.offload || o.nvme)
    throw ConfigError(std::string(o.offload ? "--offload" : "--nvme") +
                      " does not go with --config: the config's zero_optimization.offload_optimizer and offload_param decide");
  if (o.largest) throw ConfigError("--largest-layer does not go with --config: it is computed from the model");
  const estimate::ConfigRequest q{*o.config, checked_ranks(parse_counts("--ranks", *o.ranks), s.gpus_per_node),
                                  s.stages,  o.data.value_or(""), s.gpus_per_node, s.ds_options, o.as_json};
  const estimate::ConfigEstimate e = estimate::estimate_config(q);
  if (q.as_json) std::printf("%s\n", estimate::config_json(q, e).dump(2).c_str());
  else estimate::print_config(q, e);
}

void run_params(const Options& o, const Shared& s) {
  estimate::ParamsRequest q;
  q.stages = s.stages;
  q.bf16 = !o.fp32;
  q.gpus_per_node = s.gpus_per_node;
  q.as_json = o.as_json;
  q.ds_options = s.ds_options;
  q.offload = parse_offload(o.offload);
  q.nvme = parse_nvme(o.nvme, q.offload);
  if (o.largest) q.largest = parse_count_of("--largest-layer", *o.largest);
  if (o.table1) {
    if (o.ranks) throw ConfigError("--table1 sets the ranks itself (1, 4, 16, 64, 256, 1024); drop --ranks");
    if (o.fp32 || o.offload || o.nvme)
      throw ConfigError("--table1 is the paper's mixed precision without offload; drop --fp32/--offload/--nvme");
    q.table1 = true;
    q.psis = {7'500'000'000, 128'000'000'000, 1'000'000'000'000};
    q.ranks = checked_ranks({1, 4, 16, 64, 256, 1024}, s.gpus_per_node);
  } else {
    if (!o.ranks) throw ConfigError("--params needs --ranks N (a comma list: 1,4,16,64)");
    q.psis = parse_params(*o.params);
    q.ranks = checked_ranks(parse_counts("--ranks", *o.ranks), s.gpus_per_node);
  }
  const estimate::ParamsEstimate e = estimate::estimate_params(q);
  if (q.as_json) std::printf("%s\n", estimate::params_json(q, e).dump(2).c_str());
  else estimate::print_params(q, e);
}

void run(const Options& o) {
  const int modes = (o.params ? 1 : 0) + (o.config ? 1 : 0) + (o.table1 ? 1 : 0);
  if (modes != 1) throw ConfigError("give one of --params P --ranks N, --config CONFIG --ranks N, or --table1");
  if (o.bf16 && o.fp32) throw ConfigError("--bf16 and --fp32 exclude each other");
  Shared s;
  s.stages = parse_stages(o.stage);
  s.gpus_per_node = parse_gpus_per_node(o.gpus_per_node);
  if (o.data && !o.config) throw ConfigError("--data goes with --config (it gives the tokenizer's vocabulary)");
  if (o.zero_init) s.ds_options.zero_init = runtime::parse_zero_init(*o.zero_init);
  if (o.factor) s.ds_options.buffer_factor = runtime::parse_buffer_factor(*o.factor);
  if (o.config) run_config(o, s);
  else run_params(o, s);
}

}  // namespace

int main(int argc, char** argv) {
  cli::Parser parser{"minitorch-estimate: model-state bytes per rank for DDP and each ZeRO stage (the paper's in GB = "
                     "1e9 bytes; DeepSpeed's estimators in GiB = 2^30 bytes, which DeepSpeed prints as \"GB\")"};
  Options options;
  add_options(parser, options);
  return tools::run_tool(parser, argc, argv, [&] { run(options); });
}

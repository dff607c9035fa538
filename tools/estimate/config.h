#pragma once
/// \file config.h
/// minitorch-estimate --config: the exact model-state bytes every rank of a run of a config measures at
/// its optimizer steps (the run report's ranks[i].model_states, and with offload_optimizer its host bytes
/// and copies), planned by the stages' own zero::Partition. Ranks come in runs that hold the same bytes
/// (runtime/rank_classes.h): one Partition per run, so 2^24 ranks cost no more than 4. The estimate is
/// computed first (estimate_config); config_json and print_config only present it. The JSON's `exact`
/// lists the runs: {"first_rank", "last_rank", bytes...}.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gemini/layout.h"
#include "nn/gpt_config.h"
#include "runtime/config.h"
#include "runtime/estimate.h"
#include "runtime/plan.h"
#include "tools/estimate/deepspeed.h"
#include "tools/estimate/format.h"

namespace minitorch::estimate {

/// The command line of the --config mode, checked.
struct ConfigRequest {
  std::string path;
  std::vector<int> ranks;
  std::vector<int> stages;
  std::string data_path;  ///< the char tokenizer's text ("": training.data, else datasets/kjv.txt)
  std::optional<int> gpus_per_node;
  runtime::DeepSpeedOptions ds_options;
  bool as_json = false;
};

/// Ranks first..last, which hold the same `bytes`.
template <class Bytes>
struct RankRun {
  int first = 0, last = 0;
  Bytes bytes;
};

/// One stage's bytes on every rank, beside the paper's formula for them.
struct StageBytes {
  int stage = 0;
  runtime::ModelStateEstimate formula;
  std::vector<RankRun<zero::ModelStateBytes>> exact;  ///< runs of ranks, in rank order, covering all
};

/// One stage's ZeRO-Offload bytes on every rank (stages 1-3).
struct OffloadBytes {
  int stage = 0;
  bool param = false;  ///< stage 3 with the config's offload_param: the parameter shards on the host too
  bool nvme = false;   ///< stage 3 with the config's offload_optimizer "nvme": master, m, v on disk
  std::vector<RankRun<runtime::ExactOffload>> exact;  ///< runs of ranks, in rank order, covering all
};

/// Gemini (the config's `gemini` section): its layout and every rank's device model states at an optimizer step, by
/// its placement — a sharded chunk's shard (none where it lives on the host: offload_param_frac, or auto, whose
/// cached copies come on top), a kept-gathered chunk whole, every chunk's gradient shard, and AdamW's K bytes per
/// owned element unless the optimizer is on the host.
struct GeminiBytes {
  gemini::GeminiLayout layout;
  std::vector<RankRun<zero::ModelStateBytes>> exact;  ///< runs of ranks, in rank order, covering all
};

/// The config on one number of ranks.
struct ConfigRow {
  int world = 1;
  runtime::Config config;  ///< as the run reads it on `world` ranks (its batch arithmetic depends on N)
  runtime::Plan plan;      ///< what the run does: its stage, offload, precision and bytes per parameter
  nn::GPTConfig model;
  std::int64_t psi = 0, padding = 0;  ///< padding: all buckets', for stages 1 and 2
  std::size_t buckets = 0;
  std::vector<StageBytes> stages;      ///< one per stage asked
  std::vector<OffloadBytes> offload;   ///< stages 1-3 asked, when the config offloads its optimizer
  std::optional<DeepSpeedRow> deepspeed;  ///< when stage 2 or 3 is asked
  std::string largest_layer_module;    ///< whose parameters are DeepSpeed's largest layer
  std::optional<GeminiBytes> gemini;   ///< when the config runs Gemini
};

struct ConfigEstimate {
  std::string data_path;              ///< the text the tokenizer learnt from
  std::vector<std::string> warnings;  ///< the config's own (--json: text mode printed them at once)
  std::vector<ConfigRow> rows;        ///< one per number of ranks asked
};

/// Reads the config once per number of ranks, as the run would; its errors are ConfigErrors.
ConfigEstimate estimate_config(const ConfigRequest& q);
json config_json(const ConfigRequest& q, const ConfigEstimate& e);
void print_config(const ConfigRequest& q, const ConfigEstimate& e);

}  // namespace minitorch::estimate

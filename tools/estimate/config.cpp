#include "tools/estimate/config.h"

#include <memory>
#include <utility>

#include "data/text_dataset.h"
#include "data/tokenizer.h"
#include "nn/gpt.h"
#include "runtime/engine.h"
#include "tools/cli_common.h"
#include "zero/stage3.h"

namespace minitorch::estimate {

namespace {

/// Every rank's bytes, planned as each rank of the run plans them (zero/stage1.cpp, stage2.cpp,
/// stage3.cpp): the same Partition and plan_units calls on the same parameter shapes.
void plan_ranks(const nn::NamedTensors& meta, ConfigRow* row) {
  const runtime::Config& cfg = row->config;
  const runtime::BytesPerParameter b = row->plan.bytes;
  const zero::UnitPlan units = zero::plan_units(meta, static_cast<std::size_t>(row->model.n_layer), cfg.strategy());
  const std::vector<bool> none;  // stages 0-2 keep no tensor whole
  for (int r = 0; r < row->world; ++r) {
    const zero::Partition partition(meta, cfg.zero.reduce_bucket_size, r, row->world);  // stages 0-2
    const zero::Partition unit_partition(meta, units.buckets, r, row->world);         // stage 3
    row->psi = partition.numel(), row->padding = partition.padding(), row->buckets = partition.buckets().size();
    for (StageBytes& st : row->stages) {
      const bool three = st.stage == 3;
      st.exact.push_back(runtime::exact_model_states(st.stage, three ? unit_partition : partition, b,
                                                     three ? units.persistent : none));
    }
    for (OffloadBytes& off : row->offload) {
      const bool three = off.stage == 3;
      off.exact.push_back(runtime::exact_offload_states(off.stage, three ? unit_partition : partition, b,
                                                        three ? units.persistent : none));
    }
  }
  for (StageBytes& st : row->stages)
    st.formula = runtime::model_state_bytes(st.stage, static_cast<double>(row->psi), row->world, b);
}

ConfigRow config_row(const ConfigRequest& q, runtime::Config cfg, std::int64_t vocab_size, int world) {
  ConfigRow row;
  row.world = world;
  row.plan = runtime::make_plan(cfg);
  row.model = runtime::model_shape(cfg, vocab_size);
  row.config = std::move(cfg);
  for (int s : q.stages) {
    row.stages.push_back({s, {}, {}});
    if (row.plan.offload_optimizer && s >= 1) row.offload.push_back({s, {}});  // offload needs a sharded optimizer
  }
  const auto shapes = nn::GPT::parameter_shapes(row.model);
  plan_ranks(runtime::meta_parameters(shapes), &row);
  const DeepSpeedColumns columns{asks_stage(q.stages, 2), asks_stage(q.stages, 3)};
  if (columns.zero2 || columns.zero3) {
    const auto [layer, module] = runtime::largest_layer(shapes);
    const DeepSpeedSetup setup{q.gpus_per_node, layer,
                               row.plan.offload_optimizer ? runtime::Offload::optimizer : runtime::Offload::none,
                               columns, q.ds_options};
    row.deepspeed = deepspeed_row(static_cast<double>(row.psi), world, setup);
    row.largest_layer_module = module;
  }
  return row;
}

}  // namespace

ConfigEstimate estimate_config(const ConfigRequest& q) {
  ConfigEstimate e;
  std::shared_ptr<const data::Tokenizer> tokenizer;  // the run's: learnt from the data (char) or fixed (byte)
  for (int world : q.ranks) {
    runtime::Config cfg = runtime::Config::from_file(q.path, world);  // the batch arithmetic depends on N
    if (!tokenizer) {
      // The config's own warnings, once: at once as the run prints them, or in the JSON so that stdout
      // stays one object.
      if (q.as_json) e.warnings = cfg.warnings;
      else for (const auto& w : cfg.warnings) tools::warn(w);
      e.data_path = !q.data_path.empty() ? q.data_path : cfg.training.data.empty() ? "datasets/kjv.txt" : cfg.training.data;
      const std::string text = cfg.training.tokenizer == "byte" ? std::string() : data::read_text_file(e.data_path);
      tokenizer = data::make_tokenizer(cfg.training.tokenizer, text);
    }
    e.rows.push_back(config_row(q, std::move(cfg), tokenizer->vocab_size(), world));
  }
  return e;
}

namespace {

json stage_json(const StageBytes& st) {
  json per_rank = json::array();
  for (std::size_t r = 0; r < st.exact.size(); ++r) {
    json bytes = bytes_json(st.exact[r]);
    bytes["rank"] = r;
    per_rank.push_back(bytes);
  }
  return {{"stage", st.stage},
          {"name", kStageName[st.stage]},
          {"implemented", true},
          {"formula", runtime::model_states_text(st.stage)},
          {"formula_bytes", bytes_json(st.formula)},
          {"exact", per_rank}};
}

json offload_json(const OffloadBytes& off) {
  json per_rank = json::array();
  for (std::size_t r = 0; r < off.exact.size(); ++r) {
    const runtime::ExactOffload& e = off.exact[r];
    per_rank.push_back({{"rank", r}, {"device", bytes_json(e.device)}, {"host", bytes_json(e.host)},
                        {"d2h", e.d2h}, {"h2d", e.h2d}});
  }
  return {{"stage", off.stage}, {"exact", per_rank}};
}

json row_json(const ConfigRow& row) {
  const runtime::BytesPerParameter b = row.plan.bytes;
  json j = {{"ranks", row.world},
            {"config_stage", row.plan.config_zero_stage},
            {"zero_stage", row.plan.zero_stage},
            {"model", row.model.describe()},
            {"params", row.psi},
            {"vocab_size", row.model.vocab_size},
            {"precision", runtime::precision_name(row.plan.precision)},
            {"bytes_per_parameter", {{"P", b.P}, {"G", b.G}, {"K", b.K}}},
            {"reduce_bucket_size", row.config.zero.reduce_bucket_size},
            {"buckets", row.buckets},
            {"padding", row.world > 1 ? row.padding : 0}};
  j["stages"] = json::array();
  for (const StageBytes& st : row.stages) j["stages"].push_back(stage_json(st));
  if (row.plan.offload_optimizer) {
    j["offload"] = json::array();
    for (const OffloadBytes& off : row.offload) j["offload"].push_back(offload_json(off));
  }
  if (row.deepspeed) {
    j["deepspeed"] = deepspeed_json(*row.deepspeed);
    j["deepspeed"]["largest_layer_module"] = row.largest_layer_module;
  }
  return j;
}

}  // namespace

json config_json(const ConfigRequest& q, const ConfigEstimate& e) {
  json out = {{"format", "minitorch-estimate-1"}, {"gb", kGB}, {"gib", runtime::kGiB}, {"config", q.path}};
  out["warnings"] = e.warnings;
  out["rows"] = json::array();
  for (const ConfigRow& row : e.rows) out["rows"].push_back(row_json(row));
  return out;
}

}  // namespace minitorch::estimate

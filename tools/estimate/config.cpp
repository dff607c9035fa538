#include "tools/estimate/config.h"

#include <memory>
#include <utility>

#include "data/text_dataset.h"
#include "data/tokenizer.h"
#include "nn/gpt.h"
#include "runtime/engine.h"
#include "runtime/rank_classes.h"
#include "runtime/report.h"
#include "tools/cli_common.h"
#include "zero/stage3.h"

namespace minitorch::estimate {

namespace {

bool same(const zero::ModelStateBytes& a, const zero::ModelStateBytes& b) {
  return a.param == b.param && a.grad == b.grad && a.optim == b.optim;
}
bool same(const runtime::ExactOffload& a, const runtime::ExactOffload& b) {
  return same(a.device, b.device) && same(a.host, b.host) && same(a.disk, b.disk) && a.d2h == b.d2h && a.h2d == b.h2d &&
         a.disk_read == b.disk_read && a.disk_write == b.disk_write && a.host_step == b.host_step;
}

/// Appends ranks `span` holding `bytes`, into the last run when it holds the same.
template <class Bytes>
void add_run(std::vector<RankRun<Bytes>>& runs, runtime::RankSpan span, const Bytes& bytes) {
  if (!runs.empty() && runs.back().last + 1 == span.first && same(runs.back().bytes, bytes)) runs.back().last = span.last;
  else runs.push_back({span.first, span.last, bytes});
}

/// Every rank's bytes, planned as each rank of the run plans them (zero/stage1.cpp, stage2.cpp,
/// stage3.cpp): the same Partition and plan_units calls on the same parameter shapes, once per run of
/// ranks that hold the same pieces (runtime/rank_classes.h).
void plan_ranks(const nn::NamedTensors& meta, ConfigRow* row) {
  const runtime::Config& cfg = row->config;
  const runtime::BytesPerParameter b = row->plan.bytes;
  const zero::UnitPlan units = zero::plan_units(meta, static_cast<std::size_t>(row->model.n_layer), cfg.strategy());
  const std::vector<bool> none;  // stages 0-2 keep no tensor whole
  const auto plans = [&](int rank) {  // stages 0-2's buckets, stage 3's units
    return std::pair<zero::Partition, zero::Partition>{{meta, cfg.zero.reduce_bucket_size, rank, row->world},
                                                       {meta, units.buckets, rank, row->world}};
  };
  const auto [first, first_units] = plans(0);
  row->psi = first.numel(), row->padding = first.padding(), row->buckets = first.buckets().size();
  for (const runtime::RankSpan span : runtime::rank_classes({&first, &first_units})) {
    const auto [partition, unit_partition] = plans(span.first);
    for (StageBytes& st : row->stages) {
      const bool three = st.stage == 3;
      add_run(st.exact, span, runtime::exact_model_states(st.stage, three ? unit_partition : partition, b,
                                                          three ? units.persistent : none));
    }
    for (OffloadBytes& off : row->offload) {
      const bool three = off.stage == 3;
      const zero::OffloadConfig& o = cfg.zero.offload_optimizer;
      const runtime::OffloadShape how{off.param, off.param && cfg.zero.offload_param.on_nvme(), three && o.on_nvme(),
                                      cfg.gradient_accumulation_steps, cfg.zero.sub_group_size,
                                      1 + o.pipeline_read + o.pipeline_write};
      add_run(off.exact, span, runtime::exact_offload_states(off.stage, three ? unit_partition : partition, b,
                                                             three ? units.persistent : none, how));
    }
  }
  for (StageBytes& st : row->stages)
    st.formula = runtime::model_state_bytes(st.stage, static_cast<double>(row->psi), row->world, b);
}

/// Gemini's layout and every rank's device bytes (GeminiBytes), from the chunks' Partition as each rank builds it.
GeminiBytes plan_gemini_ranks(const nn::NamedTensors& meta, const ConfigRow& row) {
  GeminiBytes g{gemini::plan_gemini(meta, row.world, row.config.gemini), {}};
  const gemini::GeminiLayout& l = g.layout;
  const runtime::BytesPerParameter b = row.plan.bytes;
  const std::int64_t n = row.world;
  std::int64_t param = 0, grad = 0;  // the same on every rank: every chunk's size is a multiple of N
  for (std::size_t c = 0; c < l.size(); ++c) {
    param += l.keep_gathered[c] ? l.allocated[c] : l.param_on_host[c] ? 0 : l.allocated[c] / n;
    grad += l.allocated[c] / n;
  }
  const auto partition = [&](int rank) { return zero::Partition(meta, gemini::chunk_members(l), rank, row.world, l.allocated); };
  const zero::Partition first = partition(0);
  for (const runtime::RankSpan span : runtime::rank_classes({&first})) {
    std::int64_t mine = 0;  // AdamW keeps its states for the pieces only: never for a chunk's empty tail
    const zero::Partition of_rank = partition(span.first);
    for (const zero::ShardPiece& piece : of_rank.pieces()) mine += piece.range.size();
    add_run(g.exact, span, zero::ModelStateBytes{b.P * param, b.G * grad, l.optim_on_host ? 0 : b.K * mine});
  }
  return g;
}

ConfigRow config_row(const ConfigRequest& q, runtime::Config cfg, std::int64_t vocab_size, int world) {
  ConfigRow row;
  row.world = world;
  row.plan = runtime::make_plan(cfg);
  row.model = runtime::model_shape(cfg, vocab_size);
  row.config = std::move(cfg);
  for (int s : q.stages) {
    row.stages.push_back({s, {}, {}});
    // Offload needs a sharded optimizer; the config's offload_param acts at stage 3 only.
    if (row.plan.offload_optimizer && s >= 1)
      row.offload.push_back({s, s == 3 && row.plan.offload_param, s == 3 && row.config.zero.offload_optimizer.on_nvme(), {}});
  }
  const auto shapes = nn::GPT::parameter_shapes(row.model);
  plan_ranks(runtime::meta_parameters(shapes), &row);
  if (row.plan.gemini) row.gemini = plan_gemini_ranks(runtime::meta_parameters(shapes), row);
  const Inputs inputs{"--config " + q.path + " (Ψ = " + commas(row.psi) + ") on --ranks " + std::to_string(world),
                      "--ranks or the config's model"};
  for (const StageBytes& st : row.stages)
    check_bytes(st.formula.total(), inputs, std::string(kStageName[st.stage]) + "'s " + runtime::model_states_text(st.stage));
  const DeepSpeedColumns columns{asks_stage(q.stages, 2), asks_stage(q.stages, 3)};
  if (columns.zero2 || columns.zero3) {
    const auto [layer, module] = runtime::largest_layer(shapes);
    const DeepSpeedSetup setup{q.gpus_per_node, layer,
                               row.plan.offload_param       ? runtime::Offload::param
                               : row.plan.offload_optimizer ? runtime::Offload::optimizer
                                                            : runtime::Offload::none,
                               columns, q.ds_options};
    row.deepspeed = deepspeed_row(static_cast<double>(row.psi), world, setup, inputs);
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

/// {"first_rank", "last_rank"} and then `fields`.
json run_json(int first, int last, const json& fields) {
  json out = {{"first_rank", first}, {"last_rank", last}};
  out.update(fields);
  return out;
}

json stage_json(const StageBytes& st) {
  json runs = json::array();
  for (const auto& run : st.exact) runs.push_back(run_json(run.first, run.last, bytes_json(run.bytes)));
  return {{"stage", st.stage},
          {"name", kStageName[st.stage]},
          {"implemented", true},
          {"formula", runtime::model_states_text(st.stage)},
          {"formula_bytes", bytes_json(st.formula)},
          {"exact", runs}};
}

json offload_json(const OffloadBytes& off) {
  json runs = json::array();
  for (const auto& run : off.exact) {
    const runtime::ExactOffload& e = run.bytes;
    json fields = {{"device", bytes_json(e.device)}, {"host", bytes_json(e.host)}, {"d2h", e.d2h}, {"h2d", e.h2d}};
    if (off.nvme)
      fields.update({{"disk", bytes_json(e.disk)}, {"disk_read", e.disk_read}, {"disk_write", e.disk_write},
                     {"host_step", e.host_step}});
    runs.push_back(run_json(run.first, run.last, fields));
  }
  return {{"stage", off.stage}, {"offload_param", off.param}, {"nvme", off.nvme}, {"exact", runs}};
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
  if (row.gemini) {
    json runs = json::array();
    for (const auto& run : row.gemini->exact) runs.push_back(run_json(run.first, run.last, bytes_json(run.bytes)));
    j["gemini"] = runtime::gemini_layout_json(row.gemini->layout, row.config.gemini.placement_policy);
    j["gemini"]["exact"] = runs;
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

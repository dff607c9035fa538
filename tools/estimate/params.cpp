#include "tools/estimate/params.h"

#include "runtime/config_error.h"

namespace minitorch::estimate {

namespace {

const runtime::PaperTable1Row* paper_row(double psi, int world) {
  for (const auto& row : runtime::paper_table1())
    if (row.psi == psi && row.world == world) return &row;
  return nullptr;
}

ParamsRow params_row(const ParamsRequest& q, const ParamsEstimate& e, std::int64_t psi_whole, int world) {
  const double psi = static_cast<double>(psi_whole);
  ParamsRow row{psi_whole, world, {}, {}};
  const runtime::PaperTable1Row* paper = q.table1 ? paper_row(psi, world) : nullptr;
  const Inputs inputs{"--params " + commas(psi_whole) + " with --ranks " + std::to_string(world), "--params or --ranks"};
  for (int s : q.stages) {
    StageCell cell{s, runtime::offload_placement(s, psi, world, e.bytes, q.offload, q.nvme)};
    const std::string name = std::string(kStageName[s]) + "'s ";
    check_bytes(cell.placement.device.total(), inputs, name + cell.placement.device_text + " on the device");
    check_bytes(cell.placement.cpu.total(), inputs, name + cell.placement.cpu_text + " on the CPU");
    check_bytes(cell.placement.disk.total(), inputs, name + cell.placement.disk_text + " on NVMe");
    if (paper && s >= 1 && cell.placement.valid) {
      cell.paper_gb = paper->gb[static_cast<std::size_t>(s - 1)];
      cell.agrees_with_paper = runtime::agrees_with_printed(cell.placement.device.total() / kGB, cell.paper_gb);
    }
    row.cells.push_back(cell);
  }
  if (e.with_deepspeed) row.deepspeed = deepspeed_row(psi, world, e.deepspeed, inputs);
  return row;
}

}  // namespace

ParamsEstimate estimate_params(const ParamsRequest& q) {
  const bool want3 = asks_stage(q.stages, 3);
  // DeepSpeed's ZeRO-3 estimate without L would be a number for no model: asked for alone (--stage 3) it is
  // an error; beside the other stages its columns are left out, and the notes say so.
  if (want3 && !q.largest && q.stages.size() == 1)
    throw runtime::ConfigError("DeepSpeed's ZeRO-3 estimate needs the largest layer's parameters (its "
                               "largest_layer_params): give --largest-layer L, or --config CONFIG to take it from the model");
  ParamsEstimate e;
  e.bytes = runtime::bytes_per_parameter(q.bf16);
  // Ψ = N = 1: only the formula texts are read.
  for (int s : q.stages) e.formulas.push_back(runtime::offload_placement(s, 1, 1, e.bytes, q.offload, q.nvme));
  const DeepSpeedColumns columns{asks_stage(q.stages, 2), want3 && q.largest.has_value()};
  e.deepspeed = {q.gpus_per_node, q.largest, q.offload, columns, q.ds_options};
  e.with_deepspeed = columns.zero2 || want3;
  e.zero3_needs_layer = want3 && !q.largest;
  for (std::int64_t psi : q.psis)
    for (int world : q.ranks) e.rows.push_back(params_row(q, e, psi, world));
  return e;
}

namespace {

json stage_json(const StageCell& cell) {
  const runtime::Placement& p = cell.placement;
  json st = {{"stage", cell.stage}, {"name", kStageName[cell.stage]}, {"paper_name", kPaperName[cell.stage]},
             {"valid", p.valid}};
  if (!p.valid) {
    st["why"] = p.why;
    return st;
  }
  st["formula"] = p.device_text;
  st["device"] = bytes_json(p.device);
  st["cpu"] = bytes_json(p.cpu);
  st["cpu_formula"] = p.cpu_text;
  st["disk"] = bytes_json(p.disk);
  st["disk_formula"] = p.disk_text;
  st["gb"] = p.device.total() / kGB;
  if (cell.paper_gb) {
    st["paper_gb"] = cell.paper_gb;
    st["agrees_with_paper"] = cell.agrees_with_paper;
  }
  return st;
}

}  // namespace

json params_json(const ParamsRequest& q, const ParamsEstimate& e) {
  json out = {{"format", "minitorch-estimate-1"},
              {"gb", kGB},
              {"gib", runtime::kGiB},
              {"precision", q.bf16 ? "mixed" : "fp32"},
              {"bytes_per_parameter", {{"P", e.bytes.P}, {"G", e.bytes.G}, {"K", e.bytes.K}}},
              {"offload", offload_name(q.offload)},
              {"nvme", nvme_name(q.nvme)}};
  if (q.offload != runtime::Offload::none) out["note"] = kOffloadNote;
  json rows = json::array();
  for (const ParamsRow& row : e.rows) {
    json r = {{"params", row.psi}, {"ranks", row.world}};
    json stages = json::array();
    for (const StageCell& cell : row.cells) stages.push_back(stage_json(cell));
    r["stages"] = stages;
    if (row.deepspeed) r["deepspeed"] = deepspeed_json(*row.deepspeed);
    if (e.zero3_needs_layer) r["deepspeed"]["zero3"] = nullptr, r["deepspeed"]["zero3_needs"] = "--largest-layer";
    rows.push_back(r);
  }
  out["rows"] = rows;
  return out;
}

}  // namespace minitorch::estimate

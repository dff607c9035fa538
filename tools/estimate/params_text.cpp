// print_params: the --params and --table1 estimate as text, the paper's table first, DeepSpeed's after it.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "tools/estimate/params.h"

namespace minitorch::estimate {

namespace {

// Column widths, in screen columns.
constexpr std::size_t kPsiWidth = 8, kRanksWidth = 6, kWhereWidth = 8, kDeepSpeedWidth = 20;
std::size_t cell_width(const ParamsRequest& q) { return q.table1 ? 24 : 20; }

bool offloads(const ParamsRequest& q) { return q.offload != runtime::Offload::none; }
bool on_nvme(const ParamsRequest& q) { return q.nvme != runtime::OnNvme::none; }

/// The first cells of a row: Ψ and N.
std::string psi_and_ranks(std::int64_t psi, int world) {
  return pad(runtime::format_parameter_count(psi), kPsiWidth, true) + pad(std::to_string(world), kRanksWidth, true);
}
std::string blank_psi_and_ranks() { return pad("", kPsiWidth) + pad("", kRanksWidth); }

void print_precision(bool bf16, runtime::BytesPerParameter b) {
  if (bf16)
    std::printf("precision: mixed (16-bit parameters and gradients; fp32 master, Adam m and v): P = %d, G = %d, K = %d "
                "bytes per parameter (the paper's mixed-precision Adam)\n", b.P, b.G, b.K);
  else
    std::printf("precision: fp32 (parameters, gradients; Adam m and v): P = %d, G = %d, K = %d bytes per parameter\n",
                b.P, b.G, b.K);
}

void print_header(const ParamsRequest& q, const ParamsEstimate& e) {
  std::printf("Model states per rank, in GB (1e9 bytes): the ZeRO paper's formulas (§3.1, docs/design.md §8)%s\n",
              q.table1 ? ", beside its Table 1 as printed [in brackets]" : "");
  print_precision(q.bf16, e.bytes);
  if (on_nvme(q))
    std::printf("offload %s, on NVMe: %s %s\n", offload_name(q.offload).c_str(),
                q.nvme == runtime::OnNvme::optimizer
                    ? "each rank's optimizer states (fp32 master, m, v) live in files on NVMe, read and written a tile "
                      "(sub_group_size) at a time by the CPU's AdamW (ZeRO-Infinity); the CPU holds only the step's tiles "
                      "and, with offload param, the parameter shards"
                    : "each rank's optimizer states and parameter shards live in files on NVMe (ZeRO-Infinity); the CPU "
                      "holds only the step's tiles, the device the reduced gradient shards and the units it gathers",
                kOffloadNote);
  else if (offloads(q))
    std::printf("offload %s: %s %s\n", offload_name(q.offload).c_str(),
                q.offload == runtime::Offload::optimizer
                    ? "each rank's optimizer states (fp32 master, m, v) and a staging copy of its gradient shard live on the "
                      "CPU, which runs AdamW (ZeRO-Offload); the device keeps the stage's parameters and gradients"
                    : "parameters, a staging copy of the gradients and optimizer states of each rank's shard on the CPU "
                      "(ZeRO-Infinity's offload_param with offload_optimizer); the device holds the reduced gradient "
                      "shards and the units it gathers",
                kOffloadNote);
  std::printf("\n");
  std::string names = pad("Ψ", kPsiWidth, true) + pad("N", kRanksWidth, true), formulas = blank_psi_and_ranks();
  if (offloads(q)) names += pad("where", kWhereWidth), formulas += pad("", kWhereWidth);
  for (std::size_t i = 0; i < q.stages.size(); ++i) {
    const runtime::Placement& p = e.formulas[i];
    names += pad(stage_label(q.stages[i]), cell_width(q));
    std::string text = !p.valid ? "n/a" : offloads(q) ? p.device_text + " | " + p.cpu_text : p.device_text;
    if (p.valid && on_nvme(q)) text += " | " + p.disk_text;
    formulas += pad(text, cell_width(q));
  }
  print_line(names);
  print_line(formulas);
}

/// A row's line (two with offload: the device's, the CPU's; three on NVMe: the disk's); the cells off the paper go
/// to `disagree`.
void print_row(const ParamsRequest& q, const ParamsRow& row, std::vector<std::string>* disagree) {
  std::string device_line = psi_and_ranks(row.psi, row.world), cpu_line = blank_psi_and_ranks(),
              disk_line = blank_psi_and_ranks();
  if (offloads(q)) device_line += pad("device", kWhereWidth), cpu_line += pad("CPU", kWhereWidth);
  disk_line += pad("NVMe", kWhereWidth);
  for (const StageCell& cell : row.cells) {
    const runtime::Placement& p = cell.placement;
    if (!p.valid) {
      device_line += pad("n/a", cell_width(q));
      cpu_line += pad("n/a", cell_width(q));
      disk_line += pad("n/a", cell_width(q));
      continue;
    }
    disk_line += pad(gb(p.disk.total()) + " GB", cell_width(q));
    std::string text = gb(p.device.total()) + " GB";
    if (cell.paper_gb) {
      if (!cell.agrees_with_paper) disagree->push_back(psi_and_ranks(row.psi, row.world) + kStageName[cell.stage]);
      text += std::string(" [") + cell.paper_gb + "]";
    }
    device_line += pad(text, cell_width(q));
    cpu_line += pad(gb(p.cpu.total()) + " GB", cell_width(q));
  }
  print_line(device_line);
  if (offloads(q)) print_line(cpu_line);
  if (on_nvme(q)) print_line(disk_line);
}

/// Why a cell is n/a, each reason once, in the order the table meets them.
void print_not_applicable(const ParamsEstimate& e) {
  std::vector<std::string> seen;
  for (const ParamsRow& row : e.rows)
    for (const StageCell& cell : row.cells)
      if (!cell.placement.valid && std::find(seen.begin(), seen.end(), cell.placement.why) == seen.end())
        seen.push_back(cell.placement.why);
  for (const std::string& why : seen) std::printf("n/a: %s\n", why.c_str());
}

void print_table1_notes(const std::vector<std::string>& disagree) {
  std::printf("\nThe paper prints Table 1 rounded (41.25 as 41.3) or truncated (4187.5 as 4187). Its DP=1 row is the\n"
              "DDP baseline (2+2+K)Ψ. ");
  if (disagree.empty()) {
    std::printf("Every cell here is within one unit of its last printed digit.\n");
    return;
  }
  std::printf("Cells off by more than one unit of the last printed digit:\n");
  for (const std::string& d : disagree) std::printf("  %s\n", d.c_str());
}

void print_deepspeed(const ParamsRequest& q, const ParamsEstimate& e) {
  std::string names = pad("Ψ", kPsiWidth, true) + pad("N", kRanksWidth, true), formulas = blank_psi_and_ranks();
  for (const auto& [name, formula] : deepspeed_headers(e.deepspeed))
    names += pad(name, kDeepSpeedWidth), formulas += pad(formula, kDeepSpeedWidth);
  std::string title = "\nDeepSpeed's own estimates";
  if (offloads(q)) title += " with offload_" + offload_name(q.offload);
  if (q.offload == runtime::Offload::param) title += " (and offload_optimizer: its estimator pairs them)";
  if (on_nvme(q)) title += " to the CPU (its estimators know no NVMe)";
  title += ", in GiB (bytes / 2^30: DeepSpeed prints these numbers as \"GB\")";
  if (q.largest) title += ", L = largest layer = " + commas(*q.largest) + " parameters";
  std::printf("%s:\n", title.c_str());
  print_line(names);
  print_line(formulas);
  for (const ParamsRow& row : e.rows) {
    std::string line = psi_and_ranks(row.psi, row.world);
    for (const std::string& cell : deepspeed_cells(*row.deepspeed)) line += pad(cell, kDeepSpeedWidth);
    print_line(line);
  }
  std::printf("\n");
  const DeepSpeedColumns shown = e.deepspeed.columns;
  std::printf("%s", runtime::deepspeed_notes(q.offload, shown.zero2, shown.zero3, e.zero3_needs_layer, q.bf16,
                                             q.ds_options).c_str());
}

}  // namespace

void print_params(const ParamsRequest& q, const ParamsEstimate& e) {
  print_header(q, e);
  std::vector<std::string> disagree;  // --table1 cells off the printed value by more than its last digit
  for (const ParamsRow& row : e.rows) print_row(q, row, &disagree);
  print_not_applicable(e);
  if (q.table1) print_table1_notes(disagree);
  if (!e.with_deepspeed) {
    std::printf("\nDeepSpeed has estimators for ZeRO-2 and ZeRO-3 only (--stage 2 or 3 shows them).\n");
    return;
  }
  print_deepspeed(q, e);
}

}  // namespace minitorch::estimate

// print_config: the --config estimate as text, one block per number of ranks, then the notes.
#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "tools/estimate/config.h"

namespace minitorch::estimate {

namespace {

/// The runs merged where the table shows the same (`same`): a table line each.
template <class Bytes, class Same>
std::vector<RankRun<Bytes>> table_runs(const std::vector<RankRun<Bytes>>& runs, Same same) {
  std::vector<RankRun<Bytes>> out;
  for (const RankRun<Bytes>& run : runs) {
    if (!out.empty() && same(out.back().bytes, run.bytes)) out.back().last = run.last;
    else out.push_back(run);
  }
  return out;
}

/// The ranks column: wide enough for "first-last" of this world (2^24 ranks: "809600-16777215").
std::size_t ranks_width(const ConfigRow& row) { return std::max<std::size_t>(9, 2 * std::to_string(row.world - 1).size() + 2); }

/// What the plan runs, in the words of the block's first line.
std::string what_runs(const runtime::Plan& plan) {
  if (plan.grid.data > 1) return kStageName[plan.zero_stage];
  if (plan.zero_stage == 0) return plan.grid.world == 1 ? "one rank, no partition" : "one data-parallel rank, no partition";
  return std::string(kStageName[plan.zero_stage]) + " on one rank: offload_optimizer runs the stage, its shard the whole model";
}

/// The marker of the stage that runs: the config's own, unless the plan runs another.
std::string marker(const ConfigRow& row, int stage) { return stage == row.plan.zero_stage ? "  * " : "    "; }

void print_description(const ConfigRequest& q, const ConfigEstimate& e, const ConfigRow& row) {
  const runtime::Plan& plan = row.plan;
  const runtime::Config& cfg = row.config;
  std::printf("%s on %d rank%s: the config runs stage %d (%s)\n", q.path.c_str(), row.world, row.world == 1 ? "" : "s",
              plan.zero_stage, plan.gemini ? "Gemini: ZeRO-3 on chunks, placed by its gemini section" : what_runs(plan).c_str());
  if (plan.zero_stage != plan.config_zero_stage)
    std::printf("  asks     zero_optimization.stage %d; one data-parallel rank runs it as stage 0 (its shard would be "
                "the whole model)\n", plan.config_zero_stage);
  const std::string vocabulary =
      cfg.model.vocab_size != 0 ? "model.vocab_size " + std::to_string(row.model.vocab_size)
                                : std::to_string(row.model.vocab_size) + " tokens, the " + cfg.training.tokenizer +
                                      " tokenizer" + (cfg.training.tokenizer == "byte" ? "" : " of " + e.data_path);
  std::printf("  model    %s: Ψ = %s parameters (vocabulary: %s)\n", row.model.describe().c_str(), commas(row.psi).c_str(),
              vocabulary.c_str());
  const bool bf16 = plan.precision == runtime::Precision::bf16, f16 = plan.precision == runtime::Precision::f16;
  std::printf("  dtype    %s (bf16.enabled %s, fp16.enabled %s): P = %d, G = %d, K = %d bytes per parameter\n",
              bf16 ? "bf16 mixed precision" : f16 ? "f16 mixed precision" : "f32", bf16 ? "true" : "false",
              f16 ? "true" : "false", plan.bytes.P, plan.bytes.G, plan.bytes.K);
  if (row.world > 1)
    std::printf("  layout   reduce_bucket_size %s elements: %zu bucket%s, %s element%s of padding in all (each bucket "
                "padded to a multiple of N = %d; stages 1 and 2)\n",
                commas(cfg.zero.reduce_bucket_size).c_str(), row.buckets, row.buckets == 1 ? "" : "s",
                commas(row.padding).c_str(), row.padding == 1 ? "" : "s", row.world);
}

void print_stages(const ConfigRow& row) {
  std::printf("\n  bytes per rank at an optimizer step (after the reduction, before the update): what the run report's\n"
              "  ranks[i].model_states measures from step 2 on (AdamW allocates its states at its first update, so\n"
              "  step 1 measures optim = 0)\n");
  std::printf("    %s%s%s%s%s%s%s\n", pad("stage", 15).c_str(), pad("ranks", ranks_width(row)).c_str(), pad("param", 13, true).c_str(),
              pad("grad", 13, true).c_str(), pad("optim", 13, true).c_str(), pad("total", 14, true).c_str(),
              " the paper's formula (real numbers)");
  const auto same = [](const zero::ModelStateBytes& a, const zero::ModelStateBytes& b) {
    return a.param == b.param && a.grad == b.grad && a.optim == b.optim;
  };
  for (const StageBytes& st : row.stages) {
    const std::string formula =
        runtime::model_states_text(st.stage) + " = " + commas(static_cast<std::int64_t>(st.formula.total()));
    bool first = true;
    for (const auto& [from, to, b] : table_runs(st.exact, same)) {
      print_line((first ? marker(row, st.stage) : "    ") + pad(first ? stage_label(st.stage) : "", 15) +
                 pad(rank_span(from, to), ranks_width(row)) + pad(commas(b.param), 13, true) + pad(commas(b.grad), 13, true) +
                 pad(commas(b.optim), 13, true) + pad(commas(b.total()), 14, true) + (first ? " " + formula : ""));
      first = false;
    }
  }
}

/// Gemini: its chunks and placement, and each rank's device bytes (the table's ZeRO-3 row is not what it runs).
void print_gemini(const ConfigRow& row) {
  const gemini::GeminiLayout& l = row.gemini->layout;
  const gemini::GeminiConfig& g = row.config.gemini;
  std::printf("\n  Gemini, placement \"%s\": %zu chunks of %s elements (%s), %s elements of empty tails, %zu kept gathered,\n"
              "  %zu with their shard in host memory, the optimizer states %s%s\n",
              g.placement_policy.c_str(), l.size(), commas(l.search.chunk_size).c_str(),
              l.from_dict ? "chunk_config_dict" : "Colossal-AI's search", commas(l.chunks.waste()).c_str(),
              l.size() - l.sharded(), l.on_host(), l.optim_on_host ? "on the host" : "on the device",
              g.placement_policy == "auto" ? " (auto: the device caches shards as the capacity allows, on top of these)" : "");
  std::printf("    %s%s%s%s%s%s\n", pad("device", 15).c_str(), pad("ranks", ranks_width(row)).c_str(),
              pad("param", 13, true).c_str(), pad("grad", 13, true).c_str(), pad("optim", 13, true).c_str(),
              pad("total", 14, true).c_str());
  const auto same = [](const zero::ModelStateBytes& a, const zero::ModelStateBytes& b) {
    return a.param == b.param && a.grad == b.grad && a.optim == b.optim;
  };
  bool first = true;
  for (const auto& [from, to, b] : table_runs(row.gemini->exact, same)) {
    print_line("  * " + pad(first ? "Gemini" : "", 15) + pad(rank_span(from, to), ranks_width(row)) +
               pad(commas(b.param), 13, true) + pad(commas(b.grad), 13, true) + pad(commas(b.optim), 13, true) +
               pad(commas(b.total()), 14, true));
    first = false;
  }
}

/// ZeRO-Offload: what moves to the host, and what each step copies (docs/design.md §10).
void print_offload(const ConfigRow& row) {
  std::printf("\n  with the config's offload_optimizer (device \"cpu\"): the device keeps no optimizer state; the host\n"
              "  holds 16 bytes per owned element; each step copies the gradient shard down and the updated shard up\n"
              "    %s%s%s%s%s%s the formulas\n",
              pad("stage", 15).c_str(), pad("ranks", ranks_width(row)).c_str(), pad("device", 13, true).c_str(),
              pad("host", 13, true).c_str(), pad("d2h/step", 13, true).c_str(), pad("h2d/step", 13, true).c_str());
  const auto same = [](const runtime::ExactOffload& a, const runtime::ExactOffload& b) {
    return a.device.total() == b.device.total() && a.host.total() == b.host.total() && a.d2h == b.d2h;
  };
  for (const OffloadBytes& off : row.offload) {
    // std::string(" "): GCC 12's -Wrestrict misfires on a literal + std::string here.
    const std::string formulas =
        off.param ? std::string(" GΨ/N, (P+G+K)Ψ/N, GΨ/N, 2A·PΨ/N (+ offload_param: the shards on the host)")
                  : std::string(" ") + runtime::model_states_text(off.stage, /*offload=*/true) + ", 16Ψ/N, GΨ/N, PΨ/N";
    for (const auto& [from, to, b] : table_runs(off.exact, same)) {
      print_line((from == 0 ? marker(row, off.stage) : "    ") + pad(from == 0 ? kStageName[off.stage] : "", 15) +
                 pad(rank_span(from, to), ranks_width(row)) +
                 pad(commas(b.device.total()), 13, true) + pad(commas(b.host.total()), 13, true) +
                 pad(commas(b.d2h), 13, true) + pad(commas(b.h2d), 13, true) + (from == 0 ? formulas : std::string()));
    }
  }
}

void print_estimate(const char* what, const runtime::DeepSpeedEstimate& e) {
  // DeepSpeed's functions return whole bytes; GiB are printed from those.
  const auto gpu = static_cast<std::int64_t>(e.gpu), cpu = static_cast<std::int64_t>(e.cpu);
  std::printf("    %s  %s = %s bytes (%s) per GPU, %s = %s bytes (%s) per CPU\n", what, e.gpu_text.c_str(),
              commas(gpu).c_str(), runtime::format_gib(static_cast<double>(gpu)).c_str(), e.cpu_text.c_str(),
              commas(cpu).c_str(), runtime::format_gib(static_cast<double>(cpu)).c_str());
}

void print_deepspeed(const DeepSpeedRow& ds, const std::string& module) {
  std::printf("\n  DeepSpeed's own estimates for this model on %s (zero_init %d, additional_buffer_factor %g;\n"
              "  L = largest layer = %s parameters, %s):\n",
              runtime::topology_text(ds.topology).c_str(), ds.setup.options.zero_init ? 1 : 0,
              ds.setup.options.buffer_factor, commas(*ds.setup.largest_layer).c_str(), module.c_str());
  if (ds.zero2) print_estimate("ZeRO-2", *ds.zero2);
  if (ds.zero3) print_estimate("ZeRO-3", *ds.zero3);
}

void print_notes(bool all_mixed, bool any_stage_bent) {
  std::printf("  * %s. Ranks differ only where the padding falls (the last ranks' shards hold it);\n"
              "  the paper's formula has no padding. ZeRO-3 keeps tensors of at most stage3_param_persistence_threshold\n"
              "  elements whole on every rank (the default 1e5 keeps the whole baby GPT whole).\n"
              "  DeepSpeed's estimators assume 16-bit training%s and count more than the paper: an fp32 copy of the\n"
              "  gradients (its 18 = 2 + 4 + 4 + 8 bytes per parameter against the paper's G + K = 2 + 12) and at\n"
              "  stage 3 the largest layer gathered whole (4L); --params Ψ --ranks N prints the whole comparison.\n"
              "  GiB = bytes / 2^30, the number DeepSpeed prints and calls \"GB\".\n",
              any_stage_bent ? "the stage that runs" : "the config's stage",
              all_mixed ? "" : " (whatever the config's dtype)");
}

}  // namespace

void print_config(const ConfigRequest& q, const ConfigEstimate& e) {
  bool all_mixed = true, any_stage_bent = false;
  for (const ConfigRow& row : e.rows) {
    print_description(q, e, row);
    print_stages(row);
    if (row.plan.offload_optimizer) print_offload(row);
    if (row.gemini) print_gemini(row);
    if (row.deepspeed) print_deepspeed(*row.deepspeed, row.largest_layer_module);
    std::printf("\n");
    all_mixed &= row.plan.precision != runtime::Precision::f32;
    any_stage_bent |= row.plan.zero_stage != row.plan.config_zero_stage;
  }
  print_notes(all_mixed, any_stage_bent);
}

}  // namespace minitorch::estimate

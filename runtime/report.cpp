#include "runtime/report.h"

#include <cstring>
#include <filesystem>

#include "gemini/gemini.h"
#include "minitorch/allocator.h"
#include "minitorch/atomic_file.h"
#include "runtime/formulas.h"
#include "tp/memory.h"
#include "tp/vocab.h"

namespace minitorch::runtime {

using ordered_json = nlohmann::ordered_json;

ordered_json gemini_layout_json(const gemini::GeminiLayout& l, const std::string& placement_policy) {
  return {{"placement_policy", placement_policy},
          {"chunk_size", l.search.chunk_size},
          {"chunk_size_from", l.from_dict ? "chunk_config_dict" : "search"},
          {"chunks", l.size()},
          {"waste_elements", l.chunks.waste()},
          {"kept_gathered", l.size() - l.sharded()},
          {"shards_on_host", l.on_host()},
          {"optimizer_on_host", l.optim_on_host}};
}

RunReport::RunReport(const Engine& engine, dist::ProcessGroup* group) : engine_(engine), group_(group) {}

void RunReport::on_event(const events::Event& e) {
  if (e.category == events::Category::phase && (e.name == "step_begin" || e.name == "step_end")) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (e.name == "step_begin") {
      this_step_ = {};
      this_step_tensor_ = {};
      this_step_transfers_ = {};
    } else {  // what runs between steps (evaluation) is not step traffic
      last_step_ = this_step_;
      last_step_tensor_ = this_step_tensor_;
      last_step_transfers_ = this_step_transfers_;
    }
    return;
  }
  if (e.category == events::Category::transfer && e.kind == events::Kind::begin) {
    std::lock_guard<std::mutex> lock(mutex_);
    TransferStats& t = this_step_transfers_;
    if (e.name == "disk_read" || e.name == "disk_write") {  // the NVMe swap (zero/nvme_store.h)
      (e.name == "disk_read" ? t.disk_read : t.disk_write) += e.bytes;
      return;
    }
    const bool up = e.name == "h2d", io = e.scope == "io";
    (up ? (io ? t.io_h2d : t.h2d) : (io ? t.io_d2h : t.d2h)) += e.bytes;
    return;
  }
  if (e.category != events::Category::comm || e.kind != events::Kind::begin) return;
  if (e.group == "tensor") {  // tensor parallelism's all-reduces: the rank_json's tensor_parallel entry
    std::lock_guard<std::mutex> lock(mutex_);
    this_step_tensor_.calls += 1;
    this_step_tensor_.elements += e.elements;
    this_step_tensor_.bytes += e.bytes;
    return;
  }
  for (std::size_t i = 0; i < kOps.size(); ++i)
    if (e.name == kOps[i]) {
      std::lock_guard<std::mutex> lock(mutex_);
      this_step_[i].calls += 1;
      this_step_[i].elements += e.elements;
      this_step_[i].bytes += e.bytes;
    }
}

void RunReport::add_step(std::int64_t step, float loss, float lr, double grad_norm, double ms) {
  steps_.push_back({{"step", step}, {"loss", loss}, {"lr", lr}, {"grad_norm", grad_norm}, {"ms", ms},
                    {"loss_scale", engine_.loss_scale()}, {"skipped", engine_.last_step_skipped()}});
}

void RunReport::add_val(std::int64_t step, float loss) { val_.push_back({{"step", step}, {"loss", loss}}); }

namespace {
ordered_json memory_json(const MemoryStats& m) {
  ordered_json j;
  for (int t = 0; t < kNumMemTags; ++t)
    j[tag_name(static_cast<MemTag>(t))] = {{"current", m.current_bytes[static_cast<std::size_t>(t)]},
                                           {"peak", m.peak_bytes[static_cast<std::size_t>(t)]}};
  j["total"] = {{"current", m.current_total}, {"peak", m.peak_total}};
  return j;
}
}  // namespace

ordered_json RunReport::rank_json() const {
  ordered_json r;
  r["rank"] = group_ ? group_->rank() : 0;
  for (const auto& [name, value] : rank_fields_.items()) r[name] = value;
  r["device"] = engine_.device().str();
  const zero::ModelStateBytes& ms = engine_.measured_model_states();
  r["model_states"] = {{"param", ms.param}, {"grad", ms.grad}, {"optim", ms.optim}};
  if (!engine_.device().is_cpu()) {
    const zero::ModelStateBytes& h = engine_.measured_host_model_states();
    r["host_model_states"] = {{"param", h.param}, {"grad", h.grad}, {"optim", h.optim}};
  }
  const zero::ModelStateBytes disk = engine_.strategy().disk_model_state_bytes();  // NVMe's swap files
  r["disk_model_states"] = {{"param", disk.param}, {"grad", disk.grad}, {"optim", disk.optim}};
  if (const std::optional<zero::SwapStats> sw = engine_.strategy().swap_stats()) {  // ZeRO-Infinity's NVMe swap
    const double read_gbs = sw->read_seconds > 0 ? static_cast<double>(sw->bytes_read) / sw->read_seconds / 1e9 : 0;
    const double write_gbs = sw->write_seconds > 0 ? static_cast<double>(sw->bytes_written) / sw->write_seconds / 1e9 : 0;
    r["nvme"] = {{"folder", sw->folder},
                 {"direct", sw->direct},
                 {"why_not_direct", sw->why_not_direct},
                 {"bytes_read", sw->bytes_read},
                 {"bytes_written", sw->bytes_written},
                 {"read_seconds", sw->read_seconds},
                 {"write_seconds", sw->write_seconds},
                 {"read_gb_per_s", read_gbs},
                 {"write_gb_per_s", write_gbs},
                 {"tiles", sw->tiles},
                 {"host_step_bytes", sw->host_step_bytes},
                 {"io_seconds_last_step", sw->io_seconds_last_step},
                 {"waited_seconds_last_step", sw->waited_seconds_last_step}};
  }
  if (const auto* g = dynamic_cast<const gemini::Gemini*>(&engine_.strategy())) {  // Gemini's chunks (gemini/layout.h)
    r["gemini"] = gemini_layout_json(g->layout(), engine_.config().gemini.placement_policy);
    r["gemini"]["gathers"] = g->gathers();
    r["gemini"]["prefetches"] = g->auto_stats().prefetches;
    if (engine_.config().gemini.placement_policy == "auto") {
      const gemini::Gemini::AutoStats& a = g->auto_stats();
      r["gemini"]["auto"] = {{"warmed_up", a.warmed_up},
                             {"schedule_uses", a.schedule_uses},
                             {"warmup_non_model_peak", a.warmup_non_model_peak},
                             {"loads", a.loads},
                             {"evictions", a.evictions},
                             {"refreshes", a.refreshes},
                             {"uncached_gathers", a.uncached_gathers},
                             {"prefetches_refused", a.prefetches_refused}};
    }
  }
  r["memory"] = memory_json(memory_stats(engine_.device()));  // the pool the rank computes in
  if (!engine_.device().is_cpu()) r["host_memory"] = memory_json(memory_stats(Device::cpu()));
  ordered_json comm;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (std::size_t i = 0; i < kOps.size(); ++i)
      comm[kOps[i]] = {{"calls", last_step_[i].calls}, {"elements", last_step_[i].elements}, {"bytes", last_step_[i].bytes}};
  }
  r["comm_last_step"] = comm;
  if (const dist::ProcessGroup* tensor = engine_.tensor_group()) r["tensor_parallel"] = tensor_parallel_json(*tensor);
  // Every copy between host and device memory goes through minitorch::copy_between (Tensor::to), which
  // reports it; the run's input and output (batches up, the loss down) are counted apart as io_*.
  // ZeRO-Infinity's NVMe swap counts its reads and writes of the step as disk_read / disk_write.
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const TransferStats& t = last_step_transfers_;
    r["transfers_last_step"] = {{"h2d", t.h2d}, {"d2h", t.d2h}, {"io_h2d", t.io_h2d}, {"io_d2h", t.io_d2h},
                                {"disk_read", t.disk_read}, {"disk_write", t.disk_write}};
  }
  return r;
}

// This rank's slices and its tensor group's all-reduces of the last step, measured and by tp/memory.h's formulas.
ordered_json RunReport::tensor_parallel_json(const dist::ProcessGroup& tensor) const {
  const Config& c = engine_.config();
  const Plan& plan = engine_.plan();
  const nn::GPTConfig& m = engine_.model().config();
  const int t = tensor.size(), e = plan.bytes.P;
  std::int64_t held = 0;
  for (const auto& [name, p] : engine_.model().named_parameters()) held += p.numel();
  CommCount measured;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    measured = last_step_tensor_;
  }
  ordered_json j = {{"tp_rank", tensor.rank()},
                    {"size", t},
                    {"padded_vocab_size", tp::padded_vocab_size(m.vocab_size, t)},
                    {"parameters", held},
                    {"all_reduce_last_step", {{"calls", measured.calls}, {"elements", measured.elements},
                                              {"bytes", measured.bytes}}}};
  if (plan.pipelined()) return j;  // a stage's share: the pipeline section has the split
  const std::int64_t G = c.gradient_accumulation_steps;
  const tp::TensorTraffic per_micro = tp::tensor_traffic_per_micro_batch(
      m, c.train_micro_batch_size_per_gpu, m.block_size, t, tensor.rank(), e, c.activation_checkpointing.enabled);
  const std::int64_t norm = dist::all_reduce_volume(1, t, tensor.rank());  // the step's Σ g², one f32 (zero/strategy.h)
  j["formula"] = {{"parameters", tp::parameters_per_rank(m, t)},
                  {"parameters_text", "Vp/t·C + T·C + 2C + L·(6C + (12C² + 7C)/t)"},
                  {"all_reduce_per_step", {{"calls", G * per_micro.calls + 1}, {"elements", G * per_micro.elements + norm},
                                           {"bytes", G * per_micro.bytes + 4 * norm}}},
                  {"all_reduce_text", "G·[(1 + 2L (+2L recomputed)) fwd + L bwd of B·T·C in e, L + 1 bwd of B·T·C and 3 of B·T in f32], "
                                      "each 2(t−1)/t on the ring; + 1 scalar: the gradient norm's Σ g²"},
                  {"block_activation_bytes", tp::block_activation_bytes(m, c.train_micro_batch_size_per_gpu,
                                                                        m.block_size, t, e)},
                  {"block_activation_text", "e·(4·BTC + (12·BTC + B·H·T²)/t) + 16·BT"}};
  return j;
}

ordered_json RunReport::to_json(const std::vector<ordered_json>& ranks) const {
  const Config& c = engine_.config();
  const std::int64_t psi = engine_.model().model_parameters();
  const Plan& plan = engine_.plan();  // what ran (runtime/plan.h)
  const int n = plan.grid.data;
  const int stage = plan.zero_stage;
  const int G = static_cast<int>(c.gradient_accumulation_steps);
  ordered_json j;
  j["format"] = "minitorch-report-1";
  j["world_size"] = plan.grid.world;
  j["data_parallel_size"] = n;
  j["pipeline_stages"] = plan.grid.pipeline;
  j["tensor_parallel_size"] = plan.grid.tensor;
  j["zero_stage"] = stage;
  j["config_zero_stage"] = plan.config_zero_stage;
  j["strategy"] = engine_.strategy().name();
  j["dtype"] = precision_name(plan.precision);
  j["num_parameters"] = psi;
  j["gradient_accumulation_steps"] = G;
  j["train_batch_size"] = c.train_batch_size;
  j["activation_checkpointing"] = c.activation_checkpointing.enabled;
  j["offload"] = {{"optimizer", c.zero.offload_optimizer.device}, {"param", c.zero.offload_param.device}};
  // fp16 (runtime/loss_scaler.h): the scale now and the steps skipped for an overflow (1 and 0 otherwise).
  j["loss_scale"] = {{"dynamic", c.fp16.enabled && c.fp16.dynamic()},
                     {"current", engine_.loss_scale()},
                     {"skipped_steps", engine_.skipped_steps()}};
  for (const auto& [name, value] : sections_.items()) j[name] = value;
  j["steps"] = steps_;
  j["val"] = val_;
  j["ranks"] = ranks;
  j["formulas"] = formulas_json();
  return j;
}

// The paper's expected values for this run (formulas.h), beside which the measured ones are read.
ordered_json RunReport::formulas_json() const {
  const Config& c = engine_.config();
  const Plan& plan = engine_.plan();
  // Ψ of what each data-parallel group reduces and updates: the whole model, or a tensor rank's slices.
  const std::int64_t psi = plan.tensor_parallel() ? tp::parameters_per_rank(engine_.model().config(), plan.grid.tensor)
                                                  : engine_.model().model_parameters();
  const int n = plan.grid.data, stage = plan.zero_stage;
  const int G = static_cast<int>(c.gradient_accumulation_steps);
  const BytesPerParameter b = plan.bytes;
  const ModelStateEstimate est = model_state_bytes(stage, static_cast<double>(psi), n, b);
  const double elements = n > 1 ? comm_elements_per_step(stage, static_cast<double>(psi), n, G) : 0.0;
  // DDP reduces in f32 buckets (dist/ddp.h); ZeRO moves gradients and parameters in their own dtype.
  const int comm_bytes = stage == 0 ? 4 : b.P;
  ordered_json f = {
      {"bytes_per_parameter", {{"P", b.P}, {"G", b.G}, {"K", b.K}}},
      {"model_states", {{"param", est.param}, {"grad", est.grad}, {"optim", est.optim}, {"total", est.total()}}},
      {"model_states_text", model_states_text(stage)},
      {"comm_elements_per_step", elements},
      {"comm_bytes_per_step", elements * comm_bytes},
      {"comm_dtype", comm_bytes == 4 ? "f32" : c.fp16.enabled ? "f16" : "bf16"},
      {"comm_text", stage <= 1 ? "2(N−1)/N·Ψ" : stage == 2 ? "(A+1)(N−1)/N·Ψ" : "3A(N−1)/N·Ψ"}};
  if (c.activation_checkpointing.enabled && c.activation_checkpointing.cpu_checkpointing && !engine_.device().is_cpu()) {
    // cpu_checkpointing: every checkpointed segment's input (B, T, C) down in forward, up in the recompute.
    const nn::GPTConfig& m = engine_.model().config();
    const std::int64_t k = c.activation_checkpointing.segment_size, segments = (m.n_layer + k - 1) / k;
    const std::int64_t bytes = G * segments * c.train_micro_batch_size_per_gpu * m.block_size * m.n_embd *
                               static_cast<std::int64_t>(b.P);  // the residual stream is in the parameters' dtype
    f["cpu_checkpointing_per_step"] = {{"d2h", bytes}, {"h2d", bytes}, {"text", "G·⌈L/k⌉·B·T·C·P"}};
  }
  if (plan.offload_optimizer) {  // ZeRO-Offload (formulas.h): device, host, transfers
    const OffloadEstimate o = offload_state_bytes(stage, static_cast<double>(psi), n, b);
    f["model_states"] = {{"param", o.device.param}, {"grad", o.device.grad}, {"optim", o.device.optim},
                                     {"total", o.device.total()}};
    f["model_states_text"] = model_states_text(stage, /*offload=*/true);
    f["host_model_states"] = {{"param", o.host.param}, {"grad", o.host.grad}, {"optim", o.host.optim},
                                          {"total", o.host.total()}};
    f["host_model_states_text"] = "16Ψ/N";
    f["transfers_per_step"] = {{"d2h", o.d2h}, {"h2d", o.h2d}, {"d2h_text", "GΨ/N"}, {"h2d_text", "PΨ/N"}};
  }
  if (c.zero.offload_optimizer.on_nvme()) {  // ZeRO-Infinity's optimizer on NVMe (formulas.h)
    const zero::OffloadConfig& o = c.zero.offload_optimizer;
    const int slots = 1 + o.pipeline_read + o.pipeline_write;
    const NvmeEstimate e = nvme_state_bytes(static_cast<double>(psi), n, b, G, c.zero.offload_param.device,
                                            static_cast<double>(c.zero.sub_group_size), slots);
    const bool params_on_disk = c.zero.offload_param.on_nvme();
    auto states = [](const ModelStateEstimate& m) {
      return ordered_json{{"param", m.param}, {"grad", m.grad}, {"optim", m.optim}, {"total", m.total()}};
    };
    f["model_states"] = states(e.device);
    f["model_states_text"] = plan.offload_param ? "GΨ/N" : "(P+G)Ψ/N";
    f["host_model_states"] = states(e.host);
    f["host_model_states_text"] = plan.offload_param && !params_on_disk ? "PΨ/N" : "0";
    f["disk_model_states"] = states(e.disk);
    f["disk_model_states_text"] = params_on_disk ? "PΨ/N + 12Ψ/N" : "12Ψ/N";
    f["transfers_per_step"] = {{"d2h", e.d2h}, {"h2d", e.h2d}, {"d2h_text", "GΨ/N"},
                               {"h2d_text", plan.offload_param ? "2A·PΨ/N" : "PΨ/N"}};
    f["disk_per_step"] = {{"read", e.disk_read}, {"write", e.disk_write},
                          {"text", params_on_disk ? "read 12Ψ/N + 2A·PΨ/N, write 12Ψ/N + PΨ/N" : "12Ψ/N each way"}};
    f["host_step_bytes"] = {{"bytes", e.host_step}, {"slots", slots},
                            {"text", "(12·slots + 4 + (G+P in 16-bit))·min(sub_group_size, Ψ/N)"}};
    return f;
  }
  if (plan.offload_param) {  // ZeRO-Infinity's offload_param (formulas.h): the shards on the host too
    const OffloadEstimate o = offload_param_state_bytes(static_cast<double>(psi), n, b, G);
    f["model_states"] = {{"param", o.device.param}, {"grad", o.device.grad}, {"optim", o.device.optim},
                         {"total", o.device.total()}};
    f["model_states_text"] = "GΨ/N";
    f["host_model_states"] = {{"param", o.host.param}, {"grad", o.host.grad}, {"optim", o.host.optim},
                              {"total", o.host.total()}};
    f["host_model_states_text"] = "(P+G+K)Ψ/N";
    f["transfers_per_step"] = {{"d2h", o.d2h}, {"h2d", o.h2d}, {"d2h_text", "GΨ/N"}, {"h2d_text", "2A·PΨ/N"}};
  }
  return f;
}

void RunReport::write(const std::string& path) const {
  const std::string mine = rank_json().dump();
  std::vector<ordered_json> ranks;
  for (const std::string& text : group_ ? dist::all_gather_strings(*group_, mine) : std::vector<std::string>{mine})
    ranks.push_back(ordered_json::parse(text));
  if (group_ && group_->rank() != 0) return;
  const std::string text = to_json(ranks).dump(2) + "\n";
  write_file_atomic(path, {{text.data(), text.size()}}, "run report");
}

}  // namespace minitorch::runtime

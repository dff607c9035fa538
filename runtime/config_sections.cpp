/// \file config_sections.cpp
/// One reader per config section (config_sections.h): DeepSpeed's keys with DeepSpeed's code defaults,
/// then SectionReader::finish() holds every key present to the key table.
#include "runtime/config_sections.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "minitorch/json_limits.h"
#include "runtime/byte_size.h"
#include "runtime/config_reader.h"

namespace minitorch::runtime {

using nlohmann::json;

namespace {

void parse_offload(const json& j, const std::string& name, Config& c, OffloadConfig& out) {
  SectionReader r(j, name, c.source);
  const bool optimizer = name.ends_with("offload_optimizer");
  r.get("device", out.device, {"none", "cpu", "nvme"});  // DeepSpeed's OffloadDeviceEnum
  r.get("pin_memory", out.pin_memory);  // the table warns: there is nothing to pin here
  r.get("nvme_path", out.nvme_path);
  if (out.on_nvme() && out.nvme_path.empty())
    r.fail(name + ".device \"nvme\" needs " + name + ".nvme_path: the folder (on an NVMe disk) for the swap files");
  if (!optimizer && out.device == "cpu" && r.has("nvme_path"))
    c.warnings.push_back(name + ".nvme_path only affects device \"nvme\" and this section's device is \"cpu\": "
                         "accepted, as DeepSpeed does, but it has no effect here");
  if (optimizer) {
    r.get("ratio", out.ratio);
    r.get("pipeline_read", out.pipeline_read);
    r.get("pipeline_write", out.pipeline_write);
    // DeepSpeed reads these with device "nvme" only: with "cpu" they do nothing, and a user should know (with
    // "none" the section is off, as silent as any feature set to off).
    if (out.device == "cpu")
      for (const char* key : {"nvme_path", "pipeline_read", "pipeline_write"})
        if (r.has(key) && j.at(key) != json(false))
          c.warnings.push_back(name + "." + key + " only affects device \"nvme\" and this section's device is \"" +
                               out.device + "\": accepted, as DeepSpeed does, but it has no effect here");
  }
  r.finish(c.warnings, c.zero.stage);  // a ratio below 1 (partial offload): not implemented yet, the table says
}

}  // namespace

void parse_zero(const json& j, Config& c) {
  SectionReader r(j, "zero_optimization", c.source);
  ZeroConfig& z = c.zero;
  r.get("stage", z.stage);
  r.get("reduce_bucket_size", z.reduce_bucket_size);  // 0: every tensor its own bucket, as DeepSpeed
  r.get("allgather_bucket_size", z.allgather_bucket_size);
  r.get("stage3_prefetch_bucket_size", z.stage3_prefetch_bucket_size);
  r.get("stage3_param_persistence_threshold", z.stage3_param_persistence_threshold);
  r.get("sub_group_size", z.sub_group_size);  // elements per tile of the ZeRO-3 optimizer step (0: one per tensor)
  std::optional<bool> overlap;
  r.get("overlap_comm", overlap);
  z.overlap_comm = overlap.value_or(z.stage == 3);  // DeepSpeed's validator: default true only for stage 3
  r.get("contiguous_gradients", z.contiguous_gradients);
  r.get("reduce_scatter", z.reduce_scatter);
  r.get("allgather_partitions", z.allgather_partitions);
  if (const json* o = r.object("offload_optimizer"))
    parse_offload(*o, "zero_optimization.offload_optimizer", c, z.offload_optimizer);
  if (const json* o = r.object("offload_param"))
    parse_offload(*o, "zero_optimization.offload_param", c, z.offload_param);
  r.finish(c.warnings, z.stage);
  // DeepSpeed's placement rules.
  if (z.offload_optimizer.enabled() && z.stage == 0)
    r.fail("zero_optimization.offload_optimizer needs ZeRO stage 1, 2 or 3 (stage is 0)");
  if (z.offload_optimizer.on_nvme() && z.stage != 3)  // as DeepSpeed: its optimizer swapper is stage 3's
    r.fail("zero_optimization.offload_optimizer.device \"nvme\" needs ZeRO stage 3 (stage is " + std::to_string(z.stage) +
           "): the optimizer's tiles are swapped by stage 3's step; use \"cpu\" at stages 1 and 2");
  if (z.offload_param.enabled() && z.stage != 3)
    r.fail("zero_optimization.offload_param is only valid with stage 3 (stage is " + std::to_string(z.stage) + ")");
  // Our rule (docs/config.md, departure 8): AdamW writes the updated shard in place, so it runs where the shard is.
  // Our rules for the parameter swap: with the optimizer's, in one swap folder per rank.
  if (z.offload_param.on_nvme() && !z.offload_optimizer.on_nvme())
    r.fail("zero_optimization.offload_param.device \"nvme\" needs zero_optimization.offload_optimizer.device \"nvme\" "
           "too (the optimizer step writes the updated shards into their swap files): set both to \"nvme\"");
  if (z.offload_param.on_nvme() && z.offload_param.nvme_path != z.offload_optimizer.nvme_path)
    r.fail("zero_optimization.offload_param.nvme_path (\"" + z.offload_param.nvme_path + "\") and "
           "zero_optimization.offload_optimizer.nvme_path (\"" + z.offload_optimizer.nvme_path + "\") differ: minitorch "
           "keeps one swap folder per rank, so give both the same path");
  if (z.offload_param.enabled() && !z.offload_optimizer.enabled())
    r.fail("zero_optimization.offload_param needs zero_optimization.offload_optimizer too (minitorch's AdamW "
           "updates the parameter shard in place, so both live on the host): add \"offload_optimizer\": "
           "{\"device\": \"" + z.offload_param.device + "\"}");
}

void parse_optimizer(const json& j, Config& c) {
  SectionReader r(j, "optimizer", c.source);
  OptimizerConfig& o = c.optimizer;
  o.specified = true;
  r.get("type", o.type_name);
  const std::string t = ascii_lower(o.type_name);
  if (t == "adamw" || t == "adam") o.type = OptimizerType::adamw;
  else if (t == "sgd") o.type = OptimizerType::sgd;
  else
    r.fail("optimizer.type '" + truncate_for_message(o.type_name) +
           "' is not supported; valid: AdamW, Adam (= AdamW, adam_w_mode), SGD");
  const json* p = r.object("params");
  r.finish(c.warnings);
  if (!p) return;
  SectionReader pr(*p, "optimizer.params", c.source);
  pr.get("lr", o.lr);
  pr.get("weight_decay", o.weight_decay);
  if (o.type == OptimizerType::sgd) {
    pr.get("momentum", o.momentum);
  } else {
    if (const json* b = p->contains("betas") ? &(*p)["betas"] : nullptr) {
      if (!b->is_array() || b->size() != 2 || !(*b)[0].is_number() || !(*b)[1].is_number())
        pr.fail("optimizer.params.betas must be an array of two numbers, got " + json_excerpt(*b));
      o.beta1 = (*b)[0].get<double>();
      o.beta2 = (*b)[1].get<double>();
      // torch.optim.AdamW's rule: a beta of 1 never forgets, and its bias correction divides by 0.
      if (!(o.beta1 >= 0 && o.beta1 < 1) || !(o.beta2 >= 0 && o.beta2 < 1))
        pr.fail("optimizer.params.betas must both be in [0, 1), got " + json_excerpt(*b));
    }
    pr.known("betas");
    pr.get("eps", o.eps);
    pr.get("adam_w_mode", o.adam_w_mode);
    if (!o.adam_w_mode && o.weight_decay != 0.0)
      pr.fail("optimizer.params.adam_w_mode false (Adam with L2 weight decay) is not supported; use AdamW");
  }
  pr.finish(c.warnings);
}

void parse_scheduler(const json& j, Config& c) {
  SectionReader r(j, "scheduler", c.source);
  std::string type;
  r.get("type", type);
  if (type.empty()) r.fail("scheduler.type is required (WarmupLR, WarmupDecayLR or WarmupCosineLR)");
  optim::LRScheduleConfig& s = c.scheduler;
  try {
    s.type = optim::parse_lr_schedule_type(type);
  } catch (const std::runtime_error& e) {
    r.fail(std::string("scheduler: ") + e.what());
  }
  const json* p = r.object("params");
  r.finish(c.warnings);
  static const json empty = json::object();
  SectionReader pr(p ? *p : empty, "scheduler.params", c.source);
  pr.get("warmup_num_steps", s.warmup_num_steps);
  std::string wt = optim::warmup_type_name(s.warmup_type);
  pr.get("warmup_type", wt, {"log", "linear"});
  s.warmup_type = optim::parse_warmup_type(wt);
  if (s.type == optim::LRScheduleType::warmup_cosine_lr) {
    pr.get("warmup_min_ratio", s.warmup_min_ratio);
    pr.get("cos_min_ratio", s.cos_min_ratio);
  } else {
    pr.get("warmup_min_lr", s.warmup_min_lr);
    pr.get("warmup_max_lr", s.warmup_max_lr);
  }
  if (s.type != optim::LRScheduleType::warmup_lr) {
    pr.get("total_num_steps", s.total_num_steps);
    if (!pr.has("total_num_steps")) pr.fail(std::string("scheduler.params.total_num_steps is required by ") + type);
  }
  pr.finish(c.warnings);
}

void parse_model(const json& j, Config& c) {
  SectionReader r(j, "model", c.source);
  std::string name = c.model.name;
  r.get("name", name);
  try {
    c.model = model_preset(name);
  } catch (const ConfigError& e) {
    r.fail(e.what());
  }
  // Token ids and positions are i32; the memory check (model_budget.h) bounds the product.
  r.get("n_layer", c.model.n_layer);
  r.get("n_head", c.model.n_head);
  r.get("n_embd", c.model.n_embd);
  r.get("block_size", c.model.block_size);
  r.get("vocab_size", c.model.vocab_size);
  r.get("dropout", c.model.dropout);
  r.get("bias", c.model.bias);
  r.finish(c.warnings);  // dropout other than 0: not implemented yet
  if (c.model.n_embd % c.model.n_head != 0)
    r.fail("model.n_embd (" + std::to_string(c.model.n_embd) + ") must be divisible by model.n_head (" +
           std::to_string(c.model.n_head) + ")");
}

void parse_training(const json& j, Config& c) {
  SectionReader r(j, "training", c.source);
  TrainingConfig& t = c.training;
  r.get("steps", t.steps);
  r.get("eval_interval", t.eval_interval);
  r.get("eval_iters", t.eval_iters);     // 0 batches would average nothing: nan
  r.get("log_interval", t.log_interval); // a period: 0 would divide by zero
  r.get("checkpoint", t.checkpoint);
  r.get("seed", t.seed);
  r.get("tokenizer", t.tokenizer, {"char", "byte"});
  r.get("data", t.data);
  r.finish(c.warnings);
}

void parse_small_sections(SectionReader& r, Config& c) {
  if (const json* b = r.object("bf16")) {
    SectionReader br(*b, "bf16", c.source);
    br.get("enabled", c.bf16);
    br.finish(c.warnings);
  }
  if (const json* f = r.object("fp16")) {
    SectionReader fr(*f, "fp16", c.source);
    Fp16Config& f16 = c.fp16;
    fr.get("enabled", f16.enabled);
    fr.get("loss_scale", f16.loss_scale);
    fr.get("initial_scale_power", f16.initial_scale_power);
    fr.get("loss_scale_window", f16.loss_scale_window);
    fr.get("hysteresis", f16.hysteresis);
    fr.get("consecutive_hysteresis", f16.consecutive_hysteresis);
    fr.get("min_loss_scale", f16.min_loss_scale);
    // DeepSpeed's _validate_dynamic_loss_scale_params: the window and the floor matter only to a dynamic
    // scale of an enabled fp16, and only then must they be > 0.
    if (f16.enabled && f16.dynamic()) {
      if (f16.loss_scale_window <= 0)
        fr.fail("fp16.loss_scale_window must be > 0 when dynamic loss scaling is enabled (loss_scale=0), got " +
                std::to_string(f16.loss_scale_window));
      if (!(f16.min_loss_scale > 0))
        fr.fail("fp16.min_loss_scale must be > 0 when dynamic loss scaling is enabled (loss_scale=0), got " +
                json(f16.min_loss_scale).dump());
      if (f16.min_loss_scale > std::ldexp(1.0, f16.initial_scale_power))  // minitorch's check
        fr.fail("fp16.min_loss_scale " + json(f16.min_loss_scale).dump() + " is above the initial scale 2^" +
                std::to_string(f16.initial_scale_power) + "; lower it or raise fp16.initial_scale_power");
    }
    fr.finish(c.warnings);
  }
  // DeepSpeed's message.
  if (c.bf16 && c.fp16.enabled)
    r.fail("bfloat16 and fp16 modes cannot be simultaneously enabled (bf16.enabled and fp16.enabled are both true)");
  if (const json* p = r.object("pipeline")) {
    SectionReader pr(*p, "pipeline", c.source);
    pr.get("stages", c.pipeline.stages);
    pr.get("schedule", c.pipeline.schedule, {"gpipe", "1f1b"});
    pr.get("partition_method", c.pipeline.partition_method, {"parameters", "uniform"});
    pr.finish(c.warnings);
  }
  if (const json* t = r.object("tensor_parallel")) {
    SectionReader tr(*t, "tensor_parallel", c.source);
    std::int64_t autotp = 0, size = 0;
    tr.get("autotp_size", autotp);  // DeepSpeed's: 0 (off) or the size
    tr.get("size", size);           // ours
    if (autotp > 0 && size > 0 && autotp != size)
      tr.fail("tensor_parallel.autotp_size (" + std::to_string(autotp) + ") and tensor_parallel.size (" +
              std::to_string(size) + ") differ: they are the same setting, give one");
    c.tensor_parallel.size = static_cast<int>(std::max<std::int64_t>({1, autotp, size}));
    tr.finish(c.warnings);
  }
  if (const json* a = r.object("activation_checkpointing")) {
    SectionReader ar(*a, "activation_checkpointing", c.source);
    ar.get("enabled", c.activation_checkpointing.enabled);
    ar.get("segment_size", c.activation_checkpointing.segment_size);
    ar.get("cpu_checkpointing", c.activation_checkpointing.cpu_checkpointing);
    if (c.activation_checkpointing.cpu_checkpointing && !c.activation_checkpointing.enabled)
      ar.fail("activation_checkpointing.cpu_checkpointing keeps the checkpointed blocks' inputs in host memory: it needs "
              "activation_checkpointing.enabled true (minitorch checkpoints only when enabled)");
    ar.finish(c.warnings);
  }
}

void parse_aio(const json& j, Config& c) {
  SectionReader r(j, "aio", c.source);
  AioConfig& a = c.aio;
  r.get("block_size", a.block_size);
  if (a.block_size % 4096 != 0)
    r.fail("aio.block_size " + std::to_string(a.block_size) + " is not a multiple of 4096: O_DIRECT reads and writes "
           "whole 4 KiB blocks through buffers of this size (1048576, DeepSpeed's default, is one)");
  r.get("intra_op_parallelism", a.intra_op_parallelism);
  if (r.has("thread_count")) {  // DeepSpeed's old name (PR #7056); the table's deprecation warning names the new one
    int threads = 1;
    r.get("thread_count", threads);
    if (r.has("intra_op_parallelism") && threads != a.intra_op_parallelism)
      r.fail("aio.thread_count (" + std::to_string(threads) + ") and aio.intra_op_parallelism (" +
             std::to_string(a.intra_op_parallelism) + ") are one key, DeepSpeed's old and new names, with different "
             "values: keep intra_op_parallelism");
    a.intra_op_parallelism = threads;
  }
  r.get("queue_depth", a.queue_depth);  // the table warns: these four tune libaio / GPUDirect, not used here
  r.get("single_submit", a.single_submit);
  r.get("overlap_events", a.overlap_events);
  r.get("use_gds", a.use_gds);
  r.finish(c.warnings);
  if (!c.zero.offload_optimizer.on_nvme() && !j.empty())
    c.warnings.push_back("aio only affects ZeRO-Infinity's NVMe swap (zero_optimization.offload_optimizer.device "
                         "\"nvme\") and this config has none: accepted, as DeepSpeed does, but it has no effect here");
}

void parse_gemini(const json& j, Config& c) {
  SectionReader r(j, "gemini", c.source);
  gemini::GeminiConfig& g = c.gemini;
  g.enabled = true;
  r.get("placement_policy", g.placement_policy, {"static", "auto"});
  r.get("shard_param_frac", g.shard_param_frac);  // [0, 1]: the table
  r.get("offload_optim_frac", g.offload_optim_frac);
  r.get("offload_param_frac", g.offload_param_frac);
  if (g.placement_policy == "static" && g.offload_optim_frac > 0 && g.offload_optim_frac < 1)
    r.fail("gemini.offload_optim_frac " + std::to_string(g.offload_optim_frac) + " (a share of the chunks' optimizer "
           "states on the host) is not implemented yet: set 0.0 (all on the device) or 1.0 (all on the host)");
  const bool auto_policy = g.placement_policy == "auto";
  for (const char* key : {"shard_param_frac", "offload_optim_frac", "offload_param_frac"})
    if (auto_policy && r.has(key))  // Colossal-AI passes them to the static policy only
      c.warnings.push_back(std::string("gemini.") + key + " only affects placement_policy \"static\" and this config's is "
                           "\"auto\" (every sharded chunk's shard and optimizer states on the host, the device caching "
                           "shards as the capacity allows): accepted, but it has no effect here");
  if (auto_policy) g.shard_param_frac = 1.0, g.offload_optim_frac = 1.0, g.offload_param_frac = 0.0;
  for (const char* key : {"warmup_non_model_data_ratio", "steady_cuda_cap_ratio"})
    if (!auto_policy && r.has(key))
      c.warnings.push_back(std::string("gemini.") + key + " only affects placement_policy \"auto\" and this config's is "
                           "\"static\": accepted, but it has no effect here");
  if (!auto_policy && g.offload_param_frac > 0 && (g.shard_param_frac != 1.0 || g.offload_optim_frac != 1.0)) {
    // Colossal-AI's StaticPlacementPolicy warns and ignores it too: a parameter on the host needs its optimizer
    // states there (the host AdamW updates it in place), and only a sharded chunk moves.
    c.warnings.push_back("gemini.offload_param_frac only affects a run with shard_param_frac and offload_optim_frac both "
                         "1.0 (as Colossal-AI): accepted, but it has no effect here");
    g.offload_param_frac = 0.0;
  }
  r.get("warmup_non_model_data_ratio", g.warmup_non_model_data_ratio);  // auto placement: the table
  r.get("steady_cuda_cap_ratio", g.steady_cuda_cap_ratio);
  r.get("gpu_margin_mem_ratio", g.gpu_margin_mem_ratio);
  r.get("max_prefetch", g.max_prefetch);
  r.get("search_range_m", g.search_range_m);
  r.get("min_chunk_size_m", g.min_chunk_size_m);
  r.get("hidden_dim", g.hidden_dim);
  if (const json* dict = r.object("chunk_config_dict")) {
    for (const auto& [key, entry] : dict->items()) {
      const std::string where = "gemini.chunk_config_dict[\"" + truncate_for_message(key) + "\"]";
      // A data-parallel size written as a JSON key: digits only (no sign, space or exponent), at most 9 of them.
      const bool digits = !key.empty() && key.size() <= 9 &&
                          std::all_of(key.begin(), key.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
      const int dp = digits ? std::stoi(key) : 0;
      if (dp < 1) r.fail(where + ": a key is a data-parallel size, a whole number >= 1 (e.g. \"4\")");
      if (!entry.is_object() || !entry.contains("chunk_size"))
        r.fail(where + " must be an object {\"chunk_size\": elements per chunk, \"keep_gathered\": true|false}");
      gemini::ChunkChoice choice;
      for (const auto& [field, value] : entry.items()) {
        if (field == "chunk_size" && value.is_number_integer() && value.get<std::int64_t>() >= 1)
          choice.chunk_size = value.get<std::int64_t>();
        else if (field == "keep_gathered" && value.is_boolean())
          choice.keep_gathered = value.get<bool>();
        else if (field == "chunk_size" || field == "keep_gathered")
          r.fail(where + "." + field + " must be " + (field == "chunk_size" ? "an integer >= 1" : "a boolean") +
                 ", not " + truncate_for_message(value.dump()));
        else
          r.fail("unknown key '" + truncate_for_message(field) + "' in " + where + "; its keys are chunk_size and keep_gathered");
      }
      g.chunk_config_dict[dp] = choice;
    }
  }
  r.get("enable_gradient_accumulation", g.enable_gradient_accumulation);  // the table warns: no effect
  r.finish(c.warnings);
}

void parse_comm(const json& j, Config& c) {
  SectionReader r(j, "comm", c.source);
  r.get("timeout_s", c.comm.timeout_s);  // > 0 (the table): 0 would time out every wait at once
  r.finish(c.warnings);
}

void parse_device(const json& j, Config& c) {
  SectionReader r(j, "device", c.source);
  r.get("type", c.device.type, {"cpu", "sim", "cuda"});
  // sim's two sizes (runtime/byte_size.h): a size string or a number of bytes, positive, on "type": "sim" only
  for (const auto& [key, which, into] : {std::tuple{"memory", SimSize::capacity, &c.device.memory},
                                         std::tuple{"link_bandwidth", SimSize::link_bandwidth, &c.device.link_bandwidth}}) {
    if (!j.contains(key)) continue;
    const json& v = j.at(key);
    const std::string name = std::string("device.") + key;
    r.known(key);
    if (c.device.type != "sim")
      r.fail(name + " is " + sim_size_meaning(which) + ": it applies to \"type\": \"sim\" only, not \"" + c.device.type +
             "\"; remove it, or set device.type to \"sim\"");
    if (!v.is_string() && !v.is_number())
      r.fail(name + (which == SimSize::capacity ? " must be a size: a string such as \"24MiB\" or a number of bytes"
                                                : " must be bytes per second: a string such as \"16GB\" or a number"));
    try {
      *into = parse_sim_size(v.is_string() ? v.get<std::string>() : v.dump(), which, name);
    } catch (const std::invalid_argument& e) {
      r.fail(e.what());
    }
  }
  r.finish(c.warnings);
}

}  // namespace minitorch::runtime

/// \file config.cpp
/// One function per section; each reads DeepSpeed's keys with DeepSpeed's code defaults (the defaults
/// live in config.h), then `finish()` rejects any key it did not read and that the key table
/// (runtime/config_keys.cpp) does not list, and applies the table's verdict to every key present.
#include "runtime/config.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "minitorch/json_limits.h"
#include "nn/gpt_config.h"
#include "runtime/byte_size.h"
#include "runtime/config_reader.h"
#include "runtime/config_spellings.h"

namespace minitorch::runtime {

using nlohmann::json;

namespace {


std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

void parse_offload(const json& j, const std::string& name, Config& c, OffloadConfig& out) {
  SectionReader r(j, name, c.source);
  r.get("device", out.device, {"none", "cpu", "nvme"});  // DeepSpeed's OffloadDeviceEnum
  if (out.device == "nvme")
    r.fail(name + ".device \"nvme\" (ZeRO-Infinity's NVMe offload) is not implemented yet; use \"none\"");
  r.get("pin_memory", out.pin_memory);
  if (name.ends_with("offload_optimizer")) r.get("ratio", out.ratio);
  r.finish(c.warnings, c.zero.stage);  // a ratio below 1 (partial offload): not implemented yet, the table says
}

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
  if (z.offload_param.enabled() && z.stage != 3)
    r.fail("zero_optimization.offload_param is only valid with stage 3 (stage is " + std::to_string(z.stage) + ")");
}

void parse_optimizer(const json& j, Config& c) {
  SectionReader r(j, "optimizer", c.source);
  OptimizerConfig& o = c.optimizer;
  o.specified = true;
  r.get("type", o.type_name);
  const std::string t = lower(o.type_name);
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

void parse_comm(const json& j, Config& c) {
  SectionReader r(j, "comm", c.source);
  r.get("timeout_s", c.comm.timeout_s);  // > 0 (the table): 0 would time out every wait at once
  r.finish(c.warnings);
}

void parse_device(const json& j, Config& c) {
  SectionReader r(j, "device", c.source);
  r.get("type", c.device.type, {"cpu", "sim", "cuda"});
  if (const json* m = j.contains("memory") ? &j.at("memory") : nullptr) {
    r.known("memory");
    if (c.device.type != "sim")
      r.fail("device.memory is the simulated accelerator's capacity: it applies to \"type\": \"sim\" only, not \"" +
             c.device.type + "\"; remove it, or set device.type to \"sim\"");
    if (!m->is_string() && !m->is_number())
      r.fail("device.memory must be a size: a string such as \"24MiB\" or a number of bytes");
    try {
      c.device.memory = parse_byte_size(m->is_string() ? m->get<std::string>() : m->dump());
    } catch (const std::invalid_argument& e) {
      r.fail(std::string("device.memory: ") + e.what());
    }
    if (c.device.memory == 0)
      r.fail("device.memory is 0 bytes: give the simulated accelerator's capacity (e.g. \"24MiB\"), or remove the key for no limit");
  }
  r.finish(c.warnings);
}

/// DeepSpeed's _set_batch_related_parameters + _batch_assertion, messages verbatim.
void resolve_batch(Config& c, bool has_train, bool has_micro, bool has_gas) {
  const std::int64_t W = c.data_parallel_size;
  std::int64_t& train = c.train_batch_size;
  std::int64_t& micro = c.train_micro_batch_size_per_gpu;
  std::int64_t& gas = c.gradient_accumulation_steps;
  auto s = [](std::int64_t v) { return std::to_string(v); };
  // Products of user numbers: checked, since a config of 2^62-sized batches would overflow silently.
  auto product = [&](std::int64_t a, std::int64_t b, std::int64_t d) {
    std::int64_t ab = 0, abd = 0;
    if (__builtin_mul_overflow(a, b, &ab) || __builtin_mul_overflow(ab, d, &abd))
      throw ConfigError(c.source + ": train_micro_batch_size_per_gpu * gradient_accumulation_steps * world_size = " +
                        s(a) + " * " + s(b) + " * " + s(d) + " overflows a 64-bit integer; use smaller batch sizes");
    return abd;
  };
  // DeepSpeed's message first (users search for it), then where the numbers came from and what to do.
  std::string derived;  // how a value the config left out was computed, if one was
  auto derive = [&](const char* key, const std::string& formula, std::int64_t value) {
    derived = std::string(key) + " = " + formula + " = " + s(value) + " (integer division, as DeepSpeed does)";
  };
  auto fail = [&](const std::string& deepspeed_message) {
    throw ConfigError(c.source + ": " + deepspeed_message + " (" + (derived.empty() ? "" : derived + ", ") +
                      "world size " + s(W) + "); set the batch keys for " + s(W) + " rank" + (W == 1 ? "" : "s") +
                      ", or give only train_batch_size, a multiple of the number of ranks, and let the others be derived");
  };
  // Checked before any division (DeepSpeed would raise ZeroDivisionError here).
  if (has_micro && micro <= 0) fail("Micro batch size per gpu: " + s(micro) + " has to be greater than 0");
  if (has_gas && gas <= 0) fail("Gradient accumulation steps: " + s(gas) + " has to be greater than 0");
  if (has_train && has_micro && has_gas) {
  } else if (has_train && has_micro) {
    gas = train / micro / W;
    derive("gradient_accumulation_steps", s(train) + " / " + s(micro) + " / " + s(W), gas);
  } else if (has_train && has_gas) {
    micro = train / W / gas;
    derive("train_micro_batch_size_per_gpu", s(train) + " / " + s(W) + " / " + s(gas), micro);
  } else if (has_micro && has_gas) {
    train = product(micro, gas, W);
  } else if (has_train) {
    gas = 1;
    micro = train / W;
    derive("train_micro_batch_size_per_gpu", s(train) + " / " + s(W), micro);
  } else if (has_micro) {
    train = product(micro, 1, W);
    gas = 1;
  } else {
    throw ConfigError(c.source + ": Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided");
  }
  if (train <= 0) fail("Train batch size: " + s(train) + " has to be greater than 0");
  if (micro <= 0) fail("Micro batch size per gpu: " + s(micro) + " has to be greater than 0");
  if (gas <= 0) fail("Gradient accumulation steps: " + s(gas) + " has to be greater than 0");
  if (train != product(micro, gas, W))
    fail("Check batch related parameters. train_batch_size is not equal to micro_batch_per_gpu * gradient_acc_step "
         "* world_size " + s(train) + " != " + s(micro) + " * " + s(gas) + " * " + s(W));
}

}  // namespace

ModelConfig model_preset(const std::string& name) {
  nn::GPTConfig g;
  try {
    g = nn::GPTConfig::named(name);  // the one table of presets
  } catch (const std::invalid_argument&) {
    throw ConfigError("model.name '" + truncate_for_message(name) + "' is not a preset; valid: baby, small, gpt2");
  }
  ModelConfig m;
  m.name = name;
  m.n_layer = g.n_layer, m.n_head = g.n_head, m.n_embd = g.n_embd, m.block_size = g.block_size;
  m.vocab_size = g.vocab_size, m.bias = g.bias;
  return m;
}

Config Config::from_file(const std::string& path, int world_size) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw ConfigError("config file '" + path + "' not found");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError("config file '" + path + "' cannot be opened for reading");
  std::ostringstream buf;
  buf << in.rdbuf();
  return from_json(buf.str(), world_size, path);
}

Config Config::from_json(const std::string& text, int world_size, const std::string& source) {
  Config c;
  c.source = source;
  if (world_size < 1) throw ConfigError(source + ": world_size must be at least 1, got " + std::to_string(world_size));
  c.world_size = world_size;
  json top = parse_config_json(text, source);
  apply_deepspeed_spellings(top, source, c.warnings);  // old names and aliases, as DeepSpeed maps them
  SectionReader r(top, "", source);
  const bool has_train = r.has("train_batch_size"), has_micro = r.has("train_micro_batch_size_per_gpu"),
             has_gas = r.has("gradient_accumulation_steps");
  r.get("train_batch_size", c.train_batch_size);
  r.get("train_micro_batch_size_per_gpu", c.train_micro_batch_size_per_gpu);
  r.get("gradient_accumulation_steps", c.gradient_accumulation_steps);
  r.get("gradient_clipping", c.gradient_clipping);
  r.get("steps_per_print", c.steps_per_print);  // a period: 0 would divide by zero
  r.get("wall_clock_breakdown", c.wall_clock_breakdown);
  std::string reduce_op = "mean";
  r.get("gradient_allreduce_op", reduce_op);
  reduce_op = lower(reduce_op);  // DeepSpeed lower-cases it
  parse_small_sections(r, c);
  if (const json* z = r.object("zero_optimization")) parse_zero(*z, c);
  // DeepSpeed's get_gradient_allreduce_op and _do_error_check, messages verbatim.
  if (reduce_op != "mean" && reduce_op != "sum")
    r.fail("Invalid gradient_allreduce_op. Supported operations: ['mean', 'sum']. Got: '" + truncate_for_message(reduce_op) + "'");
  if (reduce_op == "sum" && c.zero.stage == 3) r.fail("gradient_allreduce_op='sum' is not supported with ZeRO stage 3");
  if (reduce_op == "sum")
    r.fail("gradient_allreduce_op 'sum' (gradients summed over the ranks, not averaged) is not implemented yet; remove it or "
           "set \"mean\"");
  if (const json* o = r.object("optimizer")) parse_optimizer(*o, c);
  if (const json* s = r.object("scheduler")) parse_scheduler(*s, c);
  if (const json* m = r.object("model")) parse_model(*m, c);
  if (c.activation_checkpointing.segment_size > c.model.n_layer)
    r.fail("activation_checkpointing.segment_size (" + std::to_string(c.activation_checkpointing.segment_size) +
           ") is more than the model's " + std::to_string(c.model.n_layer) +
           " blocks (model.n_layer): a segment is at most the whole stack");
  if (const json* t = r.object("training")) parse_training(*t, c);
  if (const json* cm = r.object("comm")) parse_comm(*cm, c);
  if (const json* d = r.object("device")) parse_device(*d, c);
  r.finish(c.warnings, c.zero.stage);  // unknown top-level keys: warnings
  if (c.pipeline.stages > c.model.n_layer)
    r.fail("pipeline.stages (" + std::to_string(c.pipeline.stages) + ") is more than the model's " +
           std::to_string(c.model.n_layer) + " blocks (model.n_layer): every stage needs at least one block");
  if (c.pipeline.stages > world_size || world_size % c.pipeline.stages != 0)
    r.fail("pipeline.stages (" + std::to_string(c.pipeline.stages) + ") must divide the world size (" +
           std::to_string(world_size) + "): the ranks form stages × data-parallel replicas; run with a multiple of " +
           std::to_string(c.pipeline.stages) + " ranks");
  // DeepSpeed's pipeline engine asserts the same: ZeRO-2 would reduce-scatter every micro-batch's
  // gradients (the micro-batches are the pipeline's, not an accumulation ZeRO-2 can defer) and
  // ZeRO-3 would gather every stage's parameters once per micro-batch.
  if (c.pipeline.stages > 1 && c.zero.stage >= 2)
    r.fail("ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism (zero_optimization.stage " +
           std::to_string(c.zero.stage) + " with pipeline.stages " + std::to_string(c.pipeline.stages) +
           "): use stage 0 or 1, or pipeline.stages 1");
  c.data_parallel_size = static_cast<int>(world_size / c.pipeline.stages);
  resolve_batch(c, has_train, has_micro, has_gas);
  return c;
}

zero::StrategyConfig Config::strategy() const {
  zero::StrategyConfig s;
  s.zero = zero;
  s.adamw.lr = static_cast<float>(optimizer.lr);
  s.adamw.beta1 = static_cast<float>(optimizer.beta1);
  s.adamw.beta2 = static_cast<float>(optimizer.beta2);
  s.adamw.eps = static_cast<float>(optimizer.eps);
  s.adamw.weight_decay = static_cast<float>(optimizer.weight_decay);
  return s;
}

}  // namespace minitorch::runtime

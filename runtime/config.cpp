/// \file config.cpp
/// The config as a whole: the top-level keys, each section handed to its reader (config_sections.h), the
/// rules across sections, and DeepSpeed's batch triple. A reader of a section reads DeepSpeed's keys with
/// DeepSpeed's code defaults (the defaults live in config.h), then `finish()` rejects any key it did not
/// read and that the key table (runtime/config_keys.h) does not list, and applies the table's verdict to
/// every key present.
#include "runtime/config.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "minitorch/json_limits.h"
#include "nn/gpt_config.h"
#include "runtime/config_reader.h"
#include "runtime/config_sections.h"
#include "runtime/config_spellings.h"

namespace minitorch::runtime {

using nlohmann::json;

namespace {

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


/// Gemini against the rest of the config (docs/config.md, `gemini`): it is ZeRO-3 on chunks and places the chunks
/// itself, so it needs stage 3 and no offload section, and chunk_config_dict must cover this data-parallel size.
void check_gemini(const SectionReader& r, const json& top, Config& c) {
  const gemini::GeminiConfig& g = c.gemini;
  if (c.zero.stage != 3)
    r.fail("gemini needs zero_optimization.stage 3 (Gemini is ZeRO-3 on chunks: each chunk sharded over the "
           "data-parallel ranks), and this config has stage " + std::to_string(c.zero.stage) +
           ": set \"zero_optimization\": {\"stage\": 3}, or remove the gemini section");
  const std::pair<const char*, const OffloadConfig*> offloads[] = {{"offload_optimizer", &c.zero.offload_optimizer},
                                                                   {"offload_param", &c.zero.offload_param}};
  for (const auto& [name, o] : offloads)
    if (o->enabled())
      r.fail(std::string("zero_optimization.") + name + " and gemini together: Gemini places the chunks itself; use "
             "gemini.offload_optim_frac / gemini.offload_param_frac instead, or remove the gemini section for "
             "DeepSpeed's offload");
  if (!g.chunk_config_dict.empty()) {
    auto it = g.chunk_config_dict.find(c.data_parallel_size);
    if (it == g.chunk_config_dict.end())
      r.fail("gemini.chunk_config_dict has no entry for this run's data-parallel size " +
             std::to_string(c.data_parallel_size) + ": add \"" + std::to_string(c.data_parallel_size) +
             "\": {\"chunk_size\": ..., \"keep_gathered\": false}");
    if (!it->second.keep_gathered && it->second.chunk_size % c.data_parallel_size != 0)
      r.fail("gemini.chunk_config_dict[\"" + std::to_string(c.data_parallel_size) + "\"].chunk_size " +
             std::to_string(it->second.chunk_size) + " is not a multiple of the data-parallel size " +
             std::to_string(c.data_parallel_size) + ": every rank owns an equal shard of each chunk");
  }
  // ZeRO-3's unit keys have no counterpart: a chunk is gathered when first used, and shard_param_frac keeps
  // chunks gathered.
  if (const auto z = top.find("zero_optimization"); z != top.end() && z->is_object())
    for (const char* key : {"stage3_prefetch_bucket_size", "stage3_param_persistence_threshold"})
      if (z->contains(key))
        c.warnings.push_back(std::string("zero_optimization.") + key + " tunes ZeRO-3's units, and with gemini the "
                             "chunks are the units (gathered when first used; gemini.shard_param_frac keeps chunks "
                             "gathered): accepted, but it has no effect here");
}

/// The rules of tensor_parallel.size t > 1 (tp/): t divides the heads, stages · t the world; no ZeRO-3 or Gemini.
void check_tensor_parallel(const SectionReader& r, const Config& c, int world_size) {
  const std::int64_t t = c.tensor_parallel.size;
  if (t == 1) return;
  const std::string ts = std::to_string(t);
  if (c.model.n_head % t != 0)
    r.fail("tensor_parallel.size " + ts + " does not divide the model's " + std::to_string(c.model.n_head) +
           " heads (model.n_head): each rank computes whole heads; use a size that divides it");
  if (world_size % (c.pipeline.stages * t) != 0)
    r.fail("tensor_parallel.size " + ts + " × pipeline.stages " + std::to_string(c.pipeline.stages) +
           " does not divide the world size (" + std::to_string(world_size) +
           "): the ranks form data × pipeline × tensor; run with a multiple of " + std::to_string(c.pipeline.stages * t) +
           " ranks");
  if (c.zero.stage == 3 || c.gemini.enabled)
    r.fail(std::string(c.gemini.enabled ? "gemini" : "zero_optimization.stage 3") + " with tensor_parallel.size " + ts +
           " is not supported: ZeRO-3 gathers whole blocks, and a tensor-parallel rank holds slices (DeepSpeed's AutoTP "
           "trains with ZeRO stages 0-2 too); use zero_optimization.stage 0, 1 or 2");
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
  reduce_op = ascii_lower(reduce_op);  // DeepSpeed lower-cases it
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
  if (const json* a = r.object("aio")) parse_aio(*a, c);
  if (const json* d = r.object("device")) parse_device(*d, c);
  if (const json* g = r.object("gemini")) parse_gemini(*g, c);
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
  check_tensor_parallel(r, c, world_size);
  c.data_parallel_size = static_cast<int>(world_size / (c.pipeline.stages * c.tensor_parallel.size));
  if (c.gemini.enabled) check_gemini(r, top, c);
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
  s.aio = aio;
  return s;
}

}  // namespace minitorch::runtime

#include "runtime/checkpoint.h"

#include <climits>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

#include "minitorch/json_limits.h"
#include "minitorch/safetensors.h"
#include "runtime/model_budget.h"
#include "runtime/save_file_checks.h"
#include "runtime/save_target.h"

namespace minitorch::runtime {

namespace {

/// A count written by std::to_string (a step): decimal digits only, at most INT64_MAX. std::stoll
/// would take "12abc" as 12 and " -3" as -3.
std::int64_t parse_count(const std::string& s, const std::string& what) {
  std::int64_t v = 0;
  bool ok = !s.empty();
  for (char c : s)
    ok = ok && c >= '0' && c <= '9' && !__builtin_mul_overflow(v, 10, &v) && !__builtin_add_overflow(v, c - '0', &v);
  if (!ok)
    throw std::runtime_error(what + " '" + truncate_for_message(s) + "' is not a count (decimal digits, at most " +
                             std::to_string(INT64_MAX) + ")");
  return v;
}

}  // namespace

std::map<std::string, std::string> checkpoint_metadata(const nn::GPT& model, const data::Tokenizer& tok,
                                                       std::int64_t step) {
  return {{"format", kCheckpointFormat},
          {"model_args", model.config().to_json().dump()},
          {"tokenizer", tok.kind()},
          {"vocab", tok.to_string()},
          {"step", std::to_string(step)}};
}

CheckpointInfo checkpoint_info_of(const SafetensorsFile& f) {
  auto need = [&](const char* key) -> const std::string& {
    auto it = f.metadata.find(key);
    if (it == f.metadata.end())
      throw std::runtime_error("checkpoint '" + f.path + "' has no '" + key +
                               "' metadata: not a minitorch checkpoint (save one with minitorch-train)");
    return it->second;
  };
  if (need("format") != kCheckpointFormat)
    throw std::runtime_error("checkpoint '" + f.path + "' has format '" + truncate_for_message(need("format")) + "', expected '" + kCheckpointFormat + "'");
  CheckpointInfo info;
  info.path = f.path;
  try {
    info.model = nn::GPTConfig::from_json(parse_json_bounded(need("model_args"), "model_args"));
    info.model.validate();
    info.tokenizer = data::tokenizer_from_string(need("tokenizer"), need("vocab"));
    info.step = parse_count(need("step"), "step");
  } catch (const std::exception& e) {
    throw std::runtime_error("checkpoint '" + f.path + "' has bad metadata: " + e.what());
  }
  if (info.tokenizer->vocab_size() > info.model.vocab_size)
    throw std::runtime_error("checkpoint '" + f.path + "': tokenizer has more tokens than the model's vocab_size");
  return info;
}

namespace {
std::shared_ptr<nn::GPT> model_from(const SafetensorsFile& f, const CheckpointInfo& info) {
  // model_args are checked against the tensors before the GPT is allocated: a header claiming
  // n_layer 1000000 must not allocate terabytes first.
  try {
    check_model_fits(info.model, 0, 4, "checkpoint '" + f.path + "'");
  } catch (const ConfigError& e) {
    throw std::runtime_error(e.what());  // a bad file, not a bad config: exit status 1
  }
  double in_file = 0;
  for (const auto& [name, t] : f.tensors)
    if (name != "lm_head.weight") in_file += static_cast<double>(t.numel());  // tied to transformer.wte.weight
  if (in_file != parameter_count(info.model))
    throw std::runtime_error("checkpoint '" + f.path + "' holds " + std::to_string(static_cast<std::int64_t>(in_file)) +
                             " parameters but its model_args describe " + info.model.describe() + " with " +
                             std::to_string(static_cast<std::int64_t>(parameter_count(info.model))));
  Generator gen(0);  // weights are overwritten below
  auto model = std::make_shared<nn::GPT>(info.model, gen);
  try {
    model->load_state_dict(f.tensors, /*strict=*/true);
  } catch (const std::exception& e) {
    throw std::runtime_error("checkpoint '" + f.path + "' does not fit its model_args: " + e.what());
  }
  return model;
}
}  // namespace

void save_model(const std::string& path, const nn::GPT& model, const data::Tokenizer& tokenizer, std::int64_t step) {
  save_safetensors(path, model.state_dict(), checkpoint_metadata(model, tokenizer, step));
}

SavedRun saved_run(const Engine& engine, const std::string& run_id) {
  SavedRun run;
  run.run_id = run_id;
  run.step = engine.global_steps();
  run.data_parallel_size = engine.dp_size();
  run.train_micro_batch_size_per_gpu = engine.config().train_micro_batch_size_per_gpu;
  run.gradient_accumulation_steps = engine.config().gradient_accumulation_steps;
  return run;
}

void save_single_file_checkpoint(const std::string& path, const Engine& engine, const data::Tokenizer& tokenizer,
                                 const std::string& run_id, const std::function<void(int)>& before_step) {
  // runtime/save_target.h: refuse what no save wrote, write the new save whole as PATH.partial, switch it in.
  begin_save(path, SaveKind::single_file, [](const std::string& p) { return is_complete(check_complete_save, p); });
  const std::string partial = partial_path(path), name = std::filesystem::path(path).filename().string();
  CheckpointManifest m(saved_run(engine, run_id));
  const zero::GradientStrategy& s = engine.strategy();
  if (s.optimizer_steps() > 0) {
    m.optim = ManifestFile{};
    m.optim->optimizer_steps = s.optimizer_steps();
    save_safetensors(partial + ".optim", s.optimizer_state(),
                     {{"format", kCheckpointFormat}, {"optimizer_steps", std::to_string(s.optimizer_steps())}, {"run_id", run_id}});
  }
  auto meta = checkpoint_metadata(engine.model(), tokenizer, m.step);
  meta["run_id"] = run_id;
  meta["engine_state"] = engine_state_json(engine);
  meta["manifest_facts"] = manifest_facts(m);
  save_safetensors(partial, engine.model().state_dict(), meta);
  m.model = describe_file(partial);
  m.model.name = name;  // the names it will have (files are found by convention; these are for a reader)
  if (m.optim) {
    m.optim = describe_file(partial + ".optim");
    m.optim->name = name + ".optim";
    m.optim->optimizer_steps = s.optimizer_steps();
  }
  write_manifest(partial, m);
  switch_into_place(path, SaveKind::single_file, before_step);
}

std::shared_ptr<nn::GPT> load_model(const std::string& path, CheckpointInfo* info_out) {
  if (std::filesystem::is_directory(path))
    throw std::runtime_error("'" + path + "' is a sharded checkpoint (a directory of per-rank shards); put it "
                             "together first: minitorch-consolidate " + path + " model.safetensors");
  return load_model(load_safetensors(path), info_out);
}

std::shared_ptr<nn::GPT> load_model(const SafetensorsFile& f, CheckpointInfo* info_out) {
  CheckpointInfo info = checkpoint_info_of(f);
  auto model = model_from(f, info);
  if (info_out) *info_out = info;
  return model;
}

std::int64_t optimizer_steps_of(const SafetensorsFile& o) {
  auto it = o.metadata.find("optimizer_steps");
  if (it == o.metadata.end())
    throw std::runtime_error("optimizer state '" + o.path + "' has no valid optimizer_steps metadata (the key is missing)");
  try {
    return parse_count(it->second, "optimizer_steps");
  } catch (const std::runtime_error& e) {
    throw std::runtime_error("optimizer state '" + o.path + "' has no valid optimizer_steps metadata (" + e.what() + ")");
  }
}

CheckpointManifest check_complete_save(const std::string& path) {
  CheckpointManifest m = read_manifest(path);
  check_file_size(path, path, m.model, "model file");
  if (m.optim) check_file_size(path, path + ".optim", *m.optim, "optimizer state");
  return m;
}

FullState read_single_file_checkpoint(const std::string& path) {
  // Cheap checks first, so each problem gets its own message: presence and size (a truncated copy),
  // then the metadata (another run, another step), then the checksum (changed bytes).
  const CheckpointManifest m = check_complete_save(path);
  const std::string opt_path = path + ".optim";
  auto fail = [&](const std::string& what) { resume_fail(path, what); };
  auto check_run = [&](const SafetensorsFile& f, const char* role) {
    auto it = f.metadata.find("run_id");
    if (it != f.metadata.end() && it->second != m.run_id)
      fail("its " + std::string(role) + " '" + f.path + "' is from another run (" + truncate_for_message(it->second) +
           ", the manifest says " + truncate_for_message(m.run_id) + "); use the files of one save together");
  };

  SafetensorsFile f = load_safetensors(path);
  FullState st;
  st.info = checkpoint_info_of(f);
  check_run(f, "model file");
  if (st.info.step != m.step)
    fail("its model file is from step " + std::to_string(st.info.step) + " but the manifest is from step " +
         std::to_string(m.step) + "; use the files of one save together");
  check_file_facts(path, f, m, "model file");
  check_file_checksum(path, path, m.model, "model file");
  if (auto it = f.metadata.find("engine_state"); it != f.metadata.end()) st.engine_state = it->second;
  // Every parameter once, in the model's order (the head's weight is the embedding's: not a parameter);
  // f32 (a bf16 save widens exactly).
  st.params = model_from(f, st.info)->named_parameters();
  if (m.optim) {
    SafetensorsFile o = load_safetensors(opt_path);
    check_run(o, "optimizer state");
    try {
      st.optimizer_steps = optimizer_steps_of(o);
    } catch (const std::runtime_error& e) {
      fail(std::string("its ") + e.what());
    }
    if (st.optimizer_steps != m.optim->optimizer_steps)
      fail("its optimizer state '" + opt_path + "' is stale: it holds " + std::to_string(st.optimizer_steps) +
           " optimizer steps but the save had " + std::to_string(m.optim->optimizer_steps) +
           "; use the files of one save together");
    check_file_checksum(path, opt_path, *m.optim, "optimizer state");
    st.optim = std::move(o.tensors);
  }
  st.run = m;
  return st;
}

std::string engine_state_json(const Engine& engine) {
  nlohmann::json j = {{"skipped_steps", engine.skipped_steps()}};
  if (const LossScaler* s = engine.loss_scaler()) {
    const LossScaler::State st = s->state();
    j["loss_scaler"] = {{"scale", st.scale}, {"hysteresis_left", st.hysteresis_left}, {"iter", st.iter},
                        {"last_overflow_iter", st.last_overflow_iter}, {"skipped", st.skipped}};
  }
  return j.dump();
}

void restore_engine_state(Engine& engine, const std::string& json, const std::string& path) {
  if (json.empty()) return;  // saved before engine states were kept: nothing was skipped
  try {
    const nlohmann::json j = parse_json_bounded(json, "engine_state");
    engine.set_skipped_steps(j.at("skipped_steps").get<std::int64_t>());
    if (engine.loss_scaler() && j.contains("loss_scaler")) {
      const nlohmann::json& s = j.at("loss_scaler");
      LossScaler::State st;
      st.scale = s.at("scale").get<double>();
      st.hysteresis_left = s.at("hysteresis_left").get<int>();
      st.iter = s.at("iter").get<std::int64_t>();
      st.last_overflow_iter = s.at("last_overflow_iter").get<std::int64_t>();
      st.skipped = s.at("skipped").get<std::int64_t>();
      engine.loss_scaler()->set_state(st);
    }
  } catch (const std::exception& e) {
    resume_fail(path, "its engine_state metadata is unreadable (" + truncate_for_message(e.what(), 200) + ")");
  }
}

}  // namespace minitorch::runtime

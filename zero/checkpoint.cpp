#include "zero/checkpoint.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "minitorch/json_limits.h"
#include "minitorch/safetensors.h"
#include "zero/model_budget.h"

namespace minitorch::zero {

namespace {
constexpr const char* kFormat = "minitorch-checkpoint-1";

std::map<std::string, std::string> metadata_for(const nn::GPT& model, const data::Tokenizer& tok, std::int64_t step) {
  return {{"format", kFormat},
          {"model_args", model.config().to_json().dump()},
          {"tokenizer", tok.kind()},
          {"vocab", tok.to_string()},
          {"step", std::to_string(step)}};
}

CheckpointInfo info_from(const SafetensorsFile& f) {
  auto need = [&](const char* key) -> const std::string& {
    auto it = f.metadata.find(key);
    if (it == f.metadata.end())
      throw std::runtime_error("checkpoint '" + f.path + "' has no '" + key +
                               "' metadata: not a minitorch checkpoint (save one with minitorch-train)");
    return it->second;
  };
  if (need("format") != kFormat)
    throw std::runtime_error("checkpoint '" + f.path + "' has format '" + truncate_for_message(need("format")) + "', expected '" + kFormat + "'");
  CheckpointInfo info;
  info.path = f.path;
  try {
    info.model = nn::GPTConfig::from_json(parse_json_bounded(need("model_args"), "model_args"));
    info.model.validate();
    info.tokenizer = data::tokenizer_from_string(need("tokenizer"), need("vocab"));
    info.step = std::stoll(need("step"));
  } catch (const std::exception& e) {
    throw std::runtime_error("checkpoint '" + f.path + "' has bad metadata: " + e.what());
  }
  if (info.tokenizer->vocab_size() > info.model.vocab_size)
    throw std::runtime_error("checkpoint '" + f.path + "': tokenizer has more tokens than the model's vocab_size");
  return info;
}

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
  save_safetensors(path, model.state_dict(), metadata_for(model, tokenizer, step));
}

void save_checkpoint(const std::string& path, const Engine& engine, const data::Tokenizer& tokenizer) {
  const GradientStrategy& s = engine.strategy();
  if (s.optimizer_steps() > 0)
    save_safetensors(path + ".optim", s.optimizer_state(),
                     {{"format", kFormat}, {"optimizer_steps", std::to_string(s.optimizer_steps())}});
  save_model(path, engine.model(), tokenizer, engine.global_steps());
}

CheckpointInfo read_checkpoint_info(const std::string& path) { return info_from(load_safetensors(path)); }

std::shared_ptr<nn::GPT> load_model(const std::string& path, CheckpointInfo* info_out) {
  SafetensorsFile f = load_safetensors(path);
  CheckpointInfo info = info_from(f);
  auto model = model_from(f, info);
  if (info_out) *info_out = info;
  return model;
}

void resume_from(const std::string& path, Engine& engine) {
  SafetensorsFile f = load_safetensors(path);
  CheckpointInfo info = info_from(f);
  if (!(info.model == engine.model().config()))
    throw std::runtime_error("cannot resume from '" + path + "': it holds " + info.model.describe() +
                             " but the config builds " + engine.model().config().describe());
  {
    TagScope scope(MemTag::param);
    engine.model().load_state_dict(f.tensors, /*strict=*/true);
  }
  engine.set_global_steps(info.step);
  const std::string opt_path = path + ".optim";
  if (info.step == 0) return;
  if (!std::filesystem::exists(opt_path))
    throw std::runtime_error("cannot resume from '" + path + "': its optimizer state '" + opt_path +
                             "' is missing (copy it beside the checkpoint, or start a new run without --resume)");
  SafetensorsFile o = load_safetensors(opt_path);
  std::int64_t steps = 0;
  try {
    steps = std::stoll(o.metadata.at("optimizer_steps"));
  } catch (const std::exception&) {
    throw std::runtime_error("optimizer state '" + opt_path + "' has no valid optimizer_steps metadata");
  }
  TagScope scope(MemTag::optim);
  engine.strategy().load_optimizer_state(o.tensors, steps);
}

}  // namespace minitorch::zero

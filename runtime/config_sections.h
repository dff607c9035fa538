#pragma once
/// \file config_sections.h
/// The readers of the config's sections, for Config::from_json (runtime/config.cpp): each reads its
/// section's keys into `c` with DeepSpeed's code defaults and its own checks, adds the key table's
/// warnings to `c.warnings`, and throws ConfigError naming the key for a bad one.
#include <nlohmann/json.hpp>

#include "runtime/config.h"
#include "runtime/config_reader.h"

namespace minitorch::runtime {

/// `zero_optimization`, its offload sub-sections and DeepSpeed's placement rules for them.
void parse_zero(const nlohmann::json& j, Config& c);
/// `optimizer` and its `params`.
void parse_optimizer(const nlohmann::json& j, Config& c);
/// `scheduler` and its `params`.
void parse_scheduler(const nlohmann::json& j, Config& c);
/// `model` (a preset by name, then its sizes).
void parse_model(const nlohmann::json& j, Config& c);
/// `training` (minitorch's own section).
void parse_training(const nlohmann::json& j, Config& c);
/// `bf16`, `fp16`, `pipeline` and `activation_checkpointing`, found through the top-level reader `r`.
void parse_small_sections(SectionReader& r, Config& c);
/// `comm` (minitorch's own section).
void parse_comm(const nlohmann::json& j, Config& c);
/// `aio`: the NVMe swap's I/O (zero/nvme_store.h).
void parse_aio(const nlohmann::json& j, Config& c);
/// `gemini`: Colossal-AI's GeminiPlugin keys (gemini/config.h); the checks against the rest of the config are
/// Config::from_json's.
void parse_gemini(const nlohmann::json& j, Config& c);
/// `device` (minitorch's own section).
void parse_device(const nlohmann::json& j, Config& c);

}  // namespace minitorch::runtime

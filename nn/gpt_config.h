#pragma once
/// \file gpt_config.h
/// The shape of a GPT: nanoGPT's GPTConfig (block_size, vocab_size, n_layer, n_head, n_embd, bias),
/// with the named sizes of docs/design.md §4. Kept apart from gpt.h so the attention and block layers can
/// take it without including the whole model.
///
/// \code
///   auto cfg = minitorch::nn::GPTConfig::named("baby");  // L=4, H=4, C=128, T=64, vocab unset (0)
///   cfg.vocab_size = tokenizer->vocab_size();           // baby/small take it from the tokenizer
///   cfg.validate();                                     // throws on n_embd % n_head != 0, ...
///   nlohmann::json j = cfg.to_json();                   // checkpoint metadata
///   auto back = minitorch::nn::GPTConfig::from_json(j);
/// \endcode
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace minitorch::nn {

struct GPTConfig {
  std::int64_t block_size = 1024;  // T: the longest context
  std::int64_t vocab_size = 0;     // V; 0 = "set later" (from the tokenizer)
  std::int64_t n_layer = 12;       // L
  std::int64_t n_head = 12;        // H
  std::int64_t n_embd = 768;       // C
  bool bias = true;                // biases in Linear and LayerNorm (nanoGPT's default True)

  /// "baby" (L=4, H=4, C=128, T=64), "small" (L=6, H=6, C=384, T=256: nanoGPT shakespeare-char),
  /// "gpt2" (L=12, H=12, C=768, T=1024, V=50257). baby and small leave vocab_size 0, to be set from
  /// the tokenizer. An unknown name throws std::invalid_argument listing the valid names.
  static GPTConfig named(const std::string& name);
  /// The names named() accepts.
  static std::vector<std::string> names();

  /// Head size C / H.
  std::int64_t head_size() const { return n_embd / n_head; }
  /// Throws std::invalid_argument naming the first bad field: non-positive sizes (vocab_size too:
  /// call validate() once the vocabulary is known), or n_embd not divisible by n_head.
  void validate() const;
  /// Parameter count Ψ of the GPT with this shape (tied head counted once, wpe included):
  ///   V·C + T·C + L·(12C² + 13C) + 2C  with biases,  V·C + T·C + L·(12C² + 2C) + C  without.
  std::int64_t num_parameters() const;

  /// {"block_size":..,"vocab_size":..,"n_layer":..,"n_head":..,"n_embd":..,"bias":..}: nanoGPT's
  /// model_args keys.
  nlohmann::json to_json() const;
  /// Reads those keys (bias optional, default true; "dropout" accepted only as 0, nanoGPT writes it).
  /// A missing key, a wrong type or an unknown key throws std::invalid_argument naming it.
  static GPTConfig from_json(const nlohmann::json& j);

  /// "GPTConfig(L=4, H=4, C=128, T=64, V=65, bias=true)".
  std::string describe() const;
  bool operator==(const GPTConfig&) const = default;
};

}  // namespace minitorch::nn

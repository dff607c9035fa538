#include "nn/gpt_config.h"

#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "minitorch/json_limits.h"

namespace minitorch::nn {

std::vector<std::string> GPTConfig::names() { return {"baby", "small", "gpt2"}; }

GPTConfig GPTConfig::named(const std::string& name) {
  GPTConfig c;
  if (name == "baby") {
    c.n_layer = 4, c.n_head = 4, c.n_embd = 128, c.block_size = 64, c.vocab_size = 0;
  } else if (name == "small") {
    c.n_layer = 6, c.n_head = 6, c.n_embd = 384, c.block_size = 256, c.vocab_size = 0;
  } else if (name == "gpt2") {
    c.n_layer = 12, c.n_head = 12, c.n_embd = 768, c.block_size = 1024, c.vocab_size = 50257;
  } else {
    std::string valid;
    for (const auto& n : names()) valid += (valid.empty() ? "" : ", ") + n;
    throw std::invalid_argument("GPTConfig: unknown model '" + truncate_for_message(name) + "' (valid names: " + valid +
                                ")");
  }
  return c;
}

void GPTConfig::validate() const {
  auto positive = [](std::int64_t v, const char* field) {
    if (v <= 0)
      throw std::invalid_argument(std::string("GPTConfig: ") + field + " must be positive, got " + std::to_string(v) +
                                  (std::string(field) == "vocab_size" ? " (set it from the tokenizer)" : ""));
  };
  positive(block_size, "block_size");
  positive(vocab_size, "vocab_size");
  positive(n_layer, "n_layer");
  positive(n_head, "n_head");
  positive(n_embd, "n_embd");
  if (n_embd % n_head != 0)
    throw std::invalid_argument("GPTConfig: n_embd (" + std::to_string(n_embd) + ") must be divisible by n_head (" +
                                std::to_string(n_head) + ")");
  if (vocab_size > (std::int64_t{1} << 31) - 1) throw std::invalid_argument("GPTConfig: vocab_size exceeds int32 ids");
}

std::int64_t GPTConfig::num_parameters() const {
  const std::int64_t V = vocab_size, T = block_size, C = n_embd, L = n_layer;
  if (bias) return V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C;
  return V * C + T * C + L * (12 * C * C + 2 * C) + C;
}

nlohmann::json GPTConfig::to_json() const {
  return nlohmann::json{{"block_size", block_size}, {"vocab_size", vocab_size}, {"n_layer", n_layer},
                        {"n_head", n_head},         {"n_embd", n_embd},         {"bias", bias}};
}

GPTConfig GPTConfig::from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw std::invalid_argument("GPTConfig::from_json: expected an object, got " + json_excerpt(j));
  GPTConfig c;
  auto get_int = [&](const char* key, std::int64_t& out) {
    if (!j.contains(key)) throw std::invalid_argument(std::string("GPTConfig::from_json: missing key '") + key + "'");
    if (!j.at(key).is_number_integer())
      throw std::invalid_argument(std::string("GPTConfig::from_json: '") + key + "' must be an integer, got " +
                                  json_excerpt(j.at(key)));
    out = j.at(key).get<std::int64_t>();
  };
  get_int("block_size", c.block_size);
  get_int("vocab_size", c.vocab_size);
  get_int("n_layer", c.n_layer);
  get_int("n_head", c.n_head);
  get_int("n_embd", c.n_embd);
  if (j.contains("bias")) {
    if (!j.at("bias").is_boolean())
      throw std::invalid_argument("GPTConfig::from_json: 'bias' must be true or false, got " + json_excerpt(j.at("bias")));
    c.bias = j.at("bias").get<bool>();
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    if (k == "block_size" || k == "vocab_size" || k == "n_layer" || k == "n_head" || k == "n_embd" || k == "bias")
      continue;
    if (k == "dropout") {
      if (!it->is_number() || it->get<double>() != 0.0)
        throw std::invalid_argument("GPTConfig::from_json: dropout " + json_excerpt(*it) + " is not supported (only 0)");
      continue;
    }
    throw std::invalid_argument("GPTConfig::from_json: unknown key '" + truncate_for_message(k) +
                                "' (valid: block_size, vocab_size, n_layer, n_head, n_embd, bias, dropout)");
  }
  return c;
}

std::string GPTConfig::describe() const {
  std::ostringstream os;
  os << "GPTConfig(L=" << n_layer << ", H=" << n_head << ", C=" << n_embd << ", T=" << block_size
     << ", V=" << vocab_size << ", bias=" << (bias ? "true" : "false") << ")";
  return os.str();
}

}  // namespace minitorch::nn

#include "nn/parameter_names.h"

#include <charconv>
#include <stdexcept>
#include <string>

namespace minitorch::nn {

ParameterPlace parameter_place(std::string_view name) {
  auto bad = [&] {
    return std::invalid_argument("parameter '" + std::string(name) + "' is not one of the GPT's (transformer.wte, "
                                 "transformer.wpe, transformer.h.<i>, transformer.ln_f, lm_head)");
  };
  if (name.starts_with("transformer.wte.") || name.starts_with("transformer.wpe.")) return {ModelPart::embeddings, -1};
  if (name.starts_with("transformer.ln_f.")) return {ModelPart::final_norm, -1};
  if (name.starts_with("lm_head.")) return {ModelPart::head, -1};
  constexpr std::string_view blocks = "transformer.h.";
  if (!name.starts_with(blocks)) throw bad();
  const std::string_view rest = name.substr(blocks.size());
  std::int64_t block = -1;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), block);
  if (ec != std::errc() || block < 0 || end == rest.data() + rest.size() || *end != '.') throw bad();
  return {ModelPart::block, block};
}

}  // namespace minitorch::nn

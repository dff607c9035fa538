#include "nn/parameter_names.h"

#include <charconv>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace minitorch::nn {

namespace {
/// A name that begins with the block `transformer.h.<i>`: i and what follows the number; else nullopt.
std::optional<std::pair<std::int64_t, std::string_view>> block_and_rest(std::string_view name) {
  constexpr std::string_view blocks = "transformer.h.";
  if (!name.starts_with(blocks)) return std::nullopt;
  const std::string_view rest = name.substr(blocks.size());
  std::int64_t block = -1;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), block);
  if (ec != std::errc() || block < 0) return std::nullopt;
  return std::pair{block, rest.substr(static_cast<std::size_t>(end - rest.data()))};
}
}  // namespace

ParameterPlace parameter_place(std::string_view name) {
  auto bad = [&] {
    return std::invalid_argument("parameter '" + std::string(name) + "' is not one of the GPT's (transformer.wte, "
                                 "transformer.wpe, transformer.h.<i>, transformer.ln_f, lm_head)");
  };
  if (name.starts_with("transformer.wte.") || name.starts_with("transformer.wpe.")) return {ModelPart::embeddings, -1};
  if (name.starts_with("transformer.ln_f.")) return {ModelPart::final_norm, -1};
  if (name.starts_with("lm_head.")) return {ModelPart::head, -1};
  const auto block = block_and_rest(name);
  if (!block || !block->second.starts_with('.')) throw bad();
  return {ModelPart::block, block->first};
}

std::int64_t block_of_module(std::string_view module_name) {
  const auto block = block_and_rest(module_name);
  return block && block->second.empty() ? block->first : -1;
}

}  // namespace minitorch::nn

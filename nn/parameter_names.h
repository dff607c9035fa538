#pragma once
/// \file parameter_names.h
/// Where a GPT parameter sits in the model, read from its nanoGPT name: the one place that parses the names
/// (docs/design.md §3). ZeRO-3 groups a block's parameters into one unit (zero/stage3.cpp), a pipeline
/// partition counts each layer's parameters and a pipeline stage keeps its share (pipeline/), all by it.
///
/// \code
///   nn::parameter_place("transformer.h.3.attn.c_attn.weight");  // {ModelPart::block, 3}
///   nn::parameter_place("transformer.wte.weight");              // {ModelPart::embeddings, -1}
///   nn::block_of_module("transformer.h.3");                      // 3
/// \endcode
#include <cstdint>
#include <string_view>

namespace minitorch::nn {

/// The GPT's parts in forward order: token and position embeddings (the tied wte among them), the blocks,
/// the final LayerNorm, the LM head (whose weight is wte's: it has no name of its own in named_parameters()).
enum class ModelPart { embeddings, block, final_norm, head };

struct ParameterPlace {
  ModelPart part = ModelPart::embeddings;
  std::int64_t block = -1;  ///< `transformer.h.<block>.*`: the block's index; -1 for the other parts
  bool operator==(const ParameterPlace&) const = default;
};

/// The place of `name` (`transformer.wte.*`, `transformer.wpe.*`, `transformer.h.<i>.*`, `transformer.ln_f.*`,
/// `lm_head.*`). Throws std::invalid_argument for a name that is not one of the GPT's.
ParameterPlace parameter_place(std::string_view name);

/// The block a module's name denotes: i for the block `transformer.h.<i>` itself, -1 for any other module
/// (one of a block's sub-modules, `transformer.h.<i>.attn`, included). Module scopes (the `scope` of a
/// trace event, minitorch/events.h) are such names.
std::int64_t block_of_module(std::string_view module_name);

/// True for the weight the embedding and the LM head share (transformer.wte.weight).
inline bool is_tied_embedding(std::string_view name) { return name == "transformer.wte.weight"; }

}  // namespace minitorch::nn

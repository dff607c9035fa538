// minitorch-sample --checkpoint CKPT [--prompt P] [--tokens N] [--temperature T] [--seed S] [--top-k K]
// Prints the prompt followed by N sampled tokens.
#include <cstdio>

#include "cli_common.h"
#include "runtime/checkpoint.h"

using namespace minitorch;

int main(int argc, char** argv) {
  cli::Parser parser{"minitorch-sample: generate text from a checkpoint"};
  std::string checkpoint, prompt = "\n";
  std::int64_t tokens = 200, top_k = 0;
  float temperature = 0.8f;
  std::uint64_t seed = 1337;
  parser.option("--checkpoint", checkpoint, "safetensors checkpoint written by minitorch-train")->required();
  parser.option("--prompt", prompt, "text to continue (default: a newline)");
  parser.option("--tokens", tokens, "tokens to generate")->check(cli::decimal<std::int64_t>(0));
  parser.option("--temperature", temperature, "softmax temperature (> 0)")->check(cli::positive_number());
  parser.option("--seed", seed, "sampling seed")->check(cli::decimal<std::uint64_t>());
  parser.option("--top-k", top_k, "sample among the k most likely tokens (0 = all)")->check(cli::decimal<std::int64_t>(0));
  return tools::run_tool(parser, argc, argv, [&] {
    runtime::CheckpointInfo info;
    auto model = runtime::load_model(checkpoint, &info);
    if (prompt.empty()) throw std::runtime_error("--prompt must not be empty");
    std::vector<std::int32_t> ids = info.tokenizer->encode(prompt);
    Tensor idx = Tensor::from_ints(ids, {1, static_cast<std::int64_t>(ids.size())});
    Generator gen(seed);
    Tensor out = model->generate(idx, tokens, temperature, gen, top_k, info.tokenizer->vocab_size());  // no padded ids
    std::printf("%s\n", info.tokenizer->decode(out.to_int_vector()).c_str());
  });
}

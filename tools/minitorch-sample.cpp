// minitorch-sample --checkpoint CKPT [--prompt P] [--tokens N] [--temperature T] [--seed S] [--top-k K]
// Prints the prompt followed by N sampled tokens.
#include <cstdio>

#include "cli_common.h"
#include "runtime/checkpoint.h"

using namespace minitorch;

int main(int argc, char** argv) {
  CLI::App app{"minitorch-sample: generate text from a checkpoint"};
  std::string checkpoint, prompt = "\n";
  std::int64_t tokens = 200, top_k = 0;
  float temperature = 0.8f;
  std::uint64_t seed = 1337;
  app.add_option("--checkpoint", checkpoint, "safetensors checkpoint written by minitorch-train")->required();
  app.add_option("--prompt", prompt, "text to continue (default: a newline)");
  app.add_option("--tokens", tokens, "tokens to generate")->check(tools::decimal<std::int64_t>(0));
  app.add_option("--temperature", temperature, "softmax temperature (> 0)")->check(CLI::PositiveNumber);
  app.add_option("--seed", seed, "sampling seed")->check(tools::decimal<std::uint64_t>());
  app.add_option("--top-k", top_k, "sample among the k most likely tokens (0 = all)")->check(tools::decimal<std::int64_t>(0));
  return tools::run_tool(app, argc, argv, [&] {
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

// minitorch-eval --checkpoint CKPT --data TEXT
// Prints "loss X over W windows of T+1 tokens (...)": the mean cross-entropy over the text cut into consecutive, non-overlapping windows of
// block_size + 1 characters (inputs = the first block_size, targets = the next character at each
// position); a trailing partial window is dropped.
#include <cstdio>

#include "autograd/node.h"
#include "cli_common.h"
#include "data/batch_sampler.h"
#include "data/text_dataset.h"
#include "runtime/checkpoint.h"

using namespace minitorch;

namespace {
void evaluate(const std::string& checkpoint, const std::string& data_path, std::int64_t batch) {
  runtime::CheckpointInfo info;
  auto model = runtime::load_model(checkpoint, &info);
  const std::string text = data::read_text_file(data_path);
  auto tokens = std::make_shared<const std::vector<std::int32_t>>(info.tokenizer->encode(text));
  data::EvalWindows windows(tokens, info.model.block_size);
  autograd::NoGradGuard no_grad;
  double sum = 0;  // Σ over windows of (mean loss of the window); every window has T targets
  for (std::int64_t first = 0; first < windows.count(); first += batch) {
    data::Batch b = windows.batch(first, batch);
    sum += static_cast<double>(model->loss(b.x, b.y).item()) * static_cast<double>(b.x.size(0));
  }
  const std::int64_t W = windows.count(), span = info.model.block_size + 1;
  std::printf("loss %.6f over %lld windows of %lld tokens (%lld tokens of %lld; the last %lld, less than a window, "
              "left out)\n",
              sum / static_cast<double>(W), static_cast<long long>(W), static_cast<long long>(span),
              static_cast<long long>(W * span), static_cast<long long>(tokens->size()),
              static_cast<long long>(static_cast<std::int64_t>(tokens->size()) - W * span));
}
}  // namespace

int main(int argc, char** argv) {
  cli::Parser parser{"minitorch-eval: mean cross-entropy of a checkpoint on a text"};
  std::string checkpoint, data;
  std::int64_t batch = 32;
  parser.option("--checkpoint", checkpoint, "safetensors checkpoint written by minitorch-train")->required();
  parser.option("--data", data, "UTF-8 text file")->required();
  parser.option("--batch", batch, "windows per forward pass")->check(cli::decimal<std::int64_t>(1));
  return tools::run_tool(parser, argc, argv, [&] { evaluate(checkpoint, data, batch); });
}

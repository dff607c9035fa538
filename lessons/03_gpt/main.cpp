// Lesson 03: the GPT. build/bin/lesson-03 [--auto] [--quick] [--beat N] [--data TEXT] [--steps N] [--prompt TEXT]
// (make lesson-03)
// nanoGPT's model on the King James Bible: its parameter table, Ψ by formula, the loss at init,
// then a real training run with the engine (AdamW, warmup-decay LR, clipping) and a sample.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autograd/node.h"
#include "common/beat.h"
#include "data/batch_sampler.h"
#include "data/text_dataset.h"
#include "minitorch/allocator.h"
#include "minitorch/ops.h"
#include "minitorch/parallel.h"
#include "nn/gpt.h"
#include "nn/parameter_names.h"
#include "runtime/config.h"
#include "runtime/engine.h"

using namespace minitorch;

namespace {
// configs/baby.json, inline (so the lesson runs from any directory), with the step count and the
// number of evaluation batches filled in.
std::string baby_config(long long steps, long long eval_iters) {
  const long long warmup = std::max(1LL, steps / 12);  // baby.json: 50 of 600
  return R"({
    "train_batch_size": 32, "train_micro_batch_size_per_gpu": 32, "gradient_accumulation_steps": 1,
    "gradient_clipping": 1.0,
    "optimizer": {"type": "AdamW", "params": {"lr": 2e-3, "betas": [0.9, 0.99], "eps": 1e-8, "weight_decay": 0.1}},
    "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": 0.0, "warmup_max_lr": 2e-3,
                  "warmup_num_steps": )" + std::to_string(warmup) + R"(, "total_num_steps": )" +
         std::to_string(steps) + R"(, "warmup_type": "linear"}},
    "zero_optimization": {"stage": 0},
    "model": {"name": "baby"},
    "training": {"steps": )" + std::to_string(steps) + R"(, "eval_iters": )" + std::to_string(eval_iters) +
         R"(, "seed": 1337, "tokenizer": "char"}
  })";
}
std::string bar(double value, double full, int width = 40) {
  int n = static_cast<int>(width * std::min(1.0, std::max(0.0, value / full)));
  return std::string(static_cast<std::size_t>(n), '#');
}

// The sample's prompt as token ids, checked before training. `given`: --prompt was on the command
// line, and a character outside the vocabulary is a usage error. The default, "And God said", is the
// KJV's: for a text that lacks one of its characters the prompt becomes the val split's first 12
// characters, and `note` says why.
std::vector<std::int32_t> prompt_ids(const data::TextDataset& ds, std::string& prompt, bool given,
                                     const std::string& data_path, std::string& note) {
  try {
    return ds.tokenizer().encode(prompt);
  } catch (const std::runtime_error& e) {
    if (given)
      throw lesson::UsageError("--prompt '" + prompt + "': " + e.what() + " (the characters of " + data_path +
                               "; the model reads only the characters of its training text)");
  }
  const auto& val = ds.tokens(data::Split::val);
  std::vector<std::int32_t> ids(val.begin(), val.begin() + std::min<std::ptrdiff_t>(12, std::ssize(val)));
  note = "(\"" + prompt + "\" has characters " + data_path + " lacks: the prompt is the start of the val split)\n";
  prompt = ds.tokenizer().decode(ids);
  return ids;
}

struct Options {
  std::string data = "datasets/kjv.txt";
  long long steps = 200;
  std::string prompt = "And God said";
  bool prompt_given = false;
};
}  // namespace

// What the beats hand on: the config, the data and the sample's prompt, the model, its samplers and
// its engine.
struct State {
  runtime::Config cfg;
  std::optional<data::TextDataset> ds;
  std::int64_t V = 0;
  std::string prompt_note;         // why the prompt is not --prompt's (empty when it is)
  std::vector<std::int32_t> ids;   // the prompt's token ids
  nn::GPTConfig mcfg;
  std::shared_ptr<nn::GPT> model;
  std::optional<data::BatchSampler> train_sampler, val_sampler;
  std::unique_ptr<runtime::Engine> engine;
};

void the_data(lesson::Beats& beats, Options& opt, State& s) {
  beats.beat("the data: one token per character (of the King James Bible by default)",
             "A character tokenizer: one id per distinct character, in code-point order. The tokens\n"
             "are split once and for all: the first 90% train, the last 10% validation.");
  const std::string& data_path = opt.data;
  const runtime::Config& cfg = s.cfg;
  s.ds = data::TextDataset::load(data_path, cfg.training.tokenizer, cfg.model.block_size);
  const data::TextDataset& ds = *s.ds;
  s.V = ds.tokenizer().vocab_size();
  const std::int64_t V = s.V;
  // checked now, so that a bad --prompt stops the lesson before training
  s.ids = prompt_ids(ds, opt.prompt, opt.prompt_given, data_path, s.prompt_note);
  const auto& train_tokens = ds.tokens(data::Split::train);
  std::printf("%s: %lld train + %lld val tokens, vocabulary V = %lld characters\n", data_path.c_str(),
              static_cast<long long>(ds.size(data::Split::train)), static_cast<long long>(ds.size(data::Split::val)),
              static_cast<long long>(V));
  const std::ptrdiff_t shown = std::min<std::ptrdiff_t>(48, std::ssize(train_tokens));
  std::vector<std::int32_t> head(train_tokens.begin(), train_tokens.begin() + shown);
  std::printf("first %zu characters: \"%s\"\nas ids:", head.size(), ds.tokenizer().decode(head).c_str());
  for (std::size_t i = 0; i < std::min<std::size_t>(16, head.size()); ++i) std::printf(" %d", head[i]);
  std::printf(" ...\n");
}

void the_parameter_table(lesson::Beats& beats, State& s) {
  beats.beat("the parameter table (nanoGPT's names and shapes)",
             "baby: L=4 blocks, H=4 heads, C=128 channels, T=64 positions. Weights ~ N(0, 0.02), the two\n"
             "residual projections N(0, 0.02/sqrt(2L)); LayerNorms 1 and 0. lm_head IS wte (tied).");
  const runtime::Config& cfg = s.cfg;
  s.mcfg = runtime::model_config(cfg, s.V);
  const nn::GPTConfig& mcfg = s.mcfg;
  Generator init(cfg.training.seed);
  s.model = std::make_shared<nn::GPT>(mcfg, init);
  const auto& model = s.model;
  std::printf("%s\n%-38s %-12s %9s %9s\n", mcfg.describe().c_str(), "name", "shape", "numel", "std");
  for (const auto& [name, p] : model->state_dict()) {
    const nn::ParameterPlace place = nn::parameter_place(name);
    if (place.part == nn::ModelPart::block && place.block > 0) continue;  // h.1 .. h.3 repeat h.0
    const double sd = std::sqrt(ops::sum_squares(p) / static_cast<double>(p.numel()));  // rms = std for mean 0
    std::printf("%-38s %-12s %9lld %9.5f%s\n", name.c_str(), shape_str(p.shape()).c_str(),
                static_cast<long long>(p.numel()), sd, name == "lm_head.weight" ? "  (= transformer.wte.weight)" : "");
    if (name == "transformer.h.0.mlp.c_proj.bias")
      std::printf("%-38s (same shapes for h.1 .. h.%lld)\n", "transformer.h.1 ...", static_cast<long long>(mcfg.n_layer - 1));
  }
}

void counting_parameters(lesson::Beats& beats, State& s) {
  beats.beat("counting parameters: psi = V*C + T*C + L*(12C^2 + 13C) + 2C",
             "Per block: attention 4C^2 + 4C (c_attn 3C x C, c_proj C x C), MLP 8C^2 + 5C, two\n"
             "LayerNorms 4C. Plus the embeddings and the final LayerNorm; the tied head adds nothing.");
  const nn::GPTConfig& mcfg = s.mcfg;
  const auto& model = s.model;
  auto psi = [](const nn::GPTConfig& c) {
    const std::int64_t C = c.n_embd;
    return c.vocab_size * C + c.block_size * C + c.n_layer * (12 * C * C + 13 * C) + 2 * C;
  };
  std::printf("baby: formula %lld, model.num_parameters() %lld  %s\n", static_cast<long long>(psi(mcfg)),
              static_cast<long long>(model->num_parameters()), psi(mcfg) == model->num_parameters() ? "(equal)" : "(DIFFERENT)");
  const nn::GPTConfig gpt2 = nn::GPTConfig::named("gpt2");
  std::printf("gpt2 (V=50257, T=1024, L=12, C=768): formula %lld = %.1fM, GPTConfig::num_parameters() %lld\n",
              static_cast<long long>(psi(gpt2)), static_cast<double>(psi(gpt2)) / 1e6,
              static_cast<long long>(gpt2.num_parameters()));
  std::printf("bytes of f32 params, 4 psi: baby %.2f MB (allocator says param = %.2f MB), gpt2 %.0f MB\n",
              4.0 * static_cast<double>(psi(mcfg)) / 1e6, static_cast<double>(memory_stats().current(MemTag::param)) / 1e6,
              4.0 * static_cast<double>(psi(gpt2)) / 1e6);
}

void the_loss_at_init_is_ln_v(lesson::Beats& beats, State& s) {
  beats.beat("the loss at init is ln(V)",
             "Small weights give logits near 0, so the prediction is nearly uniform over V characters:\n"
             "cross-entropy = -ln(1/V) = ln(V). Anything far from it means a bug in init or the loss.");
  const runtime::Config& cfg = s.cfg;
  const data::TextDataset& ds = *s.ds;
  const nn::GPTConfig& mcfg = s.mcfg;
  const auto& model = s.model;
  const std::int64_t V = s.V;
  s.train_sampler.emplace(ds.tokens_ptr(data::Split::train), cfg.train_micro_batch_size_per_gpu, mcfg.block_size,
                          cfg.training.seed);
  s.val_sampler.emplace(ds.tokens_ptr(data::Split::val), cfg.train_micro_batch_size_per_gpu, mcfg.block_size,
                        cfg.training.seed + 1);
  data::BatchSampler& train_sampler = *s.train_sampler;
  {
    autograd::NoGradGuard no_grad;
    data::Batch b = train_sampler.batch(0);  // x, y: (32, 64) i32
    Tensor logits = model->forward(b.x);     // (32, 64, V)
    float biggest = 0;
    for (float z : logits.to_vector()) biggest = std::max(biggest, std::abs(z));
    std::printf("batch x %s -> logits %s, max |logit| %.3f\n", shape_str(b.x.shape()).c_str(),
                shape_str(logits.shape()).c_str(), static_cast<double>(biggest));
    std::printf("loss at init %.4f, ln(V) = ln(%lld) = %.4f\n", static_cast<double>(model->loss(b.x, b.y).item()),
                static_cast<long long>(V), std::log(static_cast<double>(V)));
  }
}

void train_the_baby_gpt(lesson::Beats& beats, const Options& opt, State& s) {
  beats.beat("train the baby GPT",
             "runtime::initialize(model, config) gives DeepSpeed's engine shape: forward, backward, step.\n"
             "Each step: 32 random windows of 64 characters, AdamW, global-norm clip 1.0, warmup then\n"
             "linear decay of the learning rate. Same seed => the same losses, bit for bit.");
  const long long steps = opt.steps;
  const auto& model = s.model;
  s.engine = runtime::initialize(model, s.cfg);
  const auto& engine = s.engine;
  data::BatchSampler& train_sampler = *s.train_sampler;
  std::printf("%lld steps x 32 x 64 tokens on %d thread(s)\n", steps, num_threads());
  const double ln_v = std::log(static_cast<double>(s.V));
  float loss = 0;
  auto t0 = std::chrono::steady_clock::now();
  while (engine->global_steps() < steps) {
    loss = engine->train_batch(train_sampler);  // forward, backward, clip, step on one batch
    const std::int64_t step = engine->global_steps();
    if (step % 20 == 0 || step == 1 || step == steps) {
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("step %4lld  loss %.4f  lr %.2e  %5.0f ms/step  |%s\n", static_cast<long long>(step),
                  static_cast<double>(loss), static_cast<double>(engine->lr()), 1e3 * secs / static_cast<double>(step),
                  bar(loss, ln_v).c_str());
      std::fflush(stdout);
    }
  }
  const MemoryStats m = memory_stats();
  const double P = static_cast<double>(model->num_parameters());
  std::printf("model states: param %.2f MB = 4 psi, optim %.2f MB = 8 psi (AdamW m and v in f32), grad %.2f MB "
              "(zero_grad set them to none)\n",
              m.current(MemTag::param) / 1e6, m.current(MemTag::optim) / 1e6, m.current(MemTag::grad) / 1e6);
  std::printf("(4 psi = %.2f MB, 8 psi = %.2f MB)\n", 4 * P / 1e6, 8 * P / 1e6);
}

void validation_loss_and_a_sample(lesson::Beats& beats, const Options& opt, State& s) {
  beats.beat("validation loss and a sample",
             "The val split was never trained on: its loss measures what generalises. generate() feeds\n"
             "the last T characters, samples the next from softmax(logits / temperature), repeats.");
  const long long steps = opt.steps;
  const runtime::Config& cfg = s.cfg;
  const data::TextDataset& ds = *s.ds;
  const nn::GPTConfig& mcfg = s.mcfg;
  const auto& model = s.model;
  const auto& engine = s.engine;
  const std::vector<std::int32_t>& ids = s.ids;
  const double ln_v = std::log(static_cast<double>(s.V));
  data::BatchSampler train_eval(ds.tokens_ptr(data::Split::train), cfg.train_micro_batch_size_per_gpu,
                                mcfg.block_size, cfg.training.seed + 2);  // fixed train batches for evaluation
  const float train_loss = engine->evaluate(train_eval, cfg.training.eval_iters);
  const float val_loss = engine->evaluate(*s.val_sampler, cfg.training.eval_iters);
  std::printf("train loss %.4f, val loss %.4f (over %lld fixed batches each; ln(V) = %.4f)\n",
              static_cast<double>(train_loss), static_cast<double>(val_loss),
              static_cast<long long>(cfg.training.eval_iters), ln_v);
  std::printf("%s", s.prompt_note.c_str());
  Generator sampler(42);
  Tensor out = model->generate(Tensor::from_ints(ids, {1, static_cast<std::int64_t>(ids.size())}), 200, 0.8f, sampler);
  std::printf("sample after \"%s\" (temperature 0.8, 200 characters):\n----\n%s\n----\n", opt.prompt.c_str(),
              ds.tokenizer().decode(out.to_int_vector()).c_str());

  std::printf("\nfinal after %lld steps (seed %llu): train loss %.4f  val loss %.4f\n", steps,
              static_cast<unsigned long long>(cfg.training.seed), static_cast<double>(train_loss),
              static_cast<double>(val_loss));
  std::printf("^ the number lesson 05 (DDP) will compare against.\n");
}

// The lesson: its six beats in order; main() below parses the options and runs it.
int run(lesson::Beats& beats, Options& opt) {
  const std::string& data_path = opt.data;
  if (!std::filesystem::exists(data_path))  // the command line's to fix: a usage error
    throw lesson::UsageError("data file '" + data_path +
                             "' not found. Make it with `make data` (writes datasets/kjv.txt from Debian's "
                             "bible-kjv package), or pass --data FILE (any UTF-8 text)");
  // --quick: 2 evaluation batches instead of 20 (a noisier loss, the same lesson)
  const long long eval_iters = beats.quick() ? 2 : 20;
  State s;
  s.cfg = runtime::Config::from_json(baby_config(opt.steps, eval_iters), 1, "lesson-03 (configs/baby.json)");
  the_data(beats, opt, s);
  the_parameter_table(beats, s);
  counting_parameters(beats, s);
  the_loss_at_init_is_ln_v(beats, s);
  train_the_baby_gpt(beats, opt, s);
  validation_loss_and_a_sample(beats, opt, s);
  std::printf("\nLesson 03 done. Next: make lesson-05 (data parallelism on 4 ranks).\n");
  return 0;
}

int main(int argc, char** argv) {
  Options opt;
  return lesson::main_on_one_process(argc, argv, "Lesson 03: the GPT", 6, [&](lesson::Beats& beats) {
    beats.option("--data", opt.data, "FILE", "the text to train on; `make data` writes the KJV");
    beats.option("--steps", opt.steps, "optimizer steps", /*quick=*/20);
    beats.option("--prompt", opt.prompt, "TEXT", "the sample's first characters (each must occur in --data)");
  }, [&](lesson::Beats& beats) {
    opt.prompt_given = beats.given("--prompt");
    return run(beats, opt);
  });
}

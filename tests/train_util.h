#pragma once
// A small GPT trained through the engine on a repeated Genesis verse: what the engine, checkpoint
// and DDP suites share.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/batch_sampler.h"
#include "data/text_dataset.h"
#include "dist/process_group.h"
#include "runtime/engine.h"

namespace mt_test {

inline const std::string& verse_corpus() {
  static const std::string text = [] {
    std::string t;
    for (int i = 0; i < 60; ++i)
      t += "And God said, Let there be light: and there was light. And God saw the light, that it was good.\n";
    return t;
  }();
  return text;
}

/// An engine for `json` on `group` (nullptr: one rank), its model drawn from `init_seed` (default:
/// training.seed) and moved to `device` (as the tools do), with the training sampler of the config.
struct TrainRun {
  minitorch::runtime::Config cfg;
  minitorch::data::TextDataset ds;
  std::unique_ptr<minitorch::runtime::Engine> engine;
  std::unique_ptr<minitorch::data::BatchSampler> sampler;

  explicit TrainRun(const std::string& json, minitorch::dist::ProcessGroup* group = nullptr,
                    std::optional<std::uint64_t> init_seed = std::nullopt,
                    minitorch::Device device = minitorch::Device::cpu())
      : cfg(minitorch::runtime::Config::from_json(json, group ? group->size() : 1)),
        ds(minitorch::data::TextDataset::from_text(verse_corpus(), minitorch::data::make_tokenizer("char", verse_corpus()),
                                                   cfg.model.block_size)) {
    using namespace minitorch;
    Generator gen(init_seed.value_or(cfg.training.seed));
    std::shared_ptr<nn::GPT> model;
    {
      TagScope scope(MemTag::param);
      model = std::make_shared<nn::GPT>(runtime::model_config(cfg, ds.tokenizer().vocab_size()), gen);
    }
    model->to(device);
    engine = runtime::initialize(model, cfg, group);
    sampler = std::make_unique<data::BatchSampler>(ds.tokens_ptr(data::Split::train), cfg.train_micro_batch_size_per_gpu,
                                                   cfg.model.block_size, cfg.training.seed);
  }
  /// Losses of `steps` optimizer steps.
  std::vector<float> train(std::int64_t steps) {
    std::vector<float> losses;
    for (std::int64_t s = 0; s < steps; ++s) losses.push_back(engine->train_batch(*sampler));
    return losses;
  }
  /// Every parameter, flattened in named_parameters() order.
  std::vector<float> params() const {
    std::vector<float> all;
    for (auto& [name, p] : engine->model().named_parameters()) {
      auto v = p.to_vector();
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  }
  std::int64_t psi() const { return engine->model().num_parameters(); }
};

}  // namespace mt_test

// The six fuzz targets and their seeds (fuzz_targets.h). Inputs stay in memory: every parser is fed
// through its from-bytes entry point (Config::from_json, load_safetensors(std::istream&),
// parse_manifest, TextDataset::from_text), the same code the path versions run after reading.
#include "fuzz/fuzz_targets.h"

#include <cxxabi.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <typeinfo>

#include "data/batch_sampler.h"
#include "data/text_dataset.h"
#include "minitorch/random.h"
#include "minitorch/safetensors.h"
#include "runtime/checkpoint.h"
#include "runtime/checkpoint_manifest.h"
#include "runtime/config.h"
#include "runtime/engine.h"
#include "runtime/save_and_resume.h"
#include "trace/frames.h"
#include "trace/frames_reader.h"

namespace mt_fuzz {

using namespace minitorch;

namespace {

// ---------------- outcomes ----------------

/// A rejection is allowed only with one clear message: not empty, not a runaway quote of the input,
/// and naming `source` where the parser's contract says its errors name the file.
Outcome rejected(const std::exception& e, const std::string& source = "") {
  const std::string msg = e.what();
  if (msg.empty()) throw FuzzFinding("rejected with an empty error message");
  if (msg.size() > kMaxErrorMessage)
    throw FuzzFinding("rejected with a " + std::to_string(msg.size()) + "-character error message (at most " +
                      std::to_string(kMaxErrorMessage) + "): " + msg.substr(0, 300) + "...");
  if (!source.empty() && msg.find(source) == std::string::npos)
    throw FuzzFinding("the error does not name '" + source + "': " + msg);
  return {false, msg};
}

/// Combines the outcomes of one input run through several entry points: accepted if any accepted,
/// else the first error.
Outcome any_of(const std::vector<Outcome>& outcomes) {
  for (const Outcome& o : outcomes)
    if (o.accepted) return o;
  return outcomes.front();
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  if (!in) throw std::runtime_error("fuzz seeds: cannot read " + p.string());
  return std::move(s).str();
}

// ---------------- the tiny training runs behind the checkpoint seeds ----------------

/// Genesis 1:1-3: enough text for a block of 4 in both splits.
const std::string kSeedText =
    "In the beginning God created the heaven and the earth.\n"
    "And the earth was without form, and void; and darkness was upon the face of the deep.\n"
    "And the Spirit of God moved upon the face of the waters.\n"
    "And God said, Let there be light: and there was light.\n";

std::string tiny_config(bool bf16) {
  return std::string(R"({"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
      "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}},
      "model": {"name": "baby", "n_layer": 1, "n_head": 1, "n_embd": 4, "block_size": 4},
      "training": {"seed": 3}, "bf16": {"enabled": )") + (bf16 ? "true" : "false") + "}}";
}

/// An engine over the tiny model, f32 or bf16 (the optimizer states differ: bf16 adds master weights).
struct TinyRun {
  runtime::Config cfg;
  data::TextDataset ds;
  std::unique_ptr<runtime::Engine> engine;
  explicit TinyRun(bool bf16)
      : cfg(runtime::Config::from_json(tiny_config(bf16))), ds(data::TextDataset::from_text(kSeedText, "char", 4)) {
    Generator gen(cfg.training.seed);
    auto model = std::make_shared<nn::GPT>(runtime::model_config(cfg, ds.tokenizer().vocab_size()), gen);
    engine = runtime::initialize(model, cfg);
  }
};

TinyRun& tiny_run(bool bf16) {
  static TinyRun f32(false), b16(true);
  return bf16 ? b16 : f32;
}

/// Sets `t` to multiples of 1/8 (exact in bf16 too). Trained weights differ in their last bits between
/// builds (-O3 -march=native, the sanitizers' -O1), and so would the seeds and every input mutated
/// from them; with these values input i is the same bytes in every build.
void set_exact(const Tensor& t) {
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(static_cast<int>(i % 17) - 8) / 8.f;
  Tensor(t).copy_(Tensor::from_vector(v, t.shape()));
}

/// The files of one real save (save_checkpoint after one step): model, .optim and manifest.
struct SavedFiles {
  std::string model, optim, manifest;
};

const SavedFiles& saved(bool bf16) {
  static const std::array<SavedFiles, 2> files = [] {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("minitorch_fuzz_seeds_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    std::array<SavedFiles, 2> out;
    for (bool b : {false, true}) {
      // A run of its own: the targets' engines (tiny_run) stay at step 0.
      TinyRun run(b);
      data::BatchSampler sampler(run.ds.tokens_ptr(data::Split::train), 1, 4, 3);
      run.engine->train_batch(sampler);  // a step, so that there is an optimizer state to save
      for (const auto& [name, p] : run.engine->model().named_parameters()) set_exact(p);
      for (const auto& [name, t] : run.engine->strategy().optimizer_state()) set_exact(t);
      const std::string path = (dir / (b ? "bf16.safetensors" : "f32.safetensors")).string();
      runtime::save_checkpoint(path, *run.engine, run.ds.tokenizer(), "1718000000-4242-9f3a61c2");
      out[b ? 1 : 0] = {read_file(path), read_file(path + ".optim"), read_file(runtime::manifest_path(path))};
    }
    fs::remove_all(dir);
    return out;
  }();
  return files[bf16 ? 1 : 0];
}

/// A safetensors file written by save_safetensors, as bytes.
std::string safetensors_bytes(const std::vector<std::pair<std::string, Tensor>>& tensors,
                              const std::map<std::string, std::string>& metadata) {
  namespace fs = std::filesystem;
  const fs::path p = fs::temp_directory_path() / ("minitorch_fuzz_seed_" + std::to_string(::getpid()) + ".safetensors");
  save_safetensors(p.string(), tensors, metadata);
  std::string bytes = read_file(p);
  fs::remove(p);
  return bytes;
}

// ---------------- config ----------------

const char* const kConfigSource = "fuzz.json";

Outcome run_config_on(const std::string& text, int world) {
  try {
    runtime::Config c = runtime::Config::from_json(text, world, kConfigSource);
    runtime::model_config(c, 65);  // what a tool does next: the model shape and the memory check
    return {true, ""};
  } catch (const runtime::ConfigError& e) {
    return rejected(e);
  }
}

Outcome run_config(std::string_view input) {
  // One rank, as configs/baby.json is written for. The world size only enters the batch triple, so a
  // config that fails DeepSpeed's batch check there (configs/ddp.json is written for four ranks) is
  // read again on four; parsing every input twice would double the cost under make sanitize.
  const std::string text(input);
  const Outcome one = run_config_on(text, 1);
  if (one.accepted || !one.error.starts_with("Check batch related parameters")) return one;
  return any_of({one, run_config_on(text, 4)});
}

std::vector<std::string> config_seeds() {
  const std::string dir = std::string(MT_SOURCE_DIR) + "/configs/";
  return {
      read_file(dir + "baby.json"),
      read_file(dir + "ddp.json"),
      R"({"train_batch_size": 8, "gradient_accumulation_steps": 2, "bf16": {"enabled": true},
          "fp16": {"enabled": false, "loss_scale": 0, "initial_scale_power": 16},
          "optimizer": {"type": "SGD", "params": {"lr": 0.1, "momentum": 0.9}},
          "scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 100, "warmup_min_ratio": 0.1}},
          "zero_optimization": {"stage": 0, "offload_optimizer": {"device": "none"}, "overlap_comm": true},
          "pipeline": {"stages": 1}, "activation_checkpointing": {"enabled": false},
          "comm": {"timeout_s": 30}, "an_unknown_key": 1})",
      R"({"train_micro_batch_size_per_gpu": 2, "gradient_clipping": 0.5, "steps_per_print": 10,
          "optimizer": {"type": "Adam", "params": {"lr": 3e-4, "betas": [0.9, 0.95], "eps": 1e-8, "adam_w_mode": true}},
          "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 0, "warmup_max_lr": 0.001, "warmup_num_steps": 10,
                                                       "warmup_type": "log"}},
          "model": {"name": "small", "n_layer": 2, "n_head": 2, "n_embd": 32, "block_size": 16, "vocab_size": 0,
                    "dropout": 0, "bias": false},
          "training": {"steps": 5, "eval_interval": 0, "eval_iters": 1, "log_interval": 1, "checkpoint": "",
                       "seed": 1, "tokenizer": "byte", "data": "d.txt"}})",
      R"({"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 3, "reduce_bucket_size": 4096},
          "gemini": {"placement_policy": "static", "shard_param_frac": 0.5, "offload_optim_frac": 1.0,
                     "offload_param_frac": 0.25, "search_range_m": 1, "min_chunk_size_m": 0.0625, "hidden_dim": 256,
                     "chunk_config_dict": {"1": {"chunk_size": 4096, "keep_gathered": false}, "4": {"chunk_size": 4096}},
                     "enable_gradient_accumulation": false}})",
  };
}

// ---------------- safetensors ----------------

const char* const kSafetensorsSource = "fuzz.safetensors";

Outcome run_safetensors(std::string_view input) {
  try {
    std::istringstream in{std::string(input)};
    SafetensorsFile f = load_safetensors(in, kSafetensorsSource);
    // Every byte of every tensor is read: a tensor shorter than its shape says would show under ASan.
    std::uint64_t sum = 0;
    for (const auto& [name, t] : f.tensors) {
      const auto* p = static_cast<const unsigned char*>(t.raw_data());
      for (std::size_t i = 0; i < t.nbytes(); ++i) sum += p[i];
    }
    return {true, std::to_string(sum)};
  } catch (const std::runtime_error& e) {
    return rejected(e, kSafetensorsSource);
  }
}

std::vector<std::string> safetensors_seeds() {
  Generator gen(7);
  return {
      safetensors_bytes({{"w", Tensor::randn({3, 2}, gen)},
                         {"h", Tensor::randn({2, 1, 2}, gen, 0.f, 1.f, DType::bf16)},
                         {"ids", Tensor::from_ints({1, -2, 3}, {3})},
                         {"s", Tensor::scalar(3.5f)},
                         {"none", Tensor::empty({0, 4})}},
                        {{"step", "100"}, {"vocab", "\n !é🙂"}}),
      safetensors_bytes({}, {{"only", "metadata"}}),
      safetensors_bytes({{"a", Tensor::from_vector({1.f, 2.f}, {2})}}, {}),
      saved(false).model,
  };
}

// ---------------- model checkpoint ----------------

const char* const kCheckpointSource = "fuzz-model.safetensors";

Outcome run_checkpoint(std::string_view input) {
  try {
    std::istringstream in{std::string(input)};
    runtime::CheckpointInfo info;
    auto model = runtime::load_model(load_safetensors(in, kCheckpointSource), &info);
    // What sampling does with the tokenizer next: its vocabulary must round-trip.
    const std::string vocab = info.tokenizer->to_string();
    if (info.tokenizer->decode(info.tokenizer->encode(vocab)) != vocab)
      throw FuzzFinding("the checkpoint's tokenizer does not round-trip its own vocabulary");
    return {true, model->config().describe()};
  } catch (const std::runtime_error& e) {
    return rejected(e, kCheckpointSource);
  }
}

std::vector<std::string> checkpoint_seeds() { return {saved(false).model, saved(true).model}; }

// ---------------- optimizer state ----------------

const char* const kOptimSource = "fuzz-model.safetensors.optim";

Outcome run_optim_state(std::string_view input) {
  std::vector<Outcome> outcomes;
  try {
    std::istringstream in{std::string(input)};
    const SafetensorsFile f = load_safetensors(in, kOptimSource);
    const std::int64_t steps = runtime::optimizer_steps_of(f);
    // resume_from()'s last step, into an f32 and a bf16 engine (the latter needs master weights).
    for (bool bf16 : {false, true}) {
      try {
        tiny_run(bf16).engine->strategy().load_optimizer_state(f.tensors, steps);
        outcomes.push_back({true, ""});
      } catch (const std::runtime_error& e) {
        outcomes.push_back(rejected(e));  // the optimizer's messages name the key, not the file
      }
    }
  } catch (const std::runtime_error& e) {
    return rejected(e, kOptimSource);
  }
  return any_of(outcomes);
}

std::vector<std::string> optim_state_seeds() { return {saved(false).optim, saved(true).optim}; }

// ---------------- checkpoint manifest ----------------

const char* const kManifestCheckpoint = "fuzz-model.safetensors";

Outcome run_manifest(std::string_view input) {
  try {
    runtime::parse_manifest(std::string(input), kManifestCheckpoint);
    return {true, ""};
  } catch (const std::runtime_error& e) {
    return rejected(e, kManifestCheckpoint);
  }
}

std::vector<std::string> manifest_seeds() { return {saved(false).manifest, saved(true).manifest}; }

// ---------------- sharded checkpoint manifest ----------------

const char* const kShardedDir = "fuzz-ckpt";

Outcome run_sharded_manifest(std::string_view input) {
  try {
    runtime::parse_sharded_manifest(std::string(input), kShardedDir);
    return {true, ""};
  } catch (const std::runtime_error& e) {
    return rejected(e, kShardedDir);
  }
}

/// What write_sharded_manifest writes for a 2-rank stage-3 bf16 save of a two-tensor model, and for a
/// stage-0 save of a 2 x 2 data x pipeline grid (four shards).
std::vector<std::string> sharded_manifest_seeds() {
  std::vector<std::string> seeds;
  for (const bool pipeline : {false, true}) {
    runtime::ShardedManifest m;
    m.run_id = "1718000000-4242-9f3a61c2";
    m.step = 600;
    m.zero_stage = pipeline ? 0 : 3;
    m.data_parallel_size = 2;
    m.pipeline_stages = pipeline ? 2 : 1;
    m.train_micro_batch_size_per_gpu = 8;
    m.gradient_accumulation_steps = 2;
    m.optimizer_steps = 600;
    m.dtype = pipeline ? "f32" : "bf16";
    m.params = {{"transformer.wte.weight", {63, 24}}, {"transformer.ln_f.bias", {24}}};
    m.numel = 63 * 24 + 24;
    for (int r = 0; r < m.ranks(); ++r)
      m.shards.push_back({runtime::shard_file_name(r, m.ranks()), 4242u + static_cast<unsigned>(r), 0x0123456789abcdefull, 0});
    const auto dir = std::filesystem::temp_directory_path() / ("minitorch_fuzz_seed_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    runtime::write_sharded_manifest(dir.string(), m);
    seeds.push_back(read_file(runtime::sharded_manifest_path(dir.string())));
    std::filesystem::remove_all(dir);
  }
  return seeds;
}

// ---------------- frames.json (the players' input) ----------------

const char* const kFramesFile = "fuzz-frames.json";

Outcome run_frames(std::string_view input) {
  try {
    trace::parse_frames_text(std::string(input), kFramesFile);
    return {true, ""};
  } catch (const trace::FramesError& e) {
    return rejected(e, kFramesFile);
  }
}

/// What the recorder writes (trace::frames_document, version 2) for three frames of a 2-rank ZeRO-3 step
/// over a padded bucket: a gathered unit over the shards, its release with the gradient shards reducing,
/// then the reduced gradient shards; and the same with Gemini's chunk of it and two moves (version 4).
std::vector<std::string> frames_seeds() {
  trace::FlatSpace space;
  trace::SpaceBucket& b = space.add_bucket("h.0", 8);
  b.params = {{"w", 0, 5}, {"b", 5, 7}};
  const nlohmann::json run = {{"strategy", "ZeRO-3"}, {"zero_stage", 3}, {"world_size", 2}, {"dtype", "f32"},
                              {"num_parameters", 7}, {"gradient_accumulation_steps", 1}, {"capacity_bytes", nullptr}};
  std::vector<std::vector<nlohmann::json>> per_rank(2);
  for (int r = 0; r < 2; ++r) {
    trace::RankHoldings gathered, reducing, reduced;
    gathered.params.paint(4 * r, 4 * r + 4, "shard");
    gathered.params.paint(0, 8, "gathered", trace::Overlay::separate_buffer);
    reducing.params.paint(4 * r, 4 * r + 4, "shard");
    reducing.grads.paint(4 * r, 4 * r + 4, "reducing");
    reduced.params.paint(4 * r, 4 * r + 4, "shard");
    reduced.grads.paint(4 * r, 4 * r + 4, "reduced");
    for (const auto& [label, held] : {std::pair{"all-gather h.0", &gathered}, std::pair{"release h.0", &reducing},
                                      std::pair{"reduce-scatter h.0", &reduced}})
      per_rank[static_cast<std::size_t>(r)].push_back(
          {{"label", label}, {"phase", "backward"}, {"caption", std::string(label) + ": done"}, {"step", 1}, {"micro", 0},
           {"collective", trace::collective_json("all_gather", 0, 0, 8, 4, 16, 2)}, {"params", held->params.to_json()},
           {"grads", held->grads.to_json()}, {"optim", held->optim.to_json()},
           {"shadowed", {{"params", held->params.shadowed()}, {"grads", 0}, {"optim", 0}}},
           {"memory_bytes", {{"param", 48}, {"grad", 16}, {"comm", 0}}}});
  }
  nlohmann::json gemini = trace::frames_document(run, space, per_rank);  // version 4: Gemini's chunks and moves
  gemini["run"]["strategy"] = "Gemini";
  for (nlohmann::json& frame : gemini["frames"])
    for (nlohmann::json& rank : frame["ranks"]) {
      rank["chunks"] = {{{"unit", "gathered"}, {"shard", "cached"}, {"tensors", {{"COMPUTE", 1}, {"HOLD", 1}}}}};
      rank["chunk_moves"] = {{{"chunk", 0}, {"move", "evict"}, {"why", "next use at 3, the farthest (OPT)"}},
                             {{"chunk", 0}, {"move", "load"}, {"why", "cached on the device"}}};
    }
  return {trace::frames_document(run, space, per_rank).dump(2), gemini.dump(2)};
}

// ---------------- text data ----------------

const char* const kTextSource = "fuzz.txt";

Outcome run_text(std::string_view input) {
  std::vector<Outcome> outcomes;
  for (const char* kind : {"char", "byte"}) {
    try {
      auto ds = data::TextDataset::from_text(input, kind, 8, kTextSource);
      // The split is the whole text, and decoding it gives the text back.
      std::vector<std::int32_t> ids = ds.tokens(data::Split::train);
      const auto& val = ds.tokens(data::Split::val);
      ids.insert(ids.end(), val.begin(), val.end());
      if (ds.tokenizer().decode(ids) != input)
        throw FuzzFinding(std::string(kind) + " tokenizer: decode(encode(text)) != text");
      outcomes.push_back({true, ""});
    } catch (const std::runtime_error& e) {
      outcomes.push_back(rejected(e, kTextSource));
    }
  }
  // The same bytes as a checkpoint's character vocabulary (its "vocab" metadata).
  try {
    auto tok = data::tokenizer_from_string("char", input);
    if (tok->to_string() != input)
      throw FuzzFinding("char vocabulary: to_string() differs from the string it was read from");
    outcomes.push_back({true, ""});
  } catch (const std::runtime_error& e) {
    outcomes.push_back(rejected(e));
  }
  return any_of(outcomes);
}

std::vector<std::string> text_seeds() {
  return {
      kSeedText,
      "Ἐν ἀρχῇ ἦν ὁ λόγος, καὶ ὁ λόγος ἦν πρὸς τὸν θεόν, καὶ θεὸς ἦν ὁ λόγος.\n"
      "Au commencement était la Parole 🙂, et la Parole était avec Dieu.\n",
      " !',.:;ADGILSTabcdefghilmnoprstuvwy",  // a sorted character vocabulary
  };
}

}  // namespace

std::string type_name(const std::exception& e) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(typeid(e).name(), nullptr, nullptr, &status), std::free);
  return status == 0 && name ? name.get() : typeid(e).name();
}

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {
      {"config", "runtime::Config::from_json + runtime::model_config: ConfigError", InputKind::json, run_config, config_seeds},
      {"safetensors", "load_safetensors: std::runtime_error naming the file", InputKind::safetensors, run_safetensors,
       safetensors_seeds},
      {"checkpoint", "runtime::load_model (eval, sampling): std::runtime_error naming the file", InputKind::safetensors,
       run_checkpoint, checkpoint_seeds},
      {"optim_state", "load_safetensors + optimizer_steps_of + GradientStrategy::load_optimizer_state: std::runtime_error",
       InputKind::safetensors, run_optim_state, optim_state_seeds},
      {"manifest", "runtime::parse_manifest (--resume): std::runtime_error naming the checkpoint", InputKind::json,
       run_manifest, manifest_seeds},
      {"sharded_manifest", "runtime::parse_sharded_manifest (--resume DIR): std::runtime_error naming the directory",
       InputKind::json, run_sharded_manifest, sharded_manifest_seeds},
      {"frames", "trace::parse_frames_text (minitorch-trace DIR): trace::FramesError naming the file", InputKind::json,
       run_frames, frames_seeds},
      {"text", "TextDataset::from_text (char, byte), tokenizer_from_string: std::runtime_error", InputKind::text,
       run_text, text_seeds},
  };
  return all;
}

const Target& target(std::string_view name) {
  std::string names;
  for (const Target& t : targets()) {
    if (name == t.name) return t;
    names += (names.empty() ? "" : ", ") + std::string(t.name);
  }
  throw std::invalid_argument("no fuzz target '" + std::string(name) + "'; valid: " + names);
}

int libfuzzer_one_input(std::string_view name, const std::uint8_t* data, std::size_t size) {
  static const Target& t = target(name);
  try {
    t.run(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const FuzzFinding& e) {
    std::fprintf(stderr, "fuzz target %s: FINDING: %s\n", t.name, e.what());
    std::abort();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz target %s: FINDING: an exception of type %s escaped (expected: %s): %s\n", t.name,
                 type_name(e).c_str(), t.contract, e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "fuzz target %s: FINDING: a non-std exception escaped\n", t.name);
    std::abort();
  }
  return 0;
}

}  // namespace mt_fuzz

#include "runtime/checkpoint_manifest.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "minitorch/atomic_file.h"
#include "minitorch/json_limits.h"

namespace minitorch::runtime {

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string hex64(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

nlohmann::json file_json(const ManifestFile& f, bool with_steps) {
  nlohmann::json j = {{"name", f.name}, {"bytes", f.bytes}, {"fnv1a64", hex64(f.fnv1a64)}};
  if (with_steps) j["optimizer_steps"] = f.optimizer_steps;
  return j;
}

// The readers below name the field ("step", "files.model.bytes") and quote the value on a wrong type
// or range: nlohmann's get<> would truncate 2.5 to 2, wrap -1 into 2^64 - 1 and cut 2^40 to an int,
// and its type errors name no key.
std::string field_path(const std::string& object, const char* key) {
  return object.empty() ? key : object + "." + key;
}

const nlohmann::json& field(const nlohmann::json& j, const std::string& object, const char* key) {
  if (!j.is_object())
    throw std::invalid_argument((object.empty() ? "the manifest" : object) + " must be an object, got " + json_excerpt(j));
  auto it = j.find(key);
  if (it == j.end()) throw std::invalid_argument(field_path(object, key) + " is missing");
  return *it;
}

std::string string_at(const nlohmann::json& j, const std::string& object, const char* key) {
  const nlohmann::json& v = field(j, object, key);
  if (!v.is_string()) throw std::invalid_argument(field_path(object, key) + " must be a string, got " + json_excerpt(v));
  return v.get<std::string>();
}

std::int64_t int_at(const nlohmann::json& j, const std::string& object, const char* key, std::int64_t min,
                    std::int64_t max = INT64_MAX) {
  const nlohmann::json& v = field(j, object, key);
  // nlohmann stores a non-negative integer as unsigned: compared as one, never through a cast that wraps.
  bool in_range = false;
  if (v.is_number_unsigned()) {
    const std::uint64_t u = v.get<std::uint64_t>();
    in_range = u <= static_cast<std::uint64_t>(max) && (min <= 0 || u >= static_cast<std::uint64_t>(min));
  } else if (v.is_number_integer()) {
    in_range = v.get<std::int64_t>() >= min && v.get<std::int64_t>() <= max;
  }
  if (!in_range)
    throw std::invalid_argument(field_path(object, key) + " must be an integer from " + std::to_string(min) + " to " +
                                std::to_string(max) + ", got " + json_excerpt(v));
  return v.get<std::int64_t>();
}

// Keys a manifest once wrote under another name: saves from before a rename still read, under the new name.
constexpr std::pair<const char*, const char*> kRenamedKeys[] = {
    {"stage", "zero_stage"},  // the ZeRO stage, named as the run report and the strategies name it
};

nlohmann::json with_current_names(nlohmann::json j) {
  if (!j.is_object()) return j;
  for (const auto& [old_name, name] : kRenamedKeys) {
    if (!j.contains(old_name)) continue;
    if (j.contains(name))
      throw std::invalid_argument(std::string(name) + " and its old name " + old_name + " are both given");
    j[name] = std::move(j[old_name]);
    j.erase(old_name);
  }
  return j;
}

ManifestFile file_from(const nlohmann::json& j, const std::string& object, bool with_steps) {
  ManifestFile f;
  f.name = string_at(j, object, "name");
  const nlohmann::json& bytes = field(j, object, "bytes");
  if (!bytes.is_number_unsigned())  // nlohmann keeps every non-negative integer as unsigned
    throw std::invalid_argument(object + ".bytes must be a non-negative integer, got " + json_excerpt(bytes));
  f.bytes = bytes.get<std::uint64_t>();
  const std::string sum = string_at(j, object, "fnv1a64");
  // std::stoull alone would also take "0x...", a sign or leading spaces.
  if (sum.size() != 16 || !std::all_of(sum.begin(), sum.end(), [](unsigned char c) { return std::isxdigit(c); }))
    throw std::invalid_argument(object + ".fnv1a64 '" + truncate_for_message(sum) + "' is not 16 hex digits");
  f.fnv1a64 = std::stoull(sum, nullptr, 16);
  if (with_steps) f.optimizer_steps = int_at(j, object, "optimizer_steps", 0);
  return f;
}

}  // namespace

std::string manifest_path(const std::string& checkpoint_path) { return checkpoint_path + ".manifest.json"; }
std::string sharded_manifest_path(const std::string& dir) { return dir + "/manifest.json"; }

std::string shard_file_name(int rank, int world) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "shard-%05d-of-%05d.safetensors", rank, world);
  return buf;
}

std::uint64_t fnv1a64_file(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) throw std::runtime_error("cannot read '" + path + "' to check it");
  std::uint64_t h = 14695981039346656037ull;  // FNV-1a 64 offset basis
  std::vector<unsigned char> buf(1 << 20);
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f.get())) > 0)
    for (std::size_t i = 0; i < n; ++i) h = (h ^ buf[i]) * 1099511628211ull;  // FNV 64 prime
  if (std::ferror(f.get())) throw std::runtime_error("read error in '" + path + "' while checking it");
  return h;
}

ManifestFile describe_file(const std::string& path) {
  ManifestFile f;
  f.name = std::filesystem::path(path).filename().string();
  f.bytes = std::filesystem::file_size(path);
  f.fnv1a64 = fnv1a64_file(path);
  return f;
}

namespace {
// ---- the JSON of both kinds of manifest: the run's facts, then each kind's own ----

nlohmann::json run_json(const SavedRun& run, const char* format) {
  return {{"format", format}, {"run_id", run.run_id}, {"step", run.step},
          {"data_parallel_size", run.data_parallel_size},
          {"train_micro_batch_size_per_gpu", run.train_micro_batch_size_per_gpu},
          {"gradient_accumulation_steps", run.gradient_accumulation_steps}};
}
nlohmann::json manifest_json(const CheckpointManifest& m) {
  nlohmann::json j = run_json(m, kManifestFormat);
  j["files"] = {{"model", file_json(m.model, false)}};
  if (m.optim) j["files"]["optim"] = file_json(*m.optim, true);
  return j;
}
nlohmann::json manifest_json(const ShardedManifest& m) {
  nlohmann::json params = nlohmann::json::array(), shards = nlohmann::json::array();
  for (const auto& [name, shape] : m.params) params.push_back({{"name", name}, {"shape", shape}});
  for (const ManifestFile& f : m.shards) shards.push_back(file_json(f, false));
  nlohmann::json j = run_json(m, kShardedManifestFormat);
  j.update({{"zero_stage", m.zero_stage}, {"pipeline_stages", m.pipeline_stages}, {"optimizer_steps", m.optimizer_steps},
            {"dtype", m.dtype}, {"numel", m.numel}, {"params", params}, {"shards", shards}});
  return j;
}

// `max_ranks`: a sharded save names its shards with five digits.
void read_run(const nlohmann::json& j, SavedRun& run, int max_ranks) {
  run.run_id = string_at(j, "", "run_id");
  run.step = int_at(j, "", "step", 0);
  run.data_parallel_size = static_cast<int>(int_at(j, "", "data_parallel_size", 1, max_ranks));
  run.train_micro_batch_size_per_gpu = int_at(j, "", "train_micro_batch_size_per_gpu", 1);
  run.gradient_accumulation_steps = int_at(j, "", "gradient_accumulation_steps", 1);
}
void read_fields(const nlohmann::json& j, CheckpointManifest& m) {
  read_run(j, m, INT32_MAX);
  const nlohmann::json& files = field(j, "", "files");
  m.model = file_from(field(files, "files", "model"), "files.model", false);
  if (files.contains("optim")) m.optim = file_from(files.at("optim"), "files.optim", true);
}
void read_fields(const nlohmann::json& j, ShardedManifest& m) {
  read_run(j, m, 99999);
  m.zero_stage = static_cast<int>(int_at(j, "", "zero_stage", 0, 3));
  // Saves from before pipelines were saved have no pipeline_stages: one stage.
  if (j.contains("pipeline_stages")) m.pipeline_stages = static_cast<int>(int_at(j, "", "pipeline_stages", 1, 99999));
  if (m.zero_stage == 0 && m.pipeline_stages == 1)
    throw std::invalid_argument("zero_stage 0 with one pipeline stage is saved as a single file, not sharded");
  if (static_cast<std::int64_t>(m.data_parallel_size) * m.pipeline_stages > 99999)
    throw std::invalid_argument("data_parallel_size × pipeline_stages is more than 99999 ranks");
  m.optimizer_steps = int_at(j, "", "optimizer_steps", 0);
  m.dtype = string_at(j, "", "dtype");
  if (m.dtype != "f32" && m.dtype != "bf16" && m.dtype != "f16")
    throw std::invalid_argument("dtype must be \"f32\", \"bf16\" or \"f16\"");
  m.numel = int_at(j, "", "numel", 1);
  const nlohmann::json& params = field(j, "", "params");
  if (!params.is_array() || params.empty()) throw std::invalid_argument("params must be a non-empty array");
  std::int64_t total = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const std::string at = "params[" + std::to_string(i) + "]";
    const nlohmann::json& shape = field(params[i], at, "shape");
    if (!shape.is_array() || shape.size() > 8) throw std::invalid_argument(at + ".shape must be an array of sizes");
    std::vector<std::int64_t> dims;
    std::int64_t n = 1;
    for (const auto& d : shape) {
      if (!d.is_number_unsigned() || d.get<std::uint64_t>() > (1ull << 40)) throw std::invalid_argument(at + ".shape has a bad size");
      dims.push_back(d.get<std::int64_t>());
      n *= dims.back();
    }
    total += n;
    m.params.emplace_back(string_at(params[i], at, "name"), dims);
  }
  if (total != m.numel)
    throw std::invalid_argument("the params' shapes hold " + std::to_string(total) + " elements but numel is " +
                                std::to_string(m.numel));
  const nlohmann::json& shards = field(j, "", "shards");
  if (!shards.is_array() || shards.size() != static_cast<std::size_t>(m.ranks()))
    throw std::invalid_argument("shards must list one file per rank (" + std::to_string(m.ranks()) + ")");
  for (std::size_t r = 0; r < shards.size(); ++r) {
    m.shards.push_back(file_from(shards[r], "shards[" + std::to_string(r) + "]", false));
    if (m.shards.back().name != shard_file_name(static_cast<int>(r), m.ranks()))
      throw std::invalid_argument("shards[" + std::to_string(r) + "] is '" + truncate_for_message(m.shards.back().name) +
                                  "', expected '" + shard_file_name(static_cast<int>(r), m.ranks()) + "'");
  }
}

/// Everything a manifest says but its files' sizes and checksums (which the files cannot carry).
nlohmann::json facts_json(const CheckpointManifest& m) {
  nlohmann::json j = manifest_json(m);
  j.erase("files");
  j["optimizer_steps"] = m.optim ? m.optim->optimizer_steps : 0;
  return j;
}
nlohmann::json facts_json(const ShardedManifest& m) {
  nlohmann::json j = manifest_json(m);
  j.erase("shards");
  return j;
}
std::string mismatch(const nlohmann::json& want, const std::string& facts) {
  nlohmann::json got;
  try {
    got = with_current_names(parse_json_bounded(facts, "manifest_facts"));
  } catch (const std::exception& e) {
    return "its manifest_facts metadata is unreadable (" + truncate_for_message(e.what()) + ")";
  }
  if (!got.is_object()) return "its manifest_facts metadata is not a JSON object";
  for (const auto& [key, value] : want.items())
    if (!got.contains(key) || got.at(key) != value)
      return "the manifest's " + key + " is " + json_excerpt(value) + " but the save wrote " +
             (got.contains(key) ? json_excerpt(got.at(key)) : std::string("none"));
  return "";
}

// ---- one way to write and read either kind ----

// What tells the two kinds apart where they are written and read: the format, where the manifest lies
// in the save, and what a save without it is not.
template <class Manifest>
struct Kind;
template <>
struct Kind<CheckpointManifest> {
  static constexpr const char* format = kManifestFormat;
  static std::string file(const std::string& save) { return manifest_path(save); }
  static constexpr const char* without_it =
      "save (the save was interrupted, or the files were copied without it); resume from a complete save, or start "
      "a new run without --resume";
};
template <>
struct Kind<ShardedManifest> {
  static constexpr const char* format = kShardedManifestFormat;
  static std::string file(const std::string& save) { return sharded_manifest_path(save); }
  static constexpr const char* without_it =
      "sharded save (the save was interrupted, or the directory was copied without it); resume from a complete save";
};

template <class Manifest>
void write_kind(const std::string& save, const Manifest& m) {
  const std::string text = manifest_json(m).dump(2) + "\n";
  write_file_atomic(Kind<Manifest>::file(save), {{text.data(), text.size()}}, "checkpoint manifest");
}

/// The format, then every field of the kind (read_fields); any problem, nlohmann's parse errors and
/// JsonLimitError included, is one error naming the save and its manifest.
template <class Manifest>
Manifest parse_kind(const std::string& text, const std::string& save) {
  Manifest m;
  try {
    const nlohmann::json j = with_current_names(parse_json_bounded(text, "the manifest"));
    const std::string format = string_at(j, "", "format");
    if (format != Kind<Manifest>::format)
      throw std::invalid_argument("format is '" + truncate_for_message(format) + "', expected '" +
                                  Kind<Manifest>::format + "'");
    read_fields(j, m);
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot resume from '" + save + "': its manifest '" + Kind<Manifest>::file(save) +
                             "' is unreadable (" + truncate_for_message(e.what(), 300) + "); resume from a complete save");
  }
  return m;
}

template <class Manifest>
Manifest read_kind(const std::string& save) {
  const std::string file = Kind<Manifest>::file(save);
  if (!std::filesystem::exists(file))
    throw std::runtime_error("cannot resume from '" + save + "': its manifest '" + file +
                             "' is missing, so it is not one complete " + Kind<Manifest>::without_it);
  return parse_kind<Manifest>(read_text(file), save);
}
}  // namespace

std::string manifest_facts(const CheckpointManifest& m) { return facts_json(m).dump(); }
std::string manifest_facts(const ShardedManifest& m) { return facts_json(m).dump(); }
std::string facts_mismatch(const CheckpointManifest& m, const std::string& facts) { return mismatch(facts_json(m), facts); }
std::string facts_mismatch(const ShardedManifest& m, const std::string& facts) { return mismatch(facts_json(m), facts); }

void write_manifest(const std::string& checkpoint_path, const CheckpointManifest& m) { write_kind(checkpoint_path, m); }
CheckpointManifest read_manifest(const std::string& checkpoint_path) {
  return read_kind<CheckpointManifest>(checkpoint_path);
}
CheckpointManifest parse_manifest(const std::string& text, const std::string& checkpoint_path) {
  return parse_kind<CheckpointManifest>(text, checkpoint_path);
}

void write_sharded_manifest(const std::string& dir, const ShardedManifest& m) { write_kind(dir, m); }
ShardedManifest read_sharded_manifest(const std::string& dir) { return read_kind<ShardedManifest>(dir); }
ShardedManifest parse_sharded_manifest(const std::string& text, const std::string& dir) {
  return parse_kind<ShardedManifest>(text, dir);
}

}  // namespace minitorch::runtime

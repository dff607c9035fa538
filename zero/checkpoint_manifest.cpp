#include "zero/checkpoint_manifest.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "minitorch/atomic_file.h"

namespace minitorch::zero {

namespace {
constexpr const char* kManifestFormat = "minitorch-manifest-1";

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

ManifestFile file_from(const nlohmann::json& j, bool with_steps) {
  ManifestFile f;
  f.name = j.at("name").get<std::string>();
  f.bytes = j.at("bytes").get<std::uint64_t>();
  const std::string sum = j.at("fnv1a64").get<std::string>();
  std::size_t used = 0;
  f.fnv1a64 = std::stoull(sum, &used, 16);
  if (used != sum.size() || sum.size() != 16) throw std::invalid_argument("fnv1a64 '" + sum + "' is not 16 hex digits");
  if (with_steps) f.optimizer_steps = j.at("optimizer_steps").get<std::int64_t>();
  return f;
}

/// True if `name` is `prefix` followed by one or more digits and nothing else.
bool is_prefix_then_digits(const std::string& name, const std::string& prefix) {
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return false;
  for (std::size_t i = prefix.size(); i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return false;
  return true;
}
}  // namespace

std::string manifest_path(const std::string& checkpoint_path) { return checkpoint_path + ".manifest.json"; }

std::string new_run_id() {
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(
                        std::chrono::system_clock::now().time_since_epoch()).count();
  std::random_device rd;  // two runs started in the same second by the same pid number still differ
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(rd()));
  return std::to_string(secs) + "-" + std::to_string(::getpid()) + "-" + buf;
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

void write_manifest(const std::string& checkpoint_path, const CheckpointManifest& m) {
  nlohmann::json files = {{"model", file_json(m.model, false)}};
  if (m.optim) files["optim"] = file_json(*m.optim, true);
  const nlohmann::json j = {{"format", kManifestFormat}, {"run_id", m.run_id}, {"step", m.step},
                            {"data_parallel_size", m.data_parallel_size},
                            {"train_micro_batch_size_per_gpu", m.train_micro_batch_size_per_gpu},
                            {"gradient_accumulation_steps", m.gradient_accumulation_steps}, {"files", files}};
  const std::string text = j.dump(2) + "\n";
  write_file_atomic(manifest_path(checkpoint_path), {{text.data(), text.size()}}, "checkpoint manifest");
}

CheckpointManifest read_manifest(const std::string& checkpoint_path) {
  const std::string mpath = manifest_path(checkpoint_path);
  if (!std::filesystem::exists(mpath))
    throw std::runtime_error("cannot resume from '" + checkpoint_path + "': its manifest '" + mpath +
                             "' is missing, so it is not one complete save (the save was interrupted, or the "
                             "files were copied without it); resume from a complete save, or start a new run "
                             "without --resume");
  std::ifstream in(mpath);
  std::stringstream text;
  text << in.rdbuf();
  CheckpointManifest m;
  try {
    const nlohmann::json j = nlohmann::json::parse(text.str());
    if (j.at("format").get<std::string>() != kManifestFormat)
      throw std::invalid_argument("format is '" + j.at("format").get<std::string>() + "', expected '" +
                                  kManifestFormat + "'");
    m.run_id = j.at("run_id").get<std::string>();
    m.step = j.at("step").get<std::int64_t>();
    m.data_parallel_size = j.at("data_parallel_size").get<int>();
    m.train_micro_batch_size_per_gpu = j.at("train_micro_batch_size_per_gpu").get<std::int64_t>();
    m.gradient_accumulation_steps = j.at("gradient_accumulation_steps").get<std::int64_t>();
    m.model = file_from(j.at("files").at("model"), false);
    if (j.at("files").contains("optim")) m.optim = file_from(j.at("files").at("optim"), true);
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot resume from '" + checkpoint_path + "': its manifest '" + mpath +
                             "' is unreadable (" + e.what() + "); resume from a complete save");
  }
  return m;
}

int remove_stale_temp_files(const std::string& checkpoint_path) {
  namespace fs = std::filesystem;
  const fs::path p(checkpoint_path);
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  const std::string base = p.filename().string();
  std::vector<fs::path> stale;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const std::string name = it->path().filename().string();
    for (const char* suffix : {"", ".optim", ".manifest.json"})
      if (is_prefix_then_digits(name, base + suffix + ".tmp.")) stale.push_back(it->path());
  }
  int removed = 0;
  for (const auto& f : stale) removed += fs::remove(f, ec) ? 1 : 0;
  return removed;
}

}  // namespace minitorch::zero

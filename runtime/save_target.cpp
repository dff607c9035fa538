#include "runtime/save_target.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "minitorch/json_limits.h"
#include "runtime/checkpoint_manifest.h"

namespace minitorch::runtime {

namespace fs = std::filesystem;

namespace {
/// True if `name` is `prefix` followed by one or more digits and nothing else.
bool is_prefix_then_digits(const std::string& name, const std::string& prefix) {
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return false;
  return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(prefix.size()), name.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

/// The "format" a safetensors file's `__metadata__` names; "" when it is not a safetensors file or names none.
/// Reads the header only.
std::string safetensors_format(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  unsigned char len[8];
  if (!f.read(reinterpret_cast<char*>(len), 8)) return "";
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | len[i];
  std::error_code ec;
  const std::uint64_t size = fs::file_size(p, ec);
  if (ec || n == 0 || n > (std::uint64_t{64} << 20) || n > size - 8) return "";
  std::string header(n, '\0');
  if (!f.read(header.data(), static_cast<std::streamsize>(n))) return "";
  try {
    const nlohmann::json j = parse_json_bounded(header, "safetensors header");
    const nlohmann::json& format = j.at("__metadata__").at("format");
    return format.is_string() ? format.get<std::string>() : "";
  } catch (const std::exception&) {
    return "";
  }
}

/// The "format" of a JSON file (a manifest); "" when it is not JSON, is larger than 64 MiB or names none.
std::string json_format(const fs::path& p) {
  std::error_code ec;
  const std::uint64_t size = fs::file_size(p, ec);
  if (ec || size > (std::uint64_t{64} << 20)) return "";
  std::ifstream f(p, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  try {
    const nlohmann::json j = parse_json_bounded(text, "manifest");
    return j.is_object() && j.contains("format") && j["format"].is_string() ? j["format"].get<std::string>() : "";
  } catch (const std::exception&) {
    return "";
  }
}

/// What is wrong with `p` as a file a single-file save may replace or remove: "" when it is absent or a
/// save's own (`format` is what its metadata or JSON must name).
std::string file_problem(const fs::path& p, bool manifest) {
  std::error_code ec;
  const auto st = fs::symlink_status(p, ec);
  if (ec || st.type() == fs::file_type::not_found) return "";
  if (st.type() == fs::file_type::directory) return "is a directory";
  if (st.type() != fs::file_type::regular) return "is not a regular file";
  if (manifest ? json_format(p) != kManifestFormat : safetensors_format(p) != kCheckpointFormat)
    return manifest ? "is not a minitorch manifest (no \"format\": \"" + std::string(kManifestFormat) + "\")"
                    : "is not a file a minitorch save wrote (its metadata has no format " + std::string(kCheckpointFormat) + ")";
  return "";
}

/// The first entry of directory `dir` that no sharded save wrote ("" if none): a save's directory holds
/// only `manifest.json`, `shard-NNNNN-of-NNNNN.safetensors` and their write_file_atomic temp files.
std::string foreign_entry(const fs::path& dir) {
  std::vector<fs::directory_entry> entries;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) entries.push_back(*it);
  if (ec) return "(unreadable: " + ec.message() + ")";
  std::sort(entries.begin(), entries.end());
  auto digits = [](const std::string& n, std::size_t from, std::size_t to) {
    return std::all_of(n.begin() + static_cast<std::ptrdiff_t>(from), n.begin() + static_cast<std::ptrdiff_t>(to),
                       [](char c) { return c >= '0' && c <= '9'; });
  };
  auto is_shard_name = [&](const std::string& n) {  // shard_file_name(): shard-NNNNN-of-NNNNN.safetensors
    return n.size() == 32 && n.compare(0, 6, "shard-") == 0 && n.compare(11, 4, "-of-") == 0 &&
           n.compare(20, 12, ".safetensors") == 0 && digits(n, 6, 11) && digits(n, 15, 20);
  };
  for (const fs::directory_entry& e : entries) {
    const std::string name = e.path().filename().string();
    const bool regular = e.is_regular_file(ec) && !e.is_symlink(ec);
    std::string base = name;
    const auto t = name.rfind(".tmp.");
    const bool temp = t != std::string::npos && is_prefix_then_digits(name, name.substr(0, t) + ".tmp.");
    if (temp) base = name.substr(0, t);
    bool ours = false;
    if (regular && base == "manifest.json") ours = temp || json_format(e.path()) == kShardedManifestFormat;
    else if (regular && is_shard_name(base)) ours = temp || safetensors_format(e.path()) == kCheckpointFormat;
    if (!ours) return name;
  }
  return "";
}

/// Names `to` as `from` too, replacing `to` atomically: a hard link (the bytes are written once), or a
/// copy where the file system has none. Through `to`.tmp.<pid>, which remove_stale_temp_files knows.
void link_over(const std::string& from, const std::string& to) {
  const std::string tmp = to + ".tmp." + std::to_string(::getpid());
  fs::remove(tmp);
  std::error_code ec;
  fs::create_hard_link(from, tmp, ec);
  if (ec) fs::copy_file(from, tmp, fs::copy_options::overwrite_existing);
  fs::rename(tmp, to);
}

const char* const kSingleFileSuffixes[] = {"", ".optim", ".manifest.json"};

/// Removes a single-file save's files at `base`, the manifest first: without it, what is left is never
/// taken for a complete save.
void remove_single_file_set(const std::string& base) {
  for (const char* suffix : {".manifest.json", "", ".optim"}) fs::remove(base + suffix);
}
}  // namespace

std::string partial_path(const std::string& path) { return path + ".partial"; }
std::string old_path(const std::string& path) { return path + ".old"; }

std::string save_target_problem(const std::string& path, SaveKind kind) {
  const std::string out = "--out '" + path + "'";
  std::error_code ec;
  if (kind == SaveKind::single_file) {
    if (fs::is_directory(path, ec))
      return out + " is a directory, but this save (stage 0, or one rank) is a single file: give a file name";
    for (const std::string& base : {path, partial_path(path)})
      for (const char* suffix : kSingleFileSuffixes) {
        const std::string file = base + suffix;
        if (std::string why = file_problem(file, std::string(suffix) == ".manifest.json"); !why.empty())
          return out + ": '" + file + "' " + why + "; a save would replace it, so give another path (or move it away)";
      }
    return "";
  }
  if (fs::exists(path, ec) && !fs::is_directory(path, ec))
    return out + " is a file (a single-file checkpoint?), but a sharded save (ZeRO stage >= 1 on several ranks, or "
                 "a pipeline) is a directory; give another path, or remove the file";
  for (const std::string& dir : {path, partial_path(path), old_path(path)}) {
    const std::string where = dir == path ? out : out + ": '" + dir + "'";
    const auto st = fs::symlink_status(dir, ec);
    if (ec || st.type() == fs::file_type::not_found) continue;
    if (st.type() != fs::file_type::directory)
      return where + " is not a directory a sharded save wrote; a save would remove it, so move it away";
    if (std::string name = foreign_entry(dir); !name.empty())
      return where + " is a directory that is not a sharded checkpoint: it holds '" + name +
             "', which no minitorch save wrote; a save replaces the whole directory, so give another path";
  }
  return "";
}

int remove_stale_temp_files(const std::string& checkpoint_path) {
  const fs::path p(checkpoint_path);
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  const std::string base = p.filename().string();
  std::vector<fs::path> stale;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const std::string name = it->path().filename().string();
    for (const char* stem : {"", ".partial"})
      for (const char* suffix : kSingleFileSuffixes)
        if (is_prefix_then_digits(name, base + stem + suffix + ".tmp.")) stale.push_back(it->path());
  }
  int removed = 0;
  for (const auto& f : stale) removed += fs::remove(f, ec) ? 1 : 0;
  return removed;
}

void begin_save(const std::string& path, SaveKind kind, const std::function<bool(const std::string&)>& complete) {
  if (std::string problem = save_target_problem(path, kind); !problem.empty()) throw std::runtime_error(problem);
  remove_stale_temp_files(path);
  const std::string partial = partial_path(path);
  // A complete PATH.partial beside an incomplete PATH is the save --resume uses (an interrupted switch):
  // it must not be cleared for a save that may die too, so its switch is finished first.
  if (!complete(path) && complete(partial)) switch_into_place(path, kind);
  if (kind == SaveKind::single_file) {
    remove_single_file_set(partial);  // what a killed save left
    return;
  }
  fs::remove_all(partial);
  fs::create_directories(partial);
}

void switch_into_place(const std::string& path, SaveKind kind, const std::function<void(int)>& before_step) {
  auto step = [&](int k) {
    if (before_step) before_step(k);
  };
  const std::string partial = partial_path(path);
  if (kind == SaveKind::single_file) {
    step(0);
    fs::remove(manifest_path(path));  // from here until step 3, PATH.partial is the complete save
    step(1);
    if (fs::exists(partial + ".optim")) link_over(partial + ".optim", path + ".optim");
    else fs::remove(path + ".optim");  // an older run's state must not sit beside this save
    step(2);
    link_over(partial, path);
    step(3);
    link_over(manifest_path(partial), manifest_path(path));  // PATH is complete again, and the new save
    step(4);
    remove_single_file_set(partial);
    return;
  }
  const std::string old = old_path(path);
  step(0);
  fs::remove_all(old);  // a save's own (save_target_problem), and PATH.partial is complete
  if (fs::exists(path)) fs::rename(path, old);
  step(1);
  fs::rename(partial, path);
  step(2);
  fs::remove_all(old);
}

}  // namespace minitorch::runtime

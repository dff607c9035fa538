#include "tools/launcher/pool.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

#include "runtime/config_error.h"

namespace minitorch::launcher {

namespace {
using runtime::ConfigError;  // a usage error: exit 2

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, sep);) out.push_back(part);
  if (!s.empty() && s.back() == sep) out.emplace_back();
  return out;
}

int non_negative(const std::string& text, const std::string& what) {
  int v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || v < 0)
    throw ConfigError(what + ": '" + text + "' is not a non-negative decimal integer");
  return v;
}

const Host* find_host(const Pool& pool, const std::string& name) {
  auto h = std::find_if(pool.begin(), pool.end(), [&name](const Host& x) { return x.name == name; });
  return h == pool.end() ? nullptr : &*h;
}

/// The slots one entry names, checked against its host: "" names every slot.
std::vector<int> entry_slots(const std::string& text, const Host& h, const std::string& where) {
  std::vector<int> slots;
  for (const std::string& s : split(text, ',')) {
    const int slot = non_negative(s, where);
    if (std::find(h.slots.begin(), h.slots.end(), slot) == h.slots.end())
      throw ConfigError(where + ": " + h.name + " has no slot " + s + " (its slots are 0.." +
                        std::to_string(h.slots.size() - 1) + ")");
    if (std::find(slots.begin(), slots.end(), slot) != slots.end())
      throw ConfigError(where + ": slot " + s + " of " + h.name + " is named twice");
    slots.push_back(slot);
  }
  return slots;
}
}  // namespace

std::vector<int> range(int n) {
  std::vector<int> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = i;
  return v;
}

Pool read_hostfile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError("--hostfile " + path + ": cannot read it (no such file?)");
  Pool pool;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    std::istringstream words(line);
    std::string host, slots, extra;
    words >> host >> slots >> extra;
    const std::string where = "--hostfile " + path + " line " + std::to_string(n) + ": '" + line + "'";
    if (slots.rfind("slots=", 0) != 0 || !extra.empty())
      throw ConfigError(where + " is not 'HOST slots=N' (DeepSpeed's format, e.g. 'worker-1 slots=4')");
    const int count = non_negative(slots.substr(6), where);
    if (count == 0) throw ConfigError(where + ": a host needs at least one slot");
    if (find_host(pool, host)) throw ConfigError(where + ": host " + host + " is listed twice");
    pool.push_back({host, range(count)});
  }
  if (pool.empty()) throw ConfigError("--hostfile " + path + " lists no hosts (write 'HOST slots=N' lines)");
  return pool;
}

std::vector<std::pair<std::string, std::vector<int>>> parse_filter(const std::string& text, const Pool& pool,
                                                                  const char* option) {
  const std::string where = std::string(option) + " " + text;
  std::vector<std::pair<std::string, std::vector<int>>> out;
  for (const std::string& entry : split(text, '@')) {
    const std::string host = entry.substr(0, entry.find(':'));
    if (host.empty()) throw ConfigError(where + ": an empty host name (the form is HOST[:SLOT,SLOT]@HOST...)");
    const Host* h = find_host(pool, host);
    if (!h) {
      std::string names;
      for (const Host& x : pool) names += (names.empty() ? "" : ", ") + x.name;
      throw ConfigError(where + ": host " + host + " is not in the resource pool (" + names + ")");
    }
    const bool some = entry.find(':') != std::string::npos;
    std::vector<int> slots = some ? entry_slots(entry.substr(entry.find(':') + 1), *h, where) : std::vector<int>{};
    // A host's second entry: mpirun would start two ranks on a slot both name, and DeepSpeed keeps only
    // the last entry; so a slot named twice is the error above, and any other repeat says to merge.
    for (const auto& [seen, seen_slots] : out) {
      if (seen != host) continue;
      const std::vector<int>& before = seen_slots.empty() ? h->slots : seen_slots;
      for (int s : slots.empty() ? h->slots : slots)
        if (std::count(before.begin(), before.end(), s))
          throw ConfigError(where + ": slot " + std::to_string(s) + " of " + host + " is named twice");
      throw ConfigError(where + ": host " + host + " is named twice; name it once, with all its slots (" + host +
                        ":SLOT,SLOT,...)");
    }
    out.emplace_back(host, std::move(slots));
  }
  return out;
}

Pool select(Pool pool, const Selection& o) {
  if (!o.include.empty() && !o.exclude.empty()) throw ConfigError("--include and --exclude cannot be used together");
  if ((o.num_nodes >= 0 || o.num_gpus >= 0) && (!o.include.empty() || !o.exclude.empty()))
    throw ConfigError("--num_nodes / --num_gpus cannot be used with --include / --exclude (DeepSpeed's rule)");
  if (!o.include.empty()) {
    Pool chosen;
    for (auto& [host, slots] : parse_filter(o.include, pool, "--include"))
      chosen.push_back({host, slots.empty() ? find_host(pool, host)->slots : slots});
    pool = chosen;
  }
  if (!o.exclude.empty()) {
    for (auto& [host, slots] : parse_filter(o.exclude, pool, "--exclude"))
      for (Host& h : pool)
        if (h.name == host)
          std::erase_if(h.slots, [&slots = slots](int s) { return slots.empty() || std::count(slots.begin(), slots.end(), s); });
    std::erase_if(pool, [](const Host& h) { return h.slots.empty(); });
    if (pool.empty()) throw ConfigError("--exclude " + o.exclude + " leaves no slot to run on");
  }
  if (o.num_nodes >= 0) {
    if (o.num_nodes == 0 || o.num_nodes > static_cast<int>(pool.size()))
      throw ConfigError("--num_nodes " + std::to_string(o.num_nodes) + ": the resource pool has " +
                        std::to_string(pool.size()) + " host(s)");
    pool.resize(static_cast<std::size_t>(o.num_nodes));
  }
  if (o.num_gpus >= 0)
    for (Host& h : pool) {
      if (o.num_gpus == 0 || o.num_gpus > static_cast<int>(h.slots.size()))
        throw ConfigError("--num_gpus " + std::to_string(o.num_gpus) + ": host " + h.name + " has " +
                          std::to_string(h.slots.size()) + " slot(s)");
      h.slots.resize(static_cast<std::size_t>(o.num_gpus));
    }
  return pool;
}

}  // namespace minitorch::launcher

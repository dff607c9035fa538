// minitorch-run [LAUNCHER OPTIONS] PROGRAM [PROGRAM ARGS...]
// DeepSpeed's launcher (`deepspeed --num_gpus 2 train.py ...`) for minitorch: the same options, turned into
// one `mpirun` line (docs/multinode.md). The resource pool is the hostfile's hosts and slots (DeepSpeed's
// format, `worker-1 slots=4`), or this machine alone; --include / --exclude / --num_nodes / --num_gpus
// choose slots from it as DeepSpeed's runner does; each host becomes one mpirun app context with as many
// ranks as slots chosen there.
//
// A slot is a GPU when the program is given `--device cuda`: each host's ranks then see exactly the GPUs
// chosen there (CUDA_VISIBLE_DEVICES, set per host through `env`), rank r of a host uses the r-th of them
// (its Open MPI local rank), and this machine cannot be asked for more GPUs than it has. Otherwise a slot
// is a rank on CPU cores and no GPU is counted. CUDA_VISIBLE_DEVICES in the launcher's environment is
// DeepSpeed's: it picks this machine's GPUs when no selection option is given, and is ignored, with a
// warning, when one is (DeepSpeed issue 662 was that it was ignored silently).
//
//   minitorch-run --num_gpus 2 build/bin/minitorch-train --config configs/ddp.json
//   minitorch-run --hostfile hosts --include worker-1:0,2@worker-2 build/bin/minitorch-train --device cuda ...
//   minitorch-run --dry-run ...        prints the mpirun line instead of running it
// Exit status: mpirun's; 2 for a usage error (a bad hostfile, an impossible selection).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <vector>

#include "cli_common.h"
#if MINITORCH_WITH_CUDA
#include "cuda/cuda.h"
#endif

namespace {
using minitorch::runtime::ConfigError;  // a usage error: exit 2

struct Host {
  std::string name;
  std::vector<int> slots;  // slot indices (GPU ids when the slots are GPUs)
};
using Pool = std::vector<Host>;

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

int positive(const std::string& text, const std::string& what) {
  int v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || v < 0)
    throw ConfigError(what + ": '" + text + "' is not a non-negative decimal integer");
  return v;
}

std::vector<int> range(int n) {
  std::vector<int> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = i;
  return v;
}

// DeepSpeed's hostfile: one `HOST slots=N` a line; blank lines and # comments skipped; a host once.
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
    const int count = positive(slots.substr(6), where);
    if (count == 0) throw ConfigError(where + ": a host needs at least one slot");
    for (const Host& h : pool)
      if (h.name == host) throw ConfigError(where + ": host " + host + " is listed twice");
    pool.push_back({host, range(count)});
  }
  if (pool.empty()) throw ConfigError("--hostfile " + path + " lists no hosts (write 'HOST slots=N' lines)");
  return pool;
}

// `worker-1:0,2@worker-2` -> {worker-1: [0, 2], worker-2: [] (= every slot)}, each host and slot checked.
std::vector<std::pair<std::string, std::vector<int>>> parse_filter(const std::string& text, const Pool& pool,
                                                                  const char* option) {
  std::vector<std::pair<std::string, std::vector<int>>> out;
  for (const std::string& entry : split(text, '@')) {
    const std::string host = entry.substr(0, entry.find(':'));
    const std::string where = std::string(option) + " " + text;
    auto h = std::find_if(pool.begin(), pool.end(), [&host = host](const Host& x) { return x.name == host; });
    if (host.empty()) throw ConfigError(where + ": an empty host name (the form is HOST[:SLOT,SLOT]@HOST...)");
    if (h == pool.end()) {
      std::string names;
      for (const Host& x : pool) names += (names.empty() ? "" : ", ") + x.name;
      throw ConfigError(where + ": host " + host + " is not in the resource pool (" + names + ")");
    }
    std::vector<int> slots;
    if (entry.find(':') != std::string::npos)
      for (const std::string& s : split(entry.substr(entry.find(':') + 1), ',')) {
        const int slot = positive(s, where);
        if (std::find(h->slots.begin(), h->slots.end(), slot) == h->slots.end())
          throw ConfigError(where + ": " + host + " has no slot " + s + " (its slots are 0.." +
                            std::to_string(h->slots.size() - 1) + ")");
        if (std::find(slots.begin(), slots.end(), slot) != slots.end())
          throw ConfigError(where + ": slot " + s + " of " + host + " is named twice");
        slots.push_back(slot);
      }
    out.emplace_back(host, slots);
  }
  return out;
}

struct Options {
  std::string hostfile, include, exclude, master_addr, master_port = "29500";
  int num_nodes = -1, num_gpus = -1;
  bool dry_run = false;
};

// The pool after DeepSpeed's selection rules, in the pool's order.
Pool select(Pool pool, const Options& o) {
  if (!o.include.empty() && !o.exclude.empty()) throw ConfigError("--include and --exclude cannot be used together");
  if ((o.num_nodes >= 0 || o.num_gpus >= 0) && (!o.include.empty() || !o.exclude.empty()))
    throw ConfigError("--num_nodes / --num_gpus cannot be used with --include / --exclude (DeepSpeed's rule)");
  if (!o.include.empty()) {
    Pool chosen;
    for (auto& [host, slots] : parse_filter(o.include, pool, "--include")) {
      const Host& h = *std::find_if(pool.begin(), pool.end(), [&host = host](const Host& x) { return x.name == host; });
      chosen.push_back({host, slots.empty() ? h.slots : slots});
    }
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

// `--device cuda[:N]` (or --device=cuda...) among the program's arguments.
bool program_uses_cuda(const std::vector<std::string>& program) {
  for (std::size_t i = 0; i < program.size(); ++i) {
    std::string value;
    if (program[i] == "--device" && i + 1 < program.size()) value = program[i + 1];
    if (program[i].rfind("--device=", 0) == 0) value = program[i].substr(9);
    if (value.rfind("cuda", 0) == 0) return true;
  }
  return false;
}

int local_gpu_count() {
#if MINITORCH_WITH_CUDA
  return minitorch::cuda::device_count();
#else
  return 0;
#endif
}

std::string joined(const std::vector<int>& v) {
  std::string out;
  for (int x : v) {
    if (!out.empty()) out += ',';
    out += std::to_string(x);
  }
  return out;
}

std::string shell_quoted(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=.,:/@%") ==
                        std::string::npos)
    return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool is_local(const std::string& host) { return host == "localhost" || host == "127.0.0.1"; }

/// The slots to choose from: the hostfile's hosts, this machine's GPUs, or (CPU ranks) one slot per rank
/// asked for, at least one per core. CUDA_VISIBLE_DEVICES picks this machine's GPUs, as DeepSpeed's
/// launcher reads it, unless the options choose them.
Pool available_slots(Options& o, bool cuda) {
  Pool pool;
  if (!o.hostfile.empty()) {
    pool = read_hostfile(o.hostfile);
  } else if (cuda) {
    const int n = local_gpu_count();
    if (n == 0) throw ConfigError("--device cuda: this machine has no CUDA device (run on the CPU: leave out --device cuda)");
    pool = {{"localhost", range(n)}};
    if (o.num_gpus > n)
      throw ConfigError("--num_gpus " + std::to_string(o.num_gpus) + ": this machine has " + std::to_string(n) +
                        " CUDA device(s)");
  } else {  // CPU ranks: a slot is a rank, as many as asked (default: one per core)
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    pool = {{"localhost", range(std::max(cores, o.num_gpus))}};
  }
  const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES");
  const bool selecting = !o.include.empty() || !o.exclude.empty() || o.num_nodes >= 0 || o.num_gpus >= 0;
  if (cuda && cvd && *cvd) {
    if (!selecting && o.hostfile.empty()) {
      o.include = "localhost:" + std::string(cvd);  // DeepSpeed: CUDA_VISIBLE_DEVICES picks this machine's GPUs
      pool = {{"localhost", range(64)}};
    } else {
      minitorch::tools::warn("CUDA_VISIBLE_DEVICES=" + std::string(cvd) +
                             " is ignored: --hostfile/--include/--exclude/--num_nodes/--num_gpus choose the GPUs, and "
                             "each host's ranks get CUDA_VISIBLE_DEVICES set to the GPUs chosen there (as DeepSpeed does)");
    }
  }
  return pool;
}

/// The mpirun line: one app context per chosen host, its GPUs as CUDA_VISIBLE_DEVICES (--device cuda).
std::vector<std::string> mpirun_line(const Pool& chosen, const Options& o, const std::vector<std::string>& program,
                                     bool cuda) {
  std::vector<std::string> cmd{"mpirun"};
  if (geteuid() == 0 && !std::getenv("OMPI_ALLOW_RUN_AS_ROOT")) cmd.push_back("--allow-run-as-root");
  const std::string addr = !o.master_addr.empty() ? o.master_addr
                           : is_local(chosen.front().name) ? "127.0.0.1"
                                                           : chosen.front().name;
  for (const std::string& a : std::vector<std::string>{"--bind-to", "none", "-x", "MASTER_ADDR=" + addr, "-x",
                                                        "MASTER_PORT=" + o.master_port})
    cmd.push_back(a);
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    const Host& h = chosen[i];
    const std::string n = std::to_string(h.slots.size());
    if (i) cmd.push_back(":");
    for (const std::string& a : std::vector<std::string>{"-np", n, "--host", h.name + ":" + n}) cmd.push_back(a);
    if (cuda) {
      cmd.push_back("env");
      cmd.push_back("CUDA_VISIBLE_DEVICES=" + joined(h.slots));
    }
    cmd.insert(cmd.end(), program.begin(), program.end());
  }
  return cmd;
}

}  // namespace

int main(int argc, char** argv) {
  minitorch::cli::Parser parser{"minitorch-run: DeepSpeed's launcher options, run as one mpirun line (docs/multinode.md)"};
  Options o;
  parser.option("-H,--hostfile", o.hostfile, "DeepSpeed hostfile: one 'HOST slots=N' line per machine (default: this machine alone)");
  parser.option("-i,--include", o.include, "the slots to use: HOST[:SLOT,SLOT]@HOST..., e.g. localhost:0,1 or worker-1:0,2@worker-2");
  parser.option("-e,--exclude", o.exclude, "the slots not to use, same form");
  parser.option("--num_nodes", o.num_nodes, "use the first N hosts")->check(minitorch::cli::decimal<int>(1));
  parser.option("--num_gpus", o.num_gpus, "use the first N slots of each host (GPUs with --device cuda, else ranks)")
      ->check(minitorch::cli::decimal<int>(1));
  parser.option("--master_addr", o.master_addr, "exported as MASTER_ADDR (default: the first host; 127.0.0.1 for this machine)");
  parser.option("--master_port", o.master_port, "exported as MASTER_PORT (default 29500)")
      ->check(minitorch::cli::decimal<int>(1))->check(minitorch::cli::range(1, 65535));
  parser.flag("--dry-run", o.dry_run, "print the mpirun line, run nothing");
  parser.prefix_command();  // everything from the program on is the program's
  return minitorch::tools::run_tool(parser, argc, argv, [&] {
    const std::vector<std::string> program = parser.remaining();
    if (program.empty()) throw ConfigError("no program to run: minitorch-run [OPTIONS] PROGRAM [ARGS...]");
    const bool cuda = program_uses_cuda(program);
    std::vector<std::string> cmd = mpirun_line(select(available_slots(o, cuda), o), o, program, cuda);
    std::string line;
    for (const std::string& a : cmd) {
      if (!line.empty()) line += ' ';
      line += shell_quoted(a);
    }
    if (o.dry_run) {
      std::printf("%s\n", line.c_str());
      return;
    }
    std::fprintf(stderr, "minitorch-run: %s\n", line.c_str());
    std::fflush(stderr);
    std::vector<char*> args;
    for (std::string& a : cmd) args.push_back(a.data());
    args.push_back(nullptr);
    execvp(args[0], args.data());
    throw std::runtime_error("cannot run mpirun (is Open MPI installed? make deps): " + std::string(std::strerror(errno)));
  });
}

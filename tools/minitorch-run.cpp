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
// Exit status: mpirun's; 2 for a usage error (a bad hostfile, an impossible selection, an option it does not
// have, a program that is not there to run). tools/launcher/ holds the pool and the program's check.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "cli_common.h"
#include "tools/launcher/pool.h"
#include "tools/launcher/program.h"
#if MINITORCH_WITH_CUDA
#include "cuda/cuda.h"
#endif

namespace {
using minitorch::runtime::ConfigError;  // a usage error: exit 2
namespace launcher = minitorch::launcher;

using launcher::Host;
using launcher::Pool;

struct Options : launcher::Selection {
  std::string hostfile, master_addr, master_port = "29500";
  bool dry_run = false;
};

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
    pool = launcher::read_hostfile(o.hostfile);
  } else if (cuda) {
    const int n = local_gpu_count();
    if (n == 0) throw ConfigError("--device cuda: this machine has no CUDA device (run on the CPU: leave out --device cuda)");
    pool = {{"localhost", launcher::range(n)}};
    if (o.num_gpus > n)
      throw ConfigError("--num_gpus " + std::to_string(o.num_gpus) + ": this machine has " + std::to_string(n) +
                        " CUDA device(s)");
  } else {  // CPU ranks: a slot is a rank, as many as asked (default: one per core)
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    pool = {{"localhost", launcher::range(std::max(cores, o.num_gpus))}};
  }
  const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES");
  const bool selecting = !o.include.empty() || !o.exclude.empty() || o.num_nodes >= 0 || o.num_gpus >= 0;
  if (cuda && cvd && *cvd) {
    if (!selecting && o.hostfile.empty()) {
      o.include = "localhost:" + std::string(cvd);  // DeepSpeed: CUDA_VISIBLE_DEVICES picks this machine's GPUs
      pool = {{"localhost", launcher::range(64)}};
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
    std::vector<std::string> program = parser.remaining();
    if (!program.empty() && program.front() == "--") program.erase(program.begin());  // the usual end of options
    if (program.empty()) throw ConfigError("no program to run: minitorch-run [OPTIONS] PROGRAM [ARGS...]");
    launcher::check_no_unknown_option(program);  // mpirun would take it for one of its own
    const bool cuda = program_uses_cuda(program);
    std::vector<std::string> cmd = mpirun_line(launcher::select(available_slots(o, cuda), o), o, program, cuda);
    std::string line;
    for (const std::string& a : cmd) {
      if (!line.empty()) line += ' ';
      line += shell_quoted(a);
    }
    if (o.dry_run) {
      std::printf("%s\n", line.c_str());
      return;
    }
    launcher::check_program(program.front());  // the same paths on every host (docs/multinode.md)
    std::fprintf(stderr, "minitorch-run: %s\n", line.c_str());
    std::fflush(stderr);
    std::vector<char*> args;
    for (std::string& a : cmd) args.push_back(a.data());
    args.push_back(nullptr);
    execvp(args[0], args.data());
    throw std::runtime_error("cannot run mpirun (is Open MPI installed? make deps): " + std::string(std::strerror(errno)));
  });
}

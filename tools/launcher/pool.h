#pragma once
/// \file pool.h
/// minitorch-run's resource pool (tools/minitorch-run.cpp): DeepSpeed's hostfile and its selection rules
/// (--include / --exclude / --num_nodes / --num_gpus), as its runner applies them. Every mistake is one
/// ConfigError (exit 2) naming the option and what to write instead.
///
///   Pool pool = read_hostfile("hosts");                  // worker-1 slots=4 / worker-2 slots=4
///   Selection s; s.include = "worker-1:0,2@worker-2";
///   Pool chosen = select(pool, s);                         // worker-1: 0, 2; worker-2: 0-3
#include <string>
#include <utility>
#include <vector>

namespace minitorch::launcher {

struct Host {
  std::string name;
  std::vector<int> slots;  ///< slot indices (GPU ids when the slots are GPUs)
};
using Pool = std::vector<Host>;

/// What the options choose from the pool; -1: not given.
struct Selection {
  std::string include, exclude;
  int num_nodes = -1, num_gpus = -1;
};

/// 0..n-1.
std::vector<int> range(int n);
/// DeepSpeed's hostfile: one `HOST slots=N` a line; blank lines and # comments skipped; a host once.
Pool read_hostfile(const std::string& path);
/// `worker-1:0,2@worker-2` -> {worker-1: [0, 2], worker-2: [] (= every slot)}, each host and slot checked
/// against `pool`. A slot named twice, also across two entries of one host (`localhost:0@localhost:0`),
/// is an error, and so is a host named twice: DeepSpeed would keep only its last entry.
std::vector<std::pair<std::string, std::vector<int>>> parse_filter(const std::string& text, const Pool& pool,
                                                                  const char* option);
/// The pool after DeepSpeed's selection rules, in the pool's order.
Pool select(Pool pool, const Selection& s);

}  // namespace minitorch::launcher

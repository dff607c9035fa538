#pragma once
// Running a test program (tests/mpi_rank_*.cpp, build/bin/*) under mpirun, timed: what the rank-failure
// tests of this folder share.
#include <chrono>
#include <string>

#include "test_util.h"

namespace mt_test {

struct Timed {
  CommandResult result;
  double seconds = 0;
};

inline Timed run_ranks(const std::string& program, int np, const std::string& args) {
  const std::string cmd = mpirun_command(program, np, args);
  const auto t0 = std::chrono::steady_clock::now();
  Timed t;
  t.result = run_command(cmd);
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return t;
}

}  // namespace mt_test

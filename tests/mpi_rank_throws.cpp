// Test-only program (tests/dist/test_rank_failure.cpp runs it under mpirun): rank 1 fails while the
// other ranks wait in a collective that can never finish. The job must exit non-zero, quickly, with
// rank 1's message — not hang.
//   mt-rank-throws uncaught    an exception escapes main() on rank 1 (the terminate handler)
//   mt-rank-throws run_main    an exception escapes the body given to dist::run_main
//   mt-rank-throws exit_code   the body returns 3 on rank 1
//   mt-rank-throws ok          nobody fails: exit 0 after a clean finalize
#include <cstdio>
#include <stdexcept>
#include <string>

#include "dist/process_group.h"

namespace dist = minitorch::dist;
using minitorch::Tensor;

namespace {
/// Rank 1 fails; the others block in an all-reduce that waits for it.
int body(dist::ProcessGroup& world, const std::string& how) {
  Tensor t = Tensor::ones({1000});
  world.all_reduce(t);  // everyone is up
  if (world.rank() == 1 && how != "ok") {
    if (how == "exit_code") {
      std::fprintf(stderr, "rank 1 returns 3 on purpose\n");
      return 3;
    }
    throw std::runtime_error("rank 1 fails on purpose");
  }
  world.all_reduce(t);
  if (world.rank() == 0) std::printf("sum %g\n", static_cast<double>(t.to_vector()[0]));
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  const std::string how = argc > 1 ? argv[1] : "uncaught";
  if (how == "uncaught") {
    auto& world = dist::init(&argc, &argv);
    body(world, how);
    dist::finalize();
    return 0;
  }
  return dist::run_main(&argc, &argv, [&](dist::ProcessGroup& world) { return body(world, how); });
}

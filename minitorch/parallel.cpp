#include "minitorch/parallel.h"

#include <Eigen/Core>
#include <cstdlib>
#include <string>
#include <thread>

namespace minitorch {

namespace {
/// Ranks sharing this node, from the launcher's environment (Open MPI, MPICH/Slurm); 1 if unset.
int local_ranks() {
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"})
    if (const char* v = std::getenv(var)) {
      int n = std::atoi(v);
      if (n > 0) return n;
    }
  return 1;
}

int default_threads() {
  if (const char* v = std::getenv("MINITORCH_NUM_THREADS")) {
    int n = std::atoi(v);
    if (n > 0) return n;
  }
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  int n = (cores > 0 ? cores : 1) / local_ranks();
  return n > 0 ? n : 1;
}

int& threads_setting() {
  static int n = [] {
    int d = default_threads();
    Eigen::setNbThreads(d);
    return d;
  }();
  return n;
}
}  // namespace

void set_num_threads(int n) {
  if (n < 1) n = 1;
  threads_setting() = n;
  Eigen::setNbThreads(n);
}

int num_threads() { return threads_setting(); }

}  // namespace minitorch

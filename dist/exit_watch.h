#pragma once
/// \file exit_watch.h
/// The last moment of a multi-rank job. mpirun waits for every rank it started; a rank stopped (SIGSTOP)
/// or stuck after its last barrier would keep the job from ending although its work is done, and no code
/// of that rank runs any more to notice. So each rank, once MPI is finalized, leaves a watcher behind: a
/// detached process that waits up to the comm timeout for the job's other ranks on this machine to exit,
/// and kills any still there, naming it (mpirun then ends the job with a non-zero status). In a normal
/// run the ranks exit within milliseconds of each other and the watchers with them.
#include <string>
#include <vector>

namespace minitorch::dist {

/// A rank of the job and its process on this machine.
struct PeerProcess {
  int rank = -1;
  long pid = 0;
};

/// "HOST PID": what a rank tells the others before the last barrier.
std::string process_label();
/// The ranks among `labels` (one per world rank, as process_label() made them) on this rank's machine,
/// this one left out.
std::vector<PeerProcess> peers_on_this_host(const std::vector<std::string>& labels, int my_rank);
/// Forks the detached watcher (call after MPI_Finalize; nothing when `peers` is empty). `seconds`: how long
/// the peers have to exit.
void leave_exit_watcher(const std::vector<PeerProcess>& peers, double seconds, int my_rank);

/// An aborting rank's backstop: the processes of this job on this machine that are stopped (SIGSTOP: state T
/// in /proc/PID/stat) are killed (SIGKILL, each named on stderr as "rank R (pid P)"), before the caller ends the
/// job. MPI_Abort (or a watchdog's exit) asks mpirun to take every rank down, and mpirun signals a stopped rank
/// too — but under load its kill of a stopped rank sometimes never landed, and mpirun then waited for it with no
/// deadline (seen as a 120 s hang in the L05_StartAndExitTimeout tests). "Of this job": the same Open MPI job id
/// (OMPI_MCA_ess_base_jobid in its environment); outside mpirun nothing is touched. Needs no MPI: usable before
/// MPI_Init has returned. Returns how many it killed.
int kill_stopped_job_peers(int my_rank);

}  // namespace minitorch::dist

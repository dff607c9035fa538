#pragma once
// What the lessons on several ranks share: rank 0 reads the terminal and the others wait for its answer
// asleep (a student may read a beat for minutes; a spinning wait would eat the cores), and a barrier
// that sleeps too. MPI_COMM_WORLD: the lessons run on the whole job. And the main() they share, and the
// opening and closing around their beats.
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>

#include "common/beat.h"
#include "dist/process_group.h"

namespace lesson {

/// Waits for `req` in 20 ms naps.
inline void quiet_wait(MPI_Request& req) {
  for (int done = 0; MPI_Test(&req, &done, MPI_STATUS_IGNORE), !done;)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

/// Rank 0's `value` on every rank (Beats::on_ranks: what rank 0 read at the prompt).
inline int from_rank0(int value) {
  MPI_Request req;
  MPI_Ibcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD, &req);
  quiet_wait(req);
  return value;
}

/// Every rank of the job has arrived.
inline void quiet_barrier() {
  MPI_Request req;
  MPI_Ibarrier(MPI_COMM_WORLD, &req);
  quiet_wait(req);
}

/// The main() of a lesson on several ranks (under mpirun; 1 rank works too): every rank runs the beats, rank 0
/// alone prints and reads the prompt for all, and an error on one rank ends the whole job instead of leaving the
/// others waiting in a collective. `options` declares the lesson's options on `beats`; `body` runs the beats.
inline int main_on_ranks(int argc, char** argv, const std::string& title, int total,
                         const std::function<void(Beats&)>& options,
                         const std::function<int(Beats&, minitorch::dist::ProcessGroup&)>& body) {
  minitorch::dist::ProcessGroup& world = minitorch::dist::init(&argc, &argv);
  if (world.rank() != 0 && !std::freopen("/dev/null", "w", stdout)) return 1;  // rank 0 prints for everyone
  Beats beats(title, total);
  options(beats);
  if (world.size() > 1) beats.on_ranks(world.rank(), from_rank0);
  return beats.run(argc, argv, [&] { return body(beats, world); },
                   [](const std::string& what) { minitorch::dist::abort_job(what, 1); });
}

/// What a lesson on several ranks says and checks around its beats (run_on_ranks).
struct RanksLesson {
  std::string number;     ///< "06": `make lesson-06`, build/bin/lesson-06, "Lesson 06 done."
  std::string ranks_do;   ///< what the ranks are for: "ZeRO shards the model states over them"
  std::string data;       ///< the text the lesson trains on (--data): it must exist; empty: it reads none
  int exact_ranks = 0;    ///< the lesson runs on exactly this many ranks; 0: on any number above one
  std::string note = {};  ///< a last paragraph for the message a rank count the lesson cannot use prints
  int ranks_multiple = 1;  ///< with exact_ranks 0: the rank count must also be a multiple of this (groups of 2: 2)
  int make_ranks = 4;      ///< the ranks `make lesson-NN` starts (named by that message)
};

/// A lesson's beats between the opening and the closing every lesson on several ranks shares: on a rank count
/// it cannot use it says how to start it and returns 0; a missing data file is a UsageError on every rank (rank 0
/// says it, all stop); after the beats every rank waits for the others, asleep, and "Lesson NN done." ends it.
inline int run_on_ranks(minitorch::dist::ProcessGroup& world, const RanksLesson& lesson, const std::function<void()>& beats) {
  const bool usable = lesson.exact_ranks > 0 ? world.size() == lesson.exact_ranks
                                             : world.size() > 1 && world.size() % lesson.ranks_multiple == 0;
  if (!usable) {
    const int ranks = lesson.exact_ranks > 0 ? lesson.exact_ranks : lesson.make_ranks;  // what `make lesson-NN` starts
    std::string on = "several ranks";
    if (lesson.exact_ranks > 0) on = std::to_string(ranks) + " ranks";
    else if (lesson.ranks_multiple == 2) on = "an even number of ranks";
    else if (lesson.ranks_multiple > 2) on = "a multiple of " + std::to_string(lesson.ranks_multiple) + " ranks";
    const std::string started = lesson.exact_ranks > 0 ? "" : " (" + std::to_string(ranks) + " ranks)";
    std::printf("This lesson runs on %s: %s. Start it with\n`make lesson-%s`%s, or\n\n", on.c_str(),
                lesson.ranks_do.c_str(), lesson.number.c_str(), started.c_str());
    std::printf("  mpirun -np %d build/bin/lesson-%s          (as root: add --allow-run-as-root;\n"
                "                                             fewer cores than ranks: add --oversubscribe)\n",
                ranks, lesson.number.c_str());
    if (!lesson.note.empty()) std::printf("\n%s\n", lesson.note.c_str());
    return 0;
  }
  if (!lesson.data.empty() && !std::filesystem::exists(lesson.data))  // every rank sees it: rank 0 says it, all stop
    throw UsageError("data file '" + lesson.data +
                     "' not found. Make it with `make data`, or pass --data FILE (any UTF-8 text)");
  beats();
  quiet_barrier();
  std::printf("\nLesson %s done.\n", lesson.number.c_str());
  return 0;
}

}  // namespace lesson

#pragma once
/// \file run_id.h
/// The id of one training run, which every save of the run carries (its manifest, its files' metadata), so
/// that a resume refuses files of two runs mixed together (runtime/checkpoint_manifest.h).
#include <string>

#include "dist/process_group.h"

namespace minitorch::runtime {

/// A fresh id for one training run: seconds since the epoch, pid and 32 random bits, e.g.
/// "1718000000-4242-9f3a61c2". Generate it once per run and pass it to every save.
std::string new_run_id();
/// The same, made by rank 0 and broadcast: every rank of a job names its saves alike (a sharded
/// save's shards carry it). Every rank calls it.
std::string new_run_id(dist::ProcessGroup& group);

}  // namespace minitorch::runtime

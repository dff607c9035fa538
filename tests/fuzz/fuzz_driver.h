#pragma once
// The deterministic fuzz driver behind ctest's L03_Fuzz tests: runs a target on its seeds, then on a
// fixed number of mutated inputs (fuzz_mutator.h), and reports every input that broke the target's
// contract, each written to a file so it can be replayed.
//
// - An input that throws anything but the target's documented error, or a FuzzFinding, is a finding.
// - An input slower than `input_limit_s` is a finding (a parser that loops on hostile sizes).
// - An input still running after `hang_limit_s` is a hang: a watchdog thread saves it as
//   <findings_dir>/<target>-<index>.bin, prints its index and ends the process (exit status 3).
// - A crash: every input is written to <findings_dir>/<target>-running.bin before it runs, so the one
//   that ended the process is there; a signal or an ASan report also renames it as above. (A UBSan
//   report exits the process without calling back: look for <target>-running.bin.)
//
// Replay one input: MT_FUZZ_REPLAY=build/fuzz-findings/config-1234.bin build/bin/test-fuzz
//   --gtest_filter=L03_Fuzz.Config (or feed the file to build-fuzz/bin/fuzz-config).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_targets.h"

namespace mt_fuzz {

struct CampaignOptions {
  std::uint64_t seed = 0x4D696E69546F7263ull;  ///< "MiniTorc": input i is a function of (seed, i, seeds)
  std::size_t mutated_inputs = 2000;
  double input_limit_s = 1.0;
  double hang_limit_s = 30.0;
  std::string findings_dir;  ///< where inputs that broke the contract are written (created when needed)
};

struct Finding {
  std::size_t index = 0;  ///< 0 .. seeds-1: the seeds themselves; then the mutated inputs
  std::string what;
  std::string file;       ///< the input, written for replay
};

struct CampaignReport {
  std::size_t seeds = 0, mutated = 0, accepted = 0, rejected = 0;
  double seconds = 0, slowest_s = 0;
  std::size_t slowest_index = 0;
  std::vector<Finding> findings;
  /// "config: 2004 inputs (4 seeds + 2000 mutated) in 0.9 s: 700 accepted, 1804 rejected, 0 findings; ..."
  std::string summary(const std::string& name) const;
};

/// Runs the campaign; inputs are generated one at a time (memory stays flat).
CampaignReport run_campaign(const Target& target, const CampaignOptions& options);

/// Runs `target` on the bytes of `file`: "" if the contract held within `input_limit_s` (and what the
/// target did in `outcome`), else what broke.
std::string replay(const Target& target, const std::string& file, Outcome* outcome = nullptr,
                   double input_limit_s = CampaignOptions().input_limit_s);

/// Bytes as a C string literal body ("{\"a\": \x01..."), at most `max` input bytes shown.
std::string escape_bytes(const std::string& bytes, std::size_t max = 400);

}  // namespace mt_fuzz

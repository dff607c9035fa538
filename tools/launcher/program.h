#pragma once
/// \file program.h
/// What minitorch-run checks of the program it is asked to run, before mpirun starts any rank: mpirun
/// would start the job and end it with exit 132 and a page of text for a mistyped path.
///
///   launcher::check_program("build/bin/minitorch-train");  // a path: it must be an executable file
///   launcher::check_program("python3");                    // a name: found on PATH, as execvp finds it
#include <string>
#include <vector>

namespace minitorch::launcher {

/// Throws a ConfigError (exit 2) naming `program` unless execvp would run it: a name with a '/' must be an
/// executable regular file; a name without one must be such a file in a directory of PATH (an empty
/// entry: the working directory; PATH unset: the system's default path).
void check_program(const std::string& program);

/// Throws a ConfigError unless `program_and_args` (what follows minitorch-run's own options) starts with
/// a program: an option there (`--bogus`) is one minitorch-run does not have, since its options come
/// before the program and the program's after it.
void check_no_unknown_option(const std::vector<std::string>& program_and_args);

}  // namespace minitorch::launcher

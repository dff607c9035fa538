#pragma once
// A lesson is a sequence of beats: print what is about to happen, run it live, wait for Enter. Each beat is
// one function whose first line names it; run() calls them in order, passing what later beats need:
//
//   struct State { Tensor x; };                                        // what the beats hand on
//   void the_data(lesson::Beats& beats, const Options& opt, State& s) {
//     beats.beat("the data", "One id per character ...");              // heading and idea
//     ... live code on real tensors, printing real numbers ...
//   }
//   int run(lesson::Beats& beats, const Options& opt) {
//     State s;
//     the_data(beats, opt, s);
//     ...
//     return 0;
//   }
//   int main(int argc, char** argv) {
//     Options opt;
//     return lesson::main_on_one_process(argc, argv, "Lesson 03: the GPT", 6, [&](lesson::Beats& beats) {
//       beats.option("--data", opt.data, "FILE", "the text to train on");  // name, default, help
//       beats.option("--steps", opt.steps, "optimizer steps", /*quick=*/20);  // --quick uses 20
//     }, [&](lesson::Beats& beats) { return run(beats, opt); });
//   }
//
// A lesson on several ranks uses lesson::main_on_ranks (common/ranks.h) instead.
//
// Every lesson also takes
//   --auto     never wait for Enter (CI runs the lessons this way);
//   --quick    the small run the tests use: the options declared with a quick value take it;
//   --beat N   run beats 1..N-1 without waiting and without their output (later beats need their
//              state), then show beat N on and wait as usual;
//   --help     print the options and exit 0.
// An option the lesson did not declare, a malformed value or --beat out of range is a usage error:
// one "error: ..." line naming it, exit status 2. At the prompt, Enter goes on; q (or the end of the
// input) quits cleanly with status 0. run() turns an exception into one "error: ..." line and status
// 1 (lesson::UsageError: status 2) — a lesson never ends in an uncaught exception.
//
// Under mpirun every rank runs the lesson and only rank 0 prints and reads the terminal: on_ranks()
// tells Beats which rank this is and how to broadcast rank 0's choice at a prompt, so that all ranks
// go on, or quit, together.
#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <exception>
#include <functional>
#include <iostream>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "tools/cli/cli.h"

namespace lesson {

/// Input the student can fix (an option's value, a --prompt outside the vocabulary): exit status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Beats {
 public:
  /// `total`: how many beats the lesson has (the counter prints "beat k/total").
  Beats(std::string title, int total) : title_(std::move(title)), total_(total), parser_(title_) {
    parser_.help_flag("--help,-h", "print these options and exit");
    parser_.flag("--auto", auto_, "run every beat without waiting for Enter");
    parser_.flag("--quick", quick_, "the small, fast run the tests use (see the options that name it)");
    parser_.option("--beat", start_, "run beats 1..N-1 silently, then show beat N on (1.." + std::to_string(total_) + ")")
        ->type_name("N")
        ->check(positive<int>());
    parser_.allow_extras();  // unknown arguments are collected and reported by run() in one line
    names_ = {"--auto", "--quick", "--beat N"};
  }

  /// A text option: `value` holds the default and receives what the command line says.
  void option(const std::string& name, std::string& value, const std::string& type, const std::string& help) {
    parser_.option(name, value, help + " (default: " + (value.empty() ? "none" : value) + ")")->type_name(type);
    names_.push_back(name + " " + type);
  }
  /// A positive integer option; with --quick (and the option not given) it takes `quick` if > 0.
  void option(const std::string& name, long long& value, const std::string& help, long long quick = 0) {
    std::string text = help + " (default: " + std::to_string(value);
    if (quick > 0) text += "; --quick: " + std::to_string(quick);
    minitorch::cli::Option* opt = parser_.option(name, value, text + ")")->type_name("N")->check(positive<long long>());
    if (quick > 0) quick_values_.push_back([opt, &value, quick] { if (!opt->given()) value = quick; });
    names_.push_back(name + " N");
  }

  /// Under mpirun: this process's rank (only rank 0 prints and reads the terminal) and `share`, a
  /// collective that every rank calls at the same prompt and that returns rank 0's value everywhere.
  void on_ranks(int rank, std::function<int(int)> share) {
    rank_ = rank;
    share_ = std::move(share);
  }

  /// Parses the command line, prints the title and runs `body` (which calls beat() `total` times).
  /// Returns the exit status: body's, 0 after --help or q, 2 for a usage error, 1 for any other
  /// error. Under on_ranks(), an error that is not a usage error is handed to `fail` (which ends the
  /// whole job: one rank alone must not leave the others waiting) instead of being printed here.
  int run(int argc, char** argv, const std::function<int()>& body,
          const std::function<void(const std::string&)>& fail = {}) {
    if (int status = parse(argc, argv); status >= 0) return status;
    try {
      std::cout << "\n=== " << title_ << " ===\n"
                << (auto_ ? "(--auto: running every beat)\n" : "(Enter: next beat, q: quit)\n");
      if (start_ > 1) std::cout << "(--beat " << start_ << ": running beats 1-" << start_ - 1 << " without showing them)\n";
      std::cout << std::flush;
      const int status = body();
      show();
      if (status == 0 && count_ > 0 && count_ != total_)
        throw std::logic_error("the lesson declared " + std::to_string(total_) + " beats but ran " + std::to_string(count_));
      return status;
    } catch (const Quit&) {
      show();
      std::cout << "(quit at beat " << count_ << "/" << total_ << ")\n" << std::flush;
      return 0;
    } catch (const UsageError& e) {
      show();
      error(e.what());
      return 2;
    } catch (const std::exception& e) {
      show();
      if (fail) fail(e.what());  // does not return
      error(e.what());
      return 1;
    }
  }

  /// Starts the next beat: waits for Enter (from the second beat shown on), then prints the heading,
  /// "beat k/total" and the idea in a sentence or two.
  void beat(const std::string& heading, const std::string& idea) {
    if (count_ >= total_)
      throw std::logic_error("beat " + std::to_string(count_ + 1) + " is beyond the " + std::to_string(total_) +
                             " the lesson declared");
    if (count_ >= start_) pause();
    ++count_;
    if (count_ < start_) hide();
    else show();
    std::cout << "\n--- beat " << count_ << "/" << total_ << ": " << heading << " ---\n" << idea << "\n\n" << std::flush;
  }

  bool is_auto() const { return auto_; }
  bool quick() const { return quick_; }
  /// True if the option `name` ("--prompt") was on the command line (not just its default).
  bool given(const std::string& name) const { return parser_.given(name); }

 private:
  struct Quit {};

  /// Returns -1 to go on, else the exit status (0 for --help, 2 for a usage error).
  int parse(int argc, char** argv) {
    std::string program = argc > 0 ? argv[0] : "lesson";
    program = program.substr(program.find_last_of('/') + 1);
    parser_.program_name(program);
    std::string message;
    switch (parser_.parse_quietly(argc, argv, message)) {
      case minitorch::cli::Parser::Outcome::help:
        if (rank_ == 0) parser_.print_help();
        return 0;
      case minitorch::cli::Parser::Outcome::usage_error:
        error(message, program);
        return 2;
      case minitorch::cli::Parser::Outcome::run:
        break;
    }
    if (const std::vector<std::string> rest = parser_.remaining(); !rest.empty()) {
      const std::string& arg = rest.front();
      if (arg.rfind('-', 0) == 0) error("unknown option '" + arg.substr(0, arg.find('=')) + "'", program);
      else error("unexpected argument '" + arg + "'", program);
      return 2;
    }
    if (start_ > total_) {
      error("--beat " + std::to_string(start_) + " is out of range: this lesson has beats 1.." + std::to_string(total_),
            program);
      return 2;
    }
    for (auto& apply : quick_values_)
      if (quick_) apply();
    return -1;
  }

  /// One "error: ..." line on stderr (rank 0 only); with `program`, the options it takes.
  void error(const std::string& what, const std::string& program = "") const {
    if (rank_ != 0) return;
    std::cout << std::flush;
    std::fflush(stdout);
    std::cerr << "error: " << what;
    if (!program.empty()) {
      std::cerr << " (" << program << " takes";
      for (std::size_t i = 0; i < names_.size(); ++i) std::cerr << (i ? ", " : " ") << names_[i];
      std::cerr << ", --help)";
    }
    std::cerr << "\n" << std::flush;
  }

  /// At a prompt: Enter goes on, q or the end of input quits. Under mpirun rank 0 reads and shares.
  void pause() {
    if (auto_) return;
    int quit = 0;
    if (rank_ == 0) {
      std::cout << "\n[beat " << count_ << "/" << total_ << " done. Enter: next, q: quit] " << std::flush;
      std::string line;
      if (!std::getline(std::cin, line)) quit = 1, std::cout << "(end of input)\n";
      else if (line == "q" || line == "quit") quit = 1;
    }
    if (share_) quit = share_(quit);
    if (quit) throw Quit{};
  }

  /// --beat N: beats before N run with standard output going to /dev/null.
  void hide() {
    if (saved_stdout_ >= 0) return;
    std::cout.flush();
    std::fflush(stdout);
    const int null = ::open("/dev/null", O_WRONLY);
    if (null < 0) return;  // cannot hide: the beats just print
    saved_stdout_ = ::dup(STDOUT_FILENO);
    ::dup2(null, STDOUT_FILENO);
    ::close(null);
  }
  void show() {
    if (saved_stdout_ < 0) return;
    std::cout.flush();
    std::fflush(stdout);
    ::dup2(saved_stdout_, STDOUT_FILENO);
    ::close(saved_stdout_);
    saved_stdout_ = -1;
  }

  /// Decimal digits only, >= 1: CLI11 2.1 would read "010" as octal and saturate huge values.
  template <typename Int>
  static minitorch::cli::Check positive() {
    return minitorch::cli::Check(
        [](const std::string& s) -> std::string {
          Int v{};
          auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
          if (ec == std::errc::result_out_of_range) return "'" + s + "' is too large";
          if (ec != std::errc() || end != s.data() + s.size() || v < 1) return "needs a positive integer, got '" + s + "'";
          return "";
        },
        "");  // no description: --help shows "--steps N"
  }

  std::string title_;
  int total_;
  minitorch::cli::Parser parser_;
  std::vector<std::string> names_;                    // the options, for the error message
  std::vector<std::function<void()>> quick_values_;  // applied after parsing when --quick
  bool auto_ = false, quick_ = false;
  int start_ = 1;          // --beat
  int count_ = 0;          // beats started
  int rank_ = 0;           // under mpirun; only rank 0 prints errors and reads the terminal
  std::function<int(int)> share_;
  int saved_stdout_ = -1;  // the real standard output while a --beat jump hides the beats before it
};

/// The main() of a lesson on one process: `options` declares its options on `beats`; `body` runs the beats.
inline int main_on_one_process(int argc, char** argv, const std::string& title, int total,
                               const std::function<void(Beats&)>& options, const std::function<int(Beats&)>& body) {
  Beats beats(title, total);
  options(beats);
  return beats.run(argc, argv, [&] { return body(beats); });
}

}  // namespace lesson

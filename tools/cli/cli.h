#pragma once
// The command line of every program (the tools, the lessons, the benchmarks): CLI11 behind a small interface.
//
//   cli::Parser parser("minitorch-eval: mean cross-entropy of a checkpoint on a text");
//   parser.option("--checkpoint", checkpoint, "safetensors checkpoint")->required();
//   parser.option("--batch", batch, "windows per forward pass")->check(cli::decimal<std::int64_t>(1));
//   if (int status = parser.parse(argc, argv); status >= 0) return status;  // --help: 0, a usage error: 2
//
// Why not CLI11's App in each program: Debian's CLI11 (2.1) is header-only, and its parsing code was
// compiled again into every program that used it: 10-15 s a program at -O3, 30-50 s under the sanitizers,
// for 19 programs (docs/build.md, "Where CI's time goes"). Here it is compiled once, in tools/cli/cli.cpp;
// the options, the checks, --help and the error messages are CLI11's own.
#include <charconv>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace CLI {
class App;
class Option;
class Validator;
}  // namespace CLI

namespace minitorch::cli {

/// A check on an option's text, run as it is parsed: a failed check is a usage error.
class Check {
 public:
  /// `test` returns "" to accept the text, else the reason; `description` is shown in --help (may be empty).
  Check(std::function<std::string(const std::string&)> test, std::string description);
  ~Check();
  Check(const Check&);
  Check& operator=(const Check&);
  /// Runs the check outside a command line: "" if `text` passes, else the reason.
  std::string operator()(const std::string& text) const;

 private:
  friend class Option;
  std::shared_ptr<const CLI::Validator> validator_;
};

/// CLI11's PositiveNumber, NonNegativeNumber, IsMember and Range; the number checks refuse "nan" and "inf"
/// (CLI11 2.1 passes NaN: every comparison with it is false).
Check positive_number();
Check non_negative_number();
Check one_of(std::vector<std::string> choices);
Check range(double min, double max);

/// An integer option's check: decimal digits only, within [min, the type's max]. CLI11 2.1 reads integers
/// with strtoll/strtoull, which saturate (--steps with 20 digits became INT64_MAX silently), wrap "-1" for
/// unsigned types and read "010" as octal.
template <typename Int>
Check decimal(Int min = std::numeric_limits<Int>::min()) {
  return Check(
      [min](const std::string& s) -> std::string {
        Int v{};
        const char* end = s.data() + s.size();
        auto [p, ec] = std::from_chars(s.data(), end, v);
        if (ec == std::errc::result_out_of_range)
          return "'" + s + "' is out of range (at most " + std::to_string(std::numeric_limits<Int>::max()) + ")";
        if (ec != std::errc() || p != end) return "'" + s + "' is not a decimal integer";
        if (v < min) return "must be at least " + std::to_string(min) + ", got " + s;
        return "";
      },
      "INTEGER >= " + std::to_string(min));
}

/// One declared option; the handle stays valid while its Parser lives.
class Option {
 public:
  Option* required();
  Option* type_name(const std::string& name);  ///< the word --help shows for the value ("N", "FILE")
  Option* check(const Check& check);
  Option* show_default();  ///< --help shows the variable's value before parsing
  /// True if the command line gave this option (not just its default).
  bool given() const;

 private:
  friend class Parser;
  explicit Option(CLI::Option* opt) : opt_(opt) {}
  CLI::Option* opt_;
};

/// The options of one program. `names` is CLI11's: "--steps", "-H,--hostfile", or "DIR" (positional).
class Parser {
 public:
  explicit Parser(const std::string& description);
  ~Parser();
  Parser(const Parser&) = delete;
  Parser& operator=(const Parser&) = delete;

  Option* option(const std::string& names, std::string& value, const std::string& help);
  Option* option(const std::string& names, int& value, const std::string& help);
  Option* option(const std::string& names, long& value, const std::string& help);
  Option* option(const std::string& names, long long& value, const std::string& help);
  Option* option(const std::string& names, unsigned long& value, const std::string& help);
  Option* option(const std::string& names, float& value, const std::string& help);
  Option* option(const std::string& names, double& value, const std::string& help);
  Option* option(const std::string& names, std::optional<std::string>& value, const std::string& help);
  Option* option(const std::string& names, std::optional<int>& value, const std::string& help);
  Option* option(const std::string& names, std::optional<long>& value, const std::string& help);
  Option* option(const std::string& names, std::optional<double>& value, const std::string& help);
  Option* flag(const std::string& names, bool& value, const std::string& help);

  /// The help flag's names and text (default "-h,--help").
  void help_flag(const std::string& names, const std::string& help);
  /// Unknown arguments are kept for remaining() instead of being an error.
  void allow_extras();
  /// The first argument that is not an option, and everything after it, is kept for remaining().
  void prefix_command();
  /// The program's name in --help's usage line.
  void program_name(const std::string& name);

  /// Parses the command line as CLI11 does for a program: -1 to go on; 0 after --help (printed on stdout);
  /// 2 after a usage error (CLI11's message on stderr).
  int parse(int argc, char** argv);

  enum class Outcome { run, help, usage_error };
  /// The same, printing nothing: on a usage error `error` holds CLI11's message.
  Outcome parse_quietly(int argc, char** argv, std::string& error);
  /// --help's text on stdout.
  void print_help() const;

  std::vector<std::string> remaining() const;
  /// True if the option named `name` ("--prompt") was on the command line.
  bool given(const std::string& name) const;

 private:
  Option* keep(CLI::Option* opt);
  std::unique_ptr<CLI::App> app_;
  std::vector<std::unique_ptr<Option>> options_;
};

}  // namespace minitorch::cli

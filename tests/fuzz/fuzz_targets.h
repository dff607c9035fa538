#pragma once
// The fuzz targets: one per parser that reads bytes from outside (a config, a safetensors file, a model
// checkpoint, an optimizer state, a checkpoint manifest, a text corpus). A target feeds one input to the
// parser's public entry point and returns how it ended: accepted, or rejected with the parser's
// documented error. Anything else is a finding and leaves the target as a FuzzFinding (an error of
// another type, an error with an empty or runaway message, a failed round trip) or as a crash or hang.
//
// Two drivers run the same targets on the same seeds:
// - the deterministic mutation test in ctest (test_fuzz_parsers.cpp, build/bin/test-fuzz), built by the
//   normal build and by `make sanitize`;
// - libFuzzer under clang (`make fuzz`, tests/fuzz/libfuzzer/<target>.cpp -> build-fuzz/bin/fuzz-<target>).
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace mt_fuzz {

/// A broken contract that did not crash: the driver reports it with the input that caused it.
class FuzzFinding : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// How a parser ended on one input, when that is allowed.
struct Outcome {
  bool accepted = false;
  std::string error;  ///< the documented error's message when rejected
};

/// Which structure-aware mutations fit a target's inputs (fuzz_mutator.h).
enum class InputKind { json, safetensors, text };

struct Target {
  const char* name;        ///< "config", ...: names the test, the libFuzzer binary and the finding files
  const char* contract;    ///< the entry point and the error it documents, for the reports
  InputKind kind;
  Outcome (*run)(std::string_view input);
  /// Small valid inputs, written by the code itself (save_checkpoint, ...) or read from configs/;
  /// each must be accepted.
  std::vector<std::string> (*seeds)();
};

/// Every target, in a fixed order.
const std::vector<Target>& targets();
/// The target called `name`; throws std::invalid_argument listing the names.
const Target& target(std::string_view name);

/// The longest error message a parser may give: a message that quotes a whole hostile input is not
/// one clear error. Real messages are a few hundred characters.
constexpr std::size_t kMaxErrorMessage = 1000;

/// The type of `e` as the source spells it ("std::out_of_range"), for reports.
std::string type_name(const std::exception& e);

/// The body of every LLVMFuzzerTestOneInput: runs `name` on the bytes; a finding or an escaping
/// exception is printed with its type and message and ends the process with abort(), which libFuzzer
/// reports as a crash and saves the input.
int libfuzzer_one_input(std::string_view name, const std::uint8_t* data, std::size_t size);

}  // namespace mt_fuzz

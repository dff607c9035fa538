#pragma once
/// \file not_implemented.h
/// What a lab's stub throws (docs/labs.md): the reference tree marks the code a student writes between
/// `// BEGIN SOLUTION L<lesson>.<n>` and `// END SOLUTION`; `make labs` replaces each block with
///
/// \code
///   throw minitorch::NotImplemented("L05.2: ring all-reduce — see lessons/05_ddp/README.md");
/// \endcode
///
/// so the student tree compiles, and every test of that task fails with the task's id.
#include <stdexcept>
#include <string>

namespace minitorch {

class NotImplemented : public std::logic_error {
 public:
  explicit NotImplemented(const std::string& what) : std::logic_error("not implemented: " + what) {}
};

}  // namespace minitorch

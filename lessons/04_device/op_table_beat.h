#pragma once
// Lesson 04, beat 5: the op table (tests/backend_ops/op_table.h) on every backend this machine has — how a new
// backend is proven: every kernel of minitorch/backend_ops.def, on odd, broadcast and strided shapes, in f32,
// bf16 and f16, forward and backward, against a reference.
#include <string>
#include <vector>

namespace lesson04 {

/// One backend's run of the table.
struct BackendColumn {
  std::string name;       ///< "cpu", "sim", "cuda fast", "cuda naive"
  std::string reference;  ///< what it is held to
  int cases = 0, passed = 0, not_implemented = 0;
  std::vector<std::string> failures;  ///< "case: why", every failed or not implemented case
};

/// Runs the whole table on cpu and sim (and cuda, fast and naive kernels, where a GPU is usable), prints one
/// row per kernel with its cases passed on each backend, and returns the columns.
std::vector<BackendColumn> op_table_on_every_backend();

}  // namespace lesson04

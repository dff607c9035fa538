#pragma once
/// \file recording_backend.h
/// A backend that hands every kernel call on to another backend and notes which kernels were called: run
/// under the whole op table, it proves that the table has a case for every kernel of
/// minitorch/backend_ops.def (a kernel added to the list without a case is caught, not passed over).
#include <set>
#include <string>
#include <vector>

#include "reference_backend.h"  // the names backend_ops.def spells (Tensor, ops::...) in this namespace

namespace backend_ops {

class RecordingBackend : public minitorch::Backend {
 public:
  explicit RecordingBackend(minitorch::Backend& kernels) : kernels_(kernels) {}
  const char* name() const override { return kernels_.name(); }

#define MINITORCH_BACKEND_OP(result, name, parameters, arguments) \
  result name parameters override {                                \
    called_.insert(#name);                                         \
    return kernels_.name arguments;                                \
  }
#include "minitorch/backend_ops.def"

  /// The kernels called so far.
  const std::set<std::string>& called() const { return called_; }
  /// The kernels of backend_ops.def that no call has reached yet, in the list's order.
  std::vector<std::string> never_called() const {
    std::vector<std::string> missing;
#define MINITORCH_BACKEND_OP(result, name, parameters, arguments) \
  if (!called_.count(#name)) missing.push_back(#name);
#include "minitorch/backend_ops.def"
    return missing;
  }

 private:
  minitorch::Backend& kernels_;
  std::set<std::string> called_;
};

}  // namespace backend_ops

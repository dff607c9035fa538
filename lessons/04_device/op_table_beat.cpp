// Lesson 04, beat 5: the op table on every backend present (op_table_beat.h).
#include "op_table_beat.h"

#include <cstdio>
#include <map>
#include <set>

#include "minitorch/cpu_backend.h"
#include "minitorch/device.h"
#include "tests/backend_ops/op_table.h"
#include "tests/backend_ops/reference_backend.h"
#if MINITORCH_WITH_CUDA
#include "cuda/cuda.h"
#endif

namespace lesson04 {

using minitorch::Backend;
using minitorch::Device;

namespace {
// One backend under test: its kernels, the device its inputs are made on, what it is compared with.
struct Under {
  std::string name;
  Backend* kernels;
  Device device;
  Backend* reference;
  std::string reference_name;
  bool naive_cuda = false;  // cuda: the teaching kernels (cuda::set_naive_kernels)
};

void use_naive_cuda(bool on) {
#if MINITORCH_WITH_CUDA
  minitorch::cuda::set_naive_kernels(on);
#else
  (void)on;
#endif
}
}  // namespace

std::vector<BackendColumn> op_table_on_every_backend() {
  static backend_ops::ReferenceBackend reference;  // every element in double, read through the strides
  std::vector<Under> backends = {
      {"cpu", &minitorch::cpu_backend(), Device::cpu(), &reference, "the naive reference", false},
      {"sim", &minitorch::backend(Device::sim()), Device::sim(), &reference, "the naive reference", false}};
  std::string no_gpu = "no CUDA layer in this build";
#if MINITORCH_WITH_CUDA
  if (std::string why; minitorch::cuda::init(&why)) {
    no_gpu.clear();
    Backend* gpu = &minitorch::backend(Device::cuda(0));
    backends.push_back({"cuda fast", gpu, Device::cuda(0), &minitorch::cpu_backend(), "the CPU kernels", false});
    backends.push_back({"cuda naive", gpu, Device::cuda(0), &minitorch::cpu_backend(), "the CPU kernels", true});
  } else {
    no_gpu = "no usable GPU (" + why + ")";
  }
#endif

  const std::vector<backend_ops::OpCase> table = backend_ops::op_table();
  std::vector<BackendColumn> columns;
  std::map<std::string, std::vector<std::pair<int, int>>> per_kernel;  // kernel -> (passed, cases) per backend
  for (std::size_t b = 0; b < backends.size(); ++b) {
    const Under& u = backends[b];
    BackendColumn col{u.name, u.reference_name, 0, 0, 0, {}};
    use_naive_cuda(u.naive_cuda);
    for (std::size_t i = 0; i < table.size(); ++i) {
      const backend_ops::OpCase& c = table[i];
      const backend_ops::CaseOutcome out = backend_ops::run_case(c, backend_ops::case_seed(i), *u.kernels, u.device, *u.reference);
      ++col.cases;
      col.passed += out.passed ? 1 : 0;
      col.not_implemented += out.not_implemented ? 1 : 0;
      if (!out.passed) {  // NotImplemented's own message already begins "not implemented: "
        const bool said = out.message.rfind("not implemented", 0) == 0;
        col.failures.push_back(c.name + ": " + (out.not_implemented && !said ? "not implemented: " : "") + out.message);
      }
      for (const std::string& k : out.kernels) {
        auto& counts = per_kernel[k];
        counts.resize(backends.size());
        counts[b].first += out.passed ? 1 : 0;
        counts[b].second += 1;
      }
    }
    use_naive_cuda(false);
    columns.push_back(std::move(col));
  }

  std::printf("%-24s", "kernel (backend_ops.def)");
  for (const Under& u : backends) std::printf(" %11s", u.name.c_str());
  std::printf("\n");
  for (const auto& [kernel, counts] : per_kernel) {
    std::printf("%-24s", kernel.c_str());
    for (const auto& [passed, cases] : counts) {
      const std::string cell = std::to_string(passed) + "/" + std::to_string(cases);
      std::printf(" %11s", cell.c_str());
    }
    std::printf("\n");
  }
  std::printf("%zu kernels, %zu cases (a case counts under every kernel it calls)\n", per_kernel.size(), table.size());
  for (const BackendColumn& col : columns) {
    std::printf("%-10s against %s: %d of %d cases passed", col.name.c_str(), col.reference.c_str(), col.passed, col.cases);
    if (col.not_implemented) std::printf(", %d not implemented", col.not_implemented);
    std::printf("\n");
    for (std::size_t i = 0; i < col.failures.size() && i < 5; ++i) std::printf("    %s\n", col.failures[i].c_str());
  }
  if (!no_gpu.empty()) std::printf("cuda: %s; on a GPU machine the same table runs its fast and naive kernels.\n", no_gpu.c_str());
  return columns;
}

}  // namespace lesson04

// test-backend_ops: runs the op table (op_table.h) on one backend, each case a GoogleTest test
// (BackendOps.<case>), and ends with one summary line.
//   test-backend_ops [--backend=cpu|sim|cuda] [GoogleTest flags]
// cpu (the default): the CPU kernels against the naive reference. cuda: the CUDA kernels, fast and then
// naive (cuda::set_naive_kernels), against the CPU kernels; no usable device is one error, exit 2.
// A kernel that throws minitorch::NotImplemented is reported by case name (the test is skipped saying so,
// and the summary lists it), never passed over in silence. A run of the whole table also fails if a kernel
// of minitorch/backend_ops.def has no case (recording_backend.h).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "minitorch/cpu_backend.h"
#include "minitorch/not_implemented.h"
#include "op_table.h"
#include "recording_backend.h"
#include "reference_backend.h"
#if MINITORCH_WITH_CUDA
#include "cuda/cuda.h"
#endif

namespace {
using namespace backend_ops;
using minitorch::Device;

struct BackendRun {
  std::string backend = "cpu";
  minitorch::Backend* tested = nullptr;
  minitorch::Backend* reference = nullptr;
  Device device = Device::cpu();
  std::vector<std::string> variants{"default"};  // cuda: "fast", "naive"
  std::vector<std::string> not_implemented;       // "case (variant): message"
  std::size_t cases_run = 0;                      // GoogleTest counts a test it did not run as passed
};

void use_variant(const std::string& variant) {
#if MINITORCH_WITH_CUDA
  if (variant == "fast" || variant == "naive") minitorch::cuda::set_naive_kernels(variant == "naive");
#else
  (void)variant;
#endif
}

// Result i of the tested backend against result i of the reference (op_table.h's compare_result).
::testing::AssertionResult same_result(const Tensor& got, const Tensor& want, Tol tol) {
  const std::string diff = compare_result(got, want, tol);
  if (!diff.empty()) return ::testing::AssertionFailure() << diff;
  return ::testing::AssertionSuccess();
}

class CaseTest : public ::testing::Test {
 public:
  CaseTest(const OpCase& c, std::uint64_t seed, BackendRun& setup) : c_(c), seed_(seed), setup_(setup) {}

  void TestBody() override {
    ++setup_.cases_run;
    for (const std::string& variant : setup_.variants) {
      SCOPED_TRACE(setup_.backend + " " + variant);
      use_variant(variant);
      const auto in_tested = make_inputs(c_, seed_, setup_.device);
      const auto in_ref = make_inputs(c_, seed_, Device::cpu());
      if (c_.throws) {
        EXPECT_THROW(c_.run(*setup_.reference, in_ref), std::invalid_argument) << "the reference must refuse this input";
        EXPECT_THROW(c_.run(*setup_.tested, in_tested), std::invalid_argument) << setup_.backend << " must refuse it too";
        continue;
      }
      std::vector<Tensor> got;
      try {
        got = c_.run(*setup_.tested, in_tested);
      } catch (const minitorch::NotImplemented& e) {
        setup_.not_implemented.push_back(c_.name + " (" + variant + "): " + e.what());
        use_variant("fast");
        GTEST_SKIP() << "NOT IMPLEMENTED on " << setup_.backend << ": " << c_.name << ": " << e.what();
      }
      const auto want = c_.run(*setup_.reference, in_ref);
      ASSERT_EQ(got.size(), want.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        EXPECT_TRUE(same_result(got[i], want[i], c_.tol)) << "result " << i;
        // A kernel's output lives in its inputs' pool (the one-number results the table wraps itself aside).
        if (got[i].defined() && got[i].numel() > 1) {
          EXPECT_EQ(got[i].device().str(), setup_.device.str()) << "result " << i;
        }
      }
    }
    use_variant("fast");
  }

 private:
  const OpCase& c_;
  std::uint64_t seed_;
  BackendRun& setup_;
};

}  // namespace

int main(int argc, char** argv) {
  BackendRun setup;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--backend=", 10) == 0)
      setup.backend = argv[i] + 10;
    else
      args.push_back(argv[i]);
  }
  int n = static_cast<int>(args.size());
  args.push_back(nullptr);  // argv[argc] == nullptr: InitGoogleTest moves the terminator when it removes a flag
  ::testing::InitGoogleTest(&n, args.data());

  backend_ops::ReferenceBackend reference;
  if (setup.backend == "cpu") {
    setup.tested = &minitorch::cpu_backend();
    setup.reference = &reference;
  } else if (setup.backend == "sim") {  // the CPU kernels on the simulated accelerator's memory
    setup.device = Device::sim();
    setup.tested = &minitorch::backend(setup.device);
    setup.reference = &reference;
  } else if (setup.backend == "cuda") {
#if MINITORCH_WITH_CUDA
    std::string why;
    if (!minitorch::cuda::init(&why)) {
      std::fprintf(stderr, "test-backend_ops: --backend=cuda: no usable CUDA device: %s\n", why.c_str());
      return 2;
    }
    setup.device = Device::cuda(0);
    setup.tested = &minitorch::backend(setup.device);
    setup.reference = &minitorch::cpu_backend();
    setup.variants = {"fast", "naive"};
#else
    std::fprintf(stderr, "test-backend_ops: --backend=cuda: this build has no CUDA layer (nvcc not found, or -DMINITORCH_CUDA=OFF)\n");
    return 2;
#endif
  } else {
    std::fprintf(stderr, "test-backend_ops: --backend=%s: unknown backend; use --backend=cpu, --backend=sim or --backend=cuda\n",
                 setup.backend.c_str());
    return 2;
  }

  // The cases call the tested kernels through a recorder, which then names any kernel no case reached.
  static RecordingBackend recorder(*setup.tested);
  setup.tested = &recorder;
  static const std::vector<OpCase> table = op_table();  // outlives every registered test
  for (std::size_t i = 0; i < table.size(); ++i) {
    const OpCase& c = table[i];
    const std::uint64_t s = case_seed(i);
    ::testing::RegisterTest("BackendOps", c.name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                            [&c, s, &setup]() -> ::testing::Test* { return new CaseTest(c, s, setup); });
  }
  const int status = RUN_ALL_TESTS();
  const auto* unit = ::testing::UnitTest::GetInstance();
  std::printf("backend-ops: %s against the %s: %d cases run, %d passed, %d failed, %zu not implemented\n",
              setup.backend.c_str(), setup.reference->name(), unit->test_to_run_count(), unit->successful_test_count(),
              unit->failed_test_count(), setup.not_implemented.size());
  for (const std::string& s : setup.not_implemented) std::printf("  not implemented on %s: %s\n", setup.backend.c_str(), s.c_str());
  // Only a run of the whole table can tell (ctest runs each case alone, and listing the tests runs none).
  if (setup.cases_run == table.size()) {
    const std::vector<std::string> missing = recorder.never_called();
    for (const std::string& op : missing)
      std::printf("backend-ops: no case of the table calls the kernel %s (minitorch/backend_ops.def)\n", op.c_str());
    if (!missing.empty()) return 1;
  }
  return status;
}

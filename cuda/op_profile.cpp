// The timing backend behind OpProfile (cuda/op_profile.h): every op of backend_ops.def runs the CUDA
// kernel between two recorded events; collect() reads the elapsed times once the device reaches them.
#include "cuda/op_profile.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "cuda/backend.h"
#include "cuda/check.h"

namespace minitorch::cuda {

class OpProfile::Impl : public Backend {
 public:
  const char* name() const override { return "cuda"; }

  struct Pending {
    const char* op;
    cudaEvent_t start, stop;
    double host_ms;
  };
  std::vector<cudaEvent_t> free_events;
  std::vector<Pending> pending;
  std::map<std::string, Row> totals;

  cudaEvent_t take_event() {
    if (free_events.empty()) {
      cudaEvent_t e = nullptr;
      MT_CUDA_CHECK(cudaEventCreate(&e));
      return e;
    }
    cudaEvent_t e = free_events.back();
    free_events.pop_back();
    return e;
  }

  // Records the op's start event on construction and its stop event when the call returns.
  struct Timed {
    Impl& self;
    Pending p;
    std::chrono::steady_clock::time_point t0;
    Timed(Impl& s, const char* op) : self(s), p{op, s.take_event(), s.take_event(), 0}, t0(std::chrono::steady_clock::now()) {
      MT_CUDA_CHECK(cudaEventRecord(p.start));
    }
    ~Timed() {
      (void)cudaEventRecord(p.stop);  // no throw from a destructor; collect() sees a failed event
      p.host_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      self.pending.push_back(p);
    }
  };

#define MINITORCH_BACKEND_OP(result, name, parameters, arguments) \
  result name parameters override {                               \
    Timed timed(*this, #name);                                     \
    return cuda_backend().name arguments;                          \
  }
#include "minitorch/backend_ops.def"
};

OpProfile::OpProfile() : impl_(std::make_unique<Impl>()) { register_backend(DeviceType::cuda, impl_.get()); }

OpProfile::~OpProfile() {
  register_backend(DeviceType::cuda, &cuda_backend());
  (void)cudaDeviceSynchronize();
  for (auto& p : impl_->pending) {
    (void)cudaEventDestroy(p.start);
    (void)cudaEventDestroy(p.stop);
  }
  for (cudaEvent_t e : impl_->free_events) (void)cudaEventDestroy(e);
}

void OpProfile::collect() {
  MT_CUDA_CHECK(cudaDeviceSynchronize());
  for (auto& p : impl_->pending) {
    float ms = 0;
    MT_CUDA_CHECK(cudaEventElapsedTime(&ms, p.start, p.stop));
    Row& r = impl_->totals[p.op];
    r.op = p.op;
    r.calls += 1;
    r.gpu_ms += ms;
    r.host_ms += p.host_ms;
    impl_->free_events.push_back(p.start);
    impl_->free_events.push_back(p.stop);
  }
  impl_->pending.clear();
}

std::vector<OpProfile::Row> OpProfile::rows() const {
  std::vector<Row> out;
  for (const auto& [name, r] : impl_->totals) out.push_back(r);
  std::sort(out.begin(), out.end(), [](const Row& a, const Row& b) { return a.gpu_ms > b.gpu_ms; });
  return out;
}

void OpProfile::print(std::FILE* out, int steps) const {
  const std::vector<Row> rs = rows();
  double gpu = 0, host = 0;
  for (const Row& r : rs) {
    gpu += r.gpu_ms;
    host += r.host_ms;
  }
  const double n = std::max(steps, 1);
  std::fprintf(out, "  %-24s %8s %10s %7s %10s\n", "op (per step)", "calls", "GPU ms", "share", "host ms");
  for (const Row& r : rs)
    std::fprintf(out, "  %-24s %8.0f %10.3f %6.1f%% %10.3f\n", r.op.c_str(), static_cast<double>(r.calls) / n,
                 r.gpu_ms / n, gpu > 0 ? 100 * r.gpu_ms / gpu : 0.0, r.host_ms / n);
  std::fprintf(out, "  %-24s %8s %10.3f %7s %10.3f\n", "all ops", "", gpu / n, "", host / n);
}

}  // namespace minitorch::cuda

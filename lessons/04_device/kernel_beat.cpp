// The beat "one kernel from naive to fast" (kernel_beat.h). The CPU part needs only row_softmax.h; the GPU
// part is compiled with the CUDA layer only, and without one the beat prints the kernels' source instead.
#include "lessons/04_device/kernel_beat.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <set>
#include <stdexcept>

#include "lessons/04_device/row_softmax.h"

#if MINITORCH_WITH_CUDA
#include "cuda/cuda.h"
#include "minitorch/ops.h"
#include "minitorch/tensor.h"
#endif

namespace lesson04 {

namespace {

constexpr float kLogitStd = 2.f;  // logits ~ N(0, 2²): attention-score-like spread, no underflow

// rows * cols logits from a fixed seed: every run of the lesson shows the same row.   -> (rows * cols)
std::vector<float> random_logits(std::int64_t rows, std::int64_t cols) {
  std::mt19937 gen(4);
  std::normal_distribution<float> normal(0.f, kLogitStd);
  std::vector<float> x(static_cast<std::size_t>(rows * cols));
  for (float& v : x) v = normal(gen);
  return x;
}

// The median of `reps` timings of run(), in ms; before() runs untimed ahead of each.
double median_ms(int reps, const std::function<void()>& run, const std::function<void()>& before = {}) {
  std::vector<double> ms;
  for (int k = 0; k < reps; ++k) {
    if (before) before();
    const auto t0 = std::chrono::steady_clock::now();
    run();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// The last-level cache this core sees, in bytes: Linux's sysfs (glibc's sysconf may count every L3 of
// the package), else 32 MiB.
std::size_t l3_bytes() {
  std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index3/size");  // "32768K"
  long long kib = 0;
  if (in >> kib && kib > 0) return static_cast<std::size_t>(kib) << 10;
  return std::size_t{32} << 20;
}

// Two buffers larger than the last-level cache (twice it, 32 to 128 MiB each): copying one into the other
// measures what this core streams from memory, and pushes the kernels' x and y out of the caches between
// their timed runs.
struct StreamBuffers {
  std::vector<float> src, dst;
  StreamBuffers() {
    const std::size_t bytes = std::clamp(2 * l3_bytes(), std::size_t{32} << 20, std::size_t{128} << 20);
    src.assign(bytes / sizeof(float), 1.f);  // written once: the pages exist before any timing
    dst.assign(bytes / sizeof(float), 0.f);
  }
  void copy() { copy_packets(src.data(), dst.data(), static_cast<std::int64_t>(src.size())); }
  double mib() const { return static_cast<double>(src.size() * sizeof(float)) / (1 << 20); }
};

void print_row(const KernelTime& k) {
  std::printf("  %-34s %9.3f %8.2f %8.0f%% %15.1e\n", k.name.c_str(), k.ms, k.gb_per_s, 100.0 * k.of_bound,
              k.max_rel_error);
}

// Throws if a version is wrong: the table must never show a fast wrong kernel as fine.
void check_error(const KernelTime& k, double tolerance) {
  if (!(k.max_rel_error <= tolerance))  // NaN fails too
    throw std::runtime_error(k.name + ": max relative error " + std::to_string(k.max_rel_error) +
                             " against the double-precision reference exceeds the tolerance " +
                             std::to_string(tolerance));
}

// ---- the kernels' source, for a machine without a GPU ----

// The lines of `name`'s definition: from the first line at column 0 that names it before a '(' to the
// brace that closes its body, with the comment lines right above it. Empty if absent.   lines -> text
std::string function_source(const std::vector<std::string>& lines, const std::string& name) {
  auto is_ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (std::size_t first = 0; first < lines.size(); ++first) {
    const std::string& line = lines[first];
    if (line.empty() || std::isspace(static_cast<unsigned char>(line[0])) || line.rfind("//", 0) == 0) continue;
    const std::size_t at = line.find(name + "(");
    if (at == std::string::npos || (at > 0 && is_ident(line[at - 1]))) continue;
    int depth = 0;
    bool opened = false;
    for (std::size_t last = first; last < lines.size(); ++last) {
      const std::string code = lines[last].substr(0, lines[last].find("//"));
      for (char c : code) {
        if (c == '{') depth++, opened = true;
        if (c == '}') depth--;
      }
      if (!opened && code.find(';') != std::string::npos) break;  // a declaration, not the definition
      if (opened && depth == 0) {
        std::size_t top = first;
        while (top > 0 && lines[top - 1].rfind("//", 0) == 0) --top;
        std::string text;
        for (std::size_t i = top; i <= last; ++i) text += "    " + lines[i] + "\n";
        return text;
      }
    }
  }
  return "";
}

// Prints `names` from the repository's `file` (relative to the repository root, where the lesson runs,
// else under MINITORCH_SOURCE_DIR).
void print_kernels(const std::string& file, const std::vector<std::string>& names) {
  std::vector<std::string> where = {file};
#ifdef MINITORCH_SOURCE_DIR
  where.push_back(std::string(MINITORCH_SOURCE_DIR) + "/" + file);
#endif
  for (const std::string& path : where) {
    std::ifstream in(path);
    if (!in) continue;
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    for (const std::string& name : names) {
      const std::string text = function_source(lines, name);
      if (text.empty()) std::printf("\n  %s: no definition of %s found (read the file)\n", file.c_str(), name.c_str());
      else std::printf("\n  %s, %s:\n%s", file.c_str(), name.c_str(), text.c_str());
    }
    return;
  }
  std::printf("\n  (%s is not readable from here: run the lesson from the repository root, or read it there)\n",
              file.c_str());
}

#if MINITORCH_WITH_CUDA
// cuda/softmax.cu's two kernels through the backend (ops::softmax on a cuda tensor), timed against the
// device's own copy bandwidth. Returns false (and the reason in t.gpu_note) if no GPU answers.
bool gpu_versions(KernelTable& t, const std::vector<float>& x, const std::vector<double>& ref, int reps) {
  using minitorch::Device;
  using minitorch::Tensor;
  std::string why;
  if (!minitorch::cuda::init(&why)) {
    t.gpu_note = why;
    return false;
  }
  struct FastAgain {  // whatever happens, the backend goes back to the fast kernels
    ~FastAgain() { minitorch::cuda::set_naive_kernels(false); }
  } fast_again;
  const Tensor xd = Tensor::from_vector(x, {t.rows, t.cols}).to(Device::cuda(0));
  // No synchronize call: copying one element of the result to the host waits for every kernel before it.
  auto wait_for = [](const Tensor& y) { (void)y.view({-1}).narrow(0, y.numel() - 1, 1).to(Device::cpu()).item(); };
  // A launch and a wait cost microseconds, as long as a small kernel runs: time 20 launches per wait.
  constexpr int kBatch = 20;
  auto time_ms = [&](const std::function<Tensor()>& launch) {
    wait_for(launch());  // warm-up: the module loads, the allocator caches the output's block
    return median_ms(reps, [&] {
             Tensor y;
             for (int k = 0; k < kBatch; ++k) y = launch();
             wait_for(y);
           }) / kBatch;
  };
  const double bytes = 8.0 * static_cast<double>(t.rows * t.cols);
  const double copy_ms = time_ms([&] { return xd.clone(); });  // reads x, writes a copy: 8 bytes an element
  const double bandwidth = bytes / (copy_ms * 1e-3) / 1e9, bound = bytes / (bandwidth * 1e9) * 1e3;
  t.gpu_note = "cuda:0";
  for (bool naive : {true, false}) {
    minitorch::cuda::set_naive_kernels(naive);
    KernelTime k{naive ? "GPU naive: softmax_naive_kernel" : "GPU fast: softmax_warp_kernel"};
    const std::vector<float> y = minitorch::ops::softmax(xd).to(Device::cpu()).to_vector();
    k.max_rel_error = max_relative_error(y.data(), ref.data(), t.rows * t.cols);
    check_error(k, t.tolerance);
    k.ms = time_ms([&] { return minitorch::ops::softmax(xd); });
    k.gb_per_s = bytes / (k.ms * 1e-3) / 1e9;
    k.of_bound = bound / k.ms;
    t.gpu.push_back(k);
  }
  std::printf("\nOn the GPU (cuda:0), the same (%lld, %lld) logits, medians of %d x %d launches:\n"
              "  device-to-device copy (Tensor::clone) %.1f GB/s -> memory-bound limit %.4f ms\n",
              static_cast<long long>(t.rows), static_cast<long long>(t.cols), reps, kBatch, bandwidth, bound);
  std::printf("  %-34s %9s %8s %9s %15s\n", "version", "ms", "GB/s", "of bound", "max rel. error");
  for (const KernelTime& k : t.gpu) print_row(k);
  return true;
}
#endif

}  // namespace

double tolerance_for(std::int64_t N) { return 1e-5 * std::max(1.0, std::sqrt(static_cast<double>(N) / 4096.0)); }

void show_halving_tree(std::int64_t N) {
  if (N < 1) throw std::invalid_argument("show_halving_tree: N = " + std::to_string(N) + ", needs at least 1");
  const std::vector<float> x = random_logits(1, N);
  float m = x[0];
  for (float v : x) m = std::fmax(m, v);
  std::vector<float> maxima(kLanes, std::numeric_limits<float>::lowest()), sums(kLanes, 0.f);
  for (std::size_t j = 0; j < x.size(); ++j) maxima[j % kLanes] = std::fmax(maxima[j % kLanes], x[j]);
  for (std::size_t j = 0; j < x.size(); ++j) sums[j % kLanes] += std::exp(x[j] - m);
  std::printf("One row of N = %lld logits ~ N(0, %.0f²) on %d lanes (%s): lane l holds the max, then the sum\n"
              "of exp(x - m), over j = l, l + %d, ... Each halving: lane i takes op(lane i, lane i ^ offset).\n",
              static_cast<long long>(N), static_cast<double>(kLogitStd), kLanes, simd_name(), kLanes);
  auto tree = [&](const char* what, std::vector<float> lanes, const std::function<float(float, float)>& op,
                  const std::function<void(float*, int)>& halve) {
    std::vector<std::vector<float>> steps = {lanes};
    for (int offset = kLanes / 2; offset > 0; offset /= 2) {
      const std::vector<float> before = steps.back();
      for (std::size_t i = 0; i < lanes.size(); ++i)
        lanes[i] = op(before[i], before[i ^ static_cast<std::size_t>(offset)]);
      steps.push_back(lanes);
    }
    std::printf("\n%s\n  lane     start", what);
    for (int offset = kLanes / 2; offset > 0; offset /= 2) std::printf("   off %2d", offset);
    std::printf("\n");
    for (std::size_t i = 0; i < static_cast<std::size_t>(kLanes); ++i) {
      std::printf("  %4zu", i);
      for (const auto& s : steps) std::printf(" %9.4f", static_cast<double>(s[i]));
      std::printf("\n");
    }
    std::printf("  distinct");
    for (const auto& s : steps) std::printf(" %9zu", std::set<float>(s.begin(), s.end()).size());
    std::vector<float> mine = steps.front();
    halve(mine.data(), kLanes);
    if (mine != steps.back())
      throw std::runtime_error(std::string(what) + ": halve_* differs from the butterfly (lab task L04.1)");
    std::printf("\n  %s(lanes, %d) gives the same bits: every lane holds %.7g\n", what, kLanes,
                static_cast<double>(mine[0]));
    return mine[0];
  };
  const float tree_max = tree("halve_max", maxima, [](float a, float b) { return std::fmax(a, b); }, halve_max);
  tree("halve_sum", sums, [](float a, float b) { return a + b; }, halve_sum);
  double sum = 0.0;
  for (float v : x) sum += std::exp(static_cast<double>(v) - static_cast<double>(m));
  std::printf("The max is exact (%s the row's max %.7g: a max never rounds); the sum in double is %.7g.\n"
              "A warp does the same in registers: warp_max / warp_sum (cuda/common.cuh), log2(32) = 5\n"
              "halvings of __shfl_xor_sync; here log2(%d) = %d halvings through memory.\n",
              tree_max == m ? "=" : "DIFFERS from", static_cast<double>(m), sum, kLanes,
              static_cast<int>(std::lround(std::log2(kLanes))));
}

KernelTable naive_to_fast(std::int64_t rows, std::int64_t cols, int reps) {
  if (rows < 1 || cols < 1 || reps < 1)
    throw std::invalid_argument("naive_to_fast: rows, cols and reps must be at least 1");
  KernelTable t;
  t.rows = rows;
  t.cols = cols;
  t.tolerance = tolerance_for(cols);
  const std::int64_t n = rows * cols;
  const double bytes = 8.0 * static_cast<double>(n);  // x read once, y written once
  const std::vector<float> x = random_logits(rows, cols);
  std::vector<double> ref(static_cast<std::size_t>(n));
  softmax_rows_reference(x.data(), ref.data(), rows, cols);

  StreamBuffers streams;
  const double copy_ms = median_ms(reps, [&] { streams.copy(); });
  t.bandwidth_gb_s = 2.0 * streams.mib() * (1 << 20) / (copy_ms * 1e-3) / 1e9;
  t.bound_ms = bytes / (t.bandwidth_gb_s * 1e9) * 1e3;
  t.ops_per_byte = 5.0 / 8.0;

  // The compute floor: the wide version on the first rows again and again, x and y in L2 (no memory
  // traffic), scaled to all rows.
  const std::int64_t hot_rows = std::clamp<std::int64_t>((std::int64_t{128} << 10) / (8 * cols), 1, rows);
  const std::int64_t passes = (rows + hot_rows - 1) / hot_rows;
  std::vector<float> hot_y(static_cast<std::size_t>(hot_rows * cols));
  softmax_rows_wide(x.data(), hot_y.data(), hot_rows, cols);
  t.compute_ms = median_ms(reps, [&] {
                   for (std::int64_t p = 0; p < passes; ++p) softmax_rows_wide(x.data(), hot_y.data(), hot_rows, cols);
                 }) * static_cast<double>(rows) / static_cast<double>(hot_rows * passes);

  using Version = void (*)(const float*, float*, std::int64_t, std::int64_t);
  const std::pair<const char*, Version> versions[] = {
      {"naive: 3 scalar passes, std::exp", softmax_rows_naive},
      {"lanes: 1 Packet per step", softmax_rows_lanes},
      {"wide: 4 Packets per step, exp once", softmax_rows_wide}};
  std::vector<float> y(static_cast<std::size_t>(n));
  for (const auto& named : versions) {
    const Version version = named.second;  // not a structured binding: clang < 16 cannot capture one
    KernelTime k{named.first};
    version(x.data(), y.data(), rows, cols);  // checked first (and y's pages exist before the timing)
    k.max_rel_error = max_relative_error(y.data(), ref.data(), n);
    check_error(k, t.tolerance);
    k.ms = median_ms(reps, [&] { version(x.data(), y.data(), rows, cols); }, [&] { streams.copy(); });
    k.gb_per_s = bytes / (k.ms * 1e-3) / 1e9;
    k.of_bound = t.bound_ms / k.ms;
    t.cpu.push_back(k);
  }

  std::printf("x: (%lld, %lld) f32 logits ~ N(0, %.0f²), %.1f MiB, y the same. One core, %s (%d lanes).\n",
              static_cast<long long>(rows), static_cast<long long>(cols), static_cast<double>(kLogitStd),
              4.0 * static_cast<double>(n) / (1 << 20), simd_name(), kLanes);
  std::printf("this core streams %.1f GB/s (a %.0f MiB copy, read + write counted, median of %d)\n"
              "memory-bound limit: 8 bytes x %lld elements / %.1f GB/s = %.3f ms   (x read once, y written once)\n"
              "arithmetic intensity: 5 operations an element (max, subtract, exp, add, multiply) / 8 bytes"
              " = %.3f op/byte,\nlow, but an exp is some 20 instructions: the compute floor, wide with its rows"
              " in L2 (no memory\ntraffic), takes %.3f ms for all rows (%.0f%% of the memory-bound limit"
              " is the most it can reach).\nEach timed run starts with cold caches (the copy runs in between);"
              " median of %d runs.\n\n",
              t.bandwidth_gb_s, streams.mib(), reps, static_cast<long long>(n), t.bandwidth_gb_s, t.bound_ms,
              t.ops_per_byte, t.compute_ms, 100.0 * std::min(1.0, t.bound_ms / t.compute_ms), reps);
  std::printf("  %-34s %9s %8s %9s %15s\n", "version", "ms", "GB/s", "of bound", "max rel. error");
  for (const KernelTime& k : t.cpu) print_row(k);
  std::printf("  (tolerance %.1e relative against the double-precision reference; every version is within it)\n",
              t.tolerance);

#if MINITORCH_WITH_CUDA
  if (gpu_versions(t, x, ref, reps)) return t;
#else
  t.gpu_note = "this build has no CUDA layer (no nvcc when CMake ran, -DMINITORCH_CUDA=OFF, or a lab build)";
#endif
  std::printf("\nNo GPU run: %s. The two kernels and their shuffles, as the repository has them:\n",
              t.gpu_note.c_str());
  print_kernels("cuda/softmax.cu", {"softmax_naive_kernel", "warp_softmax_row"});
  print_kernels("cuda/common.cuh", {"warp_max", "warp_sum"});
  return t;
}

}  // namespace lesson04

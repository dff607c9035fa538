#include "tools/estimate/format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "runtime/config_error.h"

namespace minitorch::estimate {

bool asks_stage(const std::vector<int>& stages, int stage) {
  return std::find(stages.begin(), stages.end(), stage) != stages.end();
}

std::string stage_label(int stage) { return std::string(kStageName[stage]) + (stage == 0 ? " (stage 0)" : ""); }

std::string gb(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, bytes / kGB < 1e6 ? "%.6g" : "%.0f", bytes / kGB);
  return buf;
}

std::string commas(std::int64_t v) {
  const std::string digits = std::to_string(v);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string rank_span(int first, int last) {
  return first == last ? std::to_string(first) : std::to_string(first) + "-" + std::to_string(last);
}

namespace {
/// Columns on the screen: UTF-8 continuation bytes take none (Ψ is two bytes, one column).
std::size_t columns(const std::string& s) {
  return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}
}  // namespace

std::string pad(const std::string& s, std::size_t width, bool right) {
  const std::size_t w = columns(s);
  if (w >= width) return s + " ";
  const std::string fill(width - w, ' ');
  return right ? fill + s + " " : s + fill + " ";
}

void print_line(std::string line) {
  while (!line.empty() && line.back() == ' ') line.pop_back();
  std::printf("%s\n", line.c_str());
}

std::string offload_name(runtime::Offload o) {
  return o == runtime::Offload::none ? "none" : o == runtime::Offload::optimizer ? "optimizer" : "param";
}

std::string nvme_name(runtime::OnNvme n) {
  return n == runtime::OnNvme::none ? "none" : n == runtime::OnNvme::optimizer ? "optimizer" : "all";
}

bool fits_int64(double bytes) { return std::isfinite(bytes) && bytes < 9223372036854775808.0; }  // 2^63

void check_bytes(double bytes, const Inputs& inputs, const std::string& estimate) {
  if (fits_int64(bytes)) return;
  std::ostringstream s;  // not const char* + std::string&&: GCC 12's -Wrestrict misfires on it
  s << inputs.what << ": " << estimate << " would be ";
  if (std::isfinite(bytes)) s << bytes << " bytes, more than a 64-bit count of bytes holds (2^63 - 1)";
  else s << "beyond any number a double holds (" << bytes << ")";
  s << "; lower " << inputs.lever;
  throw runtime::ConfigError(s.str());
}

json bytes_json(const runtime::ModelStateEstimate& e) {
  return {{"param", e.param}, {"grad", e.grad}, {"optim", e.optim}, {"total", e.total()}};
}
json bytes_json(const zero::ModelStateBytes& b) {
  return {{"param", b.param}, {"grad", b.grad}, {"optim", b.optim}, {"total", b.total()}};
}

json exact_bytes(double v) { return v < 9.2e18 ? json(static_cast<std::int64_t>(v)) : json(v); }

}  // namespace minitorch::estimate

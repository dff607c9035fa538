#include "runtime/byte_size.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <utility>

namespace minitorch::runtime {

std::int64_t parse_byte_size(const std::string& text) {
  const std::string quoted = "'" + text + "'";
  const char* s = text.c_str();
  while (std::isspace(static_cast<unsigned char>(*s))) ++s;
  if (*s == '\0') throw std::invalid_argument("an empty size: give bytes, or a number with a unit such as 24MiB");
  if (*s == '-') throw std::invalid_argument(quoted + " is negative: a size is 0 or more bytes");
  char* end = nullptr;
  const double number = std::strtod(s, &end);
  if (end == s || !std::isfinite(number))
    throw std::invalid_argument(quoted + " is not a size: write bytes (25165824) or a number with a unit (24MiB, 1.5GB)");
  std::string unit(end);
  while (!unit.empty() && std::isspace(static_cast<unsigned char>(unit.front()))) unit.erase(unit.begin());
  while (!unit.empty() && std::isspace(static_cast<unsigned char>(unit.back()))) unit.pop_back();
  static const std::pair<const char*, double> kUnits[] = {
      {"", 1},       {"B", 1},         {"KiB", 1024.0},  {"MiB", 1048576.0}, {"GiB", 1073741824.0},
      {"TiB", 1099511627776.0},        {"kB", 1e3},      {"KB", 1e3},        {"MB", 1e6},
      {"GB", 1e9},   {"TB", 1e12}};
  double scale = 0;
  for (const auto& [name, value] : kUnits)
    if (unit == name) scale = value;
  if (scale == 0)
    throw std::invalid_argument(quoted + ": unknown unit '" + unit +
                                "' (use B, KiB, MiB, GiB, TiB, or decimal kB, MB, GB, TB; a bare number is bytes)");
  const double bytes = number * scale;
  if (bytes > 4.611686018427388e18) throw std::invalid_argument(quoted + " is more than 2^62 bytes");
  if (bytes != std::floor(bytes)) throw std::invalid_argument(quoted + " is not a whole number of bytes");
  return static_cast<std::int64_t>(bytes);
}

const char* sim_size_meaning(SimSize which) {
  return which == SimSize::capacity ? "the simulated accelerator's capacity" : "the simulated accelerator's host link";
}

std::int64_t parse_sim_size(const std::string& text, SimSize which, const std::string& name) {
  std::int64_t bytes = 0;
  try {
    bytes = parse_byte_size(text);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(name + ": " + e.what());
  }
  if (bytes == 0)
    throw std::invalid_argument(which == SimSize::capacity
                                    ? name + " is 0 bytes: give " + sim_size_meaning(which) +
                                          " (e.g. 24MiB), or leave it out for no limit"
                                    : name + " is 0 bytes per second: give the link's rate (e.g. 16GB, PCIe 4.0 x16's "
                                             "order), or leave it out for instant copies");
  return bytes;
}

std::string format_mib(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f MiB", bytes / 1048576.0);
  return buf;
}

}  // namespace minitorch::runtime

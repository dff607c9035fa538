#pragma once
/// \file byte_size.h
/// Sizes of memory as people write them: the simulated accelerator's capacity (`"device": {"memory":
/// "24MiB"}`, `--device-memory 24MiB`) and the OOM message's figures.
///
/// \code
///   runtime::parse_byte_size("24MiB");     // 25165824
///   runtime::parse_byte_size("1.5 GB");    // 1500000000
///   runtime::parse_byte_size("4096");      // 4096: a bare number is bytes
///   runtime::format_mib(25165824);         // "24.00 MiB"
/// \endcode
#include <cstdint>
#include <string>

namespace minitorch::runtime {

/// A number of bytes from `text`: a non-negative number (integer, decimal or exponent form) with an
/// optional unit, spaces allowed between: B; binary KiB, MiB, GiB, TiB (powers of 1024); decimal kB/KB, MB,
/// GB, TB (powers of 1000). A bare number is bytes. Throws std::invalid_argument saying what is wrong
/// (empty, negative, not a number, an unknown unit, a fraction of a byte, more than 2^62 bytes).
std::int64_t parse_byte_size(const std::string& text);

/// sim's two sizes (docs/config.md `device`), each set by a config key or a flag: its capacity (device.memory,
/// --device-memory) and its host link's bytes per second (device.link_bandwidth, --link-bandwidth).
enum class SimSize { capacity, link_bandwidth };
/// What `which` is, in words: "the simulated accelerator's capacity" / "... host link".
const char* sim_size_meaning(SimSize which);
/// `text` as a positive size for `which`, named `name` (the key or the flag) in errors: parse_byte_size's value, or
/// one std::invalid_argument — "<name>: '<text>' is not a size ..." or, for 0, "<name> is 0 bytes: give the simulated
/// accelerator's capacity (e.g. 24MiB), or leave it out for no limit" (the link: for instant copies).
std::int64_t parse_sim_size(const std::string& text, SimSize which, const std::string& name);

/// `bytes` in MiB with two decimals ("24.00 MiB"), the unit DeepSpeed's and PyTorch's OOM messages use.
std::string format_mib(double bytes);

}  // namespace minitorch::runtime

#pragma once
/// \file atomic_file.h
/// Writing a file so that a reader sees either the old file or the whole new one, never a part:
/// the bytes go to `path + ".tmp.<pid>"`, are fsync'ed, and the temp file is renamed over `path`.
/// On any error the temp file is removed and `path` is untouched. Checkpoints and run reports use it.
///
/// \code
///   std::string text = report.dump(2);
///   minitorch::write_file_atomic("out/report.json", {{text.data(), text.size()}}, "run report");
/// \endcode
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace minitorch {

/// The pieces of a file, written in order: (pointer, bytes).
using ByteSpans = std::vector<std::pair<const void*, std::size_t>>;

/// Writes `parts` to `path` atomically. Failures throw std::runtime_error
/// "<what> '<path>': <reason>" (e.g. "run report 'out/r.json': cannot create ...: No such file").
void write_file_atomic(const std::string& path, const ByteSpans& parts, const std::string& what = "file");

}  // namespace minitorch

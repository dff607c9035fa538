#pragma once
/// \file safetensors.h
/// Reading and writing the safetensors format (https://github.com/huggingface/safetensors), so a
/// minitorch checkpoint opens in PyTorch (`safetensors.torch.load_file`) and vice versa.
///
/// Layout: an 8-byte little-endian header length N; N bytes of JSON
/// `{"name": {"dtype": "F32"|"BF16"|"I32", "shape": [...], "data_offsets": [begin, end]}, ...,
///   "__metadata__": {"key": "value"}}` padded with spaces to a multiple of 8 (so the data that follows
/// is 8-byte aligned); then the raw little-endian tensor bytes, offsets relative to the end of the header.
///
/// \code
///   minitorch::save_safetensors("ckpt.safetensors", {{"w", w}, {"b", b}}, {{"step", "100"}});
///   auto f = minitorch::load_safetensors("ckpt.safetensors");
///   minitorch::Tensor w2 = f.get("w");              // same dtype, shape and bits as w
///   std::string step = f.metadata.at("step");
/// \endcode
#include <iosfwd>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "minitorch/tensor.h"

namespace minitorch {

/// The contents of a safetensors file: tensors in file (data-offset) order, and the metadata.
struct SafetensorsFile {
  std::vector<std::pair<std::string, Tensor>> tensors;
  std::map<std::string, std::string> metadata;

  /// True if a tensor of that name is present.
  bool contains(const std::string& name) const;
  /// The tensor called `name`; throws std::runtime_error naming it and the file if absent.
  const Tensor& get(const std::string& name) const;
  /// Path the file was loaded from (for error messages).
  std::string path;
};

/// Writes `tensors` (each saved contiguous, on the CPU, in its own dtype) and `metadata` to `path`.
/// Atomic: the bytes go to `path + ".tmp.<pid>"`, are flushed and fsync'ed, and the temp file is
/// renamed over `path`; on any error the temp file is removed and `path` is untouched, so a crash or
/// a full disk never leaves a half-written checkpoint. Throws std::runtime_error naming `path` on
/// failure, and for an empty or duplicate tensor name, or the reserved name "__metadata__".
void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

/// Reads and validates a safetensors file. Every problem (missing file, file shorter than 8 bytes,
/// header length beyond the file, malformed header JSON, unknown dtype, data offsets out of range,
/// overlapping, leaving holes or not matching shape × dtype size, bytes after the last tensor) is one
/// std::runtime_error whose message names the path. New tensors are allocated under the
/// current TagScope.
SafetensorsFile load_safetensors(const std::string& path);
/// The same checks on the bytes of `in` (all of it, from its start to its end); `source` stands for
/// the path in messages and in SafetensorsFile::path. load_safetensors(path) opens the file and calls
/// this, so a test or a fuzz target can feed bytes from memory (std::istringstream) to the one parser.
SafetensorsFile load_safetensors(std::istream& in, const std::string& source);

/// "F32", "BF16", "I32": the safetensors names of our dtypes.
const char* safetensors_dtype_name(DType dtype);

}  // namespace minitorch

/// \file safetensors.cpp
/// The loader trusts nothing in the file: a checkpoint may be truncated by a crash, written by another
/// tool, or simply be the wrong file, and each of those must become one clear error instead of a
/// crash or a silently wrong model.
#include "minitorch/safetensors.h"

#include "minitorch/atomic_file.h"
#include "minitorch/json_limits.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

namespace minitorch {

static_assert(std::endian::native == std::endian::little,
              "safetensors stores little-endian bytes; this code copies them as they are");

namespace {

using ordered_json = nlohmann::ordered_json;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error("safetensors file '" + path + "': " + what);
}

bool parse_st_dtype(const std::string& name, DType& out) {
  for (DType t : {DType::f32, DType::bf16, DType::f16, DType::i32})
    if (name == safetensors_dtype_name(t)) return out = t, true;
  return false;
}

/// Reads a non-negative JSON integer (shape entry or offset).
std::uint64_t json_uint(const nlohmann::json& v, const std::string& path, const std::string& what) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (!v.is_number_integer() || v.get<std::int64_t>() < 0)
    fail(path, what + " must be a non-negative integer, got " + json_excerpt(v));
  return static_cast<std::uint64_t>(v.get<std::int64_t>());
}

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  std::uint64_t begin, end;
};

Entry parse_entry(const std::string& name, const nlohmann::json& info, std::uint64_t data_len,
                  const std::string& path) {
  const std::string where = "tensor '" + truncate_for_message(name) + "'";
  if (!info.is_object()) fail(path, where + ": expected an object, got " + json_excerpt(info));
  for (auto it = info.begin(); it != info.end(); ++it)
    if (it.key() != "dtype" && it.key() != "shape" && it.key() != "data_offsets")
      fail(path, where + ": unknown field '" + truncate_for_message(it.key()) + "'");
  for (const char* k : {"dtype", "shape", "data_offsets"})
    if (!info.contains(k)) fail(path, where + ": missing field '" + std::string(k) + "'");
  Entry e{name, DType::f32, {}, 0, 0};
  if (!info["dtype"].is_string()) fail(path, where + ": dtype must be a string");
  std::string dt = info["dtype"].get<std::string>();
  if (!parse_st_dtype(dt, e.dtype))
    fail(path, where + ": unsupported dtype '" + truncate_for_message(dt) + "' (minitorch reads F32, BF16, I32)");
  if (!info["shape"].is_array()) fail(path, where + ": shape must be an array");
  // 128-bit, saturating: a hostile shape must not overflow into a size that happens to match.
  const unsigned __int128 cap = static_cast<unsigned __int128>(1) << 64;
  unsigned __int128 numel = 1, nonzero = 1;
  for (const auto& d : info["shape"]) {
    std::uint64_t n = json_uint(d, path, where + ": shape entry");
    if (n > static_cast<std::uint64_t>(INT64_MAX)) fail(path, where + ": shape " + json_excerpt(info["shape"]) + " is too large");
    numel = std::min(numel * n, cap);
    if (n > 0) nonzero = std::min(nonzero * n, cap);
    e.shape.push_back(static_cast<std::int64_t>(n));
  }
  // A 0 makes the element count 0 (and the offsets can match), but the tensor code multiplies sizes in
  // int64 from either end (numel, strides) and would overflow before reaching it (UB, found by
  // L03_Fuzz.Safetensors under UBSan). Without a 0, such a shape cannot match the offsets (below).
  if (numel == 0 && nonzero > static_cast<unsigned __int128>(INT64_MAX))
    fail(path, where + ": shape " + json_excerpt(info["shape"]) +
                   " is too large: its non-zero sizes multiply past 2^63 - 1");
  const auto& off = info["data_offsets"];
  if (!off.is_array() || off.size() != 2) fail(path, where + ": data_offsets must be [begin, end]");
  e.begin = json_uint(off[0], path, where + ": data_offsets[0]");
  e.end = json_uint(off[1], path, where + ": data_offsets[1]");
  if (e.end < e.begin) fail(path, where + ": data_offsets [" + std::to_string(e.begin) + ", " +
                                      std::to_string(e.end) + "] end before begin");
  if (e.end > data_len)
    fail(path, where + ": data_offsets end " + std::to_string(e.end) + " is beyond the " +
                   std::to_string(data_len) + " data bytes in the file");
  unsigned __int128 want = numel * dtype_size(e.dtype);
  if (e.end - e.begin != want)
    fail(path, where + ": data_offsets span " + std::to_string(e.end - e.begin) + " bytes but shape " +
                   shape_str(e.shape) + " of " + dt + " needs " +
                   (want >= cap ? std::string("more than 2^64") : std::to_string(static_cast<std::uint64_t>(want))));
  return e;
}

}  // namespace

const char* safetensors_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "F32";
    case DType::bf16: return "BF16";
    case DType::f16: return "F16";
    case DType::i32: return "I32";
  }
  return "?";
}

bool SafetensorsFile::contains(const std::string& name) const {
  return std::any_of(tensors.begin(), tensors.end(), [&](const auto& p) { return p.first == name; });
}

const Tensor& SafetensorsFile::get(const std::string& name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return t;
  fail(path, "no tensor named '" + name + "'");
}

void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  // Header first: names are checked before any file is touched.
  ordered_json header = ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<Tensor> data;
  std::set<std::string> seen;
  std::uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    if (name.empty() || name == "__metadata__") fail(path, "invalid tensor name '" + name + "'");
    if (!seen.insert(name).second) fail(path, "duplicate tensor name '" + name + "'");
    if (!tensor.defined()) fail(path, "tensor '" + name + "' is undefined");
    Tensor t = tensor.to(Device::cpu()).contiguous();
    std::uint64_t n = t.nbytes();
    header[name] = {{"dtype", safetensors_dtype_name(t.dtype())},
                    {"shape", t.shape()},
                    {"data_offsets", {offset, offset + n}}};
    offset += n;
    data.push_back(std::move(t));
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keeps the tensor data 8-byte aligned
  const std::uint64_t header_len = text.size();

  ByteSpans parts{{&header_len, 8}, {text.data(), text.size()}};
  for (const Tensor& t : data)
    if (t.nbytes() > 0) parts.emplace_back(t.raw_data(), t.nbytes());
  write_file_atomic(path, parts, "safetensors file");
}

SafetensorsFile load_safetensors(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) fail(path, "not found (or not a regular file)");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open for reading");
  return load_safetensors(in, path);
}

SafetensorsFile load_safetensors(std::istream& in, const std::string& path) {
  in.seekg(0, std::ios::end);
  const std::streamoff end = in.tellg();
  if (!in || end < 0) fail(path, "cannot read its size (not a seekable file)");
  in.seekg(0);
  const std::uint64_t file_size = static_cast<std::uint64_t>(end);
  if (file_size < 8)
    fail(path, "file is " + std::to_string(file_size) + " bytes, too short for the 8-byte header length");
  std::uint64_t header_len = 0;
  in.read(reinterpret_cast<char*>(&header_len), 8);
  if (header_len > file_size - 8)
    fail(path, "header length " + std::to_string(header_len) + " is beyond the file size " +
                   std::to_string(file_size) + " (truncated or not a safetensors file)");
  std::string text(header_len, '\0');
  in.read(text.data(), static_cast<std::streamsize>(header_len));
  if (!in) fail(path, "read of the header failed");

  nlohmann::json header;
  try {
    header = parse_json_bounded(text, "header");  // a deep value would crash the messages quoting it
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for a number like 1e999
    fail(path, "malformed header JSON: " + truncate_for_message(e.what(), 300));
  } catch (const JsonLimitError& e) {
    fail(path, e.what());
  }
  if (!header.is_object()) fail(path, "header JSON must be an object");

  SafetensorsFile out;
  out.path = path;
  const std::uint64_t data_len = file_size - 8 - header_len;
  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) fail(path, "__metadata__ must be an object of strings");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string()) fail(path, "__metadata__ value of '" + truncate_for_message(m.key()) + "' is not a string");
        out.metadata[m.key()] = m->get<std::string>();
      }
      continue;
    }
    entries.push_back(parse_entry(it.key(), *it, data_len, path));
  }

  // The data section must be tiled exactly: no overlap, no hole, nothing after the last tensor.
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  std::uint64_t pos = 0;
  std::string prev = "the start of the data";
  for (const Entry& e : entries) {
    const std::string tensor = "tensor '" + truncate_for_message(e.name) + "'";
    if (e.begin < pos) fail(path, tensor + " overlaps " + prev);
    if (e.begin > pos) fail(path, "hole of " + std::to_string(e.begin - pos) + " bytes before " + tensor);
    pos = e.end;
    prev = tensor;
  }
  if (pos != data_len)
    fail(path, std::to_string(data_len - pos) + " unexpected bytes after the last tensor (trailing garbage)");

  for (const Entry& e : entries) {
    Tensor t = Tensor::empty(e.shape, e.dtype);
    if (e.end > e.begin) {
      in.seekg(static_cast<std::streamoff>(8 + header_len + e.begin));
      in.read(static_cast<char*>(t.raw_data()), static_cast<std::streamsize>(e.end - e.begin));
      if (!in) fail(path, "read of tensor '" + truncate_for_message(e.name) + "' failed");
    }
    out.tensors.emplace_back(e.name, std::move(t));
  }
  return out;
}

}  // namespace minitorch

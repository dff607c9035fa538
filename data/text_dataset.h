#pragma once
/// \file text_dataset.h
/// A UTF-8 text corpus as token ids, split once and for all into train and val.
///
/// The split (nanoGPT's, from data/shakespeare_char/prepare.py): the whole text is tokenized, the
/// first 90% of the tokens are `train`, the last 10% are `val`; n_train = floor(n * 9 / 10) in exact
/// integer arithmetic. The char vocabulary is built from the whole text, as nanoGPT does, so every
/// val character has an id. The split is by position, not random, so it is the same on every rank
/// and every run, and val text is never seen in training.
///
/// \code
///   auto ds = minitorch::data::TextDataset::load("datasets/kjv.txt", "char", /*block_size=*/64);
///   const auto& train = ds.tokens(minitorch::data::Split::train);   // std::vector<std::int32_t>
///   std::int64_t V = ds.tokenizer().vocab_size();
/// \endcode
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "data/tokenizer.h"

namespace minitorch::data {

enum class Split { train, val };
/// "train" or "val".
const char* split_name(Split split);

class TextDataset {
 public:
  /// Reads `path`, builds a tokenizer of `tokenizer_kind` ("char" / "byte") on the whole text,
  /// encodes and splits it. Errors (std::runtime_error): "data file 'X' not found",
  /// "data file 'X' is empty", invalid UTF-8 (with the byte offset), and a split with fewer than
  /// block_size + 2 tokens (the sampler needs at least two distinct windows of block_size + 1).
  static TextDataset load(const std::string& path, const std::string& tokenizer_kind, std::int64_t block_size);
  /// Same with a given tokenizer (e.g. restored from a checkpoint); a character the tokenizer does
  /// not know is an error naming the file.
  static TextDataset load(const std::string& path, std::shared_ptr<const Tokenizer> tokenizer,
                          std::int64_t block_size);
  /// From text in memory; `source` stands for the file name in error messages.
  static TextDataset from_text(std::string_view text, std::shared_ptr<const Tokenizer> tokenizer,
                               std::int64_t block_size, const std::string& source = "<text>");
  /// From text in memory with a tokenizer of `tokenizer_kind` built on it: what load(path, kind,
  /// block_size) does once the file is read, with the same errors naming `source`.
  static TextDataset from_text(std::string_view text, const std::string& tokenizer_kind, std::int64_t block_size,
                               const std::string& source = "<text>");

  /// Token ids of one split.
  const std::vector<std::int32_t>& tokens(Split split) const { return *tokens_ptr(split); }
  /// Shared handle to a split's ids, so samplers on every split share one copy.
  std::shared_ptr<const std::vector<std::int32_t>> tokens_ptr(Split split) const {
    return split == Split::train ? train_ : val_;
  }
  std::int64_t size(Split split) const { return static_cast<std::int64_t>(tokens(split).size()); }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  std::shared_ptr<const Tokenizer> tokenizer_ptr() const { return tokenizer_; }
  /// The file name (or `source`) the text came from.
  const std::string& source() const { return source_; }

 private:
  TextDataset() = default;
  std::shared_ptr<const Tokenizer> tokenizer_;
  std::shared_ptr<const std::vector<std::int32_t>> train_, val_;
  std::string source_;
};

/// Reads a whole file; "data file 'X' not found" / "data file 'X' is empty" on failure.
std::string read_text_file(const std::string& path);

}  // namespace minitorch::data

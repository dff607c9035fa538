#pragma once
/// \file tokenizer.h
/// Text <-> token ids. Two tokenizers, both tiny enough to read in a minute:
/// - `CharTokenizer`: one token per Unicode character (code point) that occurs in the training text,
///   ids in code-point order — nanoGPT's shakespeare-char tokenizer (`chars = sorted(set(text))`),
///   but over code points of UTF-8 text instead of Python's str.
/// - `ByteTokenizer`: one token per byte, vocabulary 256; needs no training text and encodes anything.
///
/// \code
///   auto tok = minitorch::data::make_tokenizer("char", "hello world");
///   std::vector<std::int32_t> ids = tok->encode("hold");   // {3, 5, 4, 1}
///   std::string back = tok->decode(ids);                    // "hold"
///   std::string vocab = tok->to_string();                   // " dehlorw": store it in a checkpoint
///   auto same = minitorch::data::tokenizer_from_string("char", vocab);
/// \endcode
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace minitorch::data {

/// Decodes UTF-8 into code points. Throws std::runtime_error naming the byte offset of the first
/// invalid sequence (bad lead byte, truncated sequence, overlong form, surrogate, > U+10FFFF).
std::vector<char32_t> utf8_decode(std::string_view text);
/// Appends the UTF-8 encoding of `cp` to `out`.
void utf8_append(std::string& out, char32_t cp);
/// How a character is shown in error messages: "'é' (U+00E9)", or just "U+000A" for control characters.
std::string describe_code_point(char32_t cp);

/// Common interface, so the training tool can pick a tokenizer by name.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  /// Token ids of `text`; throws std::runtime_error if the text cannot be encoded.
  virtual std::vector<std::int32_t> encode(std::string_view text) const = 0;
  /// Text of `ids`; throws std::runtime_error on an id outside [0, vocab_size).
  virtual std::string decode(const std::vector<std::int32_t>& ids) const = 0;
  virtual std::int64_t vocab_size() const = 0;
  /// "char" or "byte".
  virtual std::string kind() const = 0;
  /// The vocabulary as a plain UTF-8 string, for a checkpoint's metadata ("" for bytes).
  virtual std::string to_string() const = 0;
};

/// One token per code point of the training text; ids follow code-point order.
class CharTokenizer : public Tokenizer {
 public:
  /// Vocabulary = the sorted set of code points in `training_text` (UTF-8; invalid UTF-8 throws
  /// naming the byte offset). An empty text gives an error: a vocabulary of nothing encodes nothing.
  explicit CharTokenizer(std::string_view training_text);
  /// Rebuilds a tokenizer from `to_string()`: the characters must be valid UTF-8, non-empty, and
  /// strictly increasing (as written), else std::runtime_error.
  static CharTokenizer from_string(std::string_view vocabulary);

  /// Throws naming the first character not in the vocabulary and its byte offset.
  std::vector<std::int32_t> encode(std::string_view text) const override;
  std::string decode(const std::vector<std::int32_t>& ids) const override;
  std::int64_t vocab_size() const override { return static_cast<std::int64_t>(chars_.size()); }
  std::string kind() const override { return "char"; }
  /// All vocabulary characters in id order, UTF-8 encoded.
  std::string to_string() const override;
  /// The code point of token `id`.
  char32_t code_point(std::int32_t id) const;

 private:
  CharTokenizer() = default;
  void build_index();
  std::vector<char32_t> chars_;       // id -> code point, strictly increasing
  std::vector<std::int32_t> index_;   // code point -> id, -1 if absent (dense up to the largest one)
};

/// One token per byte: 256 ids, encodes any byte string, decode returns the bytes as they are.
class ByteTokenizer : public Tokenizer {
 public:
  std::vector<std::int32_t> encode(std::string_view text) const override;
  std::string decode(const std::vector<std::int32_t>& ids) const override;
  std::int64_t vocab_size() const override { return 256; }
  std::string kind() const override { return "byte"; }
  std::string to_string() const override { return ""; }
};

/// A tokenizer by name: "char" (trained on `training_text`) or "byte" (ignores it). Throws
/// std::runtime_error on another name, listing the valid ones.
std::shared_ptr<const Tokenizer> make_tokenizer(const std::string& kind, std::string_view training_text);
/// A tokenizer by name from its `to_string()` (e.g. read back from checkpoint metadata).
std::shared_ptr<const Tokenizer> tokenizer_from_string(const std::string& kind, std::string_view vocabulary);

}  // namespace minitorch::data

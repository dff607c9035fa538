/// \file tokenizer.cpp
/// UTF-8 is decoded by hand (the standard library's codecvt is deprecated) and strictly: an invalid
/// byte in a corpus is far more often a wrong file or encoding than intended content, and silently
/// replacing it would put a phantom character into the vocabulary.
#include "data/tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "minitorch/json_limits.h"

namespace minitorch::data {

namespace {
std::string hex(unsigned value, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%0*X", digits, value);
  return buf;
}

[[noreturn]] void bad_utf8(std::size_t offset, unsigned char byte, const char* why) {
  throw std::runtime_error("invalid UTF-8 at byte offset " + std::to_string(offset) + " (byte 0x" + hex(byte, 2) +
                           ": " + why + ")");
}
}  // namespace

std::vector<char32_t> utf8_decode(std::string_view text) {
  std::vector<char32_t> out;
  out.reserve(text.size());
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n;) {
    unsigned char b = s[i];
    if (b < 0x80) {
      out.push_back(b);
      ++i;
      continue;
    }
    int len;
    char32_t cp;
    if (b >= 0xC2 && b <= 0xDF) len = 2, cp = b & 0x1F;       // 0xC0, 0xC1 could only be overlong
    else if (b >= 0xE0 && b <= 0xEF) len = 3, cp = b & 0x0F;
    else if (b >= 0xF0 && b <= 0xF4) len = 4, cp = b & 0x07;  // above 0xF4 is beyond U+10FFFF
    else bad_utf8(i, b, b < 0xC0 ? "unexpected continuation byte" : "not a valid lead byte");
    if (i + len > n) bad_utf8(i, b, "sequence truncated by the end of the text");
    for (int k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) bad_utf8(i, b, "missing continuation byte");
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000)) bad_utf8(i, b, "overlong encoding");
    if (cp >= 0xD800 && cp <= 0xDFFF) bad_utf8(i, b, "UTF-16 surrogate");
    if (cp > 0x10FFFF) bad_utf8(i, b, "beyond U+10FFFF");
    out.push_back(cp);
    i += static_cast<std::size_t>(len);
  }
  return out;
}

void utf8_append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string describe_code_point(char32_t cp) {
  std::string code = "U+" + hex(static_cast<unsigned>(cp), 4);
  if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0)) return code;  // control: unprintable
  std::string glyph;
  utf8_append(glyph, cp);
  return "'" + glyph + "' (" + code + ")";
}

// ---------------- CharTokenizer ----------------

CharTokenizer::CharTokenizer(std::string_view training_text) {
  std::vector<char32_t> cps = utf8_decode(training_text);
  if (cps.empty()) throw std::runtime_error("CharTokenizer: the training text is empty, so is the vocabulary");
  std::sort(cps.begin(), cps.end());
  cps.erase(std::unique(cps.begin(), cps.end()), cps.end());
  chars_ = std::move(cps);
  build_index();
}

CharTokenizer CharTokenizer::from_string(std::string_view vocabulary) {
  CharTokenizer t;
  try {
    t.chars_ = utf8_decode(vocabulary);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(std::string("CharTokenizer vocabulary: ") + e.what());
  }
  if (t.chars_.empty()) throw std::runtime_error("CharTokenizer vocabulary is empty");
  for (std::size_t i = 1; i < t.chars_.size(); ++i)
    if (t.chars_[i] <= t.chars_[i - 1])
      throw std::runtime_error("CharTokenizer vocabulary is not in strictly increasing code-point order at " +
                               describe_code_point(t.chars_[i]) + " (index " + std::to_string(i) + ")");
  t.build_index();
  return t;
}

void CharTokenizer::build_index() {
  index_.assign(static_cast<std::size_t>(chars_.back()) + 1, -1);
  for (std::size_t i = 0; i < chars_.size(); ++i) index_[chars_[i]] = static_cast<std::int32_t>(i);
}

std::vector<std::int32_t> CharTokenizer::encode(std::string_view text) const {
  std::vector<char32_t> cps = utf8_decode(text);
  std::vector<std::int32_t> ids(cps.size());
  std::size_t byte_offset = 0;
  for (std::size_t i = 0; i < cps.size(); ++i) {
    char32_t cp = cps[i];
    std::int32_t id = cp < index_.size() ? index_[cp] : -1;
    if (id < 0)
      throw std::runtime_error("character " + describe_code_point(cp) + " at byte offset " +
                               std::to_string(byte_offset) + " is not in the tokenizer's vocabulary of " +
                               std::to_string(chars_.size()) + " characters");
    ids[i] = id;
    byte_offset += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
  }
  return ids;
}

char32_t CharTokenizer::code_point(std::int32_t id) const {
  if (id < 0 || id >= vocab_size())
    throw std::runtime_error("token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                             std::to_string(vocab_size()) + ")");
  return chars_[static_cast<std::size_t>(id)];
}

std::string CharTokenizer::decode(const std::vector<std::int32_t>& ids) const {
  std::string out;
  out.reserve(ids.size());
  for (std::int32_t id : ids) utf8_append(out, code_point(id));
  return out;
}

std::string CharTokenizer::to_string() const {
  std::string out;
  for (char32_t cp : chars_) utf8_append(out, cp);
  return out;
}

// ---------------- ByteTokenizer ----------------

std::vector<std::int32_t> ByteTokenizer::encode(std::string_view text) const {
  std::vector<std::int32_t> ids(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) ids[i] = static_cast<unsigned char>(text[i]);
  return ids;
}

std::string ByteTokenizer::decode(const std::vector<std::int32_t>& ids) const {
  std::string out(ids.size(), '\0');
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] > 255)
      throw std::runtime_error("token id " + std::to_string(ids[i]) + " is outside the byte vocabulary [0, 256)");
    out[i] = static_cast<char>(ids[i]);
  }
  return out;
}

// ---------------- by name ----------------

namespace {
[[noreturn]] void unknown_kind(const std::string& kind) {
  throw std::runtime_error("unknown tokenizer '" + truncate_for_message(kind) + "'; valid: char, byte");
}
}  // namespace

std::shared_ptr<const Tokenizer> make_tokenizer(const std::string& kind, std::string_view training_text) {
  if (kind == "char") return std::make_shared<CharTokenizer>(training_text);
  if (kind == "byte") return std::make_shared<ByteTokenizer>();
  unknown_kind(kind);
}

std::shared_ptr<const Tokenizer> tokenizer_from_string(const std::string& kind, std::string_view vocabulary) {
  if (kind == "char") return std::make_shared<CharTokenizer>(CharTokenizer::from_string(vocabulary));
  if (kind == "byte") return std::make_shared<ByteTokenizer>();
  unknown_kind(kind);
}

}  // namespace minitorch::data

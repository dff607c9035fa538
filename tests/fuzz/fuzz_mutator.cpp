// The mutations of fuzz_mutator.h. Positions and lengths all come from Rng, never from the clock or
// the address of anything, so an index always gives the same bytes.
#include "fuzz/fuzz_mutator.h"

#include <algorithm>
#include <cstring>

namespace mt_fuzz {

std::uint64_t Rng::next() {
  std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::uint64_t Rng::below(std::uint64_t n) {
  return static_cast<std::uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
}

namespace {

// Numbers at the edges of what parsers convert: int32 and int64 limits and one past them, 2^64, the
// largest doubles, overflow to inf (1e999), underflow, fractions where integers are expected, and
// things that are not JSON numbers at all.
const std::vector<std::string> kNumbers = {
    "0", "-0", "1", "-1", "2", "3", "7", "8", "255", "256", "65535", "2147483647", "2147483648", "-2147483648",
    "-2147483649", "4294967296", "9007199254740993", "9223372036854775807", "9223372036854775808",
    "-9223372036854775808", "-9223372036854775809", "18446744073709551615", "18446744073709551616", "1e308",
    "-1e308", "1.7976931348623157e308", "1e999", "-1e999", "1e-400", "4.9e-324", "0.5", "1.0", "2.5", "-0.5", "5e8",
    "1e18", "1e19", "1e300", "3037000500", "4611686018427387904", "NaN", "Infinity", "00", "01", "-", "1e", "0x10",
    "+1"};

// JSON structure, literals, escapes and the safetensors header's own words.
const std::vector<std::string> kTokens = {
    "{", "}", "[", "]", ":", ",", "\"", "\\", "null", "true", "false", "\"\"", "{}", "[]", "[[]]", "{\"\":{}}",
    "\"\\u0000\"", "\"\\ud800\"", "\"\\udfff\"", "\"\\u00e9\"", "\"\\\\\"", "\"__metadata__\"", "\"dtype\"",
    "\"shape\"", "\"data_offsets\"", "\"F32\"", "\"BF16\"", "\"I32\"", "\"F16\"", "\"U8\"", "\"format\"", "\"step\"",
    "\"vocab\"", "\"model_args\"", "\"optimizer_steps\"", "\"minitorch-checkpoint-1\"", "\"char\"", "\"byte\"",
    "\"stage\"", "\"enabled\"", "\"params\"", "\"type\"", "\"n_layer\"", "\"n_embd\"", "\"block_size\"",
    "\"vocab_size\"", "\xff", "\xc0\x80", "\xed\xa0\x80", "\x00", " ", "\n"};

// UTF-8 that a strict decoder must refuse, and the valid extremes next to it.
const std::vector<std::string> kUtf8 = {
    "\xc0\x80", "\xc1\xbf", "\xe0\x80\x80", "\xe0\x9f\xbf", "\xed\xa0\x80", "\xed\xbf\xbf", "\xf0\x8f\xbf\xbf",
    "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xf8\x88\x80\x80\x80", "\xff", "\xfe", "\x80", "\xbf", "\xc3", "\xe2\x82",
    "\xf0\x9f\x99", "\xf4\x8f\xbf\xbf", "\xef\xbf\xbf", "\xef\xbb\xbf", "\xc2\x80", "\xdf\xbf", "\xe0\xa0\x80",
    "\xf0\x90\x80\x80", std::string(1, '\0'), "\r\n", "\t", "\x7f", "\xf0\x9f\x99\x82"};

const unsigned char kBytes[] = {0,   1,   0x7f, 0x80, 0xff, 0xfe, '{', '}', '[', ']', '"', ':',
                                ',', '0', '1',  '9',  '-',  '.',  'e', 'E', '\\', ' ', '\n', 'u'};

std::size_t pos(Rng& r, const std::string& s) { return static_cast<std::size_t>(r.below(s.size() + 1)); }

/// A length for a range: mostly short, sometimes long.
std::size_t len(Rng& r, std::size_t max) {
  if (max == 0) return 0;
  const std::size_t cap = r.one_in(4) ? max : std::min<std::size_t>(max, 16);
  return 1 + static_cast<std::size_t>(r.below(cap));
}

template <class T>
const T& pick(Rng& r, const std::vector<T>& v) {
  return v[static_cast<std::size_t>(r.below(v.size()))];
}

// ---------------- byte level ----------------

void flip_bit(Rng& r, std::string& s) {
  if (s.empty()) return;
  s[r.below(s.size())] ^= static_cast<char>(1u << r.below(8));
}

void set_byte(Rng& r, std::string& s) {
  if (s.empty()) return;
  s[r.below(s.size())] = static_cast<char>(kBytes[r.below(sizeof kBytes)]);
}

void insert_token(Rng& r, std::string& s, const std::vector<std::string>& tokens) {
  s.insert(pos(r, s), pick(r, tokens));
}

void delete_range(Rng& r, std::string& s) {
  if (s.empty()) return;
  const std::size_t at = static_cast<std::size_t>(r.below(s.size()));
  s.erase(at, len(r, s.size() - at));
}

void duplicate_range(Rng& r, std::string& s) {
  if (s.empty()) return;
  const std::size_t at = static_cast<std::size_t>(r.below(s.size()));
  const std::string piece = s.substr(at, len(r, s.size() - at));
  const std::size_t copies = r.one_in(8) ? 1 + r.below(16) : 1;
  std::string many;
  for (std::size_t i = 0; i < copies; ++i) many += piece;
  s.insert(pos(r, s), many);
}

void insert_random(Rng& r, std::string& s) {
  std::string bytes(1 + r.below(8), '\0');
  for (char& c : bytes) c = static_cast<char>(r.below(256));
  s.insert(pos(r, s), bytes);
}

void truncate(Rng& r, std::string& s) { s.resize(static_cast<std::size_t>(r.below(s.size() + 1))); }

void splice(Rng& r, std::string& s, const std::string& other) {
  s = s.substr(0, pos(r, s)) + other.substr(pos(r, other));
}

void byte_op(Rng& r, std::string& s, const std::vector<std::string>& seeds, const std::vector<std::string>& tokens) {
  switch (r.below(8)) {
    case 0: flip_bit(r, s); break;
    case 1: set_byte(r, s); break;
    case 2: insert_token(r, s, tokens); break;
    case 3: delete_range(r, s); break;
    case 4: duplicate_range(r, s); break;
    case 5: insert_random(r, s); break;
    case 6: truncate(r, s); break;
    default: splice(r, s, pick(r, seeds)); break;
  }
}

// ---------------- JSON ----------------

/// [begin, end) of every run of number characters that holds a digit.
std::vector<std::pair<std::size_t, std::size_t>> numbers_in(const std::string& s) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  auto is_num = [](char c) { return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'; };
  for (std::size_t i = 0; i < s.size();) {
    if (!is_num(s[i])) {
      ++i;
      continue;
    }
    std::size_t j = i;
    bool digit = false;
    while (j < s.size() && is_num(s[j])) digit |= (s[j] >= '0' && s[j] <= '9'), ++j;
    if (digit) out.emplace_back(i, j);
    i = j;
  }
  return out;
}

/// A number replaced by an extreme one, or by a value of another type.
void replace_number(Rng& r, std::string& s) {
  const auto nums = numbers_in(s);
  if (nums.empty()) return insert_token(r, s, kNumbers);
  const auto [b, e] = pick(r, nums);
  static const std::vector<std::string> others = {"\"1\"", "null", "true", "[]", "{}", "[1]", "\"\""};
  s.replace(b, e - b, r.one_in(4) ? pick(r, others) : pick(r, kNumbers));
}

/// Thousands of levels of nesting (past any depth limit), closed or not.
void deep_nesting(Rng& r, std::string& s) {
  static const std::size_t depths[] = {63, 64, 65, 200, 5000, 40000};
  const std::size_t depth = depths[r.below(6)];
  const bool objects = r.one_in(2);
  std::string open, close;
  for (std::size_t i = 0; i < depth; ++i) open += objects ? "{\"a\":" : "[";
  if (r.one_in(2)) {
    open += "1";
    for (std::size_t i = 0; i < depth; ++i) close += objects ? "}" : "]";
  }
  s.insert(pos(r, s), open + close);
}

/// A number replaced by a huge array or a long string. Arrays stop at 8000 elements: each is an
/// allocation, which under `make sanitize` (whole-stack unwinding on every malloc) costs tens of
/// microseconds, and a longer array reaches no other code.
void huge_value(Rng& r, std::string& s) {
  static const std::size_t array_counts[] = {100, 1000, 8000}, string_counts[] = {100, 5000, 100000};
  std::string v;
  if (r.one_in(2)) {
    const std::size_t n = array_counts[r.below(3)];
    v = "[";
    for (std::size_t i = 0; i < n; ++i) v += i ? ",1" : "1";
    v += "]";
  } else {
    const std::size_t n = string_counts[r.below(3)];
    // Appended piece by piece: GCC 12 at -O3 warns falsely (-Wrestrict, bug 105651) on the + chain.
    v.assign(1, '"');
    v.append(n, r.one_in(2) ? 'a' : '\xc3');
    if (r.one_in(2)) v += '\xa9';
    v += '"';
  }
  const auto nums = numbers_in(s);
  if (nums.empty()) return void(s.insert(pos(r, s), v));
  const auto [b, e] = pick(r, nums);
  s.replace(b, e - b, v);
}

/// A key of some object written a second time at the start of the object before it.
void repeat_key(Rng& r, std::string& s) {
  std::vector<std::pair<std::size_t, std::size_t>> keys;  // ["key", ...":]
  for (std::size_t i = s.find('"'); i != std::string::npos && i + 1 < s.size(); i = s.find('"', i + 1)) {
    const std::size_t end = s.find('"', i + 1);
    if (end == std::string::npos) break;
    std::size_t after = end + 1;
    while (after < s.size() && s[after] == ' ') ++after;
    if (after < s.size() && s[after] == ':') keys.emplace_back(i, end + 1);
    i = end;
  }
  if (keys.empty()) return;
  const auto [b, e] = pick(r, keys);
  const std::size_t brace = s.rfind('{', b);
  if (brace == std::string::npos) return;
  s.insert(brace + 1, s.substr(b, e - b) + ": 0, ");
}

void json_op(Rng& r, std::string& s, const std::vector<std::string>& seeds) {
  switch (r.below(10)) {
    case 0: case 1: case 2: replace_number(r, s); break;
    case 3: deep_nesting(r, s); break;
    case 4: huge_value(r, s); break;
    case 5: repeat_key(r, s); break;
    default: byte_op(r, s, seeds, kTokens); break;
  }
}

// ---------------- safetensors ----------------

std::uint64_t read_le64(const std::string& s) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[static_cast<std::size_t>(i)]);
  return v;
}

void write_le64(std::string& s, std::uint64_t v) {
  for (std::size_t i = 0; i < 8; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

/// The array after `"<field>":` replaced by a list of extreme sizes: shapes whose product overflows
/// unless a 0 comes first (or last), offsets at the edges of 64 bits.
void rewrite_array(Rng& r, std::string& s, const char* field) {
  std::vector<std::size_t> at;
  for (std::size_t i = s.find(field); i != std::string::npos; i = s.find(field, i + 1)) at.push_back(i);
  if (at.empty()) return;
  const std::size_t open = s.find('[', at[r.below(at.size())]);
  const std::size_t close = open == std::string::npos ? open : s.find(']', open);
  if (close == std::string::npos) return;
  static const std::vector<std::string> sizes = {"0", "1", "2", "4", "8", "2147483648", "4294967296", "3037000500",
                                                 "4611686018427387904", "9223372036854775807", "18446744073709551615"};
  static const std::vector<std::string> huge = {"2147483648", "4294967296", "3037000500", "4611686018427387904",
                                                "9223372036854775807"};
  // Half the lists are huge sizes with one 0 first or last: the element count is 0, but the sizes
  // multiply past 2^63 before the 0 is reached, from one end or the other.
  const bool zero = r.one_in(2);
  std::vector<std::string> dims;
  for (std::size_t i = 0, n = r.below(6); i < n; ++i) dims.push_back(pick(r, zero ? huge : sizes));
  if (zero) dims.insert(r.one_in(2) ? dims.begin() : dims.end(), "0");
  std::string list = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) list += (i ? "," : "") + dims[i];
  s.replace(open, close + 1 - open, list + "]");
  // With a 0 in the shape, offsets [0, 0] make the entry consistent (and first in the data), so the
  // shape reaches the code that allocates the tensor.
  const std::size_t offsets = s.find("\"data_offsets\"", open), end = s.find('}', open);
  if (zero && r.one_in(2) && offsets < end) {
    const std::size_t o = s.find('[', offsets), c = o == std::string::npos ? o : s.find(']', o);
    if (c != std::string::npos) s.replace(o, c + 1 - o, "[0,0]");
  }
}

/// The 8-byte header length set to a value at an edge.
void set_header_length(Rng& r, std::string& s) {
  if (s.size() < 8) return;
  const std::uint64_t n = read_le64(s), size = s.size();
  const std::uint64_t values[] = {0, 1, 2, 7, 8, n - 1, n + 1, n - 8, n + 8, size - 8, size - 7, size, size + 1,
                                  1ull << 31, 1ull << 32, (1ull << 63) - 1, 1ull << 63, ~0ull, ~0ull - 7};
  write_le64(s, values[r.below(sizeof values / sizeof values[0])]);
}

/// A JSON or byte mutation inside the header, with the length rewritten to match.
void mutate_header(Rng& r, std::string& s, const std::vector<std::string>& seeds) {
  if (s.size() < 8) return byte_op(r, s, seeds, kTokens);
  const std::uint64_t n = read_le64(s);
  if (n > s.size() - 8) return json_op(r, s, seeds);
  std::string header = s.substr(8, n), data = s.substr(8 + n);
  switch (r.below(6)) {
    case 0: rewrite_array(r, header, "\"shape\""); break;
    case 1: rewrite_array(r, header, "\"data_offsets\""); break;
    default: json_op(r, header, seeds); break;
  }
  std::string out(8, '\0');
  write_le64(out, header.size());
  s = out + header + data;
}

// ---------------- text ----------------

void text_op(Rng& r, std::string& s, const std::vector<std::string>& seeds) {
  switch (r.below(6)) {
    case 0: case 1: insert_token(r, s, kUtf8); break;
    case 2: {  // a long run of one character (a huge code point's index, a long line)
      const std::string c = r.one_in(2) ? std::string(1, static_cast<char>('a' + r.below(26))) : pick(r, kUtf8);
      std::string run;
      for (std::size_t i = 0, n = 1 + r.below(4000); i < n; ++i) run += c;
      s.insert(pos(r, s), run);
      break;
    }
    default: byte_op(r, s, seeds, kUtf8); break;
  }
}

}  // namespace

std::string mutate(const std::vector<std::string>& seeds, InputKind kind, std::uint64_t campaign_seed,
                   std::uint64_t index, std::size_t max_size) {
  Rng r(campaign_seed ^ (index * 0xD1B54A32D192ED03ull));
  std::string s = pick(r, seeds);
  for (std::uint64_t k = 0, n = 1 + r.below(4); k < n; ++k) {
    switch (kind) {
      case InputKind::json:
        json_op(r, s, seeds);
        break;
      case InputKind::safetensors: {
        const std::uint64_t op = r.below(20);
        if (op < 5) set_header_length(r, s);
        else if (op < 13) mutate_header(r, s, seeds);
        else byte_op(r, s, seeds, kTokens);
        break;
      }
      case InputKind::text:
        text_op(r, s, seeds);
        break;
    }
    if (s.size() > max_size) s.resize(max_size);
  }
  return s;
}

}  // namespace mt_fuzz

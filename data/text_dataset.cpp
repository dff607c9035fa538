/// \file text_dataset.cpp
#include "data/text_dataset.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace minitorch::data {

const char* split_name(Split split) { return split == Split::train ? "train" : "val"; }

std::string read_text_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw std::runtime_error("data file '" + path + "' not found");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("data file '" + path + "' cannot be opened for reading");
  std::ostringstream buf;
  buf << in.rdbuf();
  std::string text = std::move(buf).str();
  if (text.empty()) throw std::runtime_error("data file '" + path + "' is empty");
  return text;
}

TextDataset TextDataset::load(const std::string& path, const std::string& tokenizer_kind,
                              std::int64_t block_size) {
  return from_text(read_text_file(path), tokenizer_kind, block_size, path);
}

TextDataset TextDataset::from_text(std::string_view text, const std::string& tokenizer_kind, std::int64_t block_size,
                                   const std::string& source) {
  std::shared_ptr<const Tokenizer> tok;
  try {
    tok = make_tokenizer(tokenizer_kind, text);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error("data file '" + source + "': " + e.what());
  }
  return from_text(text, std::move(tok), block_size, source);
}

TextDataset TextDataset::load(const std::string& path, std::shared_ptr<const Tokenizer> tokenizer,
                              std::int64_t block_size) {
  return from_text(read_text_file(path), std::move(tokenizer), block_size, path);
}

TextDataset TextDataset::from_text(std::string_view text, std::shared_ptr<const Tokenizer> tokenizer,
                                   std::int64_t block_size, const std::string& source) {
  if (!tokenizer) throw std::invalid_argument("TextDataset: no tokenizer given");
  if (block_size < 1)
    throw std::invalid_argument("TextDataset: block_size must be at least 1, got " + std::to_string(block_size));
  std::vector<std::int32_t> ids;
  try {
    ids = tokenizer->encode(text);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error("data file '" + source + "': " + e.what());
  }
  // nanoGPT: train = data[:int(n*0.9)], val = data[int(n*0.9):]; integer arithmetic avoids any
  // floating-point rounding at the boundary.
  const std::size_t n = ids.size();
  const std::size_t n_train = n * 9 / 10;
  TextDataset ds;
  ds.source_ = source;
  ds.tokenizer_ = std::move(tokenizer);
  ds.train_ = std::make_shared<const std::vector<std::int32_t>>(ids.begin(), ids.begin() + n_train);
  ds.val_ = std::make_shared<const std::vector<std::int32_t>>(ids.begin() + n_train, ids.end());
  for (Split s : {Split::train, Split::val}) {
    std::int64_t have = ds.size(s);
    if (have < block_size + 2)
      throw std::runtime_error("data file '" + source + "': the " + split_name(s) + " split has " +
                               std::to_string(have) + " tokens (of " + std::to_string(n) +
                               "), fewer than block_size + 2 = " + std::to_string(block_size + 2) +
                               "; use a longer text or a smaller block_size");
  }
  return ds;
}

}  // namespace minitorch::data

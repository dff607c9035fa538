// TextDataset: file errors, the fixed 90/10 split, and tokenizers given by name or restored.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <unistd.h>

#include "data/text_dataset.h"
#include "test_util.h"

using namespace minitorch::data;
namespace fs = std::filesystem;

using mt_test::contains;
using mt_test::error_of;
using mt_test::TempDir;

namespace {

std::string corpus() {
  std::string text;
  for (int i = 0; i < 40; ++i) text += "In the beginning God created the heaven and the earth. Ἐν ἀρχῇ 🙂\n";
  return text;
}
}  // namespace

TEST(L03_DataTextDataset, FromTextByKindIsWhatLoadDoesAfterReading) {
  // load(path, kind, block) reads the file and calls from_text(text, kind, block, path), the entry the
  // text fuzz target feeds from memory: same tokens, same errors naming the source.
  TempDir tmp;
  std::string text;
  for (int i = 0; i < 20; ++i) text += "In the beginning God created the heaven and the earth.\n";
  const std::string path = tmp.write("t.txt", text);
  for (const char* kind : {"char", "byte"}) {
    auto a = TextDataset::load(path, kind, 8);
    auto b = TextDataset::from_text(text, kind, 8, path);
    EXPECT_EQ(a.tokens(Split::train), b.tokens(Split::train)) << kind;
    EXPECT_EQ(a.tokens(Split::val), b.tokens(Split::val)) << kind;
  }
  const std::string msg = error_of([] { TextDataset::from_text("ab\xff", "char", 8, "mem.txt"); });
  EXPECT_EQ(msg, "data file 'mem.txt': invalid UTF-8 at byte offset 2 (byte 0xFF: not a valid lead byte)");
  EXPECT_TRUE(contains(error_of([] { TextDataset::from_text("abc", "bpe", 8, "mem.txt"); }),
                       "data file 'mem.txt': unknown tokenizer 'bpe'"));
}

TEST(L03_DataTextDataset, SplitsFirstNinetyPercentTrain) {
  TempDir tmp;
  const std::string text = corpus();
  auto ds = TextDataset::load(tmp.write("corpus.txt", text), "char", 16);
  const std::int64_t n = static_cast<std::int64_t>(utf8_decode(text).size());
  EXPECT_EQ(ds.size(Split::train), n * 9 / 10);
  EXPECT_EQ(ds.size(Split::train) + ds.size(Split::val), n);
  // Train is the beginning of the text, val the end, in order: decoding both gives the text back.
  EXPECT_EQ(ds.tokenizer().decode(ds.tokens(Split::train)) + ds.tokenizer().decode(ds.tokens(Split::val)), text);
  EXPECT_EQ(ds.tokenizer().kind(), "char");
  EXPECT_EQ(ds.source(), (tmp.dir / "corpus.txt").string());
}

TEST(L03_DataTextDataset, ByteTokenizerSplitsBytes) {
  TempDir tmp;
  const std::string text = corpus();
  auto ds = TextDataset::load(tmp.write("c.txt", text), "byte", 16);
  const auto n = static_cast<std::int64_t>(text.size());
  EXPECT_EQ(ds.size(Split::train), n * 9 / 10);
  EXPECT_EQ(ds.size(Split::val), n - n * 9 / 10);
  EXPECT_EQ(ds.tokenizer().vocab_size(), 256);
}

TEST(L03_DataTextDataset, MissingAndEmptyFiles) {
  TempDir tmp;
  const std::string missing = (tmp.dir / "nope.txt").string();
  EXPECT_EQ(error_of([&] { TextDataset::load(missing, "char", 8); }), "data file '" + missing + "' not found");
  const std::string empty = tmp.write("empty.txt", "");
  EXPECT_EQ(error_of([&] { TextDataset::load(empty, "char", 8); }), "data file '" + empty + "' is empty");
}

TEST(L03_DataTextDataset, TooFewTokensForBlockSize) {
  TempDir tmp;
  // 100 characters: val gets 10, fewer than block_size + 2 = 18.
  const std::string path = tmp.write("short.txt", std::string(100, 'a'));
  std::string msg = error_of([&] { TextDataset::load(path, "char", 16); });
  EXPECT_TRUE(contains(msg, path) && contains(msg, "val split has 10 tokens") && contains(msg, "block_size + 2 = 18"))
      << msg;
  EXPECT_NO_THROW(TextDataset::load(path, "char", 8));  // 10 >= 8 + 2
}

TEST(L03_DataTextDataset, InvalidUtf8NamesFileAndOffset) {
  TempDir tmp;
  const std::string path = tmp.write("bad.txt", "good text\xff" + std::string(100, '.'));
  std::string msg = error_of([&] { TextDataset::load(path, "char", 2); });
  EXPECT_TRUE(contains(msg, path) && contains(msg, "byte offset 9")) << msg;
  EXPECT_NO_THROW(TextDataset::load(path, "byte", 2));  // bytes need no UTF-8
}

TEST(L03_DataTextDataset, RestoredTokenizerKeepsIdsAndRejectsUnknownCharacters) {
  TempDir tmp;
  const std::string text = corpus();
  const std::string path = tmp.write("c.txt", text);
  auto ds = TextDataset::load(path, "char", 16);
  auto restored = tokenizer_from_string("char", ds.tokenizer().to_string());
  auto again = TextDataset::load(path, restored, 16);
  EXPECT_EQ(again.tokens(Split::train), ds.tokens(Split::train));
  EXPECT_EQ(again.tokens(Split::val), ds.tokens(Split::val));
  const std::string other = tmp.write("other.txt", text + "Zebra");
  std::string msg = error_of([&] { TextDataset::load(other, restored, 16); });
  EXPECT_TRUE(contains(msg, other) && contains(msg, "'Z' (U+005A)")) << msg;
}

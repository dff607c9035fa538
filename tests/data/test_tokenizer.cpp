// Char and byte tokenizers: UTF-8 round trips, vocabulary order, serialisation, clear errors.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "data/tokenizer.h"
#include "test_util.h"

using namespace minitorch::data;

using mt_test::contains;
using mt_test::error_of;

TEST(L03_DataTokenizer, CharRoundTripsMultiByteUtf8) {
  // 1-, 2-, 3- and 4-byte characters.
  const std::string text = "In the beginning — «Γένεσις» 創世記 🙂\nAnd God said, Let there be light: é!";
  CharTokenizer tok(text);
  std::vector<std::int32_t> ids = tok.encode(text);
  EXPECT_EQ(ids.size(), utf8_decode(text).size());  // one token per code point, not per byte
  EXPECT_LT(ids.size(), text.size());
  EXPECT_EQ(tok.decode(ids), text);
  for (auto id : ids) {
    EXPECT_GE(id, 0);
    EXPECT_LT(id, tok.vocab_size());
  }
}

TEST(L03_DataTokenizer, CharVocabularyIsSortedCodePoints) {
  CharTokenizer tok("hello world");
  EXPECT_EQ(tok.vocab_size(), 8);                     // ' ' d e h l o r w
  EXPECT_EQ(tok.to_string(), " dehlorw");
  EXPECT_EQ(tok.encode("hold"), (std::vector<std::int32_t>{3, 5, 4, 1}));
  CharTokenizer uni("é€a🙂");                         // U+00E9, U+20AC, 'a', U+1F642
  EXPECT_EQ(uni.code_point(0), U'a');
  EXPECT_EQ(uni.code_point(1), U'é');
  EXPECT_EQ(uni.code_point(2), U'€');
  EXPECT_EQ(uni.code_point(3), U'🙂');
}

TEST(L03_DataTokenizer, CharSerialisesToPlainUtf8) {
  const std::string text = "Καὶ εἶπεν ὁ Θεός· γενηθήτω φῶς 🙂";
  CharTokenizer tok(text);
  std::string vocab = tok.to_string();
  EXPECT_NO_THROW(utf8_decode(vocab));                // valid UTF-8: storable as checkpoint metadata
  auto back = tokenizer_from_string("char", vocab);
  EXPECT_EQ(back->vocab_size(), tok.vocab_size());
  EXPECT_EQ(back->encode(text), tok.encode(text));
  EXPECT_EQ(back->kind(), "char");
  EXPECT_TRUE(contains(error_of([] { CharTokenizer::from_string("ba"); }), "increasing"));
  EXPECT_TRUE(contains(error_of([] { CharTokenizer::from_string("aa"); }), "increasing"));
  EXPECT_THROW(CharTokenizer::from_string(""), std::runtime_error);
}

TEST(L03_DataTokenizer, UnknownCharacterNamesIt) {
  CharTokenizer tok("abc");
  std::string msg = error_of([&] { tok.encode("abzc"); });
  EXPECT_TRUE(contains(msg, "'z' (U+007A)")) << msg;
  EXPECT_TRUE(contains(msg, "byte offset 2")) << msg;
  msg = error_of([&] { tok.encode("aé"); });
  EXPECT_TRUE(contains(msg, "'é' (U+00E9)")) << msg;
  msg = error_of([&] { tok.encode("a\n"); });
  EXPECT_TRUE(contains(msg, "U+000A")) << msg;        // control characters by code only
}

TEST(L03_DataTokenizer, InvalidUtf8NamesTheByteOffset) {
  EXPECT_TRUE(contains(error_of([] { utf8_decode("ab\xff"); }), "byte offset 2")) << error_of([] { utf8_decode("ab\xff"); });
  EXPECT_TRUE(contains(error_of([] { utf8_decode("a\xe6\x97"); }), "byte offset 1"));        // truncated
  EXPECT_TRUE(contains(error_of([] { utf8_decode("\xc0\xaf"); }), "byte offset 0"));         // overlong '/'
  EXPECT_TRUE(contains(error_of([] { utf8_decode("xy\xed\xa0\x80"); }), "byte offset 2"));   // surrogate
  EXPECT_TRUE(contains(error_of([] { utf8_decode("\x80"); }), "continuation"));
  EXPECT_TRUE(contains(error_of([] { utf8_decode("\xf4\x90\x80\x80"); }), "U+10FFFF"));
  EXPECT_TRUE(contains(error_of([] { CharTokenizer t("ok\xfe"); }), "invalid UTF-8 at byte offset 2"));
}

TEST(L03_DataTokenizer, DecodeRejectsIdsOutsideVocabulary) {
  CharTokenizer tok("ab");
  EXPECT_THROW(tok.decode({0, 2}), std::runtime_error);
  EXPECT_THROW(tok.decode({-1}), std::runtime_error);
  ByteTokenizer bytes;
  EXPECT_THROW(bytes.decode({256}), std::runtime_error);
}

TEST(L03_DataTokenizer, ByteTokenizerEncodesAnyBytes) {
  ByteTokenizer tok;
  EXPECT_EQ(tok.vocab_size(), 256);
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);  // includes NUL and invalid UTF-8
  auto ids = tok.encode(all);
  ASSERT_EQ(ids.size(), 256u);
  for (int b = 0; b < 256; ++b) EXPECT_EQ(ids[static_cast<std::size_t>(b)], b);
  EXPECT_EQ(tok.decode(ids), all);
  EXPECT_EQ(tok.encode("é"), (std::vector<std::int32_t>{0xC3, 0xA9}));
}

TEST(L03_DataTokenizer, UnknownKindQuotesAtMost80Characters) {
  // The tokenizer kind comes from checkpoint metadata: a mutated one must not be quoted whole.
  const std::string msg = error_of([] { tokenizer_from_string(std::string(50000, 'c'), "ab"); });
  EXPECT_TRUE(contains(msg, "unknown tokenizer 'cccc")) << msg.substr(0, 300);
  EXPECT_TRUE(contains(msg, "...'; valid: char, byte")) << msg.substr(0, 300);
  EXPECT_LT(msg.size(), 150u);
}

TEST(L03_DataTokenizer, ChosenByName) {
  EXPECT_EQ(make_tokenizer("char", "abc")->vocab_size(), 3);
  EXPECT_EQ(make_tokenizer("byte", "abc")->vocab_size(), 256);
  EXPECT_EQ(tokenizer_from_string("byte", "")->kind(), "byte");
  std::string msg = error_of([] { make_tokenizer("bpe", "abc"); });
  EXPECT_TRUE(contains(msg, "'bpe'") && contains(msg, "char, byte")) << msg;
}

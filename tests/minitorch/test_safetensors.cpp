// safetensors: bit-exact round trips, the on-disk layout, every corrupt-file case and atomic writes.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <unistd.h>

#include "minitorch/random.h"
#include "minitorch/safetensors.h"
#include "test_util.h"

using namespace minitorch;
namespace fs = std::filesystem;

using mt_test::contains;
using mt_test::error_of;
using mt_test::TempDir;

namespace {

std::string bytes_of(const Tensor& t) {
  Tensor c = t.contiguous();
  return std::string(static_cast<const char*>(c.raw_data()), c.nbytes());
}

/// A file with this header text (padded to 8) and `data_bytes` bytes of data after it.
std::string write_raw(const std::string& path, std::string header, std::size_t data_bytes) {
  header.append((8 - header.size() % 8) % 8, ' ');
  std::uint64_t n = header.size();
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << header << std::string(data_bytes, '\x01');
  return path;
}

/// Loading must fail with a message naming the path and containing `what`.
void expect_load_error(const std::string& path, const std::string& what) {
  std::string msg = error_of([&] { load_safetensors(path); });
  EXPECT_TRUE(contains(msg, path)) << msg;
  EXPECT_TRUE(contains(msg, what)) << "expected '" << what << "' in: " << msg;
}
}  // namespace

TEST(L03_Safetensors, RoundTripIsBitExact) {
  TempDir tmp;
  Generator gen(7);
  Tensor w = Tensor::randn({3, 5}, gen);
  Tensor h = Tensor::randn({4, 2, 3}, gen, 0.f, 1.f, DType::bf16);
  Tensor ids = Tensor::from_ints({1, -2, 2147483647, -2147483647 - 1}, {2, 2});
  Tensor s = Tensor::scalar(3.5f);
  Tensor none = Tensor::empty({0, 4});
  Tensor wt = w.transpose(0, 1);  // a non-contiguous view: saved as its contiguous copy
  std::map<std::string, std::string> meta = {{"step", "100"}, {"vocab", "\n !Ἐν🙂"}, {"config", "{\"a\": 1}"}};
  const std::string path = tmp.path("ck.safetensors");
  save_safetensors(path, {{"w", w}, {"h", h}, {"ids", ids}, {"s", s}, {"none", none}, {"wt", wt}}, meta);

  SafetensorsFile f = load_safetensors(path);
  ASSERT_EQ(f.tensors.size(), 6u);
  const char* order[] = {"w", "h", "ids", "s", "none", "wt"};  // file order = save order
  for (int i = 0; i < 6; ++i) EXPECT_EQ(f.tensors[static_cast<std::size_t>(i)].first, order[i]);
  EXPECT_EQ(f.metadata, meta);
  for (auto [name, orig] : std::vector<std::pair<std::string, Tensor>>{
           {"w", w}, {"h", h}, {"ids", ids}, {"s", s}, {"none", none}, {"wt", wt}}) {
    const Tensor& got = f.get(name);
    EXPECT_EQ(got.dtype(), orig.dtype()) << name;
    EXPECT_EQ(got.shape(), orig.shape()) << name;
    EXPECT_TRUE(got.is_contiguous()) << name;
    EXPECT_EQ(bytes_of(got), bytes_of(orig)) << name;  // bit-exact
  }
  EXPECT_TRUE(f.contains("wt"));
  EXPECT_FALSE(f.contains("nope"));
  std::string msg = error_of([&] { f.get("nope"); });
  EXPECT_TRUE(contains(msg, "nope") && contains(msg, path)) << msg;
}

TEST(L03_Safetensors, LayoutFollowsTheFormat) {
  TempDir tmp;
  const std::string path = tmp.path("a.safetensors");
  Tensor a = Tensor::from_vector({1.f, 2.f, 3.f}, {3});
  Tensor b = Tensor::from_vector({1.f, 2.f}, {2}, DType::bf16);
  save_safetensors(path, {{"a", a}, {"b", b}}, {{"k", "v"}});
  std::ifstream in(path, std::ios::binary);
  std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::uint64_t n;
  std::memcpy(&n, file.data(), 8);
  EXPECT_EQ(n % 8, 0u);                       // header padded so tensor data is 8-byte aligned
  EXPECT_EQ(file.size(), 8 + n + 12 + 4);
  EXPECT_EQ(file[8], '{');
  auto header = nlohmann::json::parse(file.substr(8, n));
  EXPECT_EQ(header["a"]["dtype"], "F32");
  EXPECT_EQ(header["a"]["shape"], nlohmann::json::array({3}));
  EXPECT_EQ(header["a"]["data_offsets"], nlohmann::json::array({0, 12}));
  EXPECT_EQ(header["b"]["dtype"], "BF16");
  EXPECT_EQ(header["b"]["data_offsets"], nlohmann::json::array({12, 16}));
  EXPECT_EQ(header["__metadata__"]["k"], "v");
  float first;
  std::memcpy(&first, file.data() + 8 + n, 4);  // raw little-endian data right after the header
  EXPECT_EQ(first, 1.f);
  EXPECT_EQ(safetensors_dtype_name(DType::i32), std::string("I32"));
}

TEST(L03_Safetensors, CorruptFilesGiveOneClearError) {
  TempDir tmp;
  const std::string one = R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  expect_load_error(tmp.path("missing.safetensors"), "not found");
  {
    std::ofstream(tmp.path("short")) << "abc";
    expect_load_error(tmp.path("short"), "too short");
  }
  {
    std::ofstream out(tmp.path("biglen"), std::ios::binary);
    std::uint64_t n = 1'000'000;
    out.write(reinterpret_cast<const char*>(&n), 8);
    out << "{}      ";
  }
  expect_load_error(tmp.path("biglen"), "header length 1000000 is beyond the file size 16");
  expect_load_error(write_raw(tmp.path("json"), "{\"t\": {\"dtype\": ", 8), "malformed header JSON");
  expect_load_error(write_raw(tmp.path("dtype"), R"({"t":{"dtype":"F64","shape":[2],"data_offsets":[0,16]}})", 16),
                    "unsupported dtype 'F64'");
  expect_load_error(write_raw(tmp.path("range"), one, 4), "beyond the 4 data bytes");
  expect_load_error(write_raw(tmp.path("size"), R"({"t":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
                    "needs 12");
  expect_load_error(write_raw(tmp.path("overlap"),
                              R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},
                                  "b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})",
                              24),
                    "overlaps");
  expect_load_error(write_raw(tmp.path("hole"), R"({"t":{"dtype":"I32","shape":[1],"data_offsets":[4,8]}})", 8),
                    "hole of 4 bytes");
  expect_load_error(write_raw(tmp.path("trailing"), one, 11), "3 unexpected bytes after the last tensor");
  expect_load_error(write_raw(tmp.path("backwards"), R"({"t":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}})", 4),
                    "end before begin");
  expect_load_error(write_raw(tmp.path("negshape"), R"({"t":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})", 0),
                    "non-negative integer");
  expect_load_error(write_raw(tmp.path("meta"), R"({"__metadata__":{"k":1}})", 0), "not a string");
  expect_load_error(write_raw(tmp.path("field"),
                              R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"extra":1}})", 4),
                    "unknown field 'extra'");
  expect_load_error(write_raw(tmp.path("array"), "[1, 2]", 0), "must be an object");
  // A shape whose byte size overflows 64 bits must not wrap around to the offsets' size.
  expect_load_error(write_raw(tmp.path("huge"),
                              R"({"t":{"dtype":"F32","shape":[4611686018427387904, 4],"data_offsets":[0,0]}})", 0),
                    "more than 2^64");
  // L03_Fuzz.Safetensors under UBSan: a 0 made the byte size 0, and the other sizes multiplied past
  // 2^63 in Tensor's int64 arithmetic (signed overflow in contiguous_strides and shape_numel).
  expect_load_error(write_raw(tmp.path("zero"),
                              R"({"none":{"dtype":"F32","shape":[0,4294967296,3037000500,4611686018427387904,)"
                              R"(4611686018427387904],"data_offsets":[0,0]}})", 0),
                    "tensor 'none': shape [0,4294967296,3037000500,4611686018427387904,4611686018427387904] is "
                    "too large: its non-zero sizes multiply past 2^63 - 1");
  expect_load_error(write_raw(tmp.path("zero-last"),
                              R"({"t":{"dtype":"I32","shape":[4611686018427387904,2,0],"data_offsets":[0,0]}})", 0),
                    "multiply past 2^63 - 1");
  // Sizes whose product fits stay valid with a 0 among them.
  EXPECT_EQ(load_safetensors(write_raw(tmp.path("zero-ok"),
                                       R"({"t":{"dtype":"F32","shape":[0,4611686018427387904],"data_offsets":[0,0]}})", 0))
                .get("t")
                .numel(),
            0);
}

TEST(L03_Safetensors, FailedWriteLeavesNoTempFileAndKeepsTheOldFile) {
  TempDir tmp;
  Tensor t = Tensor::from_vector({1.f, 2.f}, {2});
  // Directory does not exist: the temp file cannot even be created.
  const std::string nodir = tmp.path("no/such/dir/x.safetensors");
  std::string msg = error_of([&] { save_safetensors(nodir, {{"t", t}}); });
  EXPECT_TRUE(contains(msg, nodir)) << msg;
  EXPECT_FALSE(fs::exists(tmp.dir / "no"));
  // The target is a directory: everything is written, the rename fails, the temp file must go.
  fs::create_directories(tmp.dir / "target.safetensors" / "sub");
  msg = error_of([&] { save_safetensors(tmp.path("target.safetensors"), {{"t", t}}); });
  EXPECT_TRUE(contains(msg, "rename")) << msg;
  for (const auto& e : fs::directory_iterator(tmp.dir))
    EXPECT_FALSE(contains(e.path().filename().string(), ".tmp.")) << "left behind: " << e.path();
  // An invalid save (duplicate name) leaves an existing checkpoint as it was.
  const std::string good = tmp.path("good.safetensors");
  save_safetensors(good, {{"t", t}});
  EXPECT_THROW(save_safetensors(good, {{"a", t}, {"a", t}}), std::runtime_error);
  EXPECT_THROW(save_safetensors(good, {{"__metadata__", t}}), std::runtime_error);
  EXPECT_EQ(load_safetensors(good).get("t").to_vector(), (std::vector<float>{1.f, 2.f}));
  // Overwriting replaces the whole file.
  save_safetensors(good, {{"u", Tensor::from_ints({5}, {1})}});
  auto f = load_safetensors(good);
  EXPECT_FALSE(f.contains("t"));
  EXPECT_EQ(f.get("u").to_int_vector(), (std::vector<std::int32_t>{5}));
  for (const auto& e : fs::directory_iterator(tmp.dir))
    EXPECT_FALSE(contains(e.path().filename().string(), ".tmp.")) << "left behind: " << e.path();
}

TEST(L03_Safetensors, DeeplyNestedHeaderIsOneClearError) {
  // 100 000 levels used to reach "expected an object, got " + dump(): a stack overflow (SIGSEGV).
  TempDir dir;
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  expect_load_error(write_raw(dir.path("deep.safetensors"), R"({"w": )" + deep + "}", 0),
                    "JSON nested deeper than 64 levels");
  // Within the bound, a wrong entry is quoted as an excerpt, not dumped whole.
  std::string wide = "[";
  for (int i = 0; i < 10000; ++i) wide += "1,";
  wide.back() = ']';
  std::string msg = error_of([&] { load_safetensors(write_raw(dir.path("wide.safetensors"), R"({"w": )" + wide + "}", 0)); });
  EXPECT_TRUE(contains(msg, "tensor 'w': expected an object, got [1,1,1,")) << msg.substr(0, 300);
  EXPECT_LT(msg.size(), 300u);
}

TEST(L03_Safetensors, ErrorsQuoteAtMost80CharactersOfANameFromTheFile) {
  // L03_Fuzz.Safetensors found messages of 10 000 to 80 000 characters: a mutated dtype ('F[1,1,1,...'),
  // field name or tensor name was quoted whole.
  TempDir tmp;
  std::string longname = "F[";
  for (int i = 0; i < 20000; ++i) longname += "1,";
  longname += "1]";
  const std::string entry = R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
  const std::pair<std::string, std::string> cases[] = {
      {R"({"w":{"dtype":")" + longname + R"(","shape":[1],"data_offsets":[0,4]}})", "tensor 'w': unsupported dtype 'F[1,1,1,"},
      {R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4],")" + longname + R"(":1}})", "tensor 'w': unknown field 'F[1,1,"},
      {R"({"__metadata__":{")" + longname + R"(":1}})", "__metadata__ value of 'F[1,1,"},
      {R"({")" + longname + R"(":)" + entry + R"(,"b":)" + entry + "}", "overlaps tensor 'F[1,1,"},
  };
  for (const auto& [header, what] : cases) {
    const std::string msg = error_of([&, &header = header] { load_safetensors(write_raw(tmp.path("long.safetensors"), header, 4)); });
    EXPECT_TRUE(contains(msg, what)) << msg.substr(0, 300);
    EXPECT_TRUE(contains(msg, "...")) << msg.substr(0, 300);
    EXPECT_LT(msg.size(), 300u) << msg.substr(0, 300);
  }
}

TEST(L03_Safetensors, LoadsFromAStreamWithTheSameChecks) {
  // The path version opens the file and reads it through this one, which the fuzz targets feed from memory.
  TempDir tmp;
  const std::string path = tmp.path("s.safetensors");
  save_safetensors(path, {{"a", Tensor::from_vector({1.f, 2.f}, {2})}}, {{"k", "v"}});
  std::ifstream file(path, std::ios::binary);
  std::istringstream in(std::string((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>()));
  SafetensorsFile f = load_safetensors(in, "in-memory");
  EXPECT_EQ(f.path, "in-memory");
  EXPECT_EQ(f.get("a").to_vector(), (std::vector<float>{1.f, 2.f}));
  EXPECT_EQ(f.metadata.at("k"), "v");
  std::istringstream short_in(std::string("abc"));
  const std::string msg = error_of([&] { load_safetensors(short_in, "in-memory"); });
  EXPECT_EQ(msg, "safetensors file 'in-memory': file is 3 bytes, too short for the 8-byte header length");
}

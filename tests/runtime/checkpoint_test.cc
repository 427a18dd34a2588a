#include "runtime/checkpoint.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "core/framework/tensor_util.h"
#include "gtest/gtest.h"
#include "tests/util/file_formats.h"

namespace shardflow {
namespace {

bool Contains(const absl::Status& s, const std::string& part) {
  return s.message().find(part) != absl::string_view::npos;
}
#define EXPECT_MESSAGE_HAS(status, part) \
  EXPECT_TRUE(Contains(status, part)) << "message lacks \"" << (part) << "\": " << (status)

// A checkpoint encoded by hand from the format in checkpoint.h, independent of the writer.
struct RawVariable {
  std::string name;
  uint32_t dtype;
  std::vector<int64_t> dims;
  std::string data;
};

std::string EncodeCheckpoint(const std::vector<RawVariable>& variables, uint32_t version = 1) {
  using test::AppendLittleEndian;
  std::string out = "SFCKPT01";
  AppendLittleEndian(&out, version, 4);
  AppendLittleEndian(&out, variables.size(), 8);
  AppendLittleEndian(&out, test::Crc32(out), 4);
  for (const RawVariable& v : variables) {
    std::string entry;
    AppendLittleEndian(&entry, v.name.size(), 4);
    entry += v.name;
    AppendLittleEndian(&entry, v.dtype, 4);
    AppendLittleEndian(&entry, v.dims.size(), 4);
    for (int64_t d : v.dims) AppendLittleEndian(&entry, static_cast<uint64_t>(d), 8);
    AppendLittleEndian(&entry, v.data.size(), 8);
    entry += v.data;
    AppendLittleEndian(&entry, test::Crc32(entry), 4);
    out += entry;
  }
  uint32_t file_crc = test::Crc32(out);
  out += "SFCKTAIL";
  AppendLittleEndian(&out, file_crc, 4);
  return out;
}

std::string FloatBytes(const std::vector<float>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * 4);
}

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "/checkpoint_test_XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  static std::string ReadAll(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  static void WriteAll(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  }
  std::vector<std::string> DirEntries() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) {
      names.push_back(e.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  // A small checkpoint: dense/w float [2,3], dense/b float [3], vocab string [2].
  static NamedTensors Small() {
    Tensor vocab(DT_STRING, TensorShape({2}));
    vocab.data<std::string>()[0] = "cat";
    vocab.data<std::string>()[1] = "";
    return {{"dense/w", Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}))},
            {"dense/b", Tensor::FromVector<float>({-1, 0, 1})},
            {"vocab", vocab}};
  }
  // Where the data of Small()'s dense/w starts: header, then name length, name, dtype, rank,
  // two dims and the data length.
  static constexpr size_t kDenseWDataOffset = 24 + 4 + 7 + 4 + 4 + 2 * 8 + 8;

  static void ExpectSame(const NamedTensors& got, const NamedTensors& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].first, want[i].first);
      EXPECT_TRUE(TensorsEqual(got[i].second, want[i].second))
          << want[i].first << ": got " << got[i].second.DebugString() << ", want "
          << want[i].second.DebugString();
    }
  }

  std::string dir_;
};

TEST_F(CheckpointTest, RoundTripOfEveryDtypeScalarsAndEmptyTensors) {
  Tensor strings(DT_STRING, TensorShape({2, 2}));
  strings.data<std::string>()[0] = "";
  strings.data<std::string>()[1] = std::string("a\0b", 3);
  strings.data<std::string>()[2] = std::string(1000, 'z');
  strings.data<std::string>()[3] = "ünïcode";
  Tensor bools = Tensor::FromVector<bool>({true, false, true});
  NamedTensors tensors = {
      {"f32", Tensor::FromVector<float>({1.5f, -0.0f, std::numeric_limits<float>::infinity()},
                                        TensorShape({3, 1}))},
      {"f64", Tensor::Scalar<double>(3.141592653589793)},
      {"i32", Tensor::FromVector<int32_t>({std::numeric_limits<int32_t>::min(), 0, 7})},
      {"i64", Tensor::FromVector<int64_t>({int64_t{1} << 62, -5})},
      {"u8", Tensor::FromVector<uint8_t>({0, 255})},
      {"i8", Tensor::FromVector<int8_t>({-128, 127})},
      {"bool", bools},
      {"bf16", Tensor::FromVector<bfloat16>({bfloat16(1.5f), bfloat16(-3.0f), bfloat16(1e30f)})},
      {"f16", Tensor::FromVector<half>({half(0.5f), half(-65504.0f)})},
      {"strings", strings},
      {"scalar_string", Tensor::Scalar<std::string>("hello")},
      {"scalar_i64", Tensor::Scalar<int64_t>(-1)},
      {"empty", Tensor(DT_FLOAT, TensorShape({0}))},
      {"empty_2d", Tensor(DT_INT64, TensorShape({3, 0}))},
      {"empty_strings", Tensor(DT_STRING, TensorShape({0, 4}))},
      {"a/very/long/scope/name/with spaces and ✓", Tensor::Scalar<float>(1)},
  };
  const std::string path = Path("model.ckpt");
  ASSERT_TRUE(SaveCheckpoint(path, tensors).ok());
  auto loaded = LoadCheckpoint(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ExpectSame(*loaded, tensors);

  ASSERT_TRUE(SaveCheckpoint(path, {}).ok());
  auto none = LoadCheckpoint(path);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());
}

TEST_F(CheckpointTest, FileIsExactlyTheDocumentedFormat) {
  const std::string path = Path("small.ckpt");
  ASSERT_TRUE(SaveCheckpoint(path, Small()).ok());
  std::string vocab_data;
  test::AppendLittleEndian(&vocab_data, 3, 8);
  vocab_data += "cat";
  test::AppendLittleEndian(&vocab_data, 0, 8);
  EXPECT_EQ(ReadAll(path),
            EncodeCheckpoint({{"dense/w", DT_FLOAT, {2, 3}, FloatBytes({1, 2, 3, 4, 5, 6})},
                              {"dense/b", DT_FLOAT, {3}, FloatBytes({-1, 0, 1})},
                              {"vocab", DT_STRING, {2}, vocab_data}}));
}

TEST_F(CheckpointTest, TruncationAtEveryOffsetIsAnErrorNeverAPartialLoad) {
  const std::string path = Path("small.ckpt");
  ASSERT_TRUE(SaveCheckpoint(path, Small()).ok());
  const std::string bytes = ReadAll(path);
  const std::string cut = Path("cut.ckpt");
  for (size_t size = 0; size < bytes.size(); ++size) {
    WriteAll(cut, bytes.substr(0, size));
    auto loaded = LoadCheckpoint(cut);
    ASSERT_FALSE(loaded.ok()) << "truncated to " << size << " bytes";
    EXPECT_EQ(loaded.status().code(), absl::StatusCode::kDataLoss) << loaded.status();
    EXPECT_MESSAGE_HAS(loaded.status(), "checkpoint '" + cut + "' is truncated");
  }
  WriteAll(cut, bytes.substr(0, kDenseWDataOffset + 5));
  EXPECT_MESSAGE_HAS(LoadCheckpoint(cut).status(),
                     "checkpoint '" + cut + "' is truncated in the data of variable 'dense/w'");
  WriteAll(cut, bytes.substr(0, 24 + 2));
  EXPECT_MESSAGE_HAS(LoadCheckpoint(cut).status(), "truncated in the header of the first variable");
  WriteAll(cut, bytes.substr(0, bytes.size() - 3));
  EXPECT_MESSAGE_HAS(LoadCheckpoint(cut).status(),
                     "truncated in the trailer (after the last variable 'vocab')");
}

TEST_F(CheckpointTest, AnyFlippedByteIsAnErrorAndDataCorruptionNamesTheVariable) {
  const std::string path = Path("small.ckpt");
  ASSERT_TRUE(SaveCheckpoint(path, Small()).ok());
  const std::string bytes = ReadAll(path);
  const std::string bad = Path("bad.ckpt");
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string flipped = bytes;
    flipped[i] ^= 0x10;
    WriteAll(bad, flipped);
    auto loaded = LoadCheckpoint(bad);
    ASSERT_FALSE(loaded.ok()) << "byte " << i << " flipped";
  }
  for (size_t i = kDenseWDataOffset; i < kDenseWDataOffset + 24; ++i) {
    std::string flipped = bytes;
    flipped[i] ^= 0x01;
    WriteAll(bad, flipped);
    absl::Status s = LoadCheckpoint(bad).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
    EXPECT_MESSAGE_HAS(
        s, "checkpoint '" + bad + "' is corrupt: variable 'dense/w' fails its checksum");
  }
  std::string header = bytes;
  header[12] ^= 0x01;  // the variable count
  WriteAll(bad, header);
  EXPECT_MESSAGE_HAS(LoadCheckpoint(bad).status(), "header fails its checksum");
  std::string trailer = bytes;
  trailer.back() ^= 0x01;
  WriteAll(bad, trailer);
  EXPECT_MESSAGE_HAS(LoadCheckpoint(bad).status(), "whole-file checksum does not match");
}

TEST_F(CheckpointTest, NotACheckpointMissingFileAndTrailingGarbage) {
  const std::string text = Path("notes.txt");
  WriteAll(text, "these are not the tensors you are looking for");
  absl::Status s = LoadCheckpoint(text).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_MESSAGE_HAS(s, "'" + text + "' is not a shardflow checkpoint");
  WriteAll(text, "SF");  // a prefix of the magic: a truncated checkpoint
  EXPECT_MESSAGE_HAS(LoadCheckpoint(text).status(), "is truncated in the header");
  WriteAll(text, "SX");
  EXPECT_MESSAGE_HAS(LoadCheckpoint(text).status(), "is not a shardflow checkpoint");

  s = LoadCheckpoint(Path("nothing.ckpt")).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_MESSAGE_HAS(s, "checkpoint '" + Path("nothing.ckpt") + "' does not exist");

  EXPECT_MESSAGE_HAS(LoadCheckpoint(dir_).status(), "is not a regular file");

  const std::string path = Path("small.ckpt");
  ASSERT_TRUE(SaveCheckpoint(path, Small()).ok());
  WriteAll(path, ReadAll(path) + "junk");
  s = LoadCheckpoint(path).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_MESSAGE_HAS(s, "has 4 bytes of trailing garbage after its trailer");
}

TEST_F(CheckpointTest, ValidChecksumsButUnknownDtypeVersionOrBadContent) {
  const std::string path = Path("crafted.ckpt");
  WriteAll(path, EncodeCheckpoint({{"ok", DT_FLOAT, {1}, FloatBytes({2})},
                                   {"future", 99, {2}, std::string(8, '\0')}}));
  absl::Status s = LoadCheckpoint(path).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_MESSAGE_HAS(s, "variable 'future' in checkpoint '" + path + "' has unknown dtype code 99");
  EXPECT_MESSAGE_HAS(s, "bfloat16 (14)");

  WriteAll(path, EncodeCheckpoint({{"ok", DT_FLOAT, {1}, FloatBytes({2})}}, /*version=*/2));
  EXPECT_MESSAGE_HAS(LoadCheckpoint(path).status(),
                     "has format version 2; this build reads version 1");

  WriteAll(path, EncodeCheckpoint({{"w", DT_FLOAT, {2, 2}, FloatBytes({1, 2, 3})}}));
  EXPECT_MESSAGE_HAS(LoadCheckpoint(path).status(), "variable 'w' in checkpoint '" + path +
                                                        "' holds 12 data bytes but float "
                                                        "[2,2] needs 4 x 4");

  WriteAll(path, EncodeCheckpoint({{"w", DT_FLOAT, {-1}, ""}}));
  EXPECT_MESSAGE_HAS(LoadCheckpoint(path).status(), "has invalid shape");

  WriteAll(path, EncodeCheckpoint({{"flag", DT_BOOL, {1}, std::string(1, '\x02')}}));
  EXPECT_MESSAGE_HAS(LoadCheckpoint(path).status(), "bool element 0 has byte value 2");

  std::string strings;
  test::AppendLittleEndian(&strings, 100, 8);  // longer than what follows
  strings += "abc";
  WriteAll(path, EncodeCheckpoint({{"s", DT_STRING, {1}, strings}}));
  EXPECT_MESSAGE_HAS(LoadCheckpoint(path).status(), "string element 0 has length 100");

  // Billions of string elements claimed by a few bytes: an error, not a huge allocation.
  WriteAll(path, EncodeCheckpoint({{"s", DT_STRING, {1 << 30, 1 << 30}, strings}}));
  EXPECT_MESSAGE_HAS(LoadCheckpoint(path).status(), "string elements but only 11 data bytes");

  WriteAll(path, EncodeCheckpoint(
                     {{"a", DT_FLOAT, {}, FloatBytes({1})}, {"a", DT_FLOAT, {}, FloatBytes({2})}}));
  EXPECT_MESSAGE_HAS(LoadCheckpoint(path).status(), "holds variable 'a' twice");

  // And a hand-encoded file that follows the format loads.
  WriteAll(path,
           EncodeCheckpoint({{"ok", DT_INT32, {2}, std::string("\x01\0\0\0\xff\xff\xff\xff", 8)}}));
  auto ok = LoadCheckpoint(path);
  ASSERT_TRUE(ok.ok()) << ok.status();
  ExpectSame(*ok, {{"ok", Tensor::FromVector<int32_t>({1, -1})}});
}

TEST_F(CheckpointTest, SaveIsAtomicAndLeavesNoTemporaryFile) {
  const std::string path = Path("model.ckpt");
  NamedTensors big;
  for (int i = 0; i < 5; ++i) {
    big.push_back({"layer" + std::to_string(i), Tensor(DT_FLOAT, TensorShape({1000}))});
    for (int j = 0; j < 1000; ++j) big.back().second.data<float>()[j] = i * j;
  }
  ASSERT_TRUE(SaveCheckpoint(path, big).ok());
  EXPECT_EQ(DirEntries(), std::vector<std::string>{"model.ckpt"});

  // A smaller checkpoint replaces the bigger one whole.
  ASSERT_TRUE(SaveCheckpoint(path, Small()).ok());
  EXPECT_EQ(DirEntries(), std::vector<std::string>{"model.ckpt"});
  auto loaded = LoadCheckpoint(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ExpectSame(*loaded, Small());

  // A save that fails validation leaves the old checkpoint as it was.
  absl::Status dup =
      SaveCheckpoint(path, {{"x", Tensor::Scalar<float>(1)}, {"x", Tensor::Scalar<float>(2)}});
  EXPECT_EQ(dup.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_MESSAGE_HAS(dup, "variable 'x' appears twice");
  EXPECT_MESSAGE_HAS(SaveCheckpoint(path, {{"", Tensor::Scalar<float>(1)}}), "has no name");
  EXPECT_MESSAGE_HAS(SaveCheckpoint(path, {{"u", Tensor()}}), "'u' is an uninitialized tensor");
  loaded = LoadCheckpoint(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ExpectSame(*loaded, Small());

  // A save whose final rename fails (the target is a directory) removes its temporary file.
  const std::string blocked = Path("blocked");
  ASSERT_EQ(::mkdir(blocked.c_str(), 0755), 0);
  absl::Status s = SaveCheckpoint(blocked, Small());
  EXPECT_FALSE(s.ok());
  EXPECT_MESSAGE_HAS(s, "cannot rename '" + blocked + ".tmp-" + std::to_string(::getpid()));
  EXPECT_EQ(DirEntries(), (std::vector<std::string>{"blocked", "model.ckpt"}));

  // No directory to write into.
  s = SaveCheckpoint(Path("no/such/dir/model.ckpt"), Small());
  EXPECT_FALSE(s.ok());
  EXPECT_MESSAGE_HAS(s, Path("no/such/dir/model.ckpt.tmp-"));
}

TEST(CheckCompatibleTest, ReportsEveryDifferenceClearly) {
  NamedTensors loaded = {{"dense/w", Tensor(DT_FLOAT, TensorShape({784, 128}))},
                         {"dense/b", Tensor(DT_FLOAT, TensorShape({128}))},
                         {"step", Tensor::Scalar<int32_t>(5)},
                         {"conv/w", Tensor(DT_FLOAT, TensorShape({3, 3}))}};
  std::vector<VariableSpec> model = {{"step", DT_INT64, TensorShape()},
                                     {"dense/w", DT_FLOAT, TensorShape({784, 256})},
                                     {"dense/b", DT_FLOAT, TensorShape({128})},
                                     {"out/b", DT_FLOAT, TensorShape({10})}};
  absl::Status s = CheckCompatible(loaded, model);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "the checkpoint does not match the model (4 problems): variable 'step' has dtype "
            "int32 in the checkpoint but int64 in the model; variable 'dense/w' has shape "
            "[784,128] in the checkpoint but [784,256] in the model; missing variable 'out/b' "
            "(float [10] in the model); unexpected variable 'conv/w' (float [3,3] in the "
            "checkpoint, not in the model)");

  // Same variables in another order, and an unknown dimension that matches any size.
  std::vector<VariableSpec> same = {{"conv/w", DT_FLOAT, TensorShape({3, -1})},
                                    {"step", DT_INT32, TensorShape()},
                                    {"dense/b", DT_FLOAT, TensorShape({128})},
                                    {"dense/w", DT_FLOAT, TensorShape({784, 128})}};
  EXPECT_TRUE(CheckCompatible(loaded, same).ok());
  EXPECT_TRUE(CheckCompatible({}, {}).ok());
  EXPECT_MESSAGE_HAS(CheckCompatible({}, {{"x", DT_FLOAT, TensorShape({1})}}),
                     "(1 problem): missing variable 'x'");
}

}  // namespace
}  // namespace shardflow

// Tests of the input pipeline: idx files, Fashion-MNIST loading and the batch iterator.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/framework/tensor_util.h"
#include "datasets/batch_iterator.h"
#include "datasets/dataset.h"
#include "datasets/fashion_mnist.h"
#include "datasets/idx_reader.h"
#include "gtest/gtest.h"
#include "tests/util/file_formats.h"

namespace shardflow {
namespace {

bool Contains(const absl::Status& s, const std::string& part) {
  return s.message().find(part) != absl::string_view::npos;
}
#define EXPECT_MESSAGE_HAS(status, part) \
  EXPECT_TRUE(Contains(status, part)) << "message lacks \"" << (part) << "\": " << (status)

void AppendBigEndian(std::string* out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out->push_back(static_cast<char>(v >> (8 * i)));
}

// An idx file: magic 0x0000<type><rank>, big-endian dims, then `payload` as given.
std::string Idx(uint8_t type, const std::vector<uint32_t>& dims, const std::string& payload) {
  std::string out({0, 0, static_cast<char>(type), static_cast<char>(dims.size())});
  for (uint32_t d : dims) AppendBigEndian(&out, d, 4);
  return out + payload;
}

std::string Bytes(const std::vector<int>& values) {
  std::string out;
  for (int v : values) out.push_back(static_cast<char>(v));
  return out;
}

// A fresh directory under the test temp dir, removed at the end of the test.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "/data_test_XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string WriteFile(const std::string& name, const std::string& bytes) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

  // Writes a Fashion-MNIST-like split "<prefix>-{images,labels}-..." with the given counts:
  // pixel j of image i is (i + j) % 256, label i % 10.
  void WriteFakeSplit(const std::string& prefix, uint32_t images, uint32_t labels, bool gzip) {
    std::string pixels;
    for (uint32_t i = 0; i < images; ++i) {
      for (int j = 0; j < 784; ++j) pixels.push_back(static_cast<char>((i + j) % 256));
    }
    std::string classes;
    for (uint32_t i = 0; i < labels; ++i) classes.push_back(static_cast<char>(i % 10));
    std::string image_file = Idx(0x08, {images, 28, 28}, pixels);
    std::string label_file = Idx(0x08, {labels}, classes);
    const std::string suffix = gzip ? ".gz" : "";
    if (gzip) {
      image_file = test::GzipStored(image_file);
      label_file = test::GzipStored(label_file);
    }
    std::ofstream(dir_ + "/" + prefix + "-images-idx3-ubyte" + suffix, std::ios::binary)
        << image_file;
    std::ofstream(dir_ + "/" + prefix + "-labels-idx1-ubyte" + suffix, std::ios::binary)
        << label_file;
  }

  std::string dir_;
};

// ---- idx files ---------------------------------------------------------------------------------

TEST_F(TempDirTest, IdxReadsPlainAndGzippedBytes) {
  std::string file = Idx(0x08, {2, 3}, Bytes({0, 1, 2, 253, 254, 255}));
  for (const std::string& path :
       {WriteFile("a-idx2-ubyte", file), WriteFile("a-idx2-ubyte.gz", test::GzipStored(file))}) {
    auto t = ReadIdxFile(path);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_TRUE(TensorsEqual(
        *t, Tensor::FromVector<uint8_t>({0, 1, 2, 253, 254, 255}, TensorShape({2, 3}))))
        << path << ": " << t->DebugString();
  }
}

TEST_F(TempDirTest, IdxConvertsMultiByteTypesFromBigEndian) {
  std::string ints;
  for (int32_t v : {1, -2, 1 << 30}) AppendBigEndian(&ints, static_cast<uint32_t>(v), 4);
  auto i = ReadIdxFile(WriteFile("int", Idx(0x0C, {3}, ints)));
  ASSERT_TRUE(i.ok()) << i.status();
  EXPECT_TRUE(TensorsEqual(*i, Tensor::FromVector<int32_t>({1, -2, 1 << 30})));

  std::string shorts;
  for (int16_t v : {-300, 7}) AppendBigEndian(&shorts, static_cast<uint16_t>(v), 2);
  auto s = ReadIdxFile(WriteFile("short", Idx(0x0B, {1, 2}, shorts)));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(TensorsEqual(*s, Tensor::FromVector<int32_t>({-300, 7}, TensorShape({1, 2}))));

  std::string floats;
  for (float v : {1.5f, -0.25f}) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    AppendBigEndian(&floats, bits, 4);
  }
  auto f = ReadIdxFile(WriteFile("float", Idx(0x0D, {2}, floats)));
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE(TensorsEqual(*f, Tensor::FromVector<float>({1.5f, -0.25f})));

  std::string doubles;
  double d = -3.125;
  uint64_t bits;
  std::memcpy(&bits, &d, 8);
  AppendBigEndian(&doubles, bits, 8);
  auto g = ReadIdxFile(WriteFile("double.gz", test::GzipStored(Idx(0x0E, {1}, doubles))));
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(TensorsEqual(*g, Tensor::FromVector<double>({-3.125})));
}

TEST_F(TempDirTest, IdxRejectsBadMagicAndTypeCode) {
  std::string path = WriteFile("bad-magic", Bytes({1, 0, 8, 1, 0, 0, 0, 1, 5}));
  auto t = ReadIdxFile(path);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_MESSAGE_HAS(t.status(), path);
  EXPECT_MESSAGE_HAS(t.status(), "bad magic number 0x01000801");

  auto type = ReadIdxFile(WriteFile("bad-type", Idx(0x07, {1}, "x")));
  ASSERT_FALSE(type.ok());
  EXPECT_MESSAGE_HAS(type.status(), "unknown element type code 0x07");
  EXPECT_MESSAGE_HAS(type.status(), "0x08 unsigned byte");

  auto rank0 = ReadIdxFile(WriteFile("rank0", Idx(0x08, {}, "x")));
  ASSERT_FALSE(rank0.ok());
  EXPECT_MESSAGE_HAS(rank0.status(), "0 dimensions");

  auto tiny = ReadIdxFile(WriteFile("tiny", Bytes({0, 0})));
  ASSERT_FALSE(tiny.ok());
  EXPECT_MESSAGE_HAS(tiny.status(), "not an idx file");
}

TEST_F(TempDirTest, IdxRejectsTruncatedPayloadPlainAndGzipped) {
  std::string file = Idx(0x08, {2, 3}, Bytes({1, 2, 3, 4, 5}));  // one byte short
  for (const std::string& path :
       {WriteFile("short", file), WriteFile("short.gz", test::GzipStored(file))}) {
    auto t = ReadIdxFile(path);
    ASSERT_FALSE(t.ok()) << path;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_MESSAGE_HAS(t.status(), path);
    EXPECT_MESSAGE_HAS(t.status(), "is truncated");
    EXPECT_MESSAGE_HAS(t.status(), "[2,3] (6 payload bytes) but the file holds only 5");
  }
  auto dims = ReadIdxFile(WriteFile("dims", Idx(0x08, {2, 3}, "").substr(0, 9)));
  ASSERT_FALSE(dims.ok());
  EXPECT_MESSAGE_HAS(dims.status(), "truncated in its header");
}

TEST_F(TempDirTest, IdxRejectsACutGzipStream) {
  std::string gz = test::GzipStored(Idx(0x08, {100}, std::string(100, 'a')));
  std::string path = WriteFile("cut.gz", gz.substr(0, gz.size() / 2));
  auto t = ReadIdxFile(path);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_MESSAGE_HAS(t.status(), path);
  EXPECT_MESSAGE_HAS(t.status(), "truncated");
}

TEST_F(TempDirTest, IdxRejectsBytesAfterThePayload) {
  auto t = ReadIdxFile(WriteFile("long", Idx(0x08, {2}, Bytes({1, 2, 3}))));
  ASSERT_FALSE(t.ok());
  EXPECT_MESSAGE_HAS(t.status(), "bytes after the 2-byte payload");
}

TEST_F(TempDirTest, IdxHeaderClaimingAHugeArrayFailsWithoutAllocatingIt) {
  auto t = ReadIdxFile(WriteFile("huge", Idx(0x0E, {0xFFFFFFFF, 0xFFFFFFFF}, "abc")));
  ASSERT_FALSE(t.ok());
  EXPECT_MESSAGE_HAS(t.status(), "impossibly large");
  // Large but representable: the reader stops at the end of the file.
  auto big = ReadIdxFile(WriteFile("big", Idx(0x08, {1u << 30, 16}, "abc")));
  ASSERT_FALSE(big.ok());
  EXPECT_MESSAGE_HAS(big.status(), "holds only 3");
}

TEST_F(TempDirTest, IdxMissingFileIsNotFound) {
  auto t = ReadIdxFile(dir_ + "/nope");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kNotFound);
  EXPECT_MESSAGE_HAS(t.status(), dir_ + "/nope");
}

// ---- Fashion-MNIST from small files
// --------------------------------------------------------------

TEST_F(TempDirTest, FashionMnistLoadsBothSplitsScaledToUnitRange) {
  WriteFakeSplit("train", 300, 300, /*gzip=*/true);
  WriteFakeSplit("t10k", 7, 7, /*gzip=*/false);
  auto train = LoadFashionMnist(dir_, Split::kTrain);
  ASSERT_TRUE(train.ok()) << train.status();
  EXPECT_EQ(train->size(), 300);
  EXPECT_EQ(train->images.dtype(), DT_FLOAT);
  EXPECT_EQ(train->images.shape(), TensorShape({300, 784}));
  EXPECT_EQ(train->labels.dtype(), DT_INT32);
  EXPECT_EQ(train->labels.shape(), TensorShape({300}));
  EXPECT_EQ(train->example_shape, TensorShape({28, 28, 1}));
  EXPECT_EQ(train->num_classes, 10);
  const float* px = train->images.data<float>();
  EXPECT_EQ(px[0], 0.0f);
  EXPECT_EQ(px[255], 1.0f);                      // image 0, pixel 255 holds 255
  EXPECT_FLOAT_EQ(px[784 * 2 + 3], 5 / 255.0f);  // image 2, pixel 3 holds 5
  EXPECT_EQ(train->labels.data<int32_t>()[123], 3);
  EXPECT_TRUE(ValidateDataset(*train).ok());

  auto test = LoadFashionMnist(dir_, Split::kTest);
  ASSERT_TRUE(test.ok()) << test.status();
  EXPECT_EQ(test->size(), 7);
}

TEST_F(TempDirTest, FashionMnistCountMismatchIsAnError) {
  WriteFakeSplit("train", 5, 4, /*gzip=*/false);
  auto train = LoadFashionMnist(dir_, Split::kTrain);
  ASSERT_FALSE(train.ok());
  EXPECT_MESSAGE_HAS(train.status(), "holds 5 images but");
  EXPECT_MESSAGE_HAS(train.status(), "holds 4 labels");
}

TEST_F(TempDirTest, FashionMnistRejectsImagesOfTheWrongSize) {
  WriteFile("train-images-idx3-ubyte", Idx(0x08, {1, 27, 28}, std::string(27 * 28, '\0')));
  WriteFile("train-labels-idx1-ubyte", Idx(0x08, {1}, Bytes({0})));
  auto train = LoadFashionMnist(dir_, Split::kTrain);
  ASSERT_FALSE(train.ok());
  EXPECT_MESSAGE_HAS(train.status(), "[N,28,28]");
  EXPECT_MESSAGE_HAS(train.status(), "[1,27,28]");
}

TEST_F(TempDirTest, FashionMnistLabelOutOfRangeIsAnError) {
  WriteFile("train-images-idx3-ubyte", Idx(0x08, {1, 28, 28}, std::string(784, '\0')));
  WriteFile("train-labels-idx1-ubyte", Idx(0x08, {1}, Bytes({10})));
  auto train = LoadFashionMnist(dir_, Split::kTrain);
  ASSERT_FALSE(train.ok());
  EXPECT_MESSAGE_HAS(train.status(), "label of example 0 is 10");
}

TEST_F(TempDirTest, FashionMnistMissingFileSaysHowToInstall) {
  auto train = LoadFashionMnist(dir_, Split::kTest);
  ASSERT_FALSE(train.ok());
  EXPECT_EQ(train.status().code(), absl::StatusCode::kNotFound);
  EXPECT_MESSAGE_HAS(train.status(), dir_ + "/t10k-images-idx3-ubyte.gz");
  EXPECT_MESSAGE_HAS(train.status(), "apt-get install dataset-fashion-mnist");
  EXPECT_MESSAGE_HAS(train.status(), "pass the directory that holds");
}

TEST(FashionMnistTest, RealDataSet) {
  const std::string probe = std::string(kDefaultFashionMnistDir) + "/train-images-idx3-ubyte.gz";
  if (::access(probe.c_str(), R_OK) != 0) {
    GTEST_SKIP() << "Fashion-MNIST is not installed (" << probe
                 << " missing); apt-get install dataset-fashion-mnist to run this test";
  }
  auto train = LoadFashionMnist();
  ASSERT_TRUE(train.ok()) << train.status();
  auto test = LoadFashionMnist(kDefaultFashionMnistDir, Split::kTest);
  ASSERT_TRUE(test.ok()) << test.status();
  EXPECT_EQ(train->size(), 60000);
  EXPECT_EQ(test->size(), 10000);
  EXPECT_EQ(train->labels.data<int32_t>()[0], 9);  // an ankle boot
  for (const Dataset* d : {&*train, &*test}) {
    EXPECT_TRUE(ValidateDataset(*d).ok());
    const int32_t* labels = d->labels.data<int32_t>();
    std::vector<int64_t> per_class(10);
    for (int64_t i = 0; i < d->size(); ++i) {
      ASSERT_GE(labels[i], 0);
      ASSERT_LT(labels[i], 10);
      ++per_class[labels[i]];
    }
    for (int c = 0; c < 10; ++c) EXPECT_EQ(per_class[c], d->size() / 10) << "class " << c;
    const float* px = d->images.data<float>();
    auto [lo, hi] = std::minmax_element(px, px + d->images.NumElements());
    EXPECT_EQ(*lo, 0.0f);
    EXPECT_EQ(*hi, 1.0f);
  }
  BatchIteratorOptions options;
  options.batch_size = 128;
  options.layout = ImageLayout::kImage;
  options.one_hot = true;
  auto it = BatchIterator::Create(*train, options);
  ASSERT_TRUE(it.ok()) << it.status();
  EXPECT_EQ((*it)->batches_per_epoch(), 469);
  auto batch = (*it)->Next();
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ(batch->images.shape(), TensorShape({128, 28, 28, 1}));
  EXPECT_EQ(batch->one_hot.shape(), TensorShape({128, 10}));
}

// ---- BatchIterator -----------------------------------------------------------------------------

// n examples of 4 values [2,2,1]; every value of example i is i, and its label i % 10.
Dataset IndexDataset(int64_t n) {
  Dataset d;
  d.images = Tensor(DT_FLOAT, TensorShape({n, 4}));
  d.labels = Tensor(DT_INT32, TensorShape({n}));
  for (int64_t i = 0; i < n; ++i) {
    for (int j = 0; j < 4; ++j) d.images.data<float>()[4 * i + j] = static_cast<float>(i);
    d.labels.data<int32_t>()[i] = static_cast<int32_t>(i % 10);
  }
  d.example_shape = TensorShape({2, 2, 1});
  d.num_classes = 10;
  return d;
}

// The example indices of a batch of IndexDataset, checking that images and labels agree.
std::vector<int64_t> Indices(const Batch& batch) {
  std::vector<int64_t> out;
  const int64_t b = batch.labels.dim_size(0);
  const int64_t row = batch.images.NumElements() / b;
  for (int64_t i = 0; i < b; ++i) {
    int64_t index = static_cast<int64_t>(batch.images.data<float>()[i * row]);
    EXPECT_EQ(batch.labels.data<int32_t>()[i], index % 10);
    out.push_back(index);
  }
  return out;
}

std::unique_ptr<BatchIterator> MakeIterator(int64_t n, BatchIteratorOptions options) {
  auto it = BatchIterator::Create(IndexDataset(n), options);
  EXPECT_TRUE(it.ok()) << it.status();
  return it.ok() ? std::move(*it) : nullptr;
}

// All batches of `it` until OutOfRange.
std::vector<Batch> Drain(BatchIterator* it) {
  std::vector<Batch> out;
  for (;;) {
    auto batch = it->Next();
    if (!batch.ok()) {
      EXPECT_EQ(batch.status().code(), absl::StatusCode::kOutOfRange) << batch.status();
      return out;
    }
    out.push_back(std::move(*batch));
  }
}

TEST(BatchIteratorTest, EveryExampleOncePerEpochWithAPartialLastBatch) {
  BatchIteratorOptions options;
  options.batch_size = 3;
  options.seed = 7;
  options.num_epochs = 3;
  auto it = MakeIterator(10, options);
  ASSERT_NE(it, nullptr);
  EXPECT_EQ(it->batches_per_epoch(), 4);
  std::vector<Batch> batches = Drain(it.get());
  ASSERT_EQ(batches.size(), 12u);
  for (int e = 0; e < 3; ++e) {
    std::vector<int64_t> seen;
    for (int s = 0; s < 4; ++s) {
      const Batch& b = batches[4 * e + s];
      EXPECT_EQ(b.epoch, e);
      EXPECT_EQ(b.step, s);
      EXPECT_EQ(b.labels.dim_size(0), s < 3 ? 3 : 1);
      for (int64_t i : Indices(b)) seen.push_back(i);
    }
    std::sort(seen.begin(), seen.end());
    std::vector<int64_t> all(10);
    for (int i = 0; i < 10; ++i) all[i] = i;
    EXPECT_EQ(seen, all) << "epoch " << e;
  }
  // Exhausted for good.
  EXPECT_EQ(it->Next().status().code(), absl::StatusCode::kOutOfRange);
}

TEST(BatchIteratorTest, DropRemainderGivesOnlyFullBatches) {
  BatchIteratorOptions options;
  options.batch_size = 3;
  options.drop_remainder = true;
  options.num_epochs = 2;
  auto it = MakeIterator(10, options);
  ASSERT_NE(it, nullptr);
  EXPECT_EQ(it->batches_per_epoch(), 3);
  std::vector<Batch> batches = Drain(it.get());
  ASSERT_EQ(batches.size(), 6u);
  for (int e = 0; e < 2; ++e) {
    std::set<int64_t> seen;
    for (int s = 0; s < 3; ++s) {
      const Batch& b = batches[3 * e + s];
      EXPECT_EQ(b.epoch, e);
      EXPECT_EQ(b.step, s);
      EXPECT_EQ(b.labels.dim_size(0), 3);
      for (int64_t i : Indices(b)) seen.insert(i);
    }
    EXPECT_EQ(seen.size(), 9u) << "9 distinct examples in epoch " << e;
  }
}

std::vector<int64_t> EpochOrder(uint64_t seed, int64_t epoch, int64_t n = 100) {
  BatchIteratorOptions options;
  options.batch_size = 8;
  options.seed = seed;
  options.num_epochs = epoch + 1;
  auto it = MakeIterator(n, options);
  std::vector<int64_t> order;
  for (const Batch& b : Drain(it.get())) {
    if (b.epoch != epoch) continue;
    for (int64_t i : Indices(b)) order.push_back(i);
  }
  return order;
}

TEST(BatchIteratorTest, SameSeedSameOrderDifferentSeedOrEpochDifferentOrder) {
  EXPECT_EQ(EpochOrder(42, 0), EpochOrder(42, 0));
  EXPECT_EQ(EpochOrder(42, 1), EpochOrder(42, 1));
  EXPECT_NE(EpochOrder(42, 0), EpochOrder(43, 0));
  EXPECT_NE(EpochOrder(42, 0), EpochOrder(42, 1));
  // Epoch e uses seed + e.
  EXPECT_EQ(EpochOrder(42, 1), EpochOrder(43, 0));
}

TEST(BatchIteratorTest, ShuffleOrderIsPinned) {
  // Our own Fisher-Yates over mt19937_64 (whose output the C++ standard fixes), so the order is
  // the same with every compiler and standard library. A change here breaks reproducibility.
  EXPECT_EQ(EpochOrder(1, 0, 10), (std::vector<int64_t>{1, 7, 3, 9, 4, 0, 5, 2, 6, 8}));
}

TEST(BatchIteratorTest, NoShuffleKeepsDatasetOrder) {
  BatchIteratorOptions options;
  options.batch_size = 4;
  options.shuffle = false;
  options.num_epochs = 2;
  auto it = MakeIterator(6, options);
  ASSERT_NE(it, nullptr);
  std::vector<int64_t> order;
  for (const Batch& b : Drain(it.get())) {
    for (int64_t i : Indices(b)) order.push_back(i);
  }
  EXPECT_EQ(order, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5}));
}

TEST(BatchIteratorTest, OneHotAndImageLayout) {
  BatchIteratorOptions options;
  options.batch_size = 4;
  options.one_hot = true;
  options.layout = ImageLayout::kImage;
  options.prefetch = 0;
  auto it = MakeIterator(13, options);
  ASSERT_NE(it, nullptr);
  auto batch = it->Next();
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ(batch->images.shape(), TensorShape({4, 2, 2, 1}));
  ASSERT_EQ(batch->one_hot.shape(), TensorShape({4, 10}));
  EXPECT_EQ(batch->one_hot.dtype(), DT_FLOAT);
  for (int b = 0; b < 4; ++b) {
    for (int c = 0; c < 10; ++c) {
      EXPECT_EQ(batch->one_hot.data<float>()[b * 10 + c],
                c == batch->labels.data<int32_t>()[b] ? 1.0f : 0.0f);
    }
  }
  options.one_hot = false;
  options.layout = ImageLayout::kFlat;
  auto flat = MakeIterator(13, options)->Next();
  ASSERT_TRUE(flat.ok());
  EXPECT_EQ(flat->images.shape(), TensorShape({4, 4}));
  EXPECT_FALSE(flat->one_hot.IsInitialized());
}

TEST(BatchIteratorTest, PrefetchGivesTheSameBatchesAsNoPrefetch) {
  BatchIteratorOptions options;
  options.batch_size = 7;
  options.seed = 3;
  options.num_epochs = 3;
  options.one_hot = true;
  options.prefetch = 0;
  std::vector<Batch> reference = Drain(MakeIterator(50, options).get());
  ASSERT_EQ(reference.size(), 24u);
  for (int prefetch : {1, 2, 5}) {
    options.prefetch = prefetch;
    std::vector<Batch> got = Drain(MakeIterator(50, options).get());
    ASSERT_EQ(got.size(), reference.size()) << "prefetch " << prefetch;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(TensorsEqual(got[i].images, reference[i].images)) << "batch " << i;
      EXPECT_TRUE(TensorsEqual(got[i].labels, reference[i].labels)) << "batch " << i;
      EXPECT_TRUE(TensorsEqual(got[i].one_hot, reference[i].one_hot)) << "batch " << i;
      EXPECT_EQ(got[i].epoch, reference[i].epoch);
      EXPECT_EQ(got[i].step, reference[i].step);
    }
  }
}

TEST(BatchIteratorTest, DestructorStopsThePrefetchThreadAtAnyPoint) {
  BatchIteratorOptions options;
  options.batch_size = 2;
  options.num_epochs = -1;  // the producer never runs out by itself
  for (int consumed : {0, 1, 5, 100}) {
    auto it = MakeIterator(9, options);
    ASSERT_NE(it, nullptr);
    for (int i = 0; i < consumed; ++i) ASSERT_TRUE(it->Next().ok());
    it.reset();  // must return promptly (a hang fails the test by timeout)
  }
  // Destroyed right after construction, before the thread may even have started.
  for (int i = 0; i < 50; ++i) MakeIterator(9, options).reset();
}

TEST(BatchIteratorTest, ConcurrentCallersShareOneSequence) {
  BatchIteratorOptions options;
  options.batch_size = 5;
  options.num_epochs = 4;
  auto it = MakeIterator(103, options);
  ASSERT_NE(it, nullptr);
  std::vector<std::vector<Batch>> per_thread(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (;;) {
        auto batch = it->Next();
        if (!batch.ok()) return;
        per_thread[t].push_back(std::move(*batch));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<std::multiset<int64_t>> per_epoch(4);
  size_t total = 0;
  for (const auto& batches : per_thread) {
    for (const Batch& b : batches) {
      ++total;
      for (int64_t i : Indices(b)) per_epoch[b.epoch].insert(i);
    }
  }
  EXPECT_EQ(total, 4u * 21);
  for (const auto& seen : per_epoch) {
    ASSERT_EQ(seen.size(), 103u);
    EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 103u);
  }
}

TEST(BatchIteratorTest, InvalidOptionsAndDatasets) {
  BatchIteratorOptions options;
  options.batch_size = 0;
  auto zero = BatchIterator::Create(IndexDataset(5), options);
  ASSERT_FALSE(zero.ok());
  EXPECT_MESSAGE_HAS(zero.status(), "batch_size must be positive; got 0");

  options.batch_size = 8;
  options.drop_remainder = true;
  auto never = BatchIterator::Create(IndexDataset(5), options);
  ASSERT_FALSE(never.ok());
  EXPECT_MESSAGE_HAS(never.status(), "larger than the dataset's 5 examples");

  options.drop_remainder = false;
  Dataset bad_label = IndexDataset(5);
  bad_label.labels.data<int32_t>()[3] = 12;
  auto label = BatchIterator::Create(bad_label, options);
  ASSERT_FALSE(label.ok());
  EXPECT_MESSAGE_HAS(label.status(), "label of example 3 is 12");

  Dataset mismatch = IndexDataset(5);
  mismatch.labels = Tensor(DT_INT32, TensorShape({4}));
  auto counts = BatchIterator::Create(mismatch, options);
  ASSERT_FALSE(counts.ok());
  EXPECT_MESSAGE_HAS(counts.status(), "5 images but 4 labels");

  auto empty = BatchIterator::Create(IndexDataset(0), options);
  ASSERT_FALSE(empty.ok());
  EXPECT_MESSAGE_HAS(empty.status(), "at least one example");
}

}  // namespace
}  // namespace shardflow

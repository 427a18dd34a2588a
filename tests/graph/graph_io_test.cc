#include "core/graph/graph_io.h"

#include <cstdio>
#include <fstream>

#include "gtest/gtest.h"
#include "ops/ops.h"
#include "runtime/session.h"
#include "tests/util/test_util.h"

namespace shardflow {
namespace {

std::vector<Tensor> RunZ(const GraphDef& def) {
  auto session = NewSession(SessionOptions());
  EXPECT_TRUE(session.ok());
  EXPECT_TRUE((*session)->Create(def).ok());
  std::vector<Tensor> out;
  absl::Status s =
      (*session)->Run({{"x", Tensor::FromVector<float>({10, 20, 30})}}, {"z"}, {}, &out);
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

TEST(GraphIoTest, BinaryAndTextRoundTripGiveTheSameResults) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({-1}));
  ops::Mul(s.WithOpName("z"), ops::Add(s, x, {1.0f, 2.0f, 3.0f}), 2.0f);
  GraphDef def;
  ASSERT_TRUE(s.ToGraphDef(&def).ok());
  std::vector<Tensor> expected = RunZ(def);
  test::ExpectValues<float>(expected[0], {22, 44, 66});
  for (GraphFormat f : {GraphFormat::kBinary, GraphFormat::kText}) {
    std::string path =
        ::testing::TempDir() + "/graph_io_test_" + (f == GraphFormat::kText ? "t" : "b");
    ASSERT_TRUE(WriteGraphDef(path, def, f).ok());
    auto loaded = ReadGraphDef(path);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_EQ(loaded->node_size(), def.node_size());
    test::ExpectValues<float>(RunZ(*loaded)[0], {22, 44, 66});
  }
}

TEST(GraphIoTest, LoadsFilesWrittenByOtherPrograms) {
  // Text written by hand, and the same graph encoded to binary by protoc at build time.
  for (const std::string& path : {std::string(SHARDFLOW_TEST_DATA_DIR) + "/add_graph.pbtxt",
                                  std::string(SHARDFLOW_BINARY_DIR) + "/tests/add_graph.pb"}) {
    auto def = ReadGraphDef(path);
    ASSERT_TRUE(def.ok()) << path << ": " << def.status();
    test::ExpectValues<float>(RunZ(*def)[0], {22, 44, 66});
  }
}

TEST(GraphIoTest, MissingAndCorruptFilesAreClearErrors) {
  auto missing = ReadGraphDef("/nonexistent/graph.pb");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/nonexistent/graph.pb"), std::string::npos);
  std::string path = ::testing::TempDir() + "/garbage.pb";
  std::ofstream(path) << "\xff\xfe not a graph {{{";
  auto garbage = ReadGraphDef(path);
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(garbage.status().message().find("not a GraphDef"), std::string::npos);
  // Regression: a directory read as an empty graph, OK.
  auto dir = ReadGraphDef(::testing::TempDir());
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("is a directory"), std::string::npos) << dir.status();
}

}  // namespace
}  // namespace shardflow

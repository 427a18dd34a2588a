#include "runtime/saver.h"

#include "core/framework/attr_value.h"
#include "core/framework/tensor_util.h"
#include "core/graph/graph_io.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "ops/training.h"
#include "tests/util/test_util.h"

namespace shardflow {
namespace {

// A linear model trained with Adam; its GraphDef has no saver nodes.
struct Model {
  Scope s = Scope::NewRootScope();
  Var w, b;
  Operation train, init;
  GraphDef def;
  explicit Model(int64_t width) {
    auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({-1, 3}));
    w = Var::Create(s.WithOpName("w"), init::GlorotUniform(s, {3, width}, 1));
    b = Var::Create(s.WithOpName("b"), init::Zeros(s, {width}));
    auto loss =
        ops::Mean(s, ops::Square(s, ops::Add(s, ops::MatMul(s, x, w.value()), b.value())), {0, 1});
    AdamOptimizer adam(0.1);
    train = *adam.Minimize(s, loss);
    init = InitializeAllVariables(s);
    EXPECT_TRUE(s.ToGraphDef(&def).ok()) << s.status();
  }
};

std::unique_ptr<Session> Open(const GraphDef& def, const std::string& init) {
  auto session = NewSession(SessionOptions());
  EXPECT_TRUE(session.ok()) << session.status();
  EXPECT_TRUE((*session)->Create(def).ok());
  std::vector<Tensor> out;
  EXPECT_TRUE((*session)->Run({}, {}, {init}, &out).ok());
  return *std::move(session);
}

Tensor Read(Session* session, const std::string& name) {
  std::vector<Tensor> out;
  EXPECT_TRUE(session->Run({}, {name}, {}, &out).ok());
  return out.empty() ? Tensor() : out[0];
}

const Tensor kX = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));

TEST(SaverTest, RoundTripIncludingOptimizerSlotsAndMeta) {
  Model m(4);
  GraphDef def = m.def;
  auto saver = Saver::AddToGraph(&def);
  ASSERT_TRUE(saver.ok()) << saver.status();
  EXPECT_EQ(saver->variables().size(), 8u);  // w, b, their Adam m and v, the beta powers
  EXPECT_EQ(saver->variables()[0].name, "w");
  EXPECT_EQ(saver->variables()[0].shape, TensorShape({3, 4}));
  EXPECT_EQ(saver->restore_op(), "save/restore_all");
  auto session = Open(def, m.init.name());
  std::vector<Tensor> out;
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(session->Run({{"x", kX}}, {}, {m.train.name()}, &out).ok());
  std::string path = ::testing::TempDir() + "/saver_test.ckpt";
  ASSERT_TRUE(saver->Save(session.get(), path, {{"_meta/step", Tensor::Scalar<int64_t>(3)}}).ok());
  Tensor trained_w = Read(session.get(), "w/read");

  auto fresh = Open(def, m.init.name());  // freshly initialised: different values
  auto meta = saver->Restore(fresh.get(), path);
  ASSERT_TRUE(meta.ok()) << meta.status();
  ASSERT_EQ(meta->size(), 1u);
  EXPECT_EQ((*meta)[0].second.scalar<int64_t>(), 3);
  EXPECT_TRUE(TensorsEqual(Read(fresh.get(), "w/read"), trained_w));
  // Training continues identically from the restored state (slots and beta powers included).
  ASSERT_TRUE(session->Run({{"x", kX}}, {}, {m.train.name()}, &out).ok());
  ASSERT_TRUE(fresh->Run({{"x", kX}}, {}, {m.train.name()}, &out).ok());
  EXPECT_TRUE(TensorsEqual(Read(fresh.get(), "w/read"), Read(session.get(), "w/read")));
  auto bad = saver->Save(session.get(), path, {{"step", Tensor::Scalar<int64_t>(1)}});
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument) << bad;
}

// The case the Scope-based saver could not serve: a GraphDef read back from a file, with no
// graph-building API in sight, restored from a checkpoint another process wrote.
TEST(SaverTest, RestoresIntoAGraphDefReadFromAFile) {
  Model m(4);
  std::string graph_path = ::testing::TempDir() + "/saver_model.pb";
  ASSERT_TRUE(WriteGraphDef(graph_path, m.def, GraphFormat::kBinary).ok());

  GraphDef trained_def = m.def;
  auto trained_saver = Saver::AddToGraph(&trained_def);
  ASSERT_TRUE(trained_saver.ok()) << trained_saver.status();
  auto trained = Open(trained_def, m.init.name());
  std::vector<Tensor> out;
  ASSERT_TRUE(trained->Run({{"x", kX}}, {}, {m.train.name()}, &out).ok());
  std::string ckpt = ::testing::TempDir() + "/saver_from_file.ckpt";
  ASSERT_TRUE(trained_saver->Save(trained.get(), ckpt).ok());

  auto loaded = ReadGraphDef(graph_path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  // Added to a session already created from the file's graph (Session::Extend).
  auto session = Open(*loaded, "init_all_variables");
  auto saver = Saver::AddToSession(session.get(), *loaded);
  ASSERT_TRUE(saver.ok()) << saver.status();
  ASSERT_TRUE(saver->Restore(session.get(), ckpt).ok());
  EXPECT_TRUE(TensorsEqual(Read(session.get(), "w/read"), Read(trained.get(), "w/read")));
  EXPECT_TRUE(TensorsEqual(Read(session.get(), "b/read"), Read(trained.get(), "b/read")));
}

TEST(SaverTest, CheckpointOfAnotherModelIsRefusedWhole) {
  Model small(4), wide(5);
  GraphDef small_def = small.def, wide_def = wide.def;
  auto small_saver = Saver::AddToGraph(&small_def);
  auto wide_saver = Saver::AddToGraph(&wide_def);
  ASSERT_TRUE(small_saver.ok() && wide_saver.ok());
  auto s1 = Open(small_def, small.init.name());
  std::string path = ::testing::TempDir() + "/saver_other.ckpt";
  ASSERT_TRUE(small_saver->Save(s1.get(), path).ok());
  auto s2 = Open(wide_def, wide.init.name());
  Tensor before = Read(s2.get(), "w/read");
  auto meta = wide_saver->Restore(s2.get(), path);
  ASSERT_FALSE(meta.ok());
  EXPECT_NE(
      meta.status().message().find("variable 'w' has shape [3,4] in the checkpoint but [3,5]"),
      std::string::npos)
      << meta.status();
  EXPECT_TRUE(TensorsEqual(Read(s2.get(), "w/read"), before));  // nothing was assigned
  EXPECT_EQ(wide_saver->Restore(s2.get(), "/nonexistent/x.ckpt").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(SaverTest, NodesGoUnderAFreshScopeAndSharedNamesAreTheCheckpointNames) {
  GraphDef def;
  NodeDef* taken = def.add_node();  // the user already has a "save" scope
  taken->set_name("save/x");
  taken->set_op("NoOp");
  NodeDef* v = def.add_node();
  v->set_name("handle");
  v->set_op("VarHandleOp");
  (*v->mutable_attr())["dtype"] = MakeAttr(DT_FLOAT);
  (*v->mutable_attr())["shape"] = MakeAttr(TensorShape({2}));
  (*v->mutable_attr())["shared_name"] = MakeAttr("layer/kernel");
  NodeDef* alias = def.add_node();  // a second handle to the same variable
  *alias = *v;
  alias->set_name("handle_again");
  auto saver = Saver::AddToGraph(&def);
  ASSERT_TRUE(saver.ok()) << saver.status();
  ASSERT_EQ(saver->variables().size(), 1u);
  EXPECT_EQ(saver->variables()[0].name, "layer/kernel");
  EXPECT_EQ(saver->restore_op(), "save_1/restore_all");
  EXPECT_EQ(def.node_size(), 3 + 4);  // read, value, assign, restore_all

  (*alias->mutable_attr())["shape"] = MakeAttr(TensorShape({3}));
  GraphDef conflicting;
  *conflicting.add_node() = *v;
  *conflicting.add_node() = *alias;
  auto refused = Saver::AddToGraph(&conflicting);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("'handle_again'"), std::string::npos)
      << refused.status();
  EXPECT_EQ(conflicting.node_size(), 2);  // nothing added on error

  GraphDef broken;
  NodeDef* no_dtype = broken.add_node();
  no_dtype->set_name("broken");
  no_dtype->set_op("VarHandleOp");
  auto missing = Saver::AddToGraph(&broken);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("'broken'"), std::string::npos) << missing.status();
}

}  // namespace
}  // namespace shardflow

#include "runtime/saver.h"

#include "core/framework/tensor_util.h"
#include "gtest/gtest.h"
#include "tests/util/test_util.h"

namespace shardflow {
namespace {

struct Model {
  Scope s = Scope::NewRootScope();
  Var w, b;
  Operation train, init;
  std::unique_ptr<Saver> saver;
  explicit Model(int64_t width) {
    auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({-1, 3}));
    w = Var::Create(s.WithOpName("w"), init::GlorotUniform(s, {3, width}, 1));
    b = Var::Create(s.WithOpName("b"), init::Zeros(s, {width}));
    auto loss =
        ops::Mean(s, ops::Square(s, ops::Add(s, ops::MatMul(s, x, w.value()), b.value())), {0, 1});
    AdamOptimizer adam(0.1);
    train = *adam.Minimize(s, loss);
    init = InitializeAllVariables(s);
    saver = std::make_unique<Saver>(s);
  }
  std::unique_ptr<Session> Open() {
    GraphDef def;
    EXPECT_TRUE(s.ToGraphDef(&def).ok()) << s.status();
    auto session = NewSession(SessionOptions());
    EXPECT_TRUE((*session)->Create(def).ok());
    std::vector<Tensor> out;
    EXPECT_TRUE((*session)->Run({}, {}, {init.name()}, &out).ok());
    return *std::move(session);
  }
  Tensor Read(Session* session, const Var& v) {
    std::vector<Tensor> out;
    EXPECT_TRUE(session->Run({}, {v.value().name()}, {}, &out).ok());
    return out[0];
  }
};

TEST(SaverTest, RoundTripIncludingOptimizerSlotsAndMeta) {
  Model m(4);
  EXPECT_EQ(m.saver->variables().size(), 7u);  // w, b, their Adam m and v, the Adam step
  auto session = m.Open();
  std::vector<Tensor> out;
  Tensor x = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(session->Run({{"x", x}}, {}, {m.train.name()}, &out).ok());
  std::string path = ::testing::TempDir() + "/saver_test.ckpt";
  ASSERT_TRUE(
      m.saver->Save(session.get(), path, {{"_meta/step", Tensor::Scalar<int64_t>(3)}}).ok());
  Tensor trained_w = m.Read(session.get(), m.w);

  auto fresh = m.Open();  // freshly initialised: different values
  auto meta = m.saver->Restore(fresh.get(), path);
  ASSERT_TRUE(meta.ok()) << meta.status();
  ASSERT_EQ(meta->size(), 1u);
  EXPECT_EQ((*meta)[0].second.scalar<int64_t>(), 3);
  EXPECT_TRUE(TensorsEqual(m.Read(fresh.get(), m.w), trained_w));
  // Training continues identically from the restored state (slots and step count included).
  ASSERT_TRUE(session->Run({{"x", x}}, {}, {m.train.name()}, &out).ok());
  ASSERT_TRUE(fresh->Run({{"x", x}}, {}, {m.train.name()}, &out).ok());
  EXPECT_TRUE(TensorsEqual(m.Read(fresh.get(), m.w), m.Read(session.get(), m.w)));
  EXPECT_FALSE(m.saver->Save(session.get(), path, {{"step", Tensor::Scalar<int64_t>(1)}}).ok());
}

TEST(SaverTest, CheckpointOfAnotherModelIsRefusedWhole) {
  Model small(4), wide(5);
  auto s1 = small.Open();
  std::string path = ::testing::TempDir() + "/saver_other.ckpt";
  ASSERT_TRUE(small.saver->Save(s1.get(), path).ok());
  auto s2 = wide.Open();
  Tensor before = wide.Read(s2.get(), wide.w);
  auto meta = wide.saver->Restore(s2.get(), path);
  ASSERT_FALSE(meta.ok());
  EXPECT_NE(
      meta.status().message().find("variable 'w' has shape [3,4] in the checkpoint but [3,5]"),
      std::string::npos)
      << meta.status();
  EXPECT_TRUE(TensorsEqual(wide.Read(s2.get(), wide.w), before));  // nothing was assigned
  EXPECT_EQ(wide.saver->Restore(s2.get(), "/nonexistent/x.ckpt").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace shardflow

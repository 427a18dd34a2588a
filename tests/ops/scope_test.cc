#include "ops/scope.h"

#include "gtest/gtest.h"
#include "ops/ops.h"

namespace shardflow {
namespace {

TEST(ScopeTest, ShapesAndTypesAreInferredAtBuildTime) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s, DT_FLOAT, TensorShape({-1, 784}));
  auto w = ops::Const(s, Tensor(DT_FLOAT, TensorShape({784, 10})));
  auto y = ops::MatMul(s, x, w);
  EXPECT_EQ(y.dtype(), DT_FLOAT);
  EXPECT_EQ(y.shape().DebugString(), "[?,10]");
  auto r = ops::Reshape(s, y, {-1, 5, 2});
  EXPECT_EQ(r.shape().DebugString(), "[?,5,2]");
  auto t = ops::Transpose(s, w, {1, 0});
  EXPECT_EQ(t.shape().DebugString(), "[10,784]");
  auto sum = ops::Sum(s, t, {1}, /*keep_dims=*/true);
  EXPECT_EQ(sum.shape().DebugString(), "[10,1]");
  auto c = ops::Concat(s, {w, w}, -1);
  EXPECT_EQ(c.shape().DebugString(), "[784,20]");
  auto b = ops::Add(s, y, ops::Const(s, {1.0f}));
  EXPECT_EQ(b.shape().DebugString(), "[?,10]");
  auto cmp = ops::Less(s, y, 0.5f);
  EXPECT_EQ(cmp.dtype(), DT_BOOL);
  EXPECT_TRUE(s.ok()) << s.status();
}

// Note [Partial shape values] (core/graph/graph.cc): a shape made of tf.shape(x)'s entries and
// numbers is not a constant, but the Reshape (and Fill) after it learn what it knows.
TEST(ScopeTest, ShapesBuiltFromShapeOfAndNumbersAreInferred) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s, DT_FLOAT, TensorShape({-1, 6, 32}));
  auto dims = ops::Shape(s, x);
  auto dim = [&](int i) {  // tf.shape(x)[i]: ExpandDims(Squeeze(Slice(...)))
    return ops::ExpandDims(s, ops::Squeeze(s, ops::Slice(s, dims, {i}, {1})), 0);
  };
  auto heads = ops::Reshape(s, x, ops::Concat(s, {dim(0), dim(1), {4}, {8}}, 0));
  EXPECT_EQ(heads.shape().DebugString(), "[?,6,4,8]");
  EXPECT_EQ(ops::Mul(s, heads, 2.0f).shape().DebugString(), "[?,6,4,8]");
  auto merged = ops::Reshape(s, heads, ops::Concat(s, {ops::Slice(s, dims, {0}, {2}), {32}}, 0));
  EXPECT_EQ(merged.shape().DebugString(), "[?,6,32]");
  auto filled = ops::Fill(s, ops::Concat(s, {dim(0), {3}}, 0), 1.0f);
  EXPECT_EQ(filled.shape().DebugString(), "[?,3]");
  // What is not followed stays unknown: a computed entry.
  auto computed =
      ops::Reshape(s, x, ops::Concat(s, {ops::Mul(s, dim(0), ops::Const(s, {2})), {3}, {32}}, 0));
  EXPECT_EQ(computed.shape().DebugString(), "[?,3,32]");
  EXPECT_TRUE(s.ok()) << s.status();
}

// A hostile graph for that inference: Concats of 64 copies of the previous one, nested (a
// vector of 3 * 64^4 entries, far beyond any shape). It builds at once, the length unknown to
// nothing allocated for it.
TEST(ScopeTest, PartialShapeValuesOfHugeNestedConcatsCostNothing) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s, DT_FLOAT, TensorShape({-1, 6, 32}));
  Output v = ops::Shape(s, x);
  for (int level = 0; level < 4; ++level) v = ops::Concat(s, std::vector<Input>(64, v), 0);
  EXPECT_EQ(v.shape().DebugString(), "[50331648]");
  auto filled = ops::Fill(s, ops::Slice(s, v, {0}, {2}), 1.0f);
  EXPECT_EQ(filled.shape().rank(), 2);
  EXPECT_TRUE(s.ok()) << s.status();
}

TEST(ScopeTest, NameScopesAndUniqueNames) {
  Scope root = Scope::NewRootScope();
  Scope layer = root.NewSubScope("layer1").NewSubScope("dense");
  auto a = ops::Const(layer, 1.0f);
  auto b = ops::Const(layer, 2.0f);
  auto named = ops::Add(layer.WithOpName("out"), a, b);
  EXPECT_EQ(a.node()->name(), "layer1/dense/Const");
  EXPECT_EQ(b.node()->name(), "layer1/dense/Const_1");
  EXPECT_EQ(named.node()->name(), "layer1/dense/out");
  EXPECT_EQ(named.name(), "layer1/dense/out:0");
}

TEST(ScopeTest, DeviceAndControlDependencyScopes) {
  Scope root = Scope::NewRootScope();
  auto init = ops::NoOp(root.WithOpName("init"));
  Scope dev =
      root.WithDevice("/device:CPU:1").WithControlDependencies(std::vector<Operation>{init});
  auto c = ops::Const(dev, 3.0f);
  EXPECT_EQ(c.node()->requested_device(), "/device:CPU:1");
  bool has_control = false;
  for (const Edge* e : c.node()->in_edges()) has_control |= e->IsControl() && e->src == init.node();
  EXPECT_TRUE(has_control);
}

TEST(ScopeTest, OpBuilderControlInputsAndClearedColocation) {
  Scope root = Scope::NewRootScope();
  auto first = ops::NoOp(root.WithOpName("first"));
  auto x = ops::Const(root.WithOpName("x"), 1.0f);
  Operation after =
      OpBuilder(root.WithOpName("after"), "Identity").Input(x).ControlInput(first).Finalize();
  ASSERT_TRUE(root.ok()) << root.status();
  bool has_control = false;
  for (const Edge* e : after.node()->in_edges()) {
    has_control |= e->IsControl() && e->src == first.node();
  }
  EXPECT_TRUE(has_control);
  // Colocation requests stop at ClearColocation.
  Scope near = root.ColocateWith(x);
  auto with = ops::Const(near.WithOpName("with"), 2.0f);
  auto without = ops::Const(near.ClearColocation().WithOpName("without"), 3.0f);
  EXPECT_TRUE(with.node()->def().attr().contains("_class"));
  EXPECT_FALSE(without.node()->def().attr().contains("_class"));
}

TEST(ScopeTest, LiteralsTakeTheDtypeOfTheOtherInput) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s, DT_DOUBLE);
  auto y = ops::Mul(s, x, 2);  // int literal becomes a double Const
  EXPECT_EQ(y.dtype(), DT_DOUBLE);
  EXPECT_TRUE(s.ok()) << s.status();
}

TEST(ScopeTest, FirstErrorIsKeptAndNamesTheNode) {
  Scope s = Scope::NewRootScope();
  auto a = ops::Const(s, Tensor(DT_FLOAT, TensorShape({2, 3})));
  auto b = ops::Const(s, Tensor(DT_FLOAT, TensorShape({4, 5})));
  auto bad = ops::MatMul(s.WithOpName("mm"), a, b);
  EXPECT_FALSE(bad.valid());
  auto later = ops::Add(s, a, a);  // a no-op after the error
  EXPECT_FALSE(later.valid());
  ASSERT_FALSE(s.ok());
  std::string msg(s.status().message());
  EXPECT_NE(msg.find("node 'mm' (MatMul)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("inner dimensions differ"), std::string::npos) << msg;
  GraphDef def;
  EXPECT_FALSE(s.ToGraphDef(&def).ok());
}

TEST(ScopeTest, BroadcastErrorAtBuildTime) {
  Scope s = Scope::NewRootScope();
  ops::Add(s.WithOpName("bad_add"), Tensor(DT_FLOAT, TensorShape({2, 3})),
           Tensor(DT_FLOAT, TensorShape({4})));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("cannot be broadcast"), std::string::npos) << s.status();
  EXPECT_NE(s.status().message().find("bad_add"), std::string::npos) << s.status();
}

}  // namespace
}  // namespace shardflow

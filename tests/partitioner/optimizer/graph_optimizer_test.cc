// The graph optimizer's passes (partitioner/optimizer/): for each, a graph it rewrites runs in a
// session with every pass on and with the optimizer off, on random inputs; the values and the
// gradients must agree, and the report (RunMetadata.optimizer_report) and the optimized graph
// must show that the pass fired.
#include "partitioner/optimizer/graph_optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kernels/cpu/onednn_util.h"
#include "ops/gradients.h"
#include "ops/nn_ops.h"
#include "ops/ops.h"
#include "ops/training.h"
#include "runtime/session.h"
#include "tests/util/test_util.h"

namespace shardflow {
namespace {

Tensor Random(const TensorShape& shape, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  Tensor t(DT_FLOAT, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] = dist(gen);
  return t;
}

struct Result {
  std::vector<Tensor> values;
  RunMetadata metadata;
};

// Runs the scope's graph with the given rewrite options (FULL_TRACE, so the report comes back).
Result RunGraph(const Scope& s, const RewriterConfig& rewrite,
                const std::vector<std::pair<std::string, Tensor>>& feeds,
                const std::vector<std::string>& fetches,
                const std::vector<std::string>& targets = {}) {
  Result r;
  GraphDef def;
  EXPECT_TRUE(s.ToGraphDef(&def).ok()) << s.status();
  SessionOptions options;
  *options.config.mutable_rewrite_options() = rewrite;
  auto session = NewSession(options);
  EXPECT_TRUE(session.ok());
  EXPECT_TRUE((*session)->Create(def).ok());
  RunOptions run;
  run.set_trace_level(RunOptions::FULL_TRACE);
  absl::Status st = (*session)->Run(run, feeds, fetches, targets, &r.values, &r.metadata);
  EXPECT_TRUE(st.ok()) << st;
  return r;
}

RewriterConfig Off() {
  RewriterConfig c;
  c.set_disable_meta_optimizer(true);
  return c;
}

// The changes the pass named `pass` reported, joined.
std::string Changes(const RunMetadata& md, const std::string& pass) {
  std::string out;
  for (const auto& p : md.optimizer_report().passes()) {
    if (p.name() != pass) continue;
    for (const std::string& c : p.changes()) out += c + "\n";
  }
  return out;
}

int CountOp(const GraphDef& g, const std::string& op) {
  int n = 0;
  for (const NodeDef& node : g.node()) n += node.op() == op;
  return n;
}

void ExpectSame(const Result& a, const Result& b, double tol) {
  ASSERT_EQ(a.values.size(), b.values.size());
  for (size_t i = 0; i < a.values.size(); ++i) {
    SCOPED_TRACE("fetch " + std::to_string(i));
    const Tensor& x = a.values[i];
    const Tensor& y = b.values[i];
    ASSERT_EQ(x.shape(), y.shape());
    ASSERT_EQ(x.dtype(), y.dtype());
    for (int64_t j = 0; j < x.NumElements(); ++j) {
      if (x.dtype() == DT_FLOAT) {
        ASSERT_NEAR(x.data<float>()[j], y.data<float>()[j], tol) << "element " << j;
      } else if (x.dtype() == DT_INT32) {
        ASSERT_EQ(x.data<int32_t>()[j], y.data<int32_t>()[j]) << "element " << j;
      }
    }
  }
}

// Both configurations; returns the optimized run.
Result Compare(const Scope& s, const std::vector<std::pair<std::string, Tensor>>& feeds,
               const std::vector<std::string>& fetches, double tol = 1e-5) {
  Result on = RunGraph(s, RewriterConfig(), feeds, fetches);
  Result off = RunGraph(s, Off(), feeds, fetches);
  ExpectSame(on, off, tol);
  EXPECT_EQ(off.metadata.optimizer_report().passes_size(), 0);
  return on;
}

TEST(GraphOptimizerTest, ArithmeticForwardsNeutralOperations) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({3, 4}));
  auto a = ops::Mul(s.WithOpName("times_one"), x, 1.0f);
  auto b = ops::Add(s.WithOpName("plus_zero"), a, 0.0f);
  auto c = ops::Neg(s.WithOpName("neg2"), ops::Neg(s.WithOpName("neg1"), b));
  auto d = ops::Reshape(s.WithOpName("same_shape"), c, ops::Const(s, {3, 4}));
  auto y = ops::Exp(s.WithOpName("y"), d);
  std::vector<Output> grads;
  absl::Status gs = AddGradients(s, {y}, {x}, &grads);
  ASSERT_TRUE(gs.ok()) << gs;
  Result on = Compare(s, {{"x", Random({3, 4}, 1)}}, {"y", grads[0].name()});
  const std::string changes = Changes(on.metadata, "arithmetic_optimization");
  EXPECT_NE(changes.find("'times_one' (Mul)"), std::string::npos) << changes;
  EXPECT_NE(changes.find("'plus_zero' (Add)"), std::string::npos) << changes;
  EXPECT_NE(changes.find("'neg2' (Neg of Neg)"), std::string::npos) << changes;
  EXPECT_NE(changes.find("'same_shape' (Reshape)"), std::string::npos) << changes;
  EXPECT_EQ(CountOp(on.metadata.optimized_graph(), "Neg"), 0);
}

TEST(GraphOptimizerTest, ArithmeticKeepsABroadcastingNeutral) {
  // x [3, 1] + zeros [3, 4] is [3, 4]: not x.
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({3, 1}));
  Tensor zeros(DT_FLOAT, TensorShape({3, 4}));
  for (int i = 0; i < 12; ++i) zeros.data<float>()[i] = 0;
  auto y = ops::Add(s.WithOpName("y"), x, ops::Const(s, zeros));
  Result on = Compare(s, {{"x", Random({3, 1}, 2)}}, {"y"});
  EXPECT_EQ(on.values[0].shape(), TensorShape({3, 4}));
  EXPECT_EQ(Changes(on.metadata, "arithmetic_optimization"), "");
}

TEST(GraphOptimizerTest, ConstantFoldingComputesConstantSubgraphsOnce) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({2, 3}));
  auto scale = ops::Mul(s.WithOpName("scale"), ops::Const(s, 2.0f), ops::Const(s, 3.0f));
  auto shift = ops::Exp(s.WithOpName("shift"), ops::Const(s, {{0.5f, 1.0f, 1.5f}}));
  auto shape = ops::Shape(s.WithOpName("shape"), x);
  auto y = ops::Add(s.WithOpName("y"), ops::Mul(s, x, scale), shift);
  auto z = ops::Reshape(s.WithOpName("z"), y, shape);
  std::vector<Output> grads;
  absl::Status gs = AddGradients(s, {z}, {x}, &grads);
  ASSERT_TRUE(gs.ok()) << gs;
  Result on = Compare(s, {{"x", Random({2, 3}, 3)}}, {"z", grads[0].name(), "shape"});
  const std::string changes = Changes(on.metadata, "constant_folding");
  EXPECT_NE(changes.find("folded 'scale' (Mul)"), std::string::npos) << changes;
  EXPECT_NE(changes.find("folded 'shift' (Exp)"), std::string::npos) << changes;
  EXPECT_NE(changes.find("folded 'shape' (Shape)"), std::string::npos) << changes;
  test::ExpectValues<int32_t>(on.values[2], {2, 3});
}

TEST(GraphOptimizerTest, ConstantFoldingLeavesFedAndStatefulNodes) {
  Scope s = Scope::NewRootScope();
  auto c = ops::Const(s.WithOpName("c"), 2.0f);
  auto doubled = ops::Mul(s.WithOpName("doubled"), c, c);
  // Feeding "doubled" replaces it: nothing downstream may be folded from the constant.
  auto y = ops::Add(s.WithOpName("y"), doubled, 1.0f);
  Result on = RunGraph(s, RewriterConfig(), {{"doubled", Tensor::Scalar(10.0f)}}, {"y"});
  test::ExpectValues<float>(on.values[0], {11.0f});
}

TEST(GraphOptimizerTest, CommonSubgraphEliminationMergesEqualNodes) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({4}));
  auto a = ops::Exp(s.WithOpName("exp_a"), x);
  auto b = ops::Exp(s.WithOpName("exp_b"), x);
  auto y = ops::Add(s.WithOpName("y"), ops::Tanh(s.WithOpName("t1"), a),
                    ops::Tanh(s.WithOpName("t2"), b));
  std::vector<Output> grads;
  absl::Status gs = AddGradients(s, {y}, {x}, &grads);
  ASSERT_TRUE(gs.ok()) << gs;
  Result on = Compare(s, {{"x", Random({4}, 4)}}, {"y", grads[0].name()});
  const std::string changes = Changes(on.metadata, "common_subgraph_elimination");
  EXPECT_NE(changes.find("merged 'exp_b' (Exp) into 'exp_a'"), std::string::npos) << changes;
  EXPECT_NE(changes.find("merged 't2' (Tanh) into 't1'"), std::string::npos) << changes;
}

TEST(GraphOptimizerTest, DependencyOptimizationForwardsIdentitiesAndKeepsTargets) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({2}));
  auto i1 = ops::Identity(s.WithOpName("id1"), x);
  auto i2 = ops::Identity(s.WithOpName("id2"), i1);
  auto y = ops::Exp(s.WithOpName("y"), i2);
  auto target = ops::Identity(s.WithOpName("target"), y);
  Result on =
      RunGraph(s, RewriterConfig(), {{"x", Tensor::FromVector<float>({0, 1})}}, {"y"}, {"target"});
  const std::string changes = Changes(on.metadata, "dependency_optimization");
  EXPECT_NE(changes.find("forwarded 'id1' (Identity)"), std::string::npos) << changes;
  EXPECT_NE(changes.find("forwarded 'id2' (Identity)"), std::string::npos) << changes;
  EXPECT_EQ(changes.find("'target'"), std::string::npos) << changes;  // a target stays
  test::ExpectValues<float>(on.values[0], {1.0f, 2.7182817f});
}

TEST(GraphOptimizerTest, RemappingFusesMatMulBiasAddRelu) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({5, 4}));
  auto w = ops::Placeholder(s.WithOpName("w"), DT_FLOAT, TensorShape({4, 3}));
  auto b = ops::Placeholder(s.WithOpName("b"), DT_FLOAT, TensorShape({3}));
  auto w2 = ops::Placeholder(s.WithOpName("w2"), DT_FLOAT, TensorShape({3, 3}));
  auto h = ops::Relu(s.WithOpName("h"),
                     ops::BiasAdd(s.WithOpName("ba"), ops::MatMul(s.WithOpName("mm"), x, w), b));
  auto y = ops::Tanh(
      s.WithOpName("y"),
      ops::BiasAdd(s.WithOpName("ba2"), ops::MatMul(s.WithOpName("mm2"), h, w2, false, false), b));
  auto loss = ops::Sum(s.WithOpName("loss"), ops::Square(s, y), {0, 1});
  std::vector<Output> grads;
  absl::Status gs = AddGradients(s, {loss}, {x, w, b, w2}, &grads);
  ASSERT_TRUE(gs.ok()) << gs;
  std::vector<std::string> fetches = {"loss"};
  for (const Output& g : grads) fetches.push_back(g.name());
  Result on = Compare(s,
                      {{"x", Random({5, 4}, 5)},
                       {"w", Random({4, 3}, 6)},
                       {"b", Random({3}, 7)},
                       {"w2", Random({3, 3}, 11)}},
                      fetches, 1e-4);
  const std::string changes = Changes(on.metadata, "remapping");
  EXPECT_NE(changes.find("'mm' (MatMul) + 'ba' (BiasAdd) + 'h' (Relu) into _FusedMatMul"),
            std::string::npos)
      << changes;
  EXPECT_NE(changes.find("'mm2' (MatMul) + 'ba2' (BiasAdd) + 'y' (Tanh) into _FusedMatMul"),
            std::string::npos)
      << changes;
  EXPECT_EQ(CountOp(on.metadata.optimized_graph(), "_FusedMatMul"), 2);
  // Turned off, the graph keeps its MatMuls.
  RewriterConfig no_remap;
  no_remap.set_remapping(RewriterConfig::OFF);
  Result off = RunGraph(s, no_remap,
                        {{"x", Random({5, 4}, 5)},
                         {"w", Random({4, 3}, 6)},
                         {"b", Random({3}, 7)},
                         {"w2", Random({3, 3}, 11)}},
                        fetches);
  EXPECT_EQ(CountOp(off.metadata.optimized_graph(), "_FusedMatMul"), 0);
  ExpectSame(on, off, 1e-4);
}

TEST(GraphOptimizerTest, RemappingFusesConv2DBiasAddAndLeavesSharedIntermediates) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({2, 6, 6, 3}));
  auto f = ops::Placeholder(s.WithOpName("f"), DT_FLOAT, TensorShape({3, 3, 3, 4}));
  auto b = ops::Placeholder(s.WithOpName("b"), DT_FLOAT, TensorShape({4}));
  auto f2 = ops::Placeholder(s.WithOpName("f2"), DT_FLOAT, TensorShape({3, 3, 4, 4}));
  auto conv = ops::Conv2D(s.WithOpName("conv"), x, f, {1, 1, 1, 1}, "SAME");
  auto h = ops::Relu(s.WithOpName("h"), ops::BiasAdd(s.WithOpName("ba"), conv, b));
  // A second conv whose sum is also read elsewhere: only conv + bias fuse, not the Sigmoid.
  auto conv2 = ops::Conv2D(s.WithOpName("conv2"), h, f2, {1, 2, 2, 1}, "VALID");
  auto sum2 = ops::BiasAdd(s.WithOpName("ba2"), conv2, b);
  auto y = ops::Add(s.WithOpName("y"), ops::Sigmoid(s.WithOpName("sig"), sum2), sum2);
  auto loss = ops::Sum(s.WithOpName("loss"), ops::Square(s, y), {0, 1, 2, 3});
  std::vector<Output> grads;
  absl::Status gs = AddGradients(s, {loss}, {x, f, b, f2}, &grads);
  ASSERT_TRUE(gs.ok()) << gs;
  std::vector<std::string> fetches = {"loss"};
  for (const Output& g : grads) fetches.push_back(g.name());
  Result on = Compare(s,
                      {{"x", Random({2, 6, 6, 3}, 8)},
                       {"f", Random({3, 3, 3, 4}, 9)},
                       {"b", Random({4}, 10)},
                       {"f2", Random({3, 3, 4, 4}, 12)}},
                      fetches, 1e-3);
  const std::string changes = Changes(on.metadata, "remapping");
  EXPECT_NE(changes.find("'conv' (Conv2D) + 'ba' (BiasAdd) + 'h' (Relu) into _FusedConv2D"),
            std::string::npos)
      << changes;
  EXPECT_NE(changes.find("'conv2' (Conv2D) + 'ba2' (BiasAdd) into _FusedConv2D"), std::string::npos)
      << changes;
  EXPECT_EQ(changes.find("'sig'"), std::string::npos) << changes;
}

TEST(GraphOptimizerTest, RemappingFoldsAnInferenceBatchNormIntoTheConvolution) {
  // A frozen inference graph: constant filter and statistics.
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({2, 5, 5, 3}));
  auto f = ops::Const(s.WithOpName("filter"), Random({3, 3, 3, 4}, 20));
  Tensor var = Random({4}, 24);
  for (int i = 0; i < 4; ++i) var.data<float>()[i] = 0.5f + var.data<float>()[i] * 0.25f;
  auto bn = ops::FusedBatchNorm(s.WithOpName("bn"),
                                ops::Conv2D(s.WithOpName("conv"), x, f, {1, 1, 1, 1}, "SAME"),
                                ops::Const(s, Random({4}, 21)), ops::Const(s, Random({4}, 22)),
                                ops::Const(s, Random({4}, 23)), ops::Const(s, var), 0.001f,
                                /*is_training=*/false);
  auto y = ops::Relu(s.WithOpName("y"), bn.y);
  Result on = Compare(s, {{"x", Random({2, 5, 5, 3}, 25)}}, {"y"}, 1e-4);
  const std::string changes = Changes(on.metadata, "remapping");
  EXPECT_NE(changes.find("folded 'bn' (FusedBatchNorm) into 'conv' (Conv2D) + BiasAdd"),
            std::string::npos)
      << changes;
  EXPECT_NE(changes.find("'conv' (Conv2D) + 'bn' (BiasAdd) + 'y' (Relu) into _FusedConv2D"),
            std::string::npos)
      << changes;
  EXPECT_EQ(CountOp(on.metadata.optimized_graph(), "FusedBatchNorm"), 0);
  // The folded filter is a Const: its kernel reorders it once.
  EXPECT_NE(changes.find("'y' (_FusedConv2D) has a constant filter: reordered once"),
            std::string::npos)
      << changes;
  // A training batch norm (its statistics come from the batch) stays.
  Scope t = Scope::NewRootScope();
  auto tx = ops::Placeholder(t.WithOpName("x"), DT_FLOAT, TensorShape({2, 5, 5, 3}));
  auto tbn = ops::FusedBatchNorm(
      t.WithOpName("bn"),
      ops::Conv2D(t, tx, ops::Const(t, Random({3, 3, 3, 4}, 20)), {1, 1, 1, 1}, "SAME"),
      ops::Const(t, Random({4}, 21)), ops::Const(t, Random({4}, 22)),
      ops::Const(t, Random({4}, 23)), ops::Const(t, var), 0.001f, /*is_training=*/true);
  ops::Identity(t.WithOpName("ty"), tbn.y);
  Result trained = Compare(t, {{"x", Random({2, 5, 5, 3}, 25)}}, {"ty"}, 1e-4);
  EXPECT_EQ(CountOp(trained.metadata.optimized_graph(), "FusedBatchNorm"), 1);
}

TEST(GraphOptimizerTest, RemappingFusesAConvolutionWithAnInferenceBatchNormOfFedStatistics) {
  // Statistics that are not constants (fed here; variables in a model evaluated while it
  // trains): Conv2D + FusedBatchNorm + Relu become one _FusedConv2DBatchNorm, stride 2 and 1x1
  // included.
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({2, 6, 6, 3}));
  auto f = ops::Placeholder(s.WithOpName("f"), DT_FLOAT, TensorShape({3, 3, 3, 4}));
  auto f1 = ops::Placeholder(s.WithOpName("f1"), DT_FLOAT, TensorShape({1, 1, 4, 4}));
  std::vector<Output> stats;
  std::vector<std::pair<std::string, Tensor>> feeds = {{"x", Random({2, 6, 6, 3}, 30)},
                                                       {"f", Random({3, 3, 3, 4}, 31)},
                                                       {"f1", Random({1, 1, 4, 4}, 32)}};
  for (const char* name : {"scale", "offset", "mean", "variance"}) {
    stats.push_back(ops::Placeholder(s.WithOpName(name), DT_FLOAT, TensorShape({4})));
    Tensor v = Random({4}, static_cast<uint32_t>(33 + feeds.size()));
    if (std::string(name) == "variance") {
      for (int i = 0; i < 4; ++i) v.data<float>()[i] = 1.0f + 0.5f * v.data<float>()[i];
    }
    feeds.push_back({name, v});
  }
  auto bn = ops::FusedBatchNorm(s.WithOpName("bn"),
                                ops::Conv2D(s.WithOpName("conv"), x, f, {1, 2, 2, 1}, "SAME"),
                                stats[0], stats[1], stats[2], stats[3], 0.001f, false);
  auto h = ops::Relu(s.WithOpName("h"), bn.y);
  auto bn1 = ops::FusedBatchNorm(s.WithOpName("bn1"),
                                 ops::Conv2D(s.WithOpName("conv1"), h, f1, {1, 1, 1, 1}, "VALID"),
                                 stats[0], stats[1], stats[2], stats[3], 0.001f, false);
  auto y = ops::Identity(s.WithOpName("y"), bn1.y);
  Result on = Compare(s, feeds, {"y"}, 1e-4);
  const std::string changes = Changes(on.metadata, "remapping");
  EXPECT_NE(changes.find("fused 'conv' (Conv2D) + 'bn' (FusedBatchNorm, inference) + 'h' (Relu) "
                         "into _FusedConv2DBatchNorm"),
            std::string::npos)
      << changes;
  EXPECT_NE(changes.find("fused 'conv1' (Conv2D) + 'bn1' (FusedBatchNorm, inference) into "
                         "_FusedConv2DBatchNorm"),
            std::string::npos)
      << changes;
  EXPECT_EQ(CountOp(on.metadata.optimized_graph(), "FusedBatchNorm"), 0);
  EXPECT_EQ(CountOp(on.metadata.optimized_graph(), "_FusedConv2DBatchNorm"), 2);
  // A batch norm whose batch statistics are read (training) is left alone.
  Scope t = Scope::NewRootScope();
  auto tx = ops::Placeholder(t.WithOpName("x"), DT_FLOAT, TensorShape({2, 6, 6, 3}));
  auto tf = ops::Placeholder(t.WithOpName("f"), DT_FLOAT, TensorShape({3, 3, 3, 4}));
  const Output none = ops::Const(t, Tensor(DT_FLOAT, TensorShape({0})));
  auto tbn = ops::FusedBatchNorm(t.WithOpName("bn"), ops::Conv2D(t, tx, tf, {1, 1, 1, 1}, "SAME"),
                                 ops::Const(t, Random({4}, 21)), ops::Const(t, Random({4}, 22)),
                                 none, none, 0.001f, /*is_training=*/true);
  ops::Identity(t.WithOpName("ty"), tbn.y);
  ops::Identity(t.WithOpName("tm"), tbn.batch_mean);
  Result trained = Compare(t, {{"x", Random({2, 6, 6, 3}, 25)}, {"f", Random({3, 3, 3, 4}, 26)}},
                           {"ty", "tm"}, 1e-4);
  EXPECT_EQ(CountOp(trained.metadata.optimized_graph(), "_FusedConv2DBatchNorm"), 0);
}

TEST(GraphOptimizerTest, RemappingFusesAResidualAddIntoTheLastConvolution) {
  // A residual block's end in an inference graph: relu(bn(conv(h)) + x) becomes one
  // _FusedConv2DBatchNormAdd, whichever side of the Add the shortcut is on; a shortcut of
  // another image shape (an Add that broadcasts over height) is left alone.
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({2, 5, 5, 4}));
  auto f = ops::Placeholder(s.WithOpName("f"), DT_FLOAT, TensorShape({3, 3, 4, 4}));
  std::vector<Output> stats;
  std::vector<std::pair<std::string, Tensor>> feeds = {{"x", Random({2, 5, 5, 4}, 40)},
                                                       {"f", Random({3, 3, 4, 4}, 41)}};
  for (const char* name : {"scale", "offset", "mean", "variance"}) {
    stats.push_back(ops::Placeholder(s.WithOpName(name), DT_FLOAT, TensorShape({4})));
    Tensor v = Random({4}, static_cast<uint32_t>(42 + feeds.size()));
    if (std::string(name) == "variance") {
      for (int i = 0; i < 4; ++i) v.data<float>()[i] = 1.0f + 0.5f * v.data<float>()[i];
    }
    feeds.push_back({name, v});
  }
  auto block = [&](const std::string& name, Output in, bool shortcut_first) {
    auto bn =
        ops::FusedBatchNorm(s.WithOpName(name + "_bn"),
                            ops::Conv2D(s.WithOpName(name + "_conv"), in, f, {1, 1, 1, 1}, "SAME"),
                            stats[0], stats[1], stats[2], stats[3], 0.001f, false);
    Output sum = shortcut_first ? ops::Add(s.WithOpName(name + "_add"), in, bn.y)
                                : ops::Add(s.WithOpName(name + "_add"), bn.y, in);
    return ops::Relu(s.WithOpName(name), sum);
  };
  auto y = ops::Identity(s.WithOpName("y"), block("b2", block("b1", x, false), true));
  // relu(bn(conv(x)) + row), row [2, 1, 5, 4]: broadcasts over height, so not fused.
  auto row = ops::Placeholder(s.WithOpName("row"), DT_FLOAT, TensorShape({2, 1, 5, 4}));
  feeds.push_back({"row", Random({2, 1, 5, 4}, 49)});
  // (Its own filter: with b1's, common subgraph elimination would merge the two convolutions.)
  auto f2 = ops::Placeholder(s.WithOpName("f2"), DT_FLOAT, TensorShape({3, 3, 4, 4}));
  feeds.push_back({"f2", Random({3, 3, 4, 4}, 50)});
  auto bn = ops::FusedBatchNorm(s.WithOpName("r_bn"),
                                ops::Conv2D(s.WithOpName("r_conv"), x, f2, {1, 1, 1, 1}, "SAME"),
                                stats[0], stats[1], stats[2], stats[3], 0.001f, false);
  ops::Relu(s.WithOpName("r"), ops::Add(s.WithOpName("r_add"), bn.y, row));
  Result on = Compare(s, feeds, {"y", "r"}, 1e-4);
  const std::string changes = Changes(on.metadata, "remapping");
  for (const char* block_name : {"b1", "b2"}) {
    EXPECT_NE(changes.find(absl::StrCat("fused '", block_name, "_bn' (_FusedConv2DBatchNorm) + '",
                                        block_name, "_add' (Add, the residual add) + '", block_name,
                                        "' (Relu) into _FusedConv2DBatchNormAdd")),
              std::string::npos)
        << changes;
  }
  EXPECT_EQ(CountOp(on.metadata.optimized_graph(), "_FusedConv2DBatchNormAdd"), 2);
  EXPECT_EQ(CountOp(on.metadata.optimized_graph(), "_FusedConv2DBatchNorm"), 1);  // r_bn
  EXPECT_EQ(CountOp(on.metadata.optimized_graph(), "Add"), 1);                    // r_add
}

TEST(GraphOptimizerTest, RemappingFusesAFrozenResidualAddIntoTheLastConvolution) {
  // A frozen block's end: the batch norm folds into the constant filter and a BiasAdd, which
  // fuse into _FusedConv2D; then the residual Add and Relu join it as _FusedConv2DAdd, whose
  // filter is marked constant.
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({2, 5, 5, 4}));
  Tensor var = Random({4}, 54);
  for (int i = 0; i < 4; ++i) var.data<float>()[i] = 0.5f + var.data<float>()[i] * 0.25f;
  auto bn = ops::FusedBatchNorm(
      s.WithOpName("bn"),
      ops::Conv2D(s.WithOpName("conv"), x, ops::Const(s, Random({3, 3, 4, 4}, 50)), {1, 1, 1, 1},
                  "SAME"),
      ops::Const(s, Random({4}, 51)), ops::Const(s, Random({4}, 52)),
      ops::Const(s, Random({4}, 53)), ops::Const(s, var), 0.001f, /*is_training=*/false);
  auto y = ops::Relu(s.WithOpName("y"), ops::Add(s.WithOpName("add"), x, bn.y));
  ops::Identity(s.WithOpName("out"), y);
  Result on = Compare(s, {{"x", Random({2, 5, 5, 4}, 55)}}, {"out"}, 1e-4);
  const std::string changes = Changes(on.metadata, "remapping");
  EXPECT_NE(changes.find("fused 'bn' (_FusedConv2D) + 'add' (Add, the residual add) + 'y' (Relu) "
                         "into _FusedConv2DAdd"),
            std::string::npos)
      << changes;
  EXPECT_NE(changes.find("'y' (_FusedConv2DAdd) has a constant filter: reordered once"),
            std::string::npos)
      << changes;
  EXPECT_EQ(CountOp(on.metadata.optimized_graph(), "_FusedConv2DAdd"), 1);
  EXPECT_EQ(CountOp(on.metadata.optimized_graph(), "Add"), 0);
}

// bfloat16 rounding to nearest even, in fp32 (the reference the pass must match).
Tensor RoundedToBf16InFloat(const Tensor& t) {
  Tensor out(DT_FLOAT, t.shape());
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &t.data<float>()[i], 4);
    bits = (bits + 0x7fff + ((bits >> 16) & 1)) & 0xffff0000u;
    std::memcpy(&out.data<float>()[i], &bits, 4);
  }
  return out;
}

// What a product reads of fp32 input `t` under the pass: `t` rounded to bfloat16 - or, for a
// product marked where oneDNN has no bf16 kernels (SHARDFLOW_NATIVE_BF16=1 forced on a processor
// before AVX-512), `t` itself.
Tensor ProductInput(const Tensor& t, bool native) {
  return native && !OneDnnHasBf16() ? t : RoundedToBf16InFloat(t);
}

RewriterConfig MixedPrecision() {
  RewriterConfig c;
  c.set_auto_mixed_precision_onednn_bfloat16(RewriterConfig::ON);
  return c;
}

// A dense layer and two convolutions (strides 1 and 2), with gradients: the rewritten graph
// computes what the fp32 graph computes on bfloat16-rounded inputs of every product (emulated
// with Casts, each rounded tensor cast once; or, with SHARDFLOW_NATIVE_BF16=1, in the kernels
// of the marked products, with no Cast), and the pass is off by default.
void CheckMixedPrecision(bool native) {
  setenv("SHARDFLOW_NATIVE_BF16", native ? "1" : "0", 1);
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({4, 6}));
  auto w = ops::Placeholder(s.WithOpName("w"), DT_FLOAT, TensorShape({6, 5}));
  // 3x3 x 8 input channels: dot products of 72, long enough for a native bfloat16 convolution
  // (Note [bfloat16 convolutions]).
  auto img = ops::Placeholder(s.WithOpName("img"), DT_FLOAT, TensorShape({2, 5, 5, 8}));
  auto f = ops::Placeholder(s.WithOpName("f"), DT_FLOAT, TensorShape({3, 3, 8, 3}));
  auto h = ops::MatMul(s.WithOpName("h"), x, w);
  auto c = ops::Conv2D(s.WithOpName("c"), img, f, {1, 1, 1, 1}, "SAME");
  auto c2 = ops::Conv2D(s.WithOpName("c2"), img, f, {1, 2, 2, 1}, "SAME");
  auto loss = ops::AddN(s.WithOpName("loss"), {ops::Sum(s, ops::Square(s, h), {0, 1}),
                                               ops::Sum(s, ops::Square(s, c), {0, 1, 2, 3}),
                                               ops::Sum(s, ops::Square(s, c2), {0, 1, 2, 3})});
  std::vector<Output> grads;
  ASSERT_TRUE(AddGradients(s, {loss}, {w, f, img}, &grads).ok());
  const Tensor xv = Random({4, 6}, 40), wv = Random({6, 5}, 41);
  const Tensor iv = Random({2, 5, 5, 8}, 42), fv = Random({3, 3, 8, 3}, 43);
  const std::vector<std::string> fetches = {
      "h", "c", "c2", grads[0].name(), grads[1].name(), grads[2].name()};
  Result mixed =
      RunGraph(s, MixedPrecision(), {{"x", xv}, {"w", wv}, {"img", iv}, {"f", fv}}, fetches);
  // The forward products equal fp32 products of rounded inputs (up to the order of the fp32
  // accumulation).
  Result reference = RunGraph(s, Off(),
                              {{"x", ProductInput(xv, native)},
                               {"w", ProductInput(wv, native)},
                               {"img", ProductInput(iv, native)},
                               {"f", ProductInput(fv, native)}},
                              {"h", "c", "c2"});
  for (int i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < reference.values[i].NumElements(); ++j) {
      const float expected = reference.values[i].data<float>()[j];
      const double tol = 1e-5 + 1e-5 * std::fabs(expected);
      ASSERT_NEAR(mixed.values[i].data<float>()[j], expected, tol)
          << fetches[i] << " element " << j;
    }
  }
  // Values and gradients within bfloat16's precision of the fp32 ones (relative to the largest
  // entry: sums of products cancel), and not all equal to them.
  Result fp32 =
      RunGraph(s, RewriterConfig(), {{"x", xv}, {"w", wv}, {"img", iv}, {"f", fv}}, fetches);
  bool any_differs = false;
  for (size_t i = 0; i < fetches.size(); ++i) {
    double largest = 0;
    for (int64_t j = 0; j < fp32.values[i].NumElements(); ++j) {
      largest = std::max<double>(largest, std::fabs(fp32.values[i].data<float>()[j]));
    }
    for (int64_t j = 0; j < fp32.values[i].NumElements(); ++j) {
      const float a = mixed.values[i].data<float>()[j], b = fp32.values[i].data<float>()[j];
      ASSERT_NEAR(a, b, 2e-2 * largest) << fetches[i] << " element " << j;
      any_differs |= a != b;
    }
  }
  EXPECT_TRUE(any_differs || (native && !OneDnnHasBf16()));
  const std::string changes = Changes(mixed.metadata, "auto_mixed_precision_onednn_bfloat16");
  const GraphDef& g = mixed.metadata.optimized_graph();
  const std::string how = native ? "runs in bfloat16" : "reads bfloat16-rounded inputs";
  for (const std::string& op :
       {std::string("'h' (MatMul)"), std::string("'c' (Conv2D)"), std::string("'c2' (Conv2D)"),
        std::string("(Conv2DBackpropFilter)"), std::string("(Conv2DBackpropInput)")}) {
    EXPECT_NE(changes.find(op + " " + how), std::string::npos) << op << ": " << changes;
  }
  if (native) {
    // Marked in place: the types stay fp32 and nothing is cast.
    int marked = 0;
    for (const NodeDef& n : g.node()) {
      auto it = n.attr().find("_bf16_products");
      marked += it != n.attr().end() && it->second.b();
    }
    EXPECT_EQ(marked, 8);  // 2 MatMul (h and w's gradient), 2 Conv2D, 2 filter and 2 input
                           // gradients
    EXPECT_EQ(CountOp(g, "Cast"), 0);
  } else {
    EXPECT_NE(changes.find("no native bfloat16"), std::string::npos) << changes;
  }
  // The convolution's input and filter are rounded once for the forward op and its gradient:
  // no two Casts read the same tensor.
  std::set<std::string> cast_inputs;
  for (const NodeDef& n : g.node()) {
    if (n.op() == "Cast") {
      EXPECT_TRUE(cast_inputs.insert(n.input(0)).second) << "two Casts of " << n.input(0);
    }
  }
  // Off by default.
  EXPECT_EQ(Changes(fp32.metadata, "auto_mixed_precision_onednn_bfloat16"), "");
  EXPECT_EQ(CountOp(fp32.metadata.optimized_graph(), "Cast"), 0);
  unsetenv("SHARDFLOW_NATIVE_BF16");
}

TEST(GraphOptimizerTest, MixedPrecisionRoundsProductInputsToBfloat16) {
  CheckMixedPrecision(false);
}

TEST(GraphOptimizerTest, MixedPrecisionRunsMatMulInBfloat16WhereNative) {
  CheckMixedPrecision(true);
}

// Where bfloat16 is native, a marked Conv2D and MatMul still fuse with their bias and Relu, the
// fused ops inherit the mark, and they compute the fp32 result of rounded inputs.
TEST(GraphOptimizerTest, MixedPrecisionMarkedProductsStillFuse) {
  setenv("SHARDFLOW_NATIVE_BF16", "1", 1);
  Scope s = Scope::NewRootScope();
  auto img = ops::Placeholder(s.WithOpName("img"), DT_FLOAT, TensorShape({2, 6, 6, 8}));
  auto f = ops::Placeholder(s.WithOpName("f"), DT_FLOAT, TensorShape({3, 3, 8, 4}));
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({3, 5}));
  auto w = ops::Placeholder(s.WithOpName("w"), DT_FLOAT, TensorShape({5, 4}));
  auto bias = ops::Const(s, Tensor::FromVector<float>({0.5f, -0.25f, 0.0f, 1.0f}));
  auto conv = ops::Relu(s.WithOpName("conv"),
                        ops::BiasAdd(s, ops::Conv2D(s, img, f, {1, 1, 1, 1}, "SAME"), bias));
  auto dense = ops::Relu(s.WithOpName("dense"), ops::BiasAdd(s, ops::MatMul(s, x, w), bias));
  const Tensor iv = Random({2, 6, 6, 8}, 50), fv = Random({3, 3, 8, 4}, 51);
  const Tensor xv = Random({3, 5}, 52), wv = Random({5, 4}, 53);
  Result mixed = RunGraph(s, MixedPrecision(), {{"img", iv}, {"f", fv}, {"x", xv}, {"w", wv}},
                          {"conv", "dense"});
  Result reference = RunGraph(s, Off(),
                              {{"img", ProductInput(iv, true)},
                               {"f", ProductInput(fv, true)},
                               {"x", ProductInput(xv, true)},
                               {"w", ProductInput(wv, true)}},
                              {"conv", "dense"});
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(mixed.values[i].shape(), reference.values[i].shape());
    for (int64_t j = 0; j < reference.values[i].NumElements(); ++j) {
      const float expected = reference.values[i].data<float>()[j];
      ASSERT_NEAR(mixed.values[i].data<float>()[j], expected, 1e-5 + 1e-5 * std::fabs(expected))
          << i << " element " << j;
    }
  }
  const GraphDef& g = mixed.metadata.optimized_graph();
  int fused_marked = 0;
  for (const NodeDef& n : g.node()) {
    auto it = n.attr().find("_bf16_products");
    if ((n.op() == "_FusedConv2D" || n.op() == "_FusedMatMul") && it != n.attr().end() &&
        it->second.b()) {
      ++fused_marked;
    }
  }
  EXPECT_EQ(fused_marked, 2);
  // A 3x3 first layer of 3 input channels (dot products of 27) stays fp32 (Note [bfloat16
  // convolutions]).
  Scope s3 = Scope::NewRootScope();
  auto rgb = ops::Placeholder(s3.WithOpName("rgb"), DT_FLOAT, TensorShape({1, 4, 4, 3}));
  auto f3 = ops::Placeholder(s3.WithOpName("f3"), DT_FLOAT, TensorShape({3, 3, 3, 2}));
  ops::Conv2D(s3.WithOpName("first"), rgb, f3, {1, 1, 1, 1}, "SAME");
  const Tensor rv = Random({1, 4, 4, 3}, 54), f3v = Random({3, 3, 3, 2}, 55);
  Result first = RunGraph(s3, MixedPrecision(), {{"rgb", rv}, {"f3", f3v}}, {"first"});
  Result exact = RunGraph(s3, Off(), {{"rgb", rv}, {"f3", f3v}}, {"first"});
  for (int64_t j = 0; j < exact.values[0].NumElements(); ++j) {
    ASSERT_NEAR(first.values[0].data<float>()[j], exact.values[0].data<float>()[j], 1e-5);
  }
  EXPECT_NE(Changes(first.metadata, "auto_mixed_precision_onednn_bfloat16")
                .find("'first' (Conv2D) stays fp32: dot products of 27"),
            std::string::npos);
  unsetenv("SHARDFLOW_NATIVE_BF16");
}

// The bfloat16 copy a marked product keeps of a variable (Note [bfloat16 copies] in
// kernels/cpu/onednn_util.h) is used while the variable is unchanged and never after a write:
// each run multiplies by the variable's current value.
TEST(GraphOptimizerTest, MixedPrecisionSeesEveryWriteOfAVariable) {
  setenv("SHARDFLOW_NATIVE_BF16", "1", 1);
  Scope s = Scope::NewRootScope();
  // Small integers: exact in bfloat16, so the products are exact.
  Var w = Var::Create(s.WithOpName("w"), Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3}));
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({1, 2}));
  auto img = ops::Placeholder(s.WithOpName("img"), DT_FLOAT, TensorShape({1, 1, 1, 8}));
  Var f = Var::Create(s.WithOpName("f"),
                      Tensor::FromVector<float>(std::vector<float>(8, 1.0f), {1, 1, 8, 1}));
  auto y = ops::MatMul(s.WithOpName("y"), x, w.value());
  auto c = ops::Conv2D(s.WithOpName("c"), img, f.value(), {1, 1, 1, 1}, "VALID");
  // w += w0 and f += f0: in place (nothing else holds the variables' buffers between runs),
  // so only the content version tells the old bytes from the new.
  auto add_w = OpBuilder(s.WithOpName("add_w"), "AssignAddVariableOp")
                   .Input(w.handle())
                   .Input(Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3}))
                   .Finalize();
  auto add_f = OpBuilder(s.WithOpName("add_f"), "AssignAddVariableOp")
                   .Input(f.handle())
                   .Input(Tensor::FromVector<float>(std::vector<float>(8, 1.0f), {1, 1, 8, 1}))
                   .Finalize();
  Operation init = InitializeAllVariables(s);
  GraphDef def;
  ASSERT_TRUE(s.ToGraphDef(&def).ok());
  SessionOptions options;
  *options.config.mutable_rewrite_options() = MixedPrecision();
  auto session = NewSession(options);
  ASSERT_TRUE(session.ok());
  ASSERT_TRUE((*session)->Create(def).ok());
  std::vector<Tensor> out;
  ASSERT_TRUE((*session)->Run({}, {}, {init.name()}, &out).ok());
  const std::vector<std::pair<std::string, Tensor>> feeds = {
      {"x", Tensor::FromVector<float>({1, 10}, {1, 2})},
      {"img", Tensor::FromVector<float>({1, 2, 3, 4, 5, 6, 7, 8}, {1, 1, 1, 8})}};
  float scale = 1;
  for (int run = 0; run < 4; ++run) {
    ASSERT_TRUE((*session)->Run(feeds, {"y", "c"}, {}, &out).ok());
    test::ExpectValues<float>(out[0], {41 * scale, 52 * scale, 63 * scale});
    test::ExpectValues<float>(out[1], {36 * scale});
    if (run % 2 == 1) {  // unchanged from run 0 to 1 and from 2 to 3, doubled in between
      ASSERT_TRUE((*session)->Run({}, {}, {"add_w", "add_f"}, &out).ok());
      scale += 1;
    }
  }
  unsetenv("SHARDFLOW_NATIVE_BF16");
}

// _filter_is_constant in a client's graph is not trusted: on a fed (changing) filter the
// convolution computes with each step's filter, with the optimizer on or off.
TEST(GraphOptimizerTest, AClientsConstantFilterClaimIsIgnored) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({1, 4, 4, 2}));
  auto f = ops::Placeholder(s.WithOpName("f"), DT_FLOAT, TensorShape({3, 3, 2, 8}));
  Output y(OpBuilder(s.WithOpName("y"), "Conv2D")
               .Input(x)
               .Input(f)
               .Attr("strides", std::vector<int64_t>{1, 1, 1, 1})
               .Attr("padding", std::string("SAME"))
               .Attr("_filter_is_constant", true)
               .Finalize());
  for (const RewriterConfig& config : {RewriterConfig(), Off()}) {
    GraphDef def;
    ASSERT_TRUE(s.ToGraphDef(&def).ok()) << s.status();
    SessionOptions options;
    *options.config.mutable_rewrite_options() = config;
    auto session = NewSession(options);
    ASSERT_TRUE(session.ok());
    ASSERT_TRUE((*session)->Create(def).ok());
    const Tensor xv = Random({1, 4, 4, 2}, 50);
    std::vector<Tensor> first, second, expected;
    ASSERT_TRUE(
        (*session)->Run({{"x", xv}, {"f", Random({3, 3, 2, 8}, 51)}}, {"y"}, {}, &first).ok());
    const Tensor f2 = Random({3, 3, 2, 8}, 52);
    ASSERT_TRUE((*session)->Run({{"x", xv}, {"f", f2}}, {"y"}, {}, &second).ok());
    Result fresh = RunGraph(s, Off(), {{"x", xv}, {"f", f2}}, {"y"});
    for (int64_t j = 0; j < second[0].NumElements(); ++j) {
      ASSERT_NEAR(second[0].data<float>()[j], fresh.values[0].data<float>()[j], 1e-5) << j;
    }
  }
}

TEST(GraphOptimizerTest, PassEnabledFollowsTheConfig) {
  RewriterConfig c;
  EXPECT_TRUE(PassEnabled(c, "constant_folding"));
  c.set_constant_folding(RewriterConfig::OFF);
  EXPECT_FALSE(PassEnabled(c, "constant_folding"));
  EXPECT_TRUE(PassEnabled(c, "remapping"));
  c.set_remapping(RewriterConfig::ON);
  c.set_disable_meta_optimizer(true);
  EXPECT_FALSE(PassEnabled(c, "remapping"));
  // Mixed precision changes the numbers: only ON turns it on.
  RewriterConfig m;
  EXPECT_FALSE(PassEnabled(m, "auto_mixed_precision_onednn_bfloat16"));
  m.set_auto_mixed_precision_onednn_bfloat16(RewriterConfig::ON);
  EXPECT_TRUE(PassEnabled(m, "auto_mixed_precision_onednn_bfloat16"));
  m.set_disable_meta_optimizer(true);
  EXPECT_FALSE(PassEnabled(m, "auto_mixed_precision_onednn_bfloat16"));
}

}  // namespace
}  // namespace shardflow

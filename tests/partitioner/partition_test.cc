// Partitioned execution: a graph split across CPU devices gives the results of one device, with
// exactly one _Send/_Recv pair per (tensor, destination device), and cross-device control edges
// that hold. The first error on any device fails the step everywhere without a hang.
#include "partitioner/partition.h"

#include <set>

#include "core/framework/tensor_util.h"
#include "gtest/gtest.h"
#include "ops/gradients.h"
#include "ops/nn_ops.h"
#include "ops/training.h"
#include "partitioner/placer.h"
#include "runtime/profiler.h"
#include "tests/util/test_util.h"

namespace shardflow {
namespace {

constexpr char kCpu0[] = "/job:localhost/replica:0/task:0/device:CPU:0";
constexpr char kCpu1[] = "/job:localhost/replica:0/task:0/device:CPU:1";

SessionOptions TwoDevices() {
  SessionOptions o;
  o.config.set_cpu_device_count(2);
  return o;
}

// A 2-layer MLP forward and backward; layer 2 and the loss on `device2`.
struct Mlp {
  Scope s = Scope::NewRootScope();
  Output x, loss;
  std::vector<Output> grads;
  explicit Mlp(const std::string& device2) {
    x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({8, 6}));
    auto labels = ops::Const(s, Tensor::FromVector<int32_t>({0, 1, 2, 3, 0, 1, 2, 3}));
    Tensor w1v(DT_FLOAT, TensorShape({6, 5})), w2v(DT_FLOAT, TensorShape({5, 4}));
    for (int i = 0; i < 30; ++i) w1v.data<float>()[i] = 0.1f * (i % 7) - 0.3f;
    for (int i = 0; i < 20; ++i) w2v.data<float>()[i] = 0.05f * (i % 5) - 0.1f;
    auto w1 = ops::Const(s.WithOpName("w1"), w1v);
    auto w2 = ops::Const(s.WithOpName("w2"), w2v);
    auto h = ops::Relu(s.WithOpName("h"), ops::MatMul(s, x, w1));
    Scope d2 = s.WithDevice(device2);
    auto logits = ops::MatMul(d2.WithOpName("logits"), h, w2);
    loss = ops::Mean(d2.WithOpName("loss"),
                     ops::SparseSoftmaxCrossEntropyWithLogits(d2, logits, labels).loss, {0});
    EXPECT_TRUE(AddGradients(s, {loss}, {w1, w2}, &grads).ok());
  }
  std::vector<Tensor> Run(const SessionOptions& options, RunMetadata* md = nullptr) {
    Tensor xv(DT_FLOAT, TensorShape({8, 6}));
    for (int i = 0; i < 48; ++i) xv.data<float>()[i] = 0.02f * i - 0.4f;
    GraphDef def;
    EXPECT_TRUE(s.ToGraphDef(&def).ok()) << s.status();
    auto session = NewSession(options);
    EXPECT_TRUE((*session)->Create(def).ok());
    RunOptions ro;
    if (md) ro.set_trace_level(RunOptions::FULL_TRACE);
    std::vector<Tensor> out;
    absl::Status st = (*session)->Run(
        ro, {{"x", xv}}, {loss.name(), grads[0].name(), grads[1].name()}, {}, &out, md);
    EXPECT_TRUE(st.ok()) << st;
    return out;
  }
};

TEST(PartitionTest, SplitMlpForwardAndBackwardMatchesOneDevice) {
  std::vector<Tensor> single = Mlp("").Run(SessionOptions());
  RunMetadata md;
  std::vector<Tensor> split = Mlp("/device:CPU:1").Run(TwoDevices(), &md);
  ASSERT_EQ(single.size(), 3u);
  ASSERT_EQ(split.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(TensorsEqual(single[i], split[i])) << "output " << i;
  // Both devices ran something, and the metadata has both partitions.
  EXPECT_EQ(md.partition_graphs_size(), 2);
  std::set<std::string> devices;
  for (const auto& [node, device] : md.placement()) devices.insert(device);
  EXPECT_EQ(devices, (std::set<std::string>{kCpu0, kCpu1}));
  // The profile of the real split step: h [8,5] goes to CPU:1 and gradients come back.
  std::vector<Transfer> transfers = MatchTransfers(md);
  ASSERT_FALSE(transfers.empty());
  for (const Transfer& t : transfers) {
    EXPECT_NE(t.send, nullptr) << t.key.tensor_name;
    EXPECT_NE(t.recv, nullptr) << t.key.tensor_name;
    EXPECT_GT(t.bytes, 0) << t.key.tensor_name;
  }
  PlacementSummary summary = ComputePlacementSummary(md);
  ASSERT_EQ(summary.devices.size(), 2u);
  ASSERT_EQ(summary.links.size(), 2u);  // both directions
  EXPECT_EQ(summary.links[0].send_device, kCpu0);
  EXPECT_GE(summary.links[0].bytes, 8 * 5 * 4);  // at least h
  std::string trace = ChromeTraceJson(md);
  EXPECT_NE(trace.find("\"ph\":\"s\""), std::string::npos);
  EXPECT_NE(trace.find("\"ph\":\"f\""), std::string::npos);
  EXPECT_NE(PlacedGraphDot(GraphDef(), &md).find("bold"), std::string::npos);
}

TEST(PartitionTest, OneSendRecvPairPerTensorAndDestination) {
  // a on CPU:0 feeds three consumers on CPU:1 and one on CPU:0: one pair for a.
  Scope s = Scope::NewRootScope();
  auto a = ops::Const(s.WithOpName("a"), {1.0f, 2.0f});
  Scope d1 = s.WithDevice("/device:CPU:1");
  auto b = ops::Neg(d1.WithOpName("b"), a);
  auto c = ops::Square(d1.WithOpName("c"), a);
  auto d = ops::Add(d1.WithOpName("d"), a, ops::Add(d1, b, c));
  auto e = ops::Exp(s.WithOpName("e"), a);
  auto f = ops::Add(s.WithOpName("f"), e, d);  // d comes back to CPU:0: a second pair
  Graph* g = s.graph();
  ASSERT_TRUE(PlaceGraph(g, {{kCpu0, "CPU", 0}, {kCpu1, "CPU", 0}}).ok());
  std::map<std::string, GraphDef> parts;
  ASSERT_TRUE(PartitionGraph(*g, PartitionOptions(), &parts).ok());
  ASSERT_EQ(parts.size(), 2u);
  std::multiset<std::string> sends, recvs;
  for (const auto& [device, part] : parts) {
    for (const NodeDef& n : part.node()) {
      if (n.op() == "_Send")
        sends.insert(n.attr().at("tensor_name").s() + "->" + n.attr().at("recv_device").s());
      if (n.op() == "_Recv") {
        EXPECT_EQ(n.attr().at("recv_device").s(), device);
        recvs.insert(n.attr().at("tensor_name").s() + "->" + device);
      }
    }
  }
  EXPECT_EQ(sends, (std::multiset<std::string>{std::string("a:0->") + kCpu1,
                                               std::string("d:0->") + kCpu0}));
  EXPECT_EQ(sends, recvs);
  auto out = test::RunScope(s, {}, {f}, TwoDevices());
  ASSERT_TRUE(out.ok()) << out.status();
  // f = exp(a) + a + (-a + a^2)
  test::ExpectValues<float>((*out)[0], {std::exp(1.0f) + 1, std::exp(2.0f) + 4}, 1e-5);
}

TEST(PartitionTest, CrossDeviceControlEdgesHold) {
  // v on CPU:0 is assigned 5; the read on CPU:1 runs after the assignment via a control edge.
  Scope s = Scope::NewRootScope();
  Var v = Var::Create(s.WithOpName("v"), Tensor::Scalar(1.0f));
  Operation set =
      OpBuilder(s.WithOpName("set"), "AssignVariableOp").Input(v.handle()).Input(5.0f).Finalize();
  Operation init = InitializeAllVariables(s);
  auto after = ops::Identity(s.WithDevice("/device:CPU:1")
                                 .WithControlDependencies(std::vector<Operation>{set})
                                 .WithOpName("after"),
                             ops::Const(s.WithDevice("/device:CPU:1"), 0.0f));
  auto read = ops::Add(s.WithOpName("read").WithControlDependencies(after), v.value(), 0.0f);
  GraphDef def;
  ASSERT_TRUE(s.ToGraphDef(&def).ok());
  auto session = NewSession(TwoDevices());
  ASSERT_TRUE((*session)->Create(def).ok());
  std::vector<Tensor> out;
  for (int i = 0; i < 20; ++i) {
    // Back to 1, then one step that must order set (CPU:0) -> after (CPU:1) -> read (CPU:0).
    ASSERT_TRUE((*session)->Run({}, {}, {init.name()}, &out).ok());
    ASSERT_TRUE((*session)->Run({}, {read.name()}, {}, &out).ok());
    EXPECT_EQ(out[0].scalar<float>(), 5.0f);
  }
}

TEST(PartitionTest, AnErrorOnOneDeviceAbortsTheOtherWithoutAHang) {
  // CPU:1 fails (Reshape to a wrong size) while CPU:0 waits for its result: the step must end
  // with the error, and the session stays usable.
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT);
  auto bad = ops::Reshape(s.WithDevice("/device:CPU:1").WithOpName("bad"), x, {7});
  auto y = ops::Add(s.WithOpName("y"), bad, 1.0f);
  GraphDef def;
  ASSERT_TRUE(s.ToGraphDef(&def).ok());
  auto session = NewSession(TwoDevices());
  ASSERT_TRUE((*session)->Create(def).ok());
  std::vector<Tensor> out;
  absl::Status st =
      (*session)->Run({{"x", Tensor(DT_FLOAT, TensorShape({2, 3}))}}, {"y"}, {}, &out);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("node 'bad' (Reshape)"), std::string::npos) << st;
  ASSERT_TRUE((*session)->Run({{"x", Tensor(DT_FLOAT, TensorShape({7}))}}, {"y"}, {}, &out).ok());
}

// A small CNN: conv + bias + relu + max-pool on CPU:0, the dense layer and loss on `device2`.
std::vector<Tensor> RunCnn(const std::string& device2, const SessionOptions& options) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({2, 8, 8, 1}));
  Tensor fv(DT_FLOAT, TensorShape({3, 3, 1, 4})), wv(DT_FLOAT, TensorShape({64, 3}));
  for (int i = 0; i < 36; ++i) fv.data<float>()[i] = 0.05f * (i % 9) - 0.2f;
  for (int i = 0; i < 192; ++i) wv.data<float>()[i] = 0.01f * (i % 11) - 0.05f;
  auto filter = ops::Const(s.WithOpName("filter"), fv);
  auto bias = ops::Const(s.WithOpName("bias"), {0.1f, -0.1f, 0.05f, 0.0f});
  auto w = ops::Const(s.WithOpName("w"), wv);
  auto conv = ops::Conv2D(s.WithOpName("conv"), x, filter, {1, 1, 1, 1}, "SAME");
  auto act = ops::Relu(s, ops::BiasAdd(s, conv, bias));
  auto pool = ops::MaxPool(s.WithOpName("pool"), act, {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID");
  Scope d2 = s.WithDevice(device2);
  auto flat = ops::Reshape(d2.WithOpName("flat"), pool, Tensor::FromVector<int32_t>({2, 64}));
  auto logits = ops::MatMul(d2.WithOpName("logits"), flat, w);
  auto labels = ops::Const(s, Tensor::FromVector<int32_t>({1, 2}));
  auto loss = ops::Mean(d2.WithOpName("loss"),
                        ops::SparseSoftmaxCrossEntropyWithLogits(d2, logits, labels).loss, {0});
  std::vector<Output> grads;
  EXPECT_TRUE(AddGradients(s, {loss}, {filter, bias, w, x}, &grads).ok()) << s.status();
  Tensor xv(DT_FLOAT, TensorShape({2, 8, 8, 1}));
  for (int i = 0; i < 128; ++i) xv.data<float>()[i] = 0.03f * (i % 17) - 0.2f;
  std::vector<Output> fetches = {loss};
  fetches.insert(fetches.end(), grads.begin(), grads.end());
  auto out = test::RunScope(s, {{"x", xv}}, fetches, options);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : std::vector<Tensor>();
}

TEST(PartitionTest, SplitCnnForwardAndBackwardMatchesOneDevice) {
  // One intra-op thread in both: oneDNN's filter gradient sums in an order that depends on it.
  SessionOptions one, two = TwoDevices();
  one.config.set_intra_op_threads(1);
  two.config.set_intra_op_threads(1);
  std::vector<Tensor> single = RunCnn("", one);
  std::vector<Tensor> split = RunCnn("/device:CPU:1", two);
  ASSERT_EQ(single.size(), 5u);
  ASSERT_EQ(split.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(TensorsEqual(single[i], split[i])) << "output " << i;
}

TEST(PartitionTest, HostMemoryTensorsAreMarkedOnTheirTransfer) {
  // The shape of a Reshape on CPU:1 comes from CPU:0: Reshape keeps `shape` in host memory.
  Scope s = Scope::NewRootScope();
  auto x = ops::Const(s.WithOpName("x"), {1.0f, 2.0f, 3.0f, 4.0f});
  auto shape = ops::Const(s.WithOpName("shape"), Tensor::FromVector<int32_t>({2, 2}));
  auto r = ops::Reshape(s.WithOpName("r").WithDevice("/device:CPU:1"), x, shape);
  Graph* g = s.graph();
  ASSERT_TRUE(PlaceGraph(g, {{kCpu0, "CPU", 0}, {kCpu1, "CPU", 0}}).ok());
  std::vector<bool> in, out;
  ASSERT_TRUE(HostMemoryArgs(*g->FindNode("r"), "CPU", &in, &out).ok());
  EXPECT_EQ(in, (std::vector<bool>{false, true}));
  std::map<std::string, GraphDef> parts;
  ASSERT_TRUE(PartitionGraph(*g, PartitionOptions(), &parts).ok());
  int marked = 0, unmarked = 0;
  for (const NodeDef& n : parts[kCpu1].node()) {
    if (n.op() != "_Recv") continue;
    bool host = n.attr().count(kHostMemoryAttr) > 0 && n.attr().at(kHostMemoryAttr).b();
    (host ? marked : unmarked) += 1;
    EXPECT_EQ(host, n.attr().at("tensor_name").s() == "shape:0") << n.name();
  }
  EXPECT_EQ(marked, 1);
  EXPECT_EQ(unmarked, 1);
  auto result = test::RunScope(s, {}, {r}, TwoDevices());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ((*result)[0].shape(), TensorShape({2, 2}));
}

TEST(PartitionTest, UnplacedNodeIsAnError) {
  Scope s = Scope::NewRootScope();
  ops::Const(s.WithOpName("c"), 1.0f);
  std::map<std::string, GraphDef> parts;
  absl::Status st = PartitionGraph(*s.graph(), PartitionOptions(), &parts);
  EXPECT_NE(st.message().find("node 'c' (Const) has no assigned device"), std::string::npos) << st;
}

}  // namespace
}  // namespace shardflow

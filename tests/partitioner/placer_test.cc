// The placer: colocation groups, requests, kernels, soft placement, clear errors for impossible
// constraints; the cost policy (towers split, chains kept together, memory limits, close to the
// best placement on small random graphs); the cost model and the simulator; placement
// explanations; sessions with the cost policy and placement logging.
#include "partitioner/placer.h"

#include <random>
#include <set>

#include "core/framework/tensor_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "ops/training.h"
#include "partitioner/placement_policy.h"
#include "partitioner/simulator.h"
#include "runtime/session.h"
#include "tests/util/random_graph.h"
#include "tests/util/test_util.h"

namespace shardflow {
namespace {

using ::testing::HasSubstr;

constexpr char kCpu0[] = "/job:localhost/replica:0/task:0/device:CPU:0";
constexpr char kCpu1[] = "/job:localhost/replica:0/task:0/device:CPU:1";

std::vector<DeviceAttributes> Cpus(int n) {
  std::vector<DeviceAttributes> out;
  for (int i = 0; i < n; ++i) {
    out.push_back({absl::StrCat("/job:localhost/replica:0/task:0/device:CPU:", i), "CPU", 0});
  }
  return out;
}

std::unique_ptr<Graph> ToGraph(const Scope& s) {
  GraphDef def;
  EXPECT_TRUE(s.ToGraphDef(&def).ok()) << s.status();
  auto g = Graph::FromGraphDef(def);
  EXPECT_TRUE(g.ok()) << g.status();
  return std::move(*g);
}

std::string DeviceOf(const Graph& g, const std::string& node) {
  Node* n = g.FindNode(node);
  return n == nullptr ? "(missing)" : n->assigned_device();
}

Tensor Matrix(int n) {
  Tensor t(DT_FLOAT, TensorShape({n, n}));
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] = 1e-3f * (i % 13);
  return t;
}

// ---- constraints ----------------------------------------------------------------------------

TEST(PlacerTest, ColocationAttrFollowsTheNamedNode) {
  Scope s = Scope::NewRootScope();
  auto a = ops::Const(s.WithOpName("a").WithDevice("/device:CPU:1"), 1.0f);
  auto b = ops::Neg(s.WithOpName("b").ColocateWith(a), a);
  auto c = ops::Neg(s.WithOpName("c"), b);
  auto g = ToGraph(s);
  ASSERT_TRUE(PlaceGraph(g.get(), Cpus(2)).ok());
  EXPECT_EQ(DeviceOf(*g, "a"), kCpu1);
  EXPECT_EQ(DeviceOf(*g, "b"), kCpu1);
  EXPECT_EQ(DeviceOf(*g, "c"), kCpu0);  // not in the group: the first device
}

TEST(PlacerTest, VariableUsersShareTheVariablesDevice) {
  Scope s = Scope::NewRootScope();
  Var v = Var::Create(s.WithOpName("v").WithDevice("/device:CPU:1"), Matrix(2));
  auto read = v.value();
  auto g = ToGraph(s);
  std::vector<NodePlacement> report;
  ASSERT_TRUE(PlaceGraph(g.get(), Cpus(2), {}, &report).ok());
  for (Node* n : g->nodes()) {
    bool uses_handle = n->op() == "VarHandleOp";
    for (const Edge* e : n->in_edges()) uses_handle |= e->src->op() == "VarHandleOp";
    if (uses_handle) {
      EXPECT_EQ(n->assigned_device(), kCpu1) << n->name();
    }
  }
  EXPECT_EQ(read.node()->assigned_device(), "");  // the scope's graph was copied
}

TEST(PlacerTest, ConflictingRequestsInOneGroupNameBothNodes) {
  Scope s = Scope::NewRootScope();
  auto a = ops::Const(s.WithOpName("a").WithDevice("/device:CPU:0"), 1.0f);
  ops::Neg(s.WithOpName("b").WithDevice("/device:CPU:1").ColocateWith(a), a);
  auto g = ToGraph(s);
  absl::Status st = PlaceGraph(g.get(), Cpus(2));
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("'a' (Const)"));
  EXPECT_THAT(st.message(), HasSubstr("'b' (Neg)"));
  EXPECT_THAT(st.message(), HasSubstr("must be colocated"));
  EXPECT_THAT(st.message(), HasSubstr(kCpu1));
}

TEST(PlacerTest, ColocationWithAMissingNodeIsAnError) {
  Scope s = Scope::NewRootScope();
  auto a = ops::Const(s.WithOpName("a"), 1.0f);
  auto g = ToGraph(s);
  AttrValue cls;
  cls.mutable_list()->add_s("loc:@ghost");
  g->FindNode("a")->SetAttr("_class", cls);
  absl::Status st = PlaceGraph(g.get(), Cpus(1));
  EXPECT_THAT(st.message(), HasSubstr("colocated with 'ghost'"));
  cls.mutable_list()->set_s(0, "nonsense");
  g->FindNode("a")->SetAttr("_class", cls);
  st = PlaceGraph(g.get(), Cpus(1));
  EXPECT_THAT(st.message(), HasSubstr("loc:@<node name>"));
}

TEST(PlacerTest, ImpossibleRequestsNameTheNodeAndTheDevicesThatExist) {
  Scope s = Scope::NewRootScope();
  ops::Const(s.WithOpName("on_gpu").WithDevice("/device:GPU:0"), 1.0f);
  auto g = ToGraph(s);
  absl::Status st = PlaceGraph(g.get(), Cpus(2));
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("'on_gpu' (Const)"));
  EXPECT_THAT(st.message(), HasSubstr("/device:GPU:0"));
  EXPECT_THAT(st.message(), HasSubstr(absl::StrCat("[", kCpu0, ", ", kCpu1, "]")));
  EXPECT_THAT(st.message(), HasSubstr("allow_soft_placement"));
  // Soft placement keeps the job and task and finds a CPU.
  PlacerOptions soft;
  soft.allow_soft_placement = true;
  std::vector<NodePlacement> report;
  ASSERT_TRUE(PlaceGraph(g.get(), Cpus(2), soft, &report).ok());
  EXPECT_EQ(DeviceOf(*g, "on_gpu"), kCpu0);
  EXPECT_TRUE(report[0].soft);
  // A job that does not exist is no device at all, soft or not.
  Scope s2 = Scope::NewRootScope();
  ops::Const(s2.WithOpName("on_ps").WithDevice("/job:ps/task:0"), 1.0f);
  auto g2 = ToGraph(s2);
  st = PlaceGraph(g2.get(), Cpus(1), soft);
  EXPECT_THAT(st.message(), HasSubstr("no such device"));
  EXPECT_THAT(st.message(), HasSubstr("'on_ps'"));
}

TEST(PlacerTest, AnAssignedDeviceIsKeptAndAnUnknownPolicyIsAnError) {
  Scope s = Scope::NewRootScope();
  ops::Const(s.WithOpName("a"), 1.0f);
  auto g = ToGraph(s);
  g->FindNode("a")->set_assigned_device(kCpu1);
  ASSERT_TRUE(PlaceGraph(g.get(), Cpus(2)).ok());
  EXPECT_EQ(DeviceOf(*g, "a"), kCpu1);
  PlacerOptions bad;
  bad.policy = "random";
  EXPECT_THAT(PlaceGraph(g.get(), Cpus(2), bad).message(), HasSubstr("\"constraints\""));
}

// ---- cost policy ----------------------------------------------------------------------------

// Two independent towers of matmuls joined by an Add.
Scope Towers(int dim, int depth) {
  Scope s = Scope::NewRootScope();
  std::vector<Output> tops;
  for (int t = 0; t < 2; ++t) {
    Scope ts = s.NewSubScope(absl::StrCat("tower", t));
    Output x = ops::Const(ts.WithOpName("x"), Matrix(dim));
    for (int d = 0; d < depth; ++d) {
      x = ops::MatMul(ts.WithOpName(absl::StrCat("mm", d)), x, ops::Const(ts, Matrix(dim)));
    }
    tops.push_back(x);
  }
  ops::Add(s.WithOpName("join"), tops[0], tops[1]);
  return s;
}

TEST(CostPolicyTest, SplitsIndependentTowersAndKeepsChainsTogether) {
  auto g = ToGraph(Towers(256, 4));
  PlacerOptions options;
  options.policy = "cost";
  std::vector<NodePlacement> report;
  ASSERT_TRUE(PlaceGraph(g.get(), Cpus(2), options, &report).ok());
  std::string t0 = DeviceOf(*g, "tower0/mm0"), t1 = DeviceOf(*g, "tower1/mm0");
  EXPECT_NE(t0, t1);
  for (int d = 1; d < 4; ++d) {
    EXPECT_EQ(DeviceOf(*g, absl::StrCat("tower0/mm", d)), t0);
    EXPECT_EQ(DeviceOf(*g, absl::StrCat("tower1/mm", d)), t1);
  }
  // Weights follow their consumer instead of crossing.
  EXPECT_EQ(DeviceOf(*g, "tower1/x"), t1);
  for (const NodePlacement& r : report) {
    EXPECT_EQ(r.policy, "cost");
    EXPECT_FALSE(r.reason.empty()) << r.node;
  }
}

TEST(CostPolicyTest, RespectsMemoryLimits) {
  // Three 1 MB variables, each with its 1 MB initial value; each device holds two at most.
  Scope s = Scope::NewRootScope();
  for (int i = 0; i < 3; ++i) Var::Create(s.WithOpName(absl::StrCat("v", i)), Matrix(512));
  auto g = ToGraph(s);
  std::vector<DeviceAttributes> devices = Cpus(2);
  for (auto& d : devices) d.memory_limit_bytes = 4 * 512 * 512 * 4 + 4096;
  PlacerOptions options;
  options.policy = "cost";
  ASSERT_TRUE(PlaceGraph(g.get(), devices, options).ok());
  std::map<std::string, int> per_device;
  for (int i = 0; i < 3; ++i) per_device[DeviceOf(*g, absl::StrCat("v", i))] += 1;
  for (const auto& [device, count] : per_device) EXPECT_LE(count, 2) << device;
  // One device of that size cannot hold three: a clear error.
  devices.resize(1);
  absl::Status st = PlaceGraph(ToGraph(s).get(), devices, options);
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(st.message(), HasSubstr("bytes"));
  EXPECT_THAT(st.message(), HasSubstr(kCpu0));
}

struct RandomCase {
  Scope scope = Scope::NewRootScope();
  CostModel costs;
};

// A two-device cluster with a real link: 10 GB/s, 20 µs.
DeviceTopology TwoDeviceCluster() {
  TopologyDescription d;
  for (int i = 0; i < 2; ++i) {
    auto* dev = d.add_devices();
    dev->set_name(absl::StrCat("/job:localhost/replica:0/task:0/device:CPU:", i));
    dev->set_gflops(100);
    dev->set_memory_gbps(10);
  }
  d.mutable_default_link()->set_gbps(10);
  d.mutable_default_link()->set_latency_us(20);
  return *DeviceTopology::FromDescription(d);
}

TEST(CostPolicyTest, NearTheBestPlacementOnSmallRandomGraphs) {
  DeviceTopology cluster = TwoDeviceCluster();
  double ratio_sum = 0;
  const int cases = 12;
  for (int seed = 1; seed <= cases; ++seed) {
    RandomCase c;
    test::BuildRandomGraph(seed, 9, c.scope, &c.costs);
    auto g = ToGraph(c.scope);
    PlacerOptions options;
    options.policy = "cost";
    options.topology = &cluster;
    options.costs = &c.costs;
    ASSERT_TRUE(PlaceGraph(g.get(), cluster.Devices(), options).ok());
    auto sim = BuildSimGraph(*g, cluster, c.costs);
    ASSERT_TRUE(sim.ok());
    auto chosen = PlacementVector(*sim, cluster);
    ASSERT_TRUE(chosen.ok()) << chosen.status();
    double policy = SimulateStepMicros(*sim, *chosen, cluster);
    double best = 1e300;
    std::vector<int> where(sim->num_nodes);
    for (int mask = 0; mask < (1 << sim->num_nodes); ++mask) {
      for (int n = 0; n < sim->num_nodes; ++n) where[n] = (mask >> n) & 1;
      best = std::min(best, SimulateStepMicros(*sim, where, cluster));
    }
    ASSERT_GE(policy, best * (1 - 1e-9));
    ratio_sum += policy / best;
  }
  EXPECT_LE(ratio_sum / cases, 1.05);
}

// ---- cost model and simulator ----------------------------------------------------------------

TEST(SimulatorTest, ChainAcrossALinkMatchesHandArithmetic) {
  Scope s = Scope::NewRootScope();
  auto a = ops::Const(s.WithOpName("a"), 1.0f);
  auto b = ops::Neg(s.WithOpName("b"), a);
  auto c = ops::Neg(s.WithOpName("c"), b);
  auto d = ops::Neg(s.WithOpName("d"), b);
  auto g = ToGraph(s);
  CostModel costs;
  costs.SetMeasured("a", 1, 100, 10, {4});
  costs.SetMeasured("b", 10, 100, 10, {1000000});
  costs.SetMeasured("c", 5, 100, 10, {4});
  costs.SetMeasured("d", 7, 100, 10, {4});
  DeviceTopology cluster = TwoDeviceCluster();  // 10 GB/s: 1 MB takes 100 µs, plus 20 µs latency
  auto sim = BuildSimGraph(*g, cluster, costs);
  ASSERT_TRUE(sim.ok());
  std::vector<int> where(4);
  for (int n = 0; n < 4; ++n) where[n] = sim->nodes[n]->name() == "c" ? 1 : 0;
  SimResult r = Simulate(*sim, where, cluster);
  // a, b on CPU:0 (11 µs); b's 1 MB to CPU:1 (120 µs); c (5 µs). d runs on CPU:0 meanwhile.
  EXPECT_DOUBLE_EQ(r.step_micros, 1 + 10 + 120 + 5);
  EXPECT_DOUBLE_EQ(r.busy_micros[0], 18);
  EXPECT_DOUBLE_EQ(r.busy_micros[1], 5);
  EXPECT_EQ((r.link_bytes[{0, 1}]), 1000000);
  EXPECT_EQ((r.link_transfers[{0, 1}]), 1);
  // Two consumers on CPU:1 still make one transfer.
  for (int n = 0; n < 4; ++n) where[n] = sim->nodes[n]->name() >= "c" ? 1 : 0;
  r = Simulate(*sim, where, cluster);
  EXPECT_EQ((r.link_transfers[{0, 1}]), 1);
  EXPECT_DOUBLE_EQ(r.step_micros, 1 + 10 + 120 + 5 + 7);
  EXPECT_THAT(FormatSimResult(r, cluster), HasSubstr("simulated step time: 143.0 us"));
}

TEST(CostModelTest, AnalyticEstimatesAndRefinementFromStepStats) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Const(s.WithOpName("x"), Matrix(200));
  auto m1 = ops::MatMul(s.WithOpName("m1"), x, x);
  auto m2 = ops::MatMul(s.WithOpName("m2"), m1, x);
  auto g = ToGraph(s);
  CostModel costs;
  DeviceTopology cluster = DeviceTopology::ForDevices(Cpus(1));
  const DeviceDescription& cpu = cluster.device(0);
  EXPECT_DOUBLE_EQ(costs.AnalyticWork(*g->FindNode("m1")).flops, 2.0 * 200 * 200 * 200);
  EXPECT_TRUE(costs.AnalyticWork(*g->FindNode("x")).cheap);
  double analytic = costs.ComputeMicros(*g->FindNode("m1"), cpu);
  EXPECT_NEAR(analytic, 2.0 * 200 * 200 * 200 / (kDefaultCpuGflopsPerThread * 1e3) + 2.0, 1e-6);
  EXPECT_EQ(costs.OutputBytes(*g->FindNode("m1"), 0), 200 * 200 * 4);
  // A measured step: m1 took 4x the estimate; m2 was not measured but is a MatMul too.
  StepStats stats;
  auto* dev = stats.add_dev_stats();
  dev->set_device(cpu.name());
  auto* ns = dev->add_node_stats();
  ns->set_node_name("m1");
  ns->set_start_micros(100);
  ns->set_end_micros(100 + static_cast<int64_t>(4 * analytic));
  costs.AddStepStats(stats, cluster);
  EXPECT_TRUE(costs.IsMeasured("m1"));
  EXPECT_NEAR(costs.ComputeMicros(*g->FindNode("m1"), cpu), 4 * analytic, 1.0);
  auto sim = BuildSimGraph(*g, cluster, costs);
  ASSERT_TRUE(sim.ok());
  int m2_index = sim->index_of[g->FindNode("m2")->id()];
  EXPECT_NEAR(sim->Cost(m2_index, 0), 4 * analytic, 2.0);  // calibrated by the MatMul ratio
  // On a device twice as fast the measured node takes half as long.
  DeviceDescription fast = cpu;
  fast.set_gflops(cpu.gflops() * 2);
  EXPECT_NEAR(costs.ComputeMicros(*g->FindNode("m1"), fast), 2 * analytic, 1.0);
}

TEST(ClusterTest, JsonDescriptionsAndTheirErrors) {
  auto ok = DeviceTopology::FromJson(
      R"({"devices": [{"name": "/job:w/replica:0/task:0/device:CPU:0", "gflops": 50},
                      {"name": "/job:w/replica:0/task:1/device:CPU:0"}],
          "links": [{"src": "/job:w/replica:0/task:0/device:CPU:0",
                     "dst": "/job:w/replica:0/task:1/device:CPU:0",
                     "gbps": 1, "latency_us": 50}]})",
      "c.json");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->num_devices(), 2);
  EXPECT_EQ(ok->device(0).type(), "CPU");
  EXPECT_DOUBLE_EQ(ok->device(0).gflops(), 50);
  EXPECT_DOUBLE_EQ(ok->device(1).gflops(), kDefaultCpuGflopsPerThread);
  EXPECT_DOUBLE_EQ(ok->TransferMicros(0, 1, 1000000), 50 + 1000);
  EXPECT_DOUBLE_EQ(ok->TransferMicros(1, 0, 1000000), 50 + 1000);  // the reverse direction
  EXPECT_DOUBLE_EQ(ok->TransferMicros(1, 1, 1000000), 0);
  EXPECT_THAT(DeviceTopology::FromJson("{devices: [", "bad.json").status().message(),
              HasSubstr("bad.json: not a valid cluster description"));
  EXPECT_THAT(DeviceTopology::FromJson(R"({"devices": [{"name": "/device:CPU:0"}]})", "p.json")
                  .status()
                  .message(),
              HasSubstr("give a full name"));
  EXPECT_THAT(
      DeviceTopology::FromJson(R"({"devices": [{"name": "/job:w/replica:0/task:0/device:CPU:0"}],
                                    "links": [{"src": "/job:w/replica:0/task:0/device:CPU:0",
                                               "dst": "/job:x/replica:0/task:0/device:CPU:0"}]})",
                               "l.json")
          .status()
          .message(),
      HasSubstr("names a device the description does not list"));
  EXPECT_EQ(DeviceTopology::FromJsonFile("/nonexistent/cluster.json").status().code(),
            absl::StatusCode::kNotFound);
}

// ---- explanations, sessions, logging ---------------------------------------------------------

TEST(ExplainTest, StatesConstraintsAndTheReason) {
  Scope s = Scope::NewRootScope();
  Var v = Var::Create(s.WithOpName("v").WithDevice("/device:CPU:1"), Matrix(128));
  ops::MatMul(s.WithOpName("mm"), v.value(), v.value());
  GraphDef def;
  ASSERT_TRUE(s.ToGraphDef(&def).ok());
  PlacerOptions options;
  options.policy = "cost";
  auto e = ExplainPlacement(def, Cpus(2), options, v.value().node()->name());
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->device, kCpu1);
  EXPECT_EQ(e->group_request, "/device:CPU:1");
  EXPECT_GE(e->group.size(), 2u);  // the variable and its read
  // The group's kernels: the CPU's, and the GPU's in a build with CUDA (only CPUs are listed).
  EXPECT_THAT(e->kernel_types, testing::Contains("CPU"));
  EXPECT_EQ(e->feasible, std::vector<std::string>{kCpu1});
  std::string text = FormatNodePlacement(*e);
  EXPECT_THAT(text, HasSubstr("colocation group"));
  EXPECT_THAT(text, HasSubstr("why (cost)"));
  auto mm = ExplainPlacement(def, Cpus(2), options, "mm");
  ASSERT_TRUE(mm.ok());
  EXPECT_THAT(mm->reason, HasSubstr("(cost policy"));
  EXPECT_EQ(ExplainPlacement(def, Cpus(2), options, "nope").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(SessionPlacementTest, CostPolicyRunsTowersOnTwoDevicesWithTheSameResult) {
  Scope s = Towers(64, 3);
  GraphDef def;
  ASSERT_TRUE(s.ToGraphDef(&def).ok());
  std::vector<Tensor> results[2];
  for (int policy = 0; policy < 2; ++policy) {
    SessionOptions options;
    options.config.set_cpu_device_count(2);
    options.config.set_placement_policy(policy == 0 ? "constraints" : "cost");
    // The towers are built of constants: folded, there would be nothing left to place.
    options.config.mutable_rewrite_options()->set_constant_folding(RewriterConfig::OFF);
    auto session = NewSession(options);
    ASSERT_TRUE((*session)->Create(def).ok());
    RunMetadata md;
    ASSERT_TRUE((*session)->Run(RunOptions(), {}, {"join"}, {}, &results[policy], &md).ok());
    std::set<std::string> used;
    for (const auto& [node, device] : md.placement()) used.insert(device);
    EXPECT_EQ(used.size(), policy == 0 ? 1u : 2u);
  }
  EXPECT_TRUE(TensorsEqual(results[0][0], results[1][0]));
}

TEST(SessionPlacementTest, VariablesKeepTheirDeviceAcrossRunSignatures) {
  Scope s = Scope::NewRootScope();
  Var v = Var::Create(s.WithOpName("v"), Matrix(64));
  auto y = ops::MatMul(s.WithOpName("y"), v.value(), ops::Const(s, Matrix(64)));
  Operation init = InitializeAllVariables(s);
  GraphDef def;
  ASSERT_TRUE(s.ToGraphDef(&def).ok());
  SessionOptions options;
  options.config.set_cpu_device_count(2);
  options.config.set_placement_policy("cost");
  options.config.set_log_device_placement(true);
  auto session = NewSession(options);
  ASSERT_TRUE((*session)->Create(def).ok());
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE((*session)->Run({}, {}, {init.node()->name()}, nullptr).ok());
  std::vector<Tensor> out;
  absl::Status st = (*session)->Run({}, {"y"}, {}, &out);  // another signature
  std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(st.ok()) << st;
  // The whole graph was placed and logged once: one line for y.
  size_t first = log.find("y (MatMul) -> ");
  ASSERT_NE(first, std::string::npos) << log;
  EXPECT_EQ(log.find("y (MatMul) -> ", first + 1), std::string::npos) << log;
}

}  // namespace
}  // namespace shardflow

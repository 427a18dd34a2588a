// Data parallelism by all-reduce (distributed/strategies/all_reduce.h). Equivalence: with plain
// SGD, N replicas on batches b_1..b_N give, step after step, the parameters one replica gets on
// their concatenation (the mean of the replicas' gradients is the gradient of the mean loss) —
// in one process (replicas on CPU devices) and across two tasks (replicas on each task). Also:
// the sync op makes every replica equal to replica 0, and replicas that differ are refused.
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "distributed/master.h"
#include "distributed/strategies/all_reduce.h"
#include "gtest/gtest.h"
#include "ops/nn_ops.h"
#include "ops/ops.h"
#include "tests/distributed/distributed_test_util.h"
#include "tests/util/test_util.h"

namespace shardflow {
namespace {

constexpr int kIn = 6, kClasses = 3, kBatch = 4;

struct Batch {
  Tensor x, y;
};

Batch MakeBatch(int rows, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  Batch b{Tensor(DT_FLOAT, TensorShape({rows, kIn})), Tensor(DT_INT32, TensorShape({rows}))};
  for (int64_t i = 0; i < b.x.NumElements(); ++i) b.x.data<float>()[i] = normal(rng);
  for (int i = 0; i < rows; ++i) b.y.data<int32_t>()[i] = static_cast<int32_t>(rng() % kClasses);
  return b;
}

Tensor Concat0(const std::vector<Tensor>& parts) {
  int64_t rows = 0;
  for (const Tensor& p : parts) rows += p.dim_size(0);
  TensorShape shape = parts[0].shape();
  shape.set_dim(0, rows);
  Tensor out(parts[0].dtype(), shape);
  size_t offset = 0;
  for (const Tensor& p : parts) {
    std::memcpy(static_cast<char*>(out.raw_data()) + offset, p.raw_data(), p.TotalBytes());
    offset += p.TotalBytes();
  }
  return out;
}

// A two-layer softmax classifier; placeholders x{r}, y{r}.
absl::StatusOr<Output> Classifier(const Scope& s, int replica) {
  auto x = ops::Placeholder(s.WithOpName(absl::StrCat("x", replica)), DT_FLOAT, {-1, kIn});
  auto y = ops::Placeholder(s.WithOpName(absl::StrCat("y", replica)), DT_INT32, {-1});
  Var w1 = Var::Create(s.WithOpName("w1"), init::GlorotUniform(s, {kIn, 5}, 11 + 7 * replica));
  Var b1 = Var::Create(s.WithOpName("b1"), init::Constant(s, {5}, 0.1f));
  Var w2 = Var::Create(s.WithOpName("w2"), init::GlorotUniform(s, {5, kClasses}, 12));
  Output h = ops::Tanh(s, ops::BiasAdd(s, ops::MatMul(s, x, w1.value()), b1.value()));
  Output logits = ops::MatMul(s, h, w2.value());
  auto xent = ops::SparseSoftmaxCrossEntropyWithLogits(s, logits, y);
  return ops::Mean(s.WithOpName("loss"), xent.loss, {0});
}

OptimizerFactory Sgd() {
  return [] { return std::make_unique<GradientDescentOptimizer>(0.5); };
}

// Trains `steps` steps with `replicas` replicas (each on devices[r]) through `session`, and
// returns replica 0's variables after each step (and checks every replica holds the same).
std::vector<std::vector<Tensor>> TrainReplicas(Session* session, const AllReduceTraining& dp,
                                               const std::vector<std::vector<Batch>>& batches,
                                               int steps) {
  const bool averaging = dp.average_op.node() != nullptr;
  std::vector<std::vector<Tensor>> history;
  std::vector<Tensor> out;
  const int replicas = static_cast<int>(dp.losses.size());
  for (int step = 0; step < steps; ++step) {
    std::vector<std::pair<std::string, Tensor>> feeds;
    for (int r = 0; r < replicas; ++r) {
      const std::string prefix = r == 0 ? "" : absl::StrCat("replica_", r, "/");
      feeds.push_back({absl::StrCat(prefix, "x", r), batches[step][r].x});
      feeds.push_back({absl::StrCat(prefix, "y", r), batches[step][r].y});
    }
    absl::Status st = session->Run(feeds, {}, {dp.train_op.node()->name()}, &out);
    EXPECT_TRUE(st.ok()) << st;
    if (st.ok() && averaging) st = session->Run({}, {}, {dp.average_op.node()->name()}, &out);
    EXPECT_TRUE(st.ok()) << st;
    if (!st.ok()) return history;
    std::vector<std::string> names;
    for (const auto& vars : dp.variables) {
      for (const Var& v : vars) names.push_back(v.value().name());
    }
    st = session->Run({}, names, {}, &out);
    EXPECT_TRUE(st.ok()) << st;
    const size_t per = dp.variables[0].size();
    for (int r = 1; r < replicas; ++r) {
      for (size_t k = 0; k < per; ++k) {
        const Tensor& a = out[k];
        const Tensor& b = out[r * per + k];
        for (int64_t i = 0; i < a.NumElements(); ++i) {
          EXPECT_EQ(a.data<float>()[i], b.data<float>()[i])
              << "replica " << r << " variable " << k << " after step " << step;
        }
      }
    }
    history.emplace_back(out.begin(), out.begin() + per);
  }
  return history;
}

std::vector<std::string> LocalDevices(int n) {
  std::vector<std::string> devices;
  for (int r = 0; r < n; ++r) {
    devices.push_back(absl::StrCat("/job:localhost/replica:0/task:0/device:CPU:", r));
  }
  return devices;
}

// A local session of `devices` CPU devices running `def`, with the variables initialised and
// replica 0's values broadcast to the other replicas.
std::unique_ptr<Session> StartLocal(const GraphDef& def, int devices, const Operation& init,
                                    const AllReduceTraining& dp) {
  SessionOptions options;
  options.config.set_cpu_device_count(devices);
  auto session = NewSession(options);
  EXPECT_TRUE(session.ok()) << session.status();
  EXPECT_TRUE((*session)->Create(def).ok());
  std::vector<Tensor> out;
  EXPECT_TRUE((*session)->Run({}, {}, {init.node()->name()}, &out).ok());
  EXPECT_TRUE((*session)->Run({}, {}, {dp.sync_op.node()->name()}, &out).ok());
  return std::move(session).value();
}

int CountReduces(const GraphDef& def) {
  int reduces = 0;
  for (const NodeDef& n : def.node()) reduces += n.op() == "CollectiveReduce";
  return reduces;
}

std::vector<std::vector<Tensor>> TrainSingle(const std::vector<std::vector<Batch>>& batches,
                                             int steps, OptimizerFactory opt = Sgd()) {
  Scope s = Scope::NewRootScope();
  auto dp = BuildAllReduceTraining(s, LocalDevices(1), Classifier, opt);
  EXPECT_TRUE(dp.ok()) << dp.status();
  Operation init = InitializeAllVariables(s);
  GraphDef def;
  EXPECT_TRUE(s.ToGraphDef(&def).ok());
  std::unique_ptr<Session> session = StartLocal(def, 1, init, *dp);
  // One replica on the concatenated batches.
  std::vector<std::vector<Batch>> joined;
  for (const auto& step : batches) {
    std::vector<Tensor> xs, ys;
    for (const Batch& b : step) {
      xs.push_back(b.x);
      ys.push_back(b.y);
    }
    joined.push_back({Batch{Concat0(xs), Concat0(ys)}});
  }
  return TrainReplicas(session.get(), *dp, joined, steps);
}

std::vector<std::vector<Batch>> Batches(int replicas, int steps) {
  std::vector<std::vector<Batch>> out(steps);
  for (int step = 0; step < steps; ++step) {
    for (int r = 0; r < replicas; ++r) out[step].push_back(MakeBatch(kBatch, 100 * step + r));
  }
  return out;
}

void ExpectSameHistory(const std::vector<std::vector<Tensor>>& a,
                       const std::vector<std::vector<Tensor>>& b, double tolerance = 1e-5) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t step = 0; step < a.size(); ++step) {
    for (size_t k = 0; k < a[step].size(); ++k) {
      for (int64_t i = 0; i < a[step][k].NumElements(); ++i) {
        EXPECT_NEAR(a[step][k].data<float>()[i], b[step][k].data<float>()[i], tolerance)
            << "variable " << k << " element " << i << " after step " << step;
      }
    }
  }
}

// Also with every bucket size (Note [Gradient buckets]): one all-reduce per gradient, a few
// small buckets, and everything in one.
class AllReduceBuckets : public ::testing::TestWithParam<int64_t> {};

TEST_P(AllReduceBuckets, ReplicasOnDevicesEqualOneReplicaOnTheirBatchesTogether) {
  constexpr int kReplicas = 3, kSteps = 6;
  auto batches = Batches(kReplicas, kSteps);
  Scope s = Scope::NewRootScope();
  AllReduceOptions buckets;
  buckets.bucket_bytes = GetParam();
  auto dp = BuildAllReduceTraining(s, LocalDevices(kReplicas), Classifier, Sgd(), buckets);
  ASSERT_TRUE(dp.ok()) << dp.status();
  Operation init = InitializeAllVariables(s);
  GraphDef def;
  ASSERT_TRUE(s.ToGraphDef(&def).ok());
  std::unique_ptr<Session> session = StartLocal(def, kReplicas, init, *dp);
  auto replicated = TrainReplicas(session.get(), *dp, batches, kSteps);
  ExpectSameHistory(replicated, TrainSingle(batches, kSteps));
  // How many all-reduces the graph has: one per bucket, per replica.
  const int per_replica = CountReduces(def) / kReplicas;
  if (GetParam() == 0) {
    EXPECT_EQ(per_replica, 3);  // w1, b1 and w2 each alone
  }
  if (GetParam() == (4 << 20)) {
    EXPECT_EQ(per_replica, 1);  // all three fused
  }
  if (GetParam() == 64) {
    EXPECT_GT(per_replica, 1);
  }
}

INSTANTIATE_TEST_SUITE_P(BucketBytes, AllReduceBuckets, ::testing::Values(0, 64, 4 << 20));

// Gradients sent as float16 or bfloat16 (AllReduceOptions::compression): every all-reduce
// carries the narrow dtype, and training stays within its rounding of one replica's.
TEST(AllReduceStrategyTest, CompressedGradientsTrainAsOneReplica) {
  constexpr int kReplicas = 2, kSteps = 6;
  auto batches = Batches(kReplicas, kSteps);
  const auto single = TrainSingle(batches, kSteps);
  for (auto [dtype, tolerance] : {std::pair{DT_HALF, 2e-3}, std::pair{DT_BFLOAT16, 2e-2}}) {
    SCOPED_TRACE(DataTypeString(dtype));
    Scope s = Scope::NewRootScope();
    AllReduceOptions options;
    options.compression = dtype;
    options.bucket_bytes = 64;  // some fused buckets, some single gradients
    auto dp = BuildAllReduceTraining(s, LocalDevices(kReplicas), Classifier, Sgd(), options);
    ASSERT_TRUE(dp.ok()) << dp.status();
    Operation init = InitializeAllVariables(s);
    GraphDef def;
    ASSERT_TRUE(s.ToGraphDef(&def).ok());
    int reduces = 0;
    for (const NodeDef& n : def.node()) {
      if (n.op() != "CollectiveReduce") continue;
      ++reduces;
      EXPECT_EQ(n.attr().at("T").type(), dtype) << n.name();
    }
    EXPECT_GT(reduces, 0);
    std::unique_ptr<Session> session = StartLocal(def, kReplicas, init, *dp);
    auto replicated = TrainReplicas(session.get(), *dp, batches, kSteps);
    ExpectSameHistory(replicated, single, tolerance);
  }
  AllReduceOptions bad;
  bad.compression = DT_INT32;
  Scope s = Scope::NewRootScope();
  auto dp = BuildAllReduceTraining(s, LocalDevices(kReplicas), Classifier, Sgd(), bad);
  ASSERT_FALSE(dp.ok());
  EXPECT_TRUE(absl::StrContains(dp.status().message(), "compression must be half or bfloat16"))
      << dp.status();
}

TEST(AllReduceStrategyTest, ReplicasOnTwoTasksEqualOneReplica) {
  constexpr int kSteps = 5;
  auto batches = Batches(2, kSteps);
  std::vector<std::unique_ptr<Server>> servers;
  for (int t = 0; t < 2; ++t) servers.push_back(test::StartServer(t));
  MasterOptions options;
  auto spec = ClusterSpec::FromJson(absl::StrCat(R"({"worker": [")", servers[0]->address(),
                                                 R"(", ")", servers[1]->address(), R"("]})"),
                                    "test");
  ASSERT_TRUE(spec.ok()) << spec.status();
  options.cluster = *spec;
  auto master = Master::Create(options);
  ASSERT_TRUE(master.ok()) << master.status();
  Scope s = Scope::NewRootScope();
  auto dp = BuildAllReduceTraining(
      s, {"/job:worker/replica:0/task:0/device:CPU:0", "/job:worker/replica:0/task:1/device:CPU:0"},
      Classifier, Sgd());
  ASSERT_TRUE(dp.ok()) << dp.status();
  Operation init = InitializeAllVariables(s);
  GraphDef def;
  ASSERT_TRUE(s.ToGraphDef(&def).ok());
  auto session = NewInProcessMasterSession(*master, SessionOptions());
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE((*session)->Create(def).ok());
  std::vector<Tensor> out;
  ASSERT_TRUE((*session)->Run({}, {}, {init.node()->name()}, &out).ok());
  // Replica 1 starts elsewhere (another seed); the sync op brings it to replica 0's values.
  ASSERT_TRUE((*session)->Run({}, {}, {dp->sync_op.node()->name()}, &out).ok());
  auto replicated = TrainReplicas(session->get(), *dp, batches, kSteps);
  ExpectSameHistory(replicated, TrainSingle(batches, kSteps));
}

// Parameter averaging after every step: with SGD, and with momentum when the optimizer's state
// is averaged too, it is the same as averaging gradients, so the same as one replica on the
// replicas' batches together.
TEST(AllReduceStrategyTest, ParameterAveragingEveryStepEqualsOneReplica) {
  constexpr int kReplicas = 2, kSteps = 5;
  auto batches = Batches(kReplicas, kSteps);
  const std::vector<std::pair<const char*, OptimizerFactory>> optimizers = {
      {"sgd", Sgd()}, {"momentum", [] { return std::make_unique<MomentumOptimizer>(0.3, 0.9); }}};
  for (const auto& [name, opt] : optimizers) {
    SCOPED_TRACE(name);
    Scope s = Scope::NewRootScope();
    AllReduceOptions options;
    options.average_parameters = true;
    auto dp = BuildAllReduceTraining(s, LocalDevices(kReplicas), Classifier, opt, options);
    ASSERT_TRUE(dp.ok()) << dp.status();
    ASSERT_NE(dp->average_op.node(), nullptr);
    Operation init = InitializeAllVariables(s);
    GraphDef def;
    ASSERT_TRUE(s.ToGraphDef(&def).ok());
    // 3 variables (+ 3 momentum slots) per replica, no gradient all-reduce.
    EXPECT_EQ(CountReduces(def), kReplicas * (std::string(name) == "sgd" ? 3 : 6));
    std::unique_ptr<Session> session = StartLocal(def, kReplicas, init, *dp);
    auto averaged = TrainReplicas(session.get(), *dp, batches, kSteps);
    ExpectSameHistory(averaged, TrainSingle(batches, kSteps, opt));
  }
}

TEST(AllReduceStrategyTest, ReplicasThatDifferAreRefused) {
  Scope s = Scope::NewRootScope();
  auto dp = BuildAllReduceTraining(
      s, LocalDevices(2),
      [](const Scope& s, int replica) -> absl::StatusOr<Output> {
        Var w = Var::Create(s.WithOpName("w"), init::Zeros(s, {replica + 1}));
        return ops::Sum(s, w.value(), {0});
      },
      Sgd());
  ASSERT_FALSE(dp.ok());
  EXPECT_TRUE(absl::StrContains(dp.status().message(), "every replica must build the same model"))
      << dp.status();
}

}  // namespace
}  // namespace shardflow

// Collective ops in one process: CollectiveReduce, CollectiveBcastSend/Recv and CollectiveGather
// among the CPU devices of a local session (the ring over the in-process rendezvous), every
// dtype and reduction, tensors smaller than the group and larger than a chunk; the ring itself
// with many lanes; and the errors: a group missing a member, members that disagree, an op run
// eagerly.
#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "core/framework/attr_value.h"
#include "core/framework/tensor_util.h"
#include "core/platform/status.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "runtime/collectives/group_resolution.h"
#include "runtime/collectives/ring.h"
#include "runtime/op_runner.h"
#include "runtime/profiler/chrome_trace.h"
#include "runtime/rendezvous.h"
#include "tests/util/gradient_checker.h"
#include "tests/util/test_util.h"

namespace shardflow {
namespace {

std::string Cpu(int i) { return absl::StrCat("/job:localhost/replica:0/task:0/device:CPU:", i); }

SessionOptions Devices(int n) {
  SessionOptions options;
  options.config.set_cpu_device_count(n);
  options.config.set_inter_op_threads(1);
  options.config.set_intra_op_threads(1);
  return options;
}

// Member i's input: values i*1000 + j (cast to dtype).
Tensor MemberInput(DataType dtype, int member, int64_t n) {
  std::vector<double> v(n);
  for (int64_t j = 0; j < n; ++j) v[j] = (member + 1) * 0.5 + (j % 7);
  Tensor d = Tensor::FromVector<double>(v);
  auto cast = RunOp("Cast", {d}, {{"DstT", MakeAttr(dtype)}});
  EXPECT_TRUE(cast.ok()) << cast.status();
  return (*cast)[0];
}

std::vector<double> AsDoubles(const Tensor& t) {
  auto cast = RunOp("Cast", {t}, {{"DstT", MakeAttr(DT_DOUBLE)}});
  EXPECT_TRUE(cast.ok()) << cast.status();
  const Tensor& d = (*cast)[0];
  return std::vector<double>(d.data<double>(), d.data<double>() + d.NumElements());
}

struct ReduceCase {
  DataType dtype;
  std::string merge, final_op;
  int members;
  int64_t elements;
};

void RunReduce(const ReduceCase& c) {
  SCOPED_TRACE(absl::StrCat(DataTypeString(c.dtype), " ", c.merge, "/", c.final_op, " ", c.members,
                            " members, ", c.elements, " elements"));
  Scope s = Scope::NewRootScope();
  std::vector<std::string> fetches;
  std::vector<std::vector<double>> inputs;
  for (int m = 0; m < c.members; ++m) {
    Tensor in = MemberInput(c.dtype, m, c.elements);
    inputs.push_back(AsDoubles(in));
    Scope d = s.WithDevice(Cpu(m));
    auto x = ops::Const(d, in);
    auto y = ops::CollectiveReduce(d.WithOpName(absl::StrCat("reduce", m)), x, c.members,
                                   /*group_key=*/7, /*instance_key=*/1, c.merge, c.final_op);
    fetches.push_back(y.name());
  }
  GraphDef def;
  ASSERT_TRUE(s.ToGraphDef(&def).ok()) << s.status();
  auto session = NewSession(Devices(c.members));
  ASSERT_TRUE(session.ok());
  ASSERT_TRUE((*session)->Create(def).ok());
  std::vector<Tensor> out;
  absl::Status st = (*session)->Run({}, fetches, {}, &out);
  ASSERT_TRUE(st.ok()) << st;
  const bool integral = c.dtype == DT_INT32 || c.dtype == DT_INT64;
  const double tol = c.dtype == DT_HALF ? 2e-2 : c.dtype == DT_BFLOAT16 ? 1e-1 : 1e-9;
  for (int m = 0; m < c.members; ++m) {
    std::vector<double> got = AsDoubles(out[m]);
    ASSERT_EQ(got.size(), static_cast<size_t>(c.elements));
    for (int64_t j = 0; j < c.elements; ++j) {
      double want = inputs[0][j];
      for (int k = 1; k < c.members; ++k) {
        const double v = inputs[k][j];
        if (c.merge == "Add") want += v;
        if (c.merge == "Mul") want *= v;
        if (c.merge == "Min") want = std::min(want, v);
        if (c.merge == "Max") want = std::max(want, v);
      }
      if (c.final_op == "Div") want = integral ? std::trunc(want / c.members) : want / c.members;
      ASSERT_NEAR(got[j], want, tol * std::max(1.0, std::fabs(want)))
          << "member " << m << " element " << j;
    }
  }
}

TEST(CollectiveOpsTest, ReduceEveryDtypeAndMergeOp) {
  for (DataType dt : {DT_FLOAT, DT_DOUBLE, DT_HALF, DT_BFLOAT16, DT_INT32, DT_INT64}) {
    RunReduce({dt, "Add", "Id", 3, 10});
    RunReduce({dt, "Add", "Div", 4, 9});
  }
  for (const char* merge : {"Mul", "Min", "Max"}) RunReduce({DT_FLOAT, merge, "Id", 3, 11});
}

TEST(CollectiveOpsTest, ReduceOfFewerElementsThanMembersAndOfOne) {
  RunReduce({DT_FLOAT, "Add", "Id", 4, 3});        // some segments are empty
  RunReduce({DT_FLOAT, "Add", "Id", 4, 0});        // nothing at all
  RunReduce({DT_FLOAT, "Add", "Div", 1, 5});       // a group of one
  RunReduce({DT_FLOAT, "Add", "Id", 2, 1 << 21});  // 8 MiB: several 4 MiB chunks per segment
}

TEST(CollectiveOpsTest, BroadcastFromAnyMember) {
  for (int source : {0, 2}) {
    Scope s = Scope::NewRootScope();
    Tensor value = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));
    std::vector<std::string> fetches;
    for (int m = 0; m < 3; ++m) {
      Scope d = s.WithDevice(Cpu(m)).WithOpName(absl::StrCat("b", m));
      Output out = m == source
                       ? ops::CollectiveBcastSend(d, ops::Const(s.WithDevice(Cpu(m)), value), 3, 1,
                                                  5, value.shape())
                       : ops::CollectiveBcastRecv(d, DT_FLOAT, value.shape(), 3, 1, 5);
      fetches.push_back(out.name());
    }
    std::vector<Tensor> out;
    GraphDef def;
    ASSERT_TRUE(s.ToGraphDef(&def).ok());
    auto session = NewSession(Devices(3));
    ASSERT_TRUE((*session)->Create(def).ok());
    absl::Status st = (*session)->Run({}, fetches, {}, &out);
    ASSERT_TRUE(st.ok()) << st;
    for (const Tensor& t : out) {
      EXPECT_EQ(t.shape(), value.shape());
      test::ExpectValues<float>(t, {1, 2, 3, 4, 5, 6});
    }
  }
}

TEST(CollectiveOpsTest, GatherConcatenatesInRankOrder) {
  Scope s = Scope::NewRootScope();
  std::vector<std::string> fetches;
  // Built out of order: ranks follow the device names, not the order of the graph.
  for (int m : {2, 0, 1}) {
    Scope d = s.WithDevice(Cpu(m));
    auto x = ops::Const(d, Tensor::FromVector<int32_t>({m * 10, m * 10 + 1}, TensorShape({1, 2})));
    fetches.push_back(ops::CollectiveGather(d.WithOpName(absl::StrCat("g", m)), x, 3, 2, 1).name());
  }
  GraphDef def;
  ASSERT_TRUE(s.ToGraphDef(&def).ok());
  auto session = NewSession(Devices(3));
  ASSERT_TRUE((*session)->Create(def).ok());
  std::vector<Tensor> out;
  absl::Status st = (*session)->Run({}, fetches, {}, &out);
  ASSERT_TRUE(st.ok()) << st;
  for (const Tensor& t : out) {
    EXPECT_EQ(t.shape(), TensorShape({3, 2}));
    test::ExpectValues<int32_t>(t, {0, 1, 10, 11, 20, 21});
  }
}

TEST(CollectiveOpsTest, SeveralInstancesAndGroupsInOneStepAndAcrossSteps) {
  Scope s = Scope::NewRootScope();
  std::vector<std::string> fetches;
  auto x0 = ops::Placeholder(s.WithDevice(Cpu(0)).WithOpName("x0"), DT_FLOAT, TensorShape({2}));
  auto x1 = ops::Placeholder(s.WithDevice(Cpu(1)).WithOpName("x1"), DT_FLOAT, TensorShape({2}));
  for (int inst = 1; inst <= 3; ++inst) {
    fetches.push_back(ops::CollectiveReduce(s.WithDevice(Cpu(0)), x0, 2, 1, inst).name());
    fetches.push_back(ops::CollectiveReduce(s.WithDevice(Cpu(1)), x1, 2, 1, inst).name());
  }
  GraphDef def;
  ASSERT_TRUE(s.ToGraphDef(&def).ok());
  auto session = NewSession(Devices(2));
  ASSERT_TRUE((*session)->Create(def).ok());
  for (int step = 0; step < 20; ++step) {
    std::vector<Tensor> out;
    absl::Status st = (*session)->Run({{"x0", Tensor::FromVector<float>({1, float(step)})},
                                       {"x1", Tensor::FromVector<float>({2, 3})}},
                                      fetches, {}, &out);
    ASSERT_TRUE(st.ok()) << st;
    for (const Tensor& t : out) test::ExpectValues<float>(t, {3, step + 3.0f});
  }
}

// Member `rank` of a group of `n` CPU devices of this process, for the ring on its own.
CollectiveParams Member(int rank, int n, int64_t group, int64_t instance) {
  CollectiveParams p;
  p.group_key = group;
  p.group_size = n;
  p.rank = rank;
  p.instance_key = instance;
  for (int m = 0; m < n; ++m) p.devices.push_back(Cpu(m));
  p.device = p.devices[rank];
  p.incarnations.assign(n, 1);
  return p;
}

// Runs an all-reduce of `inputs[m]` on member m's own thread; the members' statuses and outputs.
// `in_place`: each output is its input's buffer (as when the kernel forwards the input).
std::vector<absl::Status> RunAllReduce(RingCollectiveExecutor* ring, int64_t group,
                                       int64_t instance, ReductionOp op,
                                       const std::vector<Tensor>& inputs,
                                       std::vector<Tensor>* outputs, bool in_place = false) {
  const int n = static_cast<int>(inputs.size());
  std::vector<absl::Status> statuses(n);
  outputs->assign(n, Tensor());
  std::vector<std::thread> threads;
  for (int m = 0; m < n; ++m) {
    threads.emplace_back([&, m] {
      CollectiveParams p = Member(m, n, group, instance);
      p.reduction = op;
      (*outputs)[m] = in_place ? inputs[m] : Tensor(inputs[m].dtype(), inputs[m].shape());
      absl::Notification done;
      ring->AllReduceAsync(p, inputs[m], &(*outputs)[m], [&, m](const absl::Status& s) {
        statuses[m] = s;
        done.Notify();
      });
      done.WaitForNotification();
    });
  }
  for (auto& t : threads) t.join();
  return statuses;
}

// The ring on its own, many lanes (tiny chunks), members on their own threads.
TEST(RingCollectiveTest, ManyLanesAndUnevenSegments) {
  for (int n : {2, 3, 5}) {
    for (int64_t elements : {int64_t{1}, int64_t{17}, int64_t{1000}}) {
      LocalRendezvous rendezvous;
      RingOptions options;
      options.chunk_bytes = 12;  // 3 floats per lane
      RingCollectiveExecutor ring(&rendezvous, options);
      std::vector<Tensor> inputs, outputs;
      for (int m = 0; m < n; ++m) {
        std::vector<float> v(elements);
        for (int64_t j = 0; j < elements; ++j) v[j] = m * 1.0f + j;
        inputs.push_back(Tensor::FromVector<float>(v));
      }
      std::vector<absl::Status> statuses =
          RunAllReduce(&ring, 1, 1, ReductionOp::kMean, inputs, &outputs);
      for (int m = 0; m < n; ++m) {
        ASSERT_TRUE(statuses[m].ok()) << statuses[m];
        for (int64_t j = 0; j < elements; ++j) {
          ASSERT_NEAR(outputs[m].data<float>()[j], (n - 1) / 2.0f + j, 1e-4)
              << n << " members, element " << j;
        }
      }
    }
  }
}

// Tensors long enough for the vectorized blocks of the reduction, with odd tails, in place (a
// forwarded input) and not (the input, say a variable's buffer, is read and never written).
TEST(RingCollectiveTest, LargeTensorsInPlaceAndOutOfPlace) {
  for (bool in_place : {false, true}) {
    for (ReductionOp op : {ReductionOp::kSum, ReductionOp::kMax, ReductionOp::kMean}) {
      const int n = 3;
      const int64_t elements = 100003;
      LocalRendezvous rendezvous;
      RingOptions options;
      options.chunk_bytes = 4000 * 4 + 4;  // several lanes, pieces not a multiple of the block
      RingCollectiveExecutor ring(&rendezvous, options);
      std::vector<Tensor> inputs, outputs;
      for (int m = 0; m < n; ++m) {
        std::vector<float> v(elements);
        for (int64_t j = 0; j < elements; ++j) v[j] = static_cast<float>((j * (m + 3)) % 101);
        inputs.push_back(Tensor::FromVector<float>(v));
      }
      std::vector<Tensor> originals;
      for (const Tensor& t : inputs) originals.push_back(t.DeepCopy());
      std::vector<absl::Status> statuses =
          RunAllReduce(&ring, 4, 2, op, inputs, &outputs, in_place);
      for (int m = 0; m < n; ++m) {
        ASSERT_TRUE(statuses[m].ok()) << statuses[m];
        ASSERT_EQ(outputs[m].SharesBufferWith(inputs[m]), in_place);
        for (int64_t j = 0; j < elements; ++j) {
          float want = op == ReductionOp::kMax ? -1 : 0;
          for (int k = 0; k < n; ++k) {
            const float v = originals[k].data<float>()[j];
            want = op == ReductionOp::kMax ? std::max(want, v) : want + v;
          }
          if (op == ReductionOp::kMean) want /= n;
          ASSERT_NEAR(outputs[m].data<float>()[j], want, 1e-4)
              << "member " << m << " element " << j << (in_place ? " in place" : "");
          if (!in_place) {
            ASSERT_EQ(inputs[m].data<float>()[j], originals[m].data<float>()[j])
                << "the input must not be written, member " << m << " element " << j;
          }
        }
      }
    }
  }
}

TEST(RingCollectiveTest, AMemberWithAnotherShapeFailsEveryMemberNamingIt) {
  LocalRendezvous rendezvous;
  RingCollectiveExecutor ring(&rendezvous);
  std::vector<Tensor> inputs = {Tensor::FromVector<float>({1, 1, 1, 1}),
                                Tensor::FromVector<float>({1, 1, 1, 1, 1, 1})};
  std::vector<Tensor> outputs;
  std::vector<absl::Status> statuses =
      RunAllReduce(&ring, 3, 9, ReductionOp::kSum, inputs, &outputs);
  int naming = 0;
  for (const absl::Status& s : statuses) {
    EXPECT_FALSE(s.ok());
    naming += absl::StrContains(s.message(), "must have the same dtype and shape");
  }
  EXPECT_GE(naming, 1) << statuses[0] << " / " << statuses[1];
  EXPECT_TRUE(absl::StrContains(statuses[0].ToString() + statuses[1].ToString(),
                                "CollectiveReduce group 3 instance 9"));
}

// A member that never comes: after straggler_warning the waiting member logs which one it
// waits for, and goes on waiting until the step is aborted.
TEST(RingCollectiveTest, AMissingMemberIsNamedAfterTheWarningBound) {
  LocalRendezvous rendezvous;
  RingOptions options;
  options.straggler_warning = absl::Milliseconds(100);
  RingCollectiveExecutor ring(&rendezvous, options);
  CollectiveParams p = Member(0, 2, 6, 2);
  Tensor in = Tensor::FromVector<float>({1, 2});
  Tensor out(DT_FLOAT, in.shape());
  absl::Notification done;
  absl::Status status;
  testing::internal::CaptureStderr();
  ring.AllReduceAsync(p, in, &out, [&](const absl::Status& s) {
    status = s;
    done.Notify();
  });
  absl::SleepFor(absl::Milliseconds(500));
  EXPECT_FALSE(done.HasBeenNotified()) << "the ring must go on waiting";
  rendezvous.StartAbort(absl::DeadlineExceededError("the step's deadline"));
  done.WaitForNotification();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(absl::StrContains(err, absl::StrCat("CollectiveReduce group 6 instance 2 on ", Cpu(0),
                                                  ": waited 100ms for member 1 (", Cpu(1), ")")))
      << err;
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
}

absl::Status RunGraph(const Scope& s, const std::vector<std::string>& fetches, int devices) {
  GraphDef def;
  SF_RETURN_IF_ERROR(s.ToGraphDef(&def));
  SF_ASSIGN_OR_RETURN(auto session, NewSession(Devices(devices)));
  SF_RETURN_IF_ERROR(session->Create(def));
  std::vector<Tensor> out;
  return session->Run({}, fetches, {}, &out);
}

TEST(CollectiveOpsTest, GroupsThatCannotMeetAreRefusedBeforeTheStepRuns) {
  Tensor v = Tensor::FromVector<float>({1, 2});
  {  // group_size 3 but two members
    Scope s = Scope::NewRootScope();
    auto a = ops::CollectiveReduce(s.WithDevice(Cpu(0)).WithOpName("a"), ops::Const(s, v), 3, 1, 1);
    auto b = ops::CollectiveReduce(s.WithDevice(Cpu(1)).WithOpName("b"), ops::Const(s, v), 3, 1, 1);
    absl::Status st = RunGraph(s, {a.name(), b.name()}, 3);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
    EXPECT_TRUE(absl::StrContains(st.message(),
                                  "collective group 1 has group_size 3 but its ops "
                                  "in this run ('a', 'b') are on 2 device(s)"))
        << st;
  }
  {  // members disagree on group_size
    Scope s = Scope::NewRootScope();
    auto a = ops::CollectiveReduce(s.WithDevice(Cpu(0)).WithOpName("a"), ops::Const(s, v), 2, 1, 1);
    auto b = ops::CollectiveReduce(s.WithDevice(Cpu(1)).WithOpName("b"), ops::Const(s, v), 3, 1, 1);
    absl::Status st = RunGraph(s, {a.name(), b.name()}, 2);
    EXPECT_TRUE(absl::StrContains(st.message(), "says group_size 2 but 'b' says 3")) << st;
  }
  {  // two members on one device
    Scope s = Scope::NewRootScope();
    auto a = ops::CollectiveReduce(s.WithDevice(Cpu(0)).WithOpName("a"), ops::Const(s, v), 2, 1, 1);
    auto b = ops::CollectiveReduce(s.WithDevice(Cpu(0)).WithOpName("b"), ops::Const(s, v), 2, 1, 1);
    absl::Status st = RunGraph(s, {a.name(), b.name()}, 2);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  }
  {  // an instance missing on one device of the group
    Scope s = Scope::NewRootScope();
    auto a = ops::CollectiveReduce(s.WithDevice(Cpu(0)).WithOpName("a"), ops::Const(s, v), 2, 1, 1);
    auto b = ops::CollectiveReduce(s.WithDevice(Cpu(1)).WithOpName("b"), ops::Const(s, v), 2, 1, 1);
    auto c = ops::CollectiveReduce(s.WithDevice(Cpu(0)).WithOpName("c"), ops::Const(s, v), 2, 1, 2);
    absl::Status st = RunGraph(s, {a.name(), b.name(), c.name()}, 2);
    EXPECT_TRUE(absl::StrContains(st.message(), "instance 2 has 1 of its 2 members")) << st;
  }
  {  // a broadcast without a source
    Scope s = Scope::NewRootScope();
    auto a = ops::CollectiveBcastRecv(s.WithDevice(Cpu(0)).WithOpName("a"), DT_FLOAT, {2}, 2, 1, 1);
    auto b = ops::CollectiveBcastRecv(s.WithDevice(Cpu(1)).WithOpName("b"), DT_FLOAT, {2}, 2, 1, 1);
    absl::Status st = RunGraph(s, {a.name(), b.name()}, 2);
    EXPECT_TRUE(absl::StrContains(st.message(), "needs exactly one source")) << st;
  }
  {  // members disagree on merge_op or final_op (regression: a result half max, half min)
    Scope s = Scope::NewRootScope();
    auto a = ops::CollectiveReduce(s.WithDevice(Cpu(0)).WithOpName("a"), ops::Const(s, v), 2, 1, 1,
                                   "Max");
    auto b = ops::CollectiveReduce(s.WithDevice(Cpu(1)).WithOpName("b"), ops::Const(s, v), 2, 1, 1,
                                   "Min");
    absl::Status st = RunGraph(s, {a.name(), b.name()}, 2);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
    EXPECT_TRUE(absl::StrContains(st.message(), "'a' has merge_op Max but 'b' has Min")) << st;
    Scope t = Scope::NewRootScope();
    auto c = ops::CollectiveReduce(t.WithDevice(Cpu(0)).WithOpName("c"), ops::Const(t, v), 2, 1, 1,
                                   "Add", "Div");
    auto d = ops::CollectiveReduce(t.WithDevice(Cpu(1)).WithOpName("d"), ops::Const(t, v), 2, 1, 1,
                                   "Add", "Id");
    st = RunGraph(t, {c.name(), d.name()}, 2);
    EXPECT_TRUE(absl::StrContains(st.message(), "'c' has final_op Div but 'd' has Id")) << st;
  }
  {  // a bad merge_op: the kernel says which
    Scope s = Scope::NewRootScope();
    auto a = ops::CollectiveReduce(s.WithDevice(Cpu(0)).WithOpName("a"), ops::Const(s, v), 1, 1, 1,
                                   "Sub");
    absl::Status st = RunGraph(s, {a.name()}, 1);
    EXPECT_TRUE(absl::StrContains(st.message(), "merge_op 'Sub' is not one of Add, Mul, Min, Max"))
        << st;
  }
}

// y = reduce(x0, x1) on CPU:0 + 2 * reduce(x0, x1) on CPU:1: dL/dx_m is the all-reduce of the
// output gradients, checked against finite differences in a two-device session.
TEST(CollectiveOpsTest, GradientOfASumAndAMeanAllReduce) {
  for (const char* final_op : {"Id", "Div"}) {
    Scope s = Scope::NewRootScope();
    auto x0 = ops::Placeholder(s.WithDevice(Cpu(0)).WithOpName("x0"), DT_DOUBLE, {2, 3});
    auto x1 = ops::Placeholder(s.WithDevice(Cpu(1)).WithOpName("x1"), DT_DOUBLE, {2, 3});
    auto y0 = ops::CollectiveReduce(s.WithDevice(Cpu(0)), ops::Tanh(s.WithDevice(Cpu(0)), x0), 2, 1,
                                    1, "Add", final_op);
    auto y1 = ops::CollectiveReduce(s.WithDevice(Cpu(1)), ops::Square(s.WithDevice(Cpu(1)), x1), 2,
                                    1, 1, "Add", final_op);
    auto y = ops::Add(s, y0, ops::Mul(s, y1, ops::Const(s, 2.0)));
    Tensor v0 = Tensor::FromVector<double>({0.1, -0.2, 0.3, 0.4, -0.5, 0.6}, {2, 3});
    Tensor v1 = Tensor::FromVector<double>({1, 2, -3, 0.5, 0.25, -1}, {2, 3});
    auto err = test::MaxGradientError(s, {x0, x1}, {v0, v1}, y, 1e-4, 7, Devices(2));
    ASSERT_TRUE(err.ok()) << err.status();
    EXPECT_LT(*err, 1e-6) << final_op;
  }
}

// A traced step shows each collective with its group, ring peers and bytes (NodeExecStats
// timeline_label, the Chrome trace's "label").
TEST(CollectiveOpsTest, TheTraceNamesPeersAndBytes) {
  Scope s = Scope::NewRootScope();
  std::vector<std::string> fetches;
  for (int m = 0; m < 2; ++m) {
    Scope d = s.WithDevice(Cpu(m));
    auto x = ops::Const(d, Tensor::FromVector<float>({1, 2, 3, 4}));
    fetches.push_back(ops::CollectiveReduce(d.WithOpName(absl::StrCat("r", m)), x, 2, 4, 9).name());
  }
  GraphDef def;
  ASSERT_TRUE(s.ToGraphDef(&def).ok());
  auto session = NewSession(Devices(2));
  ASSERT_TRUE((*session)->Create(def).ok());
  RunOptions options;
  options.set_trace_level(RunOptions::FULL_TRACE);
  RunMetadata md;
  std::vector<Tensor> out;
  ASSERT_TRUE((*session)->Run(options, {}, fetches, {}, &out, &md).ok());
  int labelled = 0;
  for (const auto& dev : md.step_stats().dev_stats()) {
    for (const auto& ns : dev.node_stats()) {
      if (ns.op() != "CollectiveReduce") continue;
      ++labelled;
      const int rank = dev.device() == Cpu(0) ? 0 : 1;
      EXPECT_EQ(ns.timeline_label(),
                absl::StrCat("group 4 instance 9: rank ", rank, " of 2, ring from ", Cpu(1 - rank),
                             " to ", Cpu(1 - rank), ", 16 bytes"));
    }
  }
  EXPECT_EQ(labelled, 2);
  EXPECT_TRUE(
      absl::StrContains(ChromeTraceJson(md), "\"label\":\"group 4 instance 9: rank 0 of 2"));
}

TEST(CollectiveOpsTest, EagerCollectivesSayTheyNeedASession) {
  auto out = RunOp(
      "CollectiveReduce", {Tensor::FromVector<float>({1})},
      {{"group_size", MakeAttr(1)}, {"group_key", MakeAttr(1)}, {"instance_key", MakeAttr(1)}});
  ASSERT_FALSE(out.ok());
  EXPECT_TRUE(absl::StrContains(out.status().message(), "collective ops run in a session"))
      << out.status();
}

}  // namespace
}  // namespace shardflow

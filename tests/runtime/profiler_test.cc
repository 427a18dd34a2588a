#include "runtime/profiler.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "runtime/session.h"
#include "tests/runtime/profiler_fixtures.h"

namespace shardflow {
namespace {

using namespace profiler_test;  // NOLINT: test fixtures

TEST(TransfersTest, MatchesSendAndRecvByAttrs) {
  RunMetadata md = TwoDeviceMetadata();
  std::vector<Transfer> t = MatchTransfers(md);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].key.tensor_name, "a/MatMul:0");
  EXPECT_EQ(t[0].send_node, "send1");
  EXPECT_EQ(t[0].recv_node, "recv1");
  EXPECT_EQ(t[0].bytes, 24);  // the _Recv's output
  EXPECT_EQ(t[1].key.tensor_name, "b/Relu:0");
  EXPECT_EQ(t[1].key.send_device, kB);
  EXPECT_EQ(t[1].bytes, 64);  // the _Recv recorded none: the _Send's
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(3 << 20), "3.0 MiB");
  EXPECT_EQ(FormatBytes(-1), "?");
}

TEST(ChromeTraceTest, TwoDevicesWithFlowsAndCounters) {
  RunMetadata md = TwoDeviceMetadata();
  Json trace = ParseTrace(ChromeTraceJson(md));
  ASSERT_TRUE(trace.contains("traceEvents"));

  // One process per device, named by the device.
  std::map<int, std::string> process_name;
  for (const Json* e : EventsWithPh(trace, "M")) {
    if (e->at("name") == "process_name") {
      int pid = e->at("pid");
      EXPECT_EQ(process_name.count(pid), 0u);
      process_name[pid] = e->at("args").at("name").get<std::string>();
    }
  }
  ASSERT_EQ(process_name.size(), 2u);
  EXPECT_EQ(process_name[1], kA);
  EXPECT_EQ(process_name[2], kB);

  // A complete event per node, relative times, thread rows per thread id.
  auto complete = EventsWithPh(trace, "X");
  ASSERT_EQ(complete.size(), 10u);
  std::map<std::string, const Json*> by_name;
  std::set<std::pair<int, int>> rows;
  for (const Json* e : complete) {
    by_name[e->at("name").get<std::string>()] = e;
    rows.insert({e->at("pid").get<int>(), e->at("tid").get<int>()});
  }
  EXPECT_EQ(rows.size(), 4u);  // A: threads 7, 9; B: threads 3, 4
  const Json& matmul = *by_name["a/MatMul"];
  EXPECT_EQ(matmul.at("cat"), "MatMul");
  EXPECT_EQ(matmul.at("ts"), 0);
  EXPECT_EQ(matmul.at("dur"), 100);
  EXPECT_TRUE(matmul.at("ts").is_number_integer()) << matmul;  // integer microseconds
  EXPECT_EQ(matmul.at("pid"), 1);
  const Json& out0 = matmul.at("args").at("outputs").at(0);
  EXPECT_EQ(out0.at("bytes"), 24);
  EXPECT_EQ(out0.at("dtype"), "float");
  EXPECT_EQ(out0.at("shape").at(0), 6);
  EXPECT_EQ(by_name["b/late"]->at("ts"), 490);
  EXPECT_EQ(by_name["recv1"]->at("args").at("peer_device"), kA);
  EXPECT_EQ(by_name["recv1"]->at("args").at("tensor_name"), "a/MatMul:0");

  // Every "s" has exactly one "f" with its id, at or after it; ids unique per transfer.
  auto starts = EventsWithPh(trace, "s");
  auto finishes = EventsWithPh(trace, "f");
  ASSERT_EQ(starts.size(), 2u);
  ASSERT_EQ(finishes.size(), 2u);
  std::set<int> ids;
  for (const Json* s : starts) {
    EXPECT_TRUE(ids.insert(s->at("id").get<int>()).second) << "duplicate flow id";
    int matches = 0;
    for (const Json* f : finishes) {
      if (f->at("id") != s->at("id")) continue;
      ++matches;
      EXPECT_GE(f->at("ts"), s->at("ts"));
      EXPECT_EQ(f->at("bp"), "e");
      EXPECT_NE(f->at("pid"), s->at("pid"));
      EXPECT_EQ(f->at("name"), s->at("name"));
      EXPECT_EQ(f->at("cat"), s->at("cat"));
    }
    EXPECT_EQ(matches, 1);
  }
  // The A->B flow starts inside send1 (pid 1) and ends inside recv1 (pid 2) at 150.
  for (const Json* f : finishes) {
    if (f->at("name") == "a/MatMul:0") {
      EXPECT_EQ(f->at("pid"), 2);
      EXPECT_EQ(f->at("ts"), 150);
    }
  }

  // Counters for both devices, in time order, with the recorded values.
  auto counters = EventsWithPh(trace, "C");
  std::map<int, std::vector<std::pair<int64_t, int64_t>>> series;
  for (const Json* c : counters) {
    EXPECT_EQ(c->at("name"), "allocator_bytes_in_use");
    series[c->at("pid").get<int>()].push_back(
        {c->at("ts").get<int64_t>(), c->at("args").at("bytes").get<int64_t>()});
  }
  ASSERT_EQ(series.size(), 2u);
  EXPECT_EQ(series[1].size(), 5u);
  EXPECT_EQ(series[1].front(), std::make_pair(int64_t{100}, int64_t{1000}));
  EXPECT_EQ(series[1].back(), std::make_pair(int64_t{410}, int64_t{2064}));
  EXPECT_TRUE(std::is_sorted(series[2].begin(), series[2].end()));
}

TEST(ChromeTraceTest, EscapesStringsAndKeepsFlowsOrderedUnderClockSkew) {
  RunMetadata md;
  // A node name with every kind of character that needs escaping, and an invalid UTF-8 byte.
  AddStats(&md, kA, "we\"ird\\name\n\t\x01 \xc3\xa9 \xff", "Op/\"x\"", 0, 10, 1);
  // The receiver's clock is behind: the _Recv ends before the _Send starts.
  AddStats(&md, kA, "s", "_Send", 100, 110, 1);
  AddStats(&md, kB, "r", "_Recv", 40, 60, 1, 8);
  GraphDef* g = md.add_partition_graphs();
  AddTransferAttrs(AddNode(g, "s", "_Send", kA, {}), "x:0", kA, kB);
  AddTransferAttrs(AddNode(g, "r", "_Recv", kB, {}), "x:0", kA, kB);
  Json trace = ParseTrace(ChromeTraceJson(md));
  auto complete = EventsWithPh(trace, "X");
  ASSERT_EQ(complete.size(), 3u);
  EXPECT_EQ(complete[0]->at("name"), "we\"ird\\name\n\t\x01 \xc3\xa9 \xef\xbf\xbd");
  EXPECT_EQ(complete[0]->at("cat"), "Op/\"x\"");
  auto s = EventsWithPh(trace, "s");
  auto f = EventsWithPh(trace, "f");
  ASSERT_EQ(s.size(), 1u);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_LE(s[0]->at("ts"), f[0]->at("ts"));
  EXPECT_EQ(f[0]->at("ts"), 60);                  // the end of the _Recv's slice
  EXPECT_TRUE(EventsWithPh(trace, "C").empty());  // no allocator numbers recorded
}

TEST(ChromeTraceTest, OneEventPerLine) {
  std::string json = ChromeTraceJson(TwoDeviceMetadata());
  int lines = 0;
  for (char c : json) lines += c == '\n';
  EXPECT_EQ(lines, static_cast<int>(ParseTrace(json).at("traceEvents").size()) + 2) << json;
}

TEST(ChromeTraceTest, EmptyMetadataIsAnEmptyTrace) {
  Json trace = ParseTrace(ChromeTraceJson(RunMetadata()));
  ASSERT_TRUE(trace.contains("traceEvents"));
  EXPECT_TRUE(trace.at("traceEvents").empty());
}

// Nodes timed on a device's queue (a GPU stream) also appear on a "stream" row of their device,
// at their device times; copies there are named "memcpy <node>".
TEST(ChromeTraceTest, DeviceTimedNodesGetAStreamRow) {
  RunMetadata md;
  DeviceStepStats* dev = md.mutable_step_stats()->add_dev_stats();
  dev->set_device("/job:localhost/replica:0/task:0/device:GPU:0");
  auto add = [&](const char* name, const char* op, int64_t start, int64_t end, int64_t dstart,
                 int64_t dend) {
    NodeExecStats* ns = dev->add_node_stats();
    ns->set_node_name(name);
    ns->set_op(op);
    ns->set_start_micros(start);
    ns->set_end_micros(end);
    ns->set_thread_id(7);
    ns->set_device_start_micros(dstart);
    ns->set_device_end_micros(dend);
  };
  add("x", "_Arg", 1000, 1100, 1040, 1090);
  add("conv", "Conv2D", 1100, 1500, 1150, 1480);
  add("shape", "Shape", 1500, 1502, 0, 0);  // host-memory op: not timed on the stream
  Json trace = ParseTrace(ChromeTraceJson(md));
  int stream_tid = -1;
  for (const Json* e : EventsWithPh(trace, "M")) {
    if (e->at("name") == "thread_name" &&
        e->at("args").at("name") == "stream (kernels and copies on the device)") {
      stream_tid = e->at("tid");
    }
  }
  ASSERT_GT(stream_tid, 0) << trace.dump();
  std::map<std::string, const Json*> on_stream;
  int host_rows = 0;
  for (const Json* e : EventsWithPh(trace, "X")) {
    if (e->at("tid") == stream_tid) {
      on_stream[e->at("name").get<std::string>()] = e;
    } else {
      ++host_rows;
    }
  }
  EXPECT_EQ(host_rows, 3);
  ASSERT_EQ(on_stream.size(), 2u) << trace.dump();
  ASSERT_TRUE(on_stream.count("memcpy x"));
  EXPECT_EQ(on_stream["memcpy x"]->at("cat"), "memcpy");
  EXPECT_EQ(on_stream["memcpy x"]->at("ts"), 40);  // relative to the first host start
  EXPECT_EQ(on_stream["memcpy x"]->at("dur"), 50);
  ASSERT_TRUE(on_stream.count("conv"));
  EXPECT_EQ(on_stream["conv"]->at("cat"), "Conv2D");
  EXPECT_EQ(on_stream["conv"]->at("ts"), 150);
  EXPECT_EQ(on_stream["conv"]->at("dur"), 330);
}

TEST(PlacementSummaryTest, ExactNumbersForTwoDevices) {
  PlacementSummary s = ComputePlacementSummary(TwoDeviceMetadata());
  EXPECT_EQ(s.step_start_micros, kT);
  EXPECT_EQ(s.step_micros, 500);
  ASSERT_EQ(s.devices.size(), 2u);
  const DeviceSummary& a = s.devices[0];
  EXPECT_EQ(a.device, kA);
  EXPECT_EQ(a.op_count, 5);
  EXPECT_EQ(a.busy_micros, 190);  // [0,150) overlapping, [150,160), [300,320), [400,410)
  EXPECT_EQ(a.idle_micros, 310);
  EXPECT_EQ(a.bytes_out, 24);
  EXPECT_EQ(a.bytes_in, 64);
  EXPECT_EQ(a.transfers_out, 1);
  EXPECT_EQ(a.transfers_in, 1);
  ASSERT_EQ(a.top_ops.size(), 3u);
  EXPECT_EQ(a.top_ops[0].op, "Add");  // tie with MatMul at 100 µs: by name
  EXPECT_EQ(a.top_ops[1].op, "MatMul");
  EXPECT_EQ(a.top_ops[2].op, "_Recv");
  EXPECT_EQ(a.top_ops[2].micros, 20);
  const DeviceSummary& b = s.devices[1];
  EXPECT_EQ(b.device, kB);
  EXPECT_EQ(b.op_count, 5);
  EXPECT_EQ(b.busy_micros, 260);  // [20,270) merged from four overlapping/adjacent, [490,500)
  EXPECT_EQ(b.idle_micros, 240);
  EXPECT_EQ(b.bytes_in, 24);
  EXPECT_EQ(b.bytes_out, 64);
  ASSERT_EQ(b.top_ops.size(), 3u);
  EXPECT_EQ(b.top_ops[0].op, "_Recv");
  EXPECT_EQ(b.top_ops[1].op, "Relu");
  EXPECT_EQ(b.top_ops[1].micros, 140);
  EXPECT_EQ(b.top_ops[1].count, 2);
  ASSERT_EQ(s.links.size(), 2u);
  EXPECT_EQ(s.links[0].send_device, kA);
  EXPECT_EQ(s.links[0].recv_device, kB);
  EXPECT_EQ(s.links[0].transfers, 1);
  EXPECT_EQ(s.links[0].bytes, 24);
  EXPECT_EQ(s.links[1].send_device, kB);
  EXPECT_EQ(s.links[1].bytes, 64);

  std::string report = PlacementReport(TwoDeviceMetadata());
  EXPECT_NE(report.find("step: 0.500 ms on 2 device(s)"), std::string::npos) << report;
  EXPECT_NE(report.find("0.190"), std::string::npos) << report;
  EXPECT_NE(report.find("Add 0.100 x1, MatMul 0.100 x1, _Recv 0.020 x1"), std::string::npos)
      << report;
  EXPECT_NE(report.find(absl::StrCat(kA, " -> ", kB)), std::string::npos) << report;
}

TEST(PlacementSummaryTest, RepeatedTransfersAddUpPerLink) {
  RunMetadata md;
  for (int i = 0; i < 3; ++i) {
    AddStats(&md, kA, "s", "_Send", 100 * i, 100 * i + 5, 1);
    AddStats(&md, kB, "r", "_Recv", 100 * i, 100 * i + 10, 1, 1000);
  }
  GraphDef* g = md.add_partition_graphs();
  AddTransferAttrs(AddNode(g, "s", "_Send", kA), "loop/x:0", kA, kB);
  AddTransferAttrs(AddNode(g, "r", "_Recv", kB), "loop/x:0", kA, kB);
  PlacementSummary s = ComputePlacementSummary(md);
  ASSERT_EQ(s.links.size(), 1u);
  EXPECT_EQ(s.links[0].transfers, 3);
  EXPECT_EQ(s.links[0].bytes, 3000);
  EXPECT_EQ(s.devices[0].busy_micros, 15);
  EXPECT_EQ(s.devices[1].busy_micros, 30);
  Json trace = ParseTrace(ChromeTraceJson(md));
  EXPECT_EQ(EventsWithPh(trace, "s").size(), 3u);
  EXPECT_EQ(EventsWithPh(trace, "f").size(), 3u);
}

TEST(ProfilerSessionTest, RealSingleDeviceRun) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({2, 2}));
  auto w = ops::Const(s.WithOpName("w"), {{1.0f, 2.0f}, {3.0f, 4.0f}});
  auto y = ops::MatMul(s.WithOpName("y"), x, w);
  ops::Identity(s.WithOpName("z").WithControlDependencies(std::vector<Operation>{w.op()}), y);
  GraphDef def;
  ASSERT_TRUE(s.ToGraphDef(&def).ok()) << s.status();
  auto session = NewSession(SessionOptions());
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE((*session)->Create(def).ok());
  RunOptions opts;
  opts.set_trace_level(RunOptions::FULL_TRACE);
  RunMetadata md;
  std::vector<Tensor> out;
  Tensor xv = Tensor::FromVector<float>({1, 0, 0, 1}, TensorShape({2, 2}));
  absl::Status st = (*session)->Run(opts, {{"x", xv}}, {"z"}, {}, &out, &md);
  ASSERT_TRUE(st.ok()) << st;
  int recorded = 0;
  for (const auto& d : md.step_stats().dev_stats()) recorded += d.node_stats_size();
  ASSERT_GT(recorded, 0);

  Json trace = ParseTrace(ChromeTraceJson(md));
  ASSERT_TRUE(trace.contains("traceEvents"));
  int processes = 0;
  for (const Json* e : EventsWithPh(trace, "M")) {
    processes += e->at("name") == "process_name";
  }
  EXPECT_EQ(processes, 1);
  EXPECT_EQ(EventsWithPh(trace, "X").size(), static_cast<size_t>(recorded));
  EXPECT_TRUE(EventsWithPh(trace, "s").empty());
  for (const Json* e : EventsWithPh(trace, "X")) EXPECT_GE(e->at("ts"), 0);

  PlacementSummary summary = ComputePlacementSummary(md);
  ASSERT_EQ(summary.devices.size(), 1u);
  EXPECT_EQ(summary.devices[0].op_count, recorded);
  EXPECT_LE(summary.devices[0].busy_micros, summary.step_micros);
  EXPECT_TRUE(summary.links.empty());
  EXPECT_NE(PlacementReport(md).find("links: none"), std::string::npos);
  std::string dot = PlacedGraphDot(def, &md);
  EXPECT_NE(dot.find("subgraph \"cluster_0\""), std::string::npos) << dot;
  EXPECT_EQ(dot.find("cluster_1"), std::string::npos) << dot;
  EXPECT_NE(dot.find("label=\"y\\nMatMul\", fillcolor=\"" + DevicePalette()[0]), std::string::npos)
      << dot;
}

}  // namespace
}  // namespace shardflow

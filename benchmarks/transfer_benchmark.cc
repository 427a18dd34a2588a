// RecvTensor between two processes on loopback: throughput for 4 KB, 1 MB and 64 MB tensors and
// the round trip of a 4-byte tensor, medians over many calls.
//
//   build-dist/bin/transfer_benchmark            # spawns itself as the serving task
//   build-dist/bin/transfer_benchmark --json     # one JSON object
//   (benchmarks/transfer_benchmark.py)
//
// The serving process holds a graph Const(N bytes) -> _Send per size. Each iteration runs one
// step there (RunGraph; the tensor then waits in the step's rendezvous) and times only the
// RecvTensor that pulls it: request, the tensor's bytes straight from the Const's buffer into
// gRPC slices, and the decode into a fresh tensor on this side.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "core/framework/attr_value.h"
#include "core/framework/rendezvous.h"
#include "distributed/grpc/grpc_worker_client.h"
#include "distributed/server.h"

namespace shardflow {
namespace {

constexpr char kSrc[] = "/job:worker/replica:0/task:0/device:CPU:0";
constexpr char kDst[] = "/job:worker/replica:0/task:1/device:CPU:0";

int Serve() {
  ServerOptions options;
  options.address = "127.0.0.1:0";
  options.config.set_inter_op_threads(1);
  options.config.set_intra_op_threads(1);
  options.num_threads = 1;  // one core each for sender and receiver
  auto server = Server::Create(options);
  if (!server.ok()) {
    std::cerr << server.status() << "\n";
    return 1;
  }
  std::cout << "ADDRESS " << (*server)->address() << " " << (*server)->incarnation() << std::endl;
  char c;
  while (read(0, &c, 1) > 0) {
  }  // until the parent closes our stdin
  (*server)->Shutdown();
  return 0;
}

GraphDef ConstSendGraph(int64_t bytes, uint64_t incarnation, const std::string& edge) {
  GraphDef def;
  NodeDef* c = def.add_node();
  c->set_name("c");
  c->set_op("Const");
  Tensor value(DT_UINT8, TensorShape({bytes}));
  for (int64_t i = 0; i < bytes; ++i) value.data<uint8_t>()[i] = static_cast<uint8_t>(i * 131);
  (*c->mutable_attr())["dtype"] = MakeAttr(DT_UINT8);
  (*c->mutable_attr())["value"] = MakeAttr(value);
  NodeDef* send = def.add_node();
  send->set_name("send");
  send->set_op("_Send");
  send->add_input("c");
  auto& attr = *send->mutable_attr();
  attr["T"] = MakeAttr(DT_UINT8);
  attr["tensor_name"] = MakeAttr(edge);
  attr["send_device"] = MakeAttr(std::string(kSrc));
  attr["recv_device"] = MakeAttr(std::string(kDst));
  attr["send_device_incarnation"] = MakeAttr(static_cast<int64_t>(incarnation));
  return def;
}

struct Result {
  int64_t bytes;
  int iterations;
  double median_s;
  double min_s;
};

absl::StatusOr<Result> Measure(GrpcWorkerClient* client, uint64_t incarnation, int64_t bytes,
                               int iterations, int64_t* step_id) {
  RegisterGraphRequest reg;
  const std::string edge = absl::StrCat("c_", bytes, ":0");
  (*reg.mutable_partitions())[kSrc] = ConstSendGraph(bytes, incarnation, edge);
  RegisterGraphResponse reg_response;
  auto s = client->RegisterGraph(reg, &reg_response);
  if (!s.ok()) return s;
  const std::string key = RendezvousKey(kSrc, incarnation, kDst, edge);
  std::vector<double> times;
  for (int i = -3; i < iterations; ++i) {  // 3 warm-up calls
    RunGraphRequest run;
    run.set_graph_handle(reg_response.graph_handle());
    run.set_step_id(++*step_id);
    RunGraphResponse run_response;
    s = client->RunGraph(run, &run_response);
    if (!s.ok()) return s;
    absl::Notification done;
    absl::Status status;
    int64_t got = 0;
    auto start = std::chrono::steady_clock::now();
    client->RecvTensorAsync(*step_id, key, nullptr, nullptr, [&](const absl::Status& st, Tensor t) {
      status = st;
      got = t.TotalBytes();
      done.Notify();
    });
    done.WaitForNotification();
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!status.ok()) return status;
    if (got != bytes) return absl::InternalError(absl::StrCat("got ", got, " bytes"));
    if (i >= 0) times.push_back(seconds);
  }
  client->CleanupGraph(reg_response.graph_handle()).IgnoreError();
  std::sort(times.begin(), times.end());
  return Result{bytes, iterations, times[times.size() / 2], times.front()};
}

int Run(const char* self, bool json) {
  int to_child[2], from_child[2];
  if (pipe(to_child) != 0 || pipe(from_child) != 0) return 1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(to_child[0], 0);
    dup2(from_child[1], 1);
    close(to_child[1]);
    close(from_child[0]);
    execl("/proc/self/exe", self, "--serve", nullptr);
    _exit(127);
  }
  close(to_child[0]);
  close(from_child[1]);
  FILE* in = fdopen(from_child[0], "r");
  char address[256];
  unsigned long long incarnation = 0;
  if (fscanf(in, "ADDRESS %255s %llu", address, &incarnation) != 2) {
    std::cerr << "the serving process did not start\n";
    return 1;
  }
  GrpcWorkerCache cache{GrpcClientOptions()};
  auto client = cache.GetClient(address, "/job:worker/replica:0/task:0");
  if (!client.ok()) return 1;
  struct Size {
    const char* name;
    int64_t bytes;
    int iterations;
  } sizes[] = {
      {"rtt_4B", 4, 2000}, {"4KB", 4 << 10, 2000}, {"1MB", 1 << 20, 300}, {"64MB", 64 << 20, 30}};
  int64_t step_id = 0;
  std::vector<std::pair<std::string, Result>> results;
  for (const Size& size : sizes) {
    auto r = Measure(client->get(), incarnation, size.bytes, size.iterations, &step_id);
    if (!r.ok()) {
      std::cerr << size.name << ": " << r.status() << "\n";
      return 1;
    }
    results.emplace_back(size.name, *r);
  }
  close(to_child[1]);
  waitpid(pid, nullptr, 0);
  if (json) {
    std::cout << "{";
    for (size_t i = 0; i < results.size(); ++i) {
      const Result& r = results[i].second;
      std::cout << (i ? ", " : "") << "\"" << results[i].first << "\": {\"bytes\": " << r.bytes
                << ", \"iterations\": " << r.iterations << ", \"median_s\": " << r.median_s
                << ", \"min_s\": " << r.min_s << "}";
    }
    std::cout << "}\n";
    return 0;
  }
  std::printf("%-8s %12s %12s %12s %12s\n", "tensor", "bytes", "median", "min", "GB/s (med)");
  for (const auto& [name, r] : results) {
    std::printf("%-8s %12lld %10.1f us %10.1f us %12.3f\n", name.c_str(),
                static_cast<long long>(r.bytes), r.median_s * 1e6, r.min_s * 1e6,
                r.bytes / r.median_s / 1e9);
  }
  return 0;
}

}  // namespace
}  // namespace shardflow

int main(int argc, char** argv) {
  bool serve = false, json = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--serve") == 0) serve = true;
    if (std::strcmp(argv[i], "--json") == 0) json = true;
  }
  return serve ? shardflow::Serve() : shardflow::Run(argv[0], json);
}

// RecvTensor between two processes on loopback: throughput for 4 KB, 1 MB and 64 MB tensors and
// the round trip of a 4-byte tensor, medians over many calls.
//
//   build-dist/bin/transfer_benchmark              # spawns itself as the serving task
//   build-dist/bin/transfer_benchmark --json       # one JSON object
//   build-dist/bin/transfer_benchmark --only=64MB --rounds=50
//   build-dist/bin/transfer_benchmark --chunk_bytes=0            # one call per tensor, no ranges
//   build-dist/bin/transfer_benchmark --chunk_bytes=8388608 --in_flight=2 --queue_threads=1
//   build-dist/bin/transfer_benchmark --transport=ucx            # both tasks' UCX data planes
//   build-dist/bin/transfer_benchmark --destination    # into a given tensor, as collectives pull
//   transfer_benchmark --serve --bind=10.0.0.2 --transport=ucx        # a serving task alone...
//   transfer_benchmark --connect=10.0.0.2:PORT,INCARNATION --transport=ucx   # ...and its puller
//   (benchmarks/netns_transfer_benchmark.py runs these in two network namespaces)
//   (benchmarks/transfer_benchmark.py runs it beside iperf3)
//
// The serving process holds a graph Const(N bytes) -> _Send per row. A step runs there (RunGraph;
// the tensor then waits in the step's rendezvous) and only the RecvTensor that pulls it is timed:
// request, the tensor's bytes from the Const's buffer, and the decode into a tensor on this side.
// rtt_4B is the round trip as ping-pong benchmarks measure it: one step sends 100 4-byte tensors,
// pulled back to back. 4B_idle pulls one 4-byte tensor right after each step, so both tasks'
// transport threads have been idle for a gRPC round trip (and may sleep). The rows take turns:
// each of `--rounds` rounds (default 15) makes 100 calls of rtt_4B, 50 of 4B_idle, 100 of 4 KB,
// 20 of 1 MB and 2 of 64 MB.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "core/framework/attr_value.h"
#include "core/framework/rendezvous.h"
#include "core/platform/status.h"
#include "distributed/data_plane.h"
#include "distributed/grpc/grpc_poll_strategy.h"
#include "distributed/grpc/grpc_worker_client.h"
#include "distributed/server.h"

namespace shardflow {
namespace {

constexpr char kSrc[] = "/job:worker/replica:0/task:0/device:CPU:0";
constexpr char kDst[] = "/job:worker/replica:0/task:1/device:CPU:0";

int Serve(const std::string& transport, const std::string& bind) {
  ServerOptions options;
  options.address = bind + ":0";
  options.security.plaintext = true;  // a benchmark between namespaces of one machine
  options.transport = transport;
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

// `edges.size()` pairs Const(N bytes) -> _Send, one per edge.
GraphDef ConstSendGraph(int64_t bytes, uint64_t incarnation,
                        const std::vector<std::string>& edges) {
  GraphDef def;
  Tensor value(DT_UINT8, TensorShape({bytes}));
  for (int64_t i = 0; i < bytes; ++i) value.data<uint8_t>()[i] = static_cast<uint8_t>(i * 131);
  for (size_t n = 0; n < edges.size(); ++n) {
    NodeDef* c = def.add_node();
    c->set_name(absl::StrCat("c", n));
    c->set_op("Const");
    (*c->mutable_attr())["dtype"] = MakeAttr(DT_UINT8);
    (*c->mutable_attr())["value"] = MakeAttr(value);
    NodeDef* send = def.add_node();
    send->set_name(absl::StrCat("send", n));
    send->set_op("_Send");
    send->add_input(c->name());
    auto& attr = *send->mutable_attr();
    attr["T"] = MakeAttr(DT_UINT8);
    attr["tensor_name"] = MakeAttr(edges[n]);
    attr["send_device"] = MakeAttr(std::string(kSrc));
    attr["recv_device"] = MakeAttr(std::string(kDst));
    attr["send_device_incarnation"] = MakeAttr(static_cast<int64_t>(incarnation));
  }
  return def;
}

// One row of the table: its graph on the serving task and the times of its calls.
struct Size {
  const char* name;
  int64_t bytes;
  int steps_per_round;
  // Tensors one step sends. 1: every call runs a step first, so the pull meets both tasks idle
  // (the data planes' threads asleep). More: one step, then its tensors pulled back to back (a
  // ping-pong, as osu_latency and ucx_perftest measure a round trip).
  int tensors_per_step = 1;
  std::string graph_handle;
  std::vector<std::string> keys;
  std::vector<double> times;
  Tensor destination;  // --destination
};

absl::Status Register(GrpcWorkerClient* client, uint64_t incarnation, Size* size) {
  RegisterGraphRequest reg;
  std::vector<std::string> edges;
  for (int n = 0; n < size->tensors_per_step; ++n) {
    edges.push_back(absl::StrCat("c_", size->bytes, "_", n, ":0"));
    size->keys.push_back(RendezvousKey(kSrc, incarnation, kDst, edges.back()));
  }
  (*reg.mutable_partitions())[kSrc] = ConstSendGraph(size->bytes, incarnation, edges);
  RegisterGraphResponse response;
  SF_RETURN_IF_ERROR(client->RegisterGraph(reg, &response));
  size->graph_handle = response.graph_handle();
  return absl::OkStatus();
}

// Runs one step on the serving task (its tensors then wait in its rendezvous) and times the
// RecvTensor calls that pull them, one after the other. `record` false = a warm-up step.
absl::Status TimeOneStep(GrpcWorkerClient* client, TensorTransport* transport,
                         const std::string& address, int64_t step_id, Size* size, bool record,
                         bool destination) {
  RunGraphRequest run;
  run.set_graph_handle(size->graph_handle);
  run.set_step_id(step_id);
  RunGraphResponse run_response;
  SF_RETURN_IF_ERROR(client->RunGraph(run, &run_response));
  for (const std::string& key : size->keys) {
    absl::Notification done;
    absl::Status status;
    int64_t got = 0;
    RecvTensorCall call;
    call.task = "/job:worker/replica:0/task:0";
    call.address = address;
    call.step_id = step_id;
    call.key = key;
    // RecvArgs::destination, as the ring all-reduce gives it (its output, written again every
    // step): the transport writes there instead of into a fresh tensor.
    if (destination) {
      if (!size->destination.IsInitialized()) {
        size->destination = Tensor(DT_UINT8, TensorShape({size->bytes}));
        std::memset(size->destination.raw_data(), 0, size->bytes);
      }
      call.destination = size->destination;
    }
    auto start = std::chrono::steady_clock::now();
    transport->RecvTensorAsync(call, nullptr, [&](const absl::Status& st, Tensor t) {
      status = st;
      got = t.TotalBytes();
      done.Notify();
    });
    done.WaitForNotification();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    SF_RETURN_IF_ERROR(status);
    if (got != size->bytes) {
      return absl::InternalError(absl::StrCat(size->name, ": got ", got, " bytes"));
    }
    if (record) size->times.push_back(seconds);
  }
  return absl::OkStatus();
}

int Run(const char* self, bool json, const std::string& only, int rounds,
        const GrpcClientOptions& client_options, const std::string& transport_name,
        bool destination, const std::string& connect) {
  int to_child[2], from_child[2];
  if (pipe(to_child) != 0 || pipe(from_child) != 0) return 1;
  char address[256];
  unsigned long long incarnation = 0;
  pid_t pid = -1;
  if (!connect.empty()) {  // a server started elsewhere (another namespace)
    const size_t comma = connect.find(',');
    if (comma == std::string::npos || comma >= sizeof(address)) {
      std::cerr << "--connect=HOST:PORT,INCARNATION\n";
      return 2;
    }
    std::snprintf(address, sizeof(address), "%s", connect.substr(0, comma).c_str());
    incarnation = std::strtoull(connect.c_str() + comma + 1, nullptr, 10);
  } else {
    pid = fork();
  }
  if (pid == 0) {
    dup2(to_child[0], 0);
    dup2(from_child[1], 1);
    close(to_child[1]);
    close(from_child[0]);
    const std::string transport_flag = "--transport=" + transport_name;
    execl("/proc/self/exe", self, "--serve", transport_flag.c_str(), nullptr);
    _exit(127);
  }
  close(to_child[0]);
  close(from_child[1]);
  FILE* in = fdopen(from_child[0], "r");
  if (pid > 0 && fscanf(in, "ADDRESS %255s %llu", address, &incarnation) != 2) {
    std::cerr << "the serving process did not start\n";
    return 1;
  }
  GrpcClientOptions options = client_options;
  options.security.plaintext = true;  // --connect: a non-loopback address between namespaces
  auto cache = std::make_shared<GrpcWorkerCache>(options);
  auto client = cache->GetClient(address, "/job:worker/replica:0/task:0");
  if (!client.ok()) return 1;
  // The receiving task's transport: gRPC's RecvTensor, or a UCX data plane of its own.
  std::unique_ptr<TensorTransport> transport;
  if (transport_name == "grpc") {
    transport = cache->NewTransport();
  } else {
    auto plane = NewDataPlane(transport_name, {"/job:worker/replica:0/task:1"}, cache,
                              cache->NewTransport());
    if (!plane.ok()) {
      std::cerr << plane.status() << "\n";
      return 1;
    }
    transport = std::move(*plane);
  }
  // The sizes take turns in every round, so that a change in the machine's load (other
  // processes, CPU steal) falls on all of them alike rather than on whichever ran last.
  std::vector<Size> sizes = {{"rtt_4B", 4, 1, 100},
                             {"4B_idle", 4, 50},
                             {"4KB", 4 << 10, 100},
                             {"1MB", 1 << 20, 20},
                             {"64MB", 64 << 20, 2}};
  if (!only.empty()) {
    sizes.erase(
        std::remove_if(sizes.begin(), sizes.end(), [&](const Size& s) { return only != s.name; }),
        sizes.end());
    if (sizes.empty()) {
      std::cerr << "--only: expected one of rtt_4B, 4B_idle, 4KB, 1MB, 64MB\n";
      return 2;
    }
  }
  int64_t step_id = 0;
  for (Size& size : sizes) {
    absl::Status s = Register(client->get(), incarnation, &size);
    for (int i = 0; s.ok() && i < 2; ++i) {
      s = TimeOneStep(client->get(), transport.get(), address, ++step_id, &size, false,
                      destination);
    }
    if (!s.ok()) {
      std::cerr << size.name << ": " << s << "\n";
      return 1;
    }
  }
  for (int round = 0; round < rounds; ++round) {
    for (Size& size : sizes) {
      for (int i = 0; i < size.steps_per_round; ++i) {
        absl::Status s = TimeOneStep(client->get(), transport.get(), address, ++step_id, &size,
                                     true, destination);
        if (!s.ok()) {
          std::cerr << size.name << ": " << s << "\n";
          return 1;
        }
      }
    }
  }
  for (Size& size : sizes) {
    (*client)->CleanupGraph(size.graph_handle).IgnoreError();
    std::sort(size.times.begin(), size.times.end());
  }
  transport.reset();
  close(to_child[1]);
  if (pid > 0) waitpid(pid, nullptr, 0);
  auto median = [](const Size& s) { return s.times[s.times.size() / 2]; };
  if (json) {
    std::cout << "{";
    for (size_t i = 0; i < sizes.size(); ++i) {
      const Size& s = sizes[i];
      std::cout << (i ? ", " : "") << "\"" << s.name << "\": {\"bytes\": " << s.bytes
                << ", \"iterations\": " << s.times.size() << ", \"median_s\": " << median(s)
                << ", \"min_s\": " << s.times.front() << "}";
    }
    std::cout << "}\n";
    return 0;
  }
  std::printf("%-8s %12s %8s %12s %12s %12s\n", "tensor", "bytes", "calls", "median", "min",
              "GB/s (med)");
  for (const Size& s : sizes) {
    std::printf("%-8s %12lld %8zu %10.1f us %10.1f us %12.3f\n", s.name,
                static_cast<long long>(s.bytes), s.times.size(), median(s) * 1e6,
                s.times.front() * 1e6, s.bytes / median(s) / 1e9);
  }
  return 0;
}

}  // namespace
}  // namespace shardflow

int main(int argc, char** argv) {
  bool serve = false, json = false;
  std::string only;
  std::string transport = "grpc";
  std::string bind = "127.0.0.1", connect;
  bool destination = false;
  int rounds = 15;
  std::string poll_strategy = shardflow::kDefaultGrpcPollStrategy;
  // Defaults are the library's; the flags let one binary compare settings side by side.
  shardflow::GrpcClientOptions client_options;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--chunk_bytes=", 14) == 0) {
      client_options.recv_chunk_bytes = std::atoll(argv[i] + 14);
    }
    if (std::strncmp(argv[i], "--in_flight=", 12) == 0) {
      client_options.recv_ranges_in_flight = std::atoi(argv[i] + 12);
    }
    if (std::strncmp(argv[i], "--queue_threads=", 16) == 0) {
      client_options.queue_threads = std::atoi(argv[i] + 16);
    }
    if (std::strncmp(argv[i], "--only=", 7) == 0) only = argv[i] + 7;
    if (std::strncmp(argv[i], "--rounds=", 9) == 0) rounds = std::max(1, std::atoi(argv[i] + 9));
    if (std::strcmp(argv[i], "--serve") == 0) serve = true;
    if (std::strncmp(argv[i], "--transport=", 12) == 0) transport = argv[i] + 12;
    if (std::strcmp(argv[i], "--json") == 0) json = true;
    if (std::strcmp(argv[i], "--destination") == 0) destination = true;
    if (std::strncmp(argv[i], "--bind=", 7) == 0) bind = argv[i] + 7;
    if (std::strncmp(argv[i], "--connect=", 10) == 0) connect = argv[i] + 10;
    if (std::strncmp(argv[i], "--poll_strategy=", 16) == 0) poll_strategy = argv[i] + 16;
  }
  // Before any gRPC object: the benchmark measures the strategy a server uses.
  absl::Status poll = shardflow::ChooseGrpcPollStrategy(poll_strategy);
  if (!poll.ok()) {
    std::fprintf(stderr, "transfer_benchmark: %s\n", std::string(poll.message()).c_str());
    return 2;
  }
  if (transport != "grpc" && transport != "ucx") {
    std::fprintf(stderr, "transfer_benchmark: --transport is grpc or ucx\n");
    return 2;
  }
  return serve ? shardflow::Serve(transport, bind)
               : shardflow::Run(argv[0], json, only, rounds, client_options, transport, destination,
                                connect);
}

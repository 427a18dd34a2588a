// Helpers for the distributed tests: in-process servers on 127.0.0.1 and a minimal master
// (place by hand, partition by device with the tasks' incarnations, register per task).
#ifndef SHARDFLOW_TESTS_DISTRIBUTED_DISTRIBUTED_TEST_UTIL_H_
#define SHARDFLOW_TESTS_DISTRIBUTED_DISTRIBUTED_TEST_UTIL_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "core/framework/attr_value.h"
#include "core/framework/device_name.h"
#include "core/platform/status.h"
#include "distributed/grpc/grpc_worker_client.h"
#include "distributed/server.h"
#include "gtest/gtest.h"
#include "partitioner/partition.h"
#include "partitioner/placer.h"
#include "runtime/subgraph.h"

namespace shardflow {
namespace test {

inline std::unique_ptr<Server> StartServer(int task, const std::string& token = "",
                                           uint64_t incarnation = 0, int cpu_devices = 1) {
  ServerOptions options;
  options.job = "worker";
  options.task = task;
  options.address = "127.0.0.1:0";
  options.config.set_cpu_device_count(cpu_devices);
  options.config.set_inter_op_threads(2);
  options.config.set_intra_op_threads(1);
  options.security.token = token;
  options.incarnation = incarnation;
  auto server = Server::Create(options);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? std::move(server).value() : nullptr;
}

// A served tensor's step is released just after its reply is sent: wait (up to 2 s) for the
// worker to retire it.
inline int ActiveStepsAfterSettling(Worker* worker) {
  for (int i = 0; i < 200 && worker->num_active_steps() > 0; ++i)
    absl::SleepFor(absl::Milliseconds(10));
  return worker->num_active_steps();
}

// What a master keeps per registered graph: a graph handle per task, and which task holds each
// feed's _Arg and each fetch's _Retval.
struct DistributedGraph {
  std::map<std::string, std::string> handles;  // task -> graph handle
  std::map<std::string, std::shared_ptr<GrpcWorkerClient>> clients;
  std::vector<std::string> arg_task;     // per feed index
  std::vector<std::string> retval_task;  // per fetch index
};

// Places `def` (nodes' device requests must be full names; unplaced ones go to the first
// device), rewrites it for (feeds, fetches), partitions by device and registers each task's
// partitions with its server.
inline absl::StatusOr<DistributedGraph> RegisterDistributed(const GraphDef& def,
                                                            const std::vector<std::string>& feeds,
                                                            const std::vector<std::string>& fetches,
                                                            const std::vector<Server*>& servers,
                                                            GrpcWorkerCache* cache) {
  SF_ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Graph::FromGraphDef(def));
  std::vector<FeedSpec> specs;
  SF_RETURN_IF_ERROR(RewriteForRun(graph.get(), feeds, fetches, {}, &specs));
  DistributedGraph out;
  std::vector<DeviceAttributes> devices;
  std::map<std::string, uint64_t> incarnations;  // task -> incarnation
  std::map<std::string, std::string> cluster;
  for (Server* s : servers) {
    SF_ASSIGN_OR_RETURN(auto client, cache->GetClient(s->address(), s->task_name()));
    GetStatusResponse status;
    SF_RETURN_IF_ERROR(client->GetStatus(&status));
    for (const WorkerDevice& d : status.devices()) {
      devices.push_back(DeviceAttributes{d.name(), d.device_type(), d.memory_limit()});
    }
    incarnations[status.task()] = status.incarnation();
    cluster[status.task()] = s->address();
    out.clients[status.task()] = client;
  }
  // _Arg with its consumer, _Retval with its producer (as the local session does).
  for (Node* n : graph->nodes()) {
    if (n->op() == "_Retval") n->set_assigned_device(n->input_edge(0)->src->requested_device());
    if (n->op() == "_Arg") {
      for (const Edge* e : n->out_edges()) n->set_assigned_device(e->dst->requested_device());
    }
  }
  SF_RETURN_IF_ERROR(PlaceGraph(graph.get(), devices));
  out.arg_task.resize(feeds.size());
  out.retval_task.resize(fetches.size());
  for (Node* n : graph->nodes()) {
    if (n->op() != "_Arg" && n->op() != "_Retval") continue;
    int index = 0;
    SF_RETURN_IF_ERROR(GetAttr(n->attrs(), "index", &index));
    std::string task = DeviceName::Parse(n->assigned_device())->TaskName();
    (n->op() == "_Arg" ? out.arg_task : out.retval_task)[index] = task;
  }
  PartitionOptions options;
  options.incarnation = [&](const std::string& device) {
    return incarnations[DeviceName::Parse(device)->TaskName()];
  };
  std::map<std::string, GraphDef> parts;
  SF_RETURN_IF_ERROR(PartitionGraph(*graph, options, &parts));
  std::map<std::string, RegisterGraphRequest> requests;
  for (auto& [device, part] : parts) {
    RegisterGraphRequest& r = requests[DeviceName::Parse(device)->TaskName()];
    r.set_session_handle("test-session");
    (*r.mutable_partitions())[device] = part;
    for (const auto& [task, address] : cluster) (*r.mutable_cluster())[task] = address;
  }
  for (auto& [task, request] : requests) {
    RegisterGraphResponse response;
    SF_RETURN_IF_ERROR(out.clients[task]->RegisterGraph(request, &response));
    out.handles[task] = response.graph_handle();
  }
  return out;
}

// Runs one step on every task concurrently; fills `outputs` in fetch order.
inline absl::Status RunDistributedStep(const DistributedGraph& g, int64_t step_id,
                                       const std::vector<Tensor>& feeds,
                                       std::vector<Tensor>* outputs) {
  std::map<std::string, RunGraphRequest> requests;
  std::map<std::string, RunGraphResponse> responses;
  for (const auto& [task, handle] : g.handles) {
    requests[task].set_graph_handle(handle);
    requests[task].set_step_id(step_id);
    responses[task];
  }
  for (size_t i = 0; i < feeds.size(); ++i) {
    IndexedTensor* arg = requests[g.arg_task[i]].add_args();
    arg->set_index(static_cast<int>(i));
    feeds[i].AsProto(arg->mutable_tensor());
  }
  absl::Mutex mu;
  int pending = static_cast<int>(requests.size());
  absl::Status first;
  for (auto& [task, request] : requests) {
    g.clients.at(task)->RunGraphAsync(&request, &responses[task], 20000, nullptr,
                                      [&](const absl::Status& s) {
                                        absl::MutexLock lock(&mu);
                                        if (first.ok() && !s.ok()) first = s;
                                        --pending;
                                      });
  }
  {
    absl::MutexLock lock(&mu);
    mu.Await(absl::Condition(
        +[](int* p) { return *p == 0; }, &pending));
  }
  if (!first.ok()) return first;
  outputs->assign(g.retval_task.size(), Tensor());
  for (auto& [task, response] : responses) {
    for (const IndexedTensor& r : response.retvals()) {
      SF_ASSIGN_OR_RETURN((*outputs)[r.index()], Tensor::FromProto(r.tensor()));
    }
  }
  return absl::OkStatus();
}

// _Arg(0) -> _Send of edge "t:0" from task 0's CPU to task 1's: the tensor a transport test
// pulls, under RendezvousKey(task 0 CPU, incarnation, task 1 CPU, "t:0").
inline GraphDef ArgSendGraph(DataType dtype, uint64_t incarnation) {
  GraphDef def;
  NodeDef* arg = def.add_node();
  arg->set_name("arg");
  arg->set_op("_Arg");
  (*arg->mutable_attr())["T"] = MakeAttr(dtype);
  (*arg->mutable_attr())["index"] = MakeAttr(0);
  NodeDef* send = def.add_node();
  send->set_name("send");
  send->set_op("_Send");
  send->add_input("arg");
  auto& attr = *send->mutable_attr();
  attr["T"] = MakeAttr(dtype);
  attr["tensor_name"] = MakeAttr(std::string("t:0"));
  attr["send_device"] = MakeAttr(std::string("/job:worker/replica:0/task:0/device:CPU:0"));
  attr["recv_device"] = MakeAttr(std::string("/job:worker/replica:0/task:1/device:CPU:0"));
  attr["send_device_incarnation"] = MakeAttr(static_cast<int64_t>(incarnation));
  return def;
}

// Registers ArgSendGraph on task 0 through `client` and runs step `step_id` with `value` fed:
// the tensor then waits in that step's rendezvous for a peer's pull.
inline absl::Status SendOnTask0(GrpcWorkerClient* client, uint64_t incarnation, const Tensor& value,
                                int64_t step_id) {
  RegisterGraphRequest reg;
  (*reg.mutable_partitions())["/job:worker/replica:0/task:0/device:CPU:0"] =
      ArgSendGraph(value.dtype(), incarnation);
  RegisterGraphResponse reg_response;
  SF_RETURN_IF_ERROR(client->RegisterGraph(reg, &reg_response));
  RunGraphRequest run;
  run.set_graph_handle(reg_response.graph_handle());
  run.set_step_id(step_id);
  IndexedTensor* arg = run.add_args();
  arg->set_index(0);
  value.AsProto(arg->mutable_tensor());
  RunGraphResponse run_response;
  return client->RunGraph(run, &run_response);
}

}  // namespace test
}  // namespace shardflow

#endif  // SHARDFLOW_TESTS_DISTRIBUTED_DISTRIBUTED_TEST_UTIL_H_

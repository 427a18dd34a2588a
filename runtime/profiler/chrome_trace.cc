#include "runtime/profiler/chrome_trace.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/framework/types.h"
#include "nlohmann/json.hpp"
#include "runtime/profiler/transfers.h"

namespace shardflow {
namespace {

// Keys stay in the order written, as before (Perfetto does not mind; people reading do).
using Json = nlohmann::ordered_json;

// One process row: a device, its node executions and its thread ids.
struct DeviceRows {
  int pid = 0;
  std::vector<const NodeExecStats*> nodes;
  std::map<int64_t, int> tid_of_thread;  // thread_id -> tid (1-based, in thread_id order)
  int stream_tid = 0;  // the row of work timed on the device's queue (a GPU stream); 0: none
};

// Ops whose work on a GPU stream is a copy between host and device memory.
bool IsCopyOp(const std::string& op) {
  return op == "_Arg" || op == "_Retval" || op == "_Send" || op == "_Recv" || op == "_HostSend" ||
         op == "_HostRecv";
}

Json ShapeJson(const TensorShapeProto& shape) {
  if (shape.unknown_rank()) return nullptr;
  Json dims = Json::array();
  for (int64_t d : shape.dim()) dims.push_back(d);
  return dims;
}

Json ArgsJson(const NodeExecStats& ns, const std::string& device,
              const absl::flat_hash_map<const NodeExecStats*, const Transfer*>& transfer_of) {
  Json outputs = Json::array();
  for (const NodeOutputStats& out : ns.output()) {
    outputs.push_back({{"slot", out.slot()},
                       {"dtype", DataTypeString(out.dtype())},
                       {"shape", ShapeJson(out.shape())},
                       {"bytes", out.bytes()}});
  }
  Json args = {{"op", ns.op()},
               {"outputs", std::move(outputs)},
               {"allocator_bytes_in_use", ns.allocator_bytes_in_use()}};
  if (!ns.timeline_label().empty()) args["label"] = ns.timeline_label();
  auto it = transfer_of.find(&ns);
  if (it != transfer_of.end()) {
    const TransferKey& key = it->second->key;
    const std::string& peer = key.send_device == device ? key.recv_device : key.send_device;
    args["tensor_name"] = key.tensor_name;
    args["peer_device"] = peer;
    args["bytes"] = it->second->bytes;
  }
  return args;
}

// One event as compact JSON; bytes that are not valid UTF-8 become U+FFFD.
std::string Dump(const Json& event) {
  return event.dump(-1, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace);
}

}  // namespace

std::string ChromeTraceJson(const RunMetadata& md) {
  // Devices in name order (several DeviceStepStats for one device are merged).
  std::map<std::string, DeviceRows> devices;
  int64_t t0 = std::numeric_limits<int64_t>::max();
  for (const DeviceStepStats& dev : md.step_stats().dev_stats()) {
    DeviceRows& rows = devices[dev.device()];
    for (const NodeExecStats& ns : dev.node_stats()) {
      rows.nodes.push_back(&ns);
      rows.tid_of_thread.emplace(ns.thread_id(), 0);
      t0 = std::min(t0, ns.start_micros());
    }
  }
  if (t0 == std::numeric_limits<int64_t>::max()) t0 = 0;
  absl::flat_hash_map<const NodeExecStats*, std::pair<int, int>> pid_tid;
  int pid = 0;
  for (auto& [name, rows] : devices) {
    rows.pid = ++pid;
    int tid = 0;
    for (auto& [thread, t] : rows.tid_of_thread) t = ++tid;
    for (const NodeExecStats* ns : rows.nodes) {
      pid_tid[ns] = {rows.pid, rows.tid_of_thread[ns->thread_id()]};
      if (ns->device_end_micros() > 0) rows.stream_tid = tid + 1;
    }
  }
  const std::vector<Transfer> transfers = MatchTransfers(md);
  absl::flat_hash_map<const NodeExecStats*, const Transfer*> transfer_of;
  for (const Transfer& t : transfers) {
    if (t.send != nullptr) transfer_of[t.send] = &t;
    if (t.recv != nullptr) transfer_of[t.recv] = &t;
  }

  std::vector<Json> events;
  for (const auto& [name, rows] : devices) {
    events.push_back({{"ph", "M"},
                      {"name", "process_name"},
                      {"pid", rows.pid},
                      {"tid", 0},
                      {"args", {{"name", name}}}});
    events.push_back({{"ph", "M"},
                      {"name", "process_sort_index"},
                      {"pid", rows.pid},
                      {"tid", 0},
                      {"args", {{"sort_index", rows.pid}}}});
    for (const auto& [thread, tid] : rows.tid_of_thread) {
      events.push_back({{"ph", "M"},
                        {"name", "thread_name"},
                        {"pid", rows.pid},
                        {"tid", tid},
                        {"args", {{"name", absl::StrCat("thread ", thread)}}}});
    }
    if (rows.stream_tid != 0) {
      events.push_back({{"ph", "M"},
                        {"name", "thread_name"},
                        {"pid", rows.pid},
                        {"tid", rows.stream_tid},
                        {"args", {{"name", "stream (kernels and copies on the device)"}}}});
    }
  }
  for (const auto& [name, rows] : devices) {
    bool has_memory = false;
    for (const NodeExecStats* ns : rows.nodes) {
      auto [p, t] = pid_tid[ns];
      int64_t dur = std::max<int64_t>(0, ns->end_micros() - ns->start_micros());
      events.push_back({{"ph", "X"},
                        {"name", ns->node_name()},
                        {"cat", ns->op()},
                        {"pid", p},
                        {"tid", t},
                        {"ts", ns->start_micros() - t0},
                        {"dur", dur},
                        {"args", ArgsJson(*ns, name, transfer_of)}});
      has_memory |= ns->allocator_bytes_in_use() != 0;
      if (ns->device_end_micros() <= 0) continue;
      // The same node's work on the device's stream, on its own row: kernels by node name,
      // copies as "memcpy <node>".
      const bool copy = IsCopyOp(ns->op());
      events.push_back(
          {{"ph", "X"},
           {"name", copy ? absl::StrCat("memcpy ", ns->node_name()) : ns->node_name()},
           {"cat", copy ? std::string("memcpy") : ns->op()},
           {"pid", p},
           {"tid", rows.stream_tid},
           {"ts", ns->device_start_micros() - t0},
           {"dur", std::max<int64_t>(0, ns->device_end_micros() - ns->device_start_micros())},
           {"args", ArgsJson(*ns, name, transfer_of)}});
    }
    if (!has_memory) continue;
    std::vector<const NodeExecStats*> by_end = rows.nodes;
    std::stable_sort(by_end.begin(), by_end.end(),
                     [](auto* a, auto* b) { return a->end_micros() < b->end_micros(); });
    for (const NodeExecStats* ns : by_end) {
      events.push_back({{"ph", "C"},
                        {"name", "allocator_bytes_in_use"},
                        {"pid", rows.pid},
                        {"ts", std::max(ns->start_micros(), ns->end_micros()) - t0},
                        {"args", {{"bytes", ns->allocator_bytes_in_use()}}}});
    }
  }
  int flow_id = 0;
  for (const Transfer& t : transfers) {
    if (t.send == nullptr || t.recv == nullptr) continue;
    ++flow_id;
    int64_t s_ts = t.send->start_micros();
    int64_t recv_end = std::max(t.recv->start_micros(), t.recv->end_micros());
    int64_t f_ts = std::min(std::max(t.recv->start_micros(), s_ts), recv_end);
    s_ts = std::min(s_ts, f_ts);
    auto [sp, st] = pid_tid[t.send];
    auto [rp, rt] = pid_tid[t.recv];
    events.push_back({{"ph", "s"},
                      {"name", t.key.tensor_name},
                      {"cat", "transfer"},
                      {"id", flow_id},
                      {"pid", sp},
                      {"tid", st},
                      {"ts", s_ts - t0}});
    events.push_back({{"ph", "f"},
                      {"bp", "e"},
                      {"name", t.key.tensor_name},
                      {"cat", "transfer"},
                      {"id", flow_id},
                      {"pid", rp},
                      {"tid", rt},
                      {"ts", f_ts - t0}});
  }
  // The document is {"traceEvents": [...], "displayTimeUnit": "ms"}, one event per line so that
  // a large trace still reads (and greps) line by line.
  std::string out = "{\"traceEvents\":[\n";
  for (size_t i = 0; i < events.size(); ++i) {
    absl::StrAppend(&out, i == 0 ? "" : ",\n", Dump(events[i]));
  }
  absl::StrAppend(&out, "\n],\"displayTimeUnit\":\"ms\"}\n");
  return out;
}

}  // namespace shardflow

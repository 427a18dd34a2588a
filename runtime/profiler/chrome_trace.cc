#include "runtime/profiler/chrome_trace.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/framework/types.h"
#include "runtime/profiler/transfers.h"

namespace shardflow {
namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 if it is not valid.
size_t Utf8SequenceLength(absl::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (len == 0 || i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  if (len == 2 && c < 0xC2) return 0;                                          // overlong
  if (len == 3 && c == 0xE0 && byte(i + 1) < 0xA0) return 0;                   // overlong
  if (len == 3 && c == 0xED && byte(i + 1) >= 0xA0) return 0;                  // surrogate
  if (len == 4 && c == 0xF0 && byte(i + 1) < 0x90) return 0;                   // overlong
  if (len == 4 && (c > 0xF4 || (c == 0xF4 && byte(i + 1) >= 0x90))) return 0;  // > U+10FFFF
  return len;
}

// One process row: a device, its node executions and its thread ids.
struct DeviceRows {
  int pid = 0;
  std::vector<const NodeExecStats*> nodes;
  std::map<int64_t, int> tid_of_thread;  // thread_id -> tid (1-based, in thread_id order)
};

std::string ShapeJson(const TensorShapeProto& shape) {
  if (shape.unknown_rank()) return "null";
  return absl::StrCat("[", absl::StrJoin(shape.dim(), ","), "]");
}

std::string ArgsJson(
    const NodeExecStats& ns, const std::string& device,
    const absl::flat_hash_map<const NodeExecStats*, const Transfer*>& transfer_of) {
  std::string args = absl::StrCat("{\"op\":", JsonQuote(ns.op()), ",\"outputs\":[");
  for (int i = 0; i < ns.output_size(); ++i) {
    const NodeOutputStats& out = ns.output(i);
    absl::StrAppend(&args, i == 0 ? "" : ",", "{\"slot\":", out.slot(),
                    ",\"dtype\":", JsonQuote(DataTypeString(out.dtype())),
                    ",\"shape\":", ShapeJson(out.shape()), ",\"bytes\":", out.bytes(), "}");
  }
  absl::StrAppend(&args, "],\"allocator_bytes_in_use\":", ns.allocator_bytes_in_use());
  auto it = transfer_of.find(&ns);
  if (it != transfer_of.end()) {
    const TransferKey& key = it->second->key;
    const std::string& peer = key.send_device == device ? key.recv_device : key.send_device;
    absl::StrAppend(&args, ",\"tensor_name\":", JsonQuote(key.tensor_name),
                    ",\"peer_device\":", JsonQuote(peer), ",\"bytes\":", it->second->bytes);
  }
  return absl::StrCat(args, "}");
}

}  // namespace

std::string JsonQuote(absl::string_view s) {
  std::string out = "\"";
  out.reserve(s.size() + 2);
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = Utf8SequenceLength(s, i);
    if (len == 0) {
      out += "\\ufffd";
      ++i;
      continue;
    }
    if (len > 1) {
      out.append(s.data() + i, len);
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      out += absl::StrFormat("\\u%04x", c);
    } else {
      out += static_cast<char>(c);
    }
    i += len;
  }
  return out + "\"";
}

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
    }
  }
  const std::vector<Transfer> transfers = MatchTransfers(md);
  absl::flat_hash_map<const NodeExecStats*, const Transfer*> transfer_of;
  for (const Transfer& t : transfers) {
    if (t.send != nullptr) transfer_of[t.send] = &t;
    if (t.recv != nullptr) transfer_of[t.recv] = &t;
  }

  std::vector<std::string> events;
  for (const auto& [name, rows] : devices) {
    events.push_back(absl::StrCat("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":", rows.pid,
                                  ",\"tid\":0,\"args\":{\"name\":", JsonQuote(name), "}}"));
    events.push_back(
        absl::StrCat("{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":", rows.pid,
                     ",\"tid\":0,\"args\":{\"sort_index\":", rows.pid, "}}"));
    for (const auto& [thread, tid] : rows.tid_of_thread) {
      events.push_back(absl::StrCat("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":", rows.pid,
                                    ",\"tid\":", tid, ",\"args\":{\"name\":\"thread ", thread,
                                    "\"}}"));
    }
  }
  for (const auto& [name, rows] : devices) {
    bool has_memory = false;
    for (const NodeExecStats* ns : rows.nodes) {
      auto [p, t] = pid_tid[ns];
      int64_t dur = std::max<int64_t>(0, ns->end_micros() - ns->start_micros());
      events.push_back(absl::StrCat(
          "{\"ph\":\"X\",\"name\":", JsonQuote(ns->node_name()), ",\"cat\":", JsonQuote(ns->op()),
          ",\"pid\":", p, ",\"tid\":", t, ",\"ts\":", ns->start_micros() - t0, ",\"dur\":", dur,
          ",\"args\":", ArgsJson(*ns, name, transfer_of), "}"));
      has_memory |= ns->allocator_bytes_in_use() != 0;
    }
    if (!has_memory) continue;
    std::vector<const NodeExecStats*> by_end = rows.nodes;
    std::stable_sort(by_end.begin(), by_end.end(),
                     [](auto* a, auto* b) { return a->end_micros() < b->end_micros(); });
    for (const NodeExecStats* ns : by_end) {
      events.push_back(
          absl::StrCat("{\"ph\":\"C\",\"name\":\"allocator_bytes_in_use\",\"pid\":", rows.pid,
                       ",\"ts\":", std::max(ns->start_micros(), ns->end_micros()) - t0,
                       ",\"args\":{\"bytes\":", ns->allocator_bytes_in_use(), "}}"));
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
    const std::string name = JsonQuote(t.key.tensor_name);
    auto [sp, st] = pid_tid[t.send];
    auto [rp, rt] = pid_tid[t.recv];
    events.push_back(absl::StrCat("{\"ph\":\"s\",\"name\":", name,
                                  ",\"cat\":\"transfer\",\"id\":", flow_id, ",\"pid\":", sp,
                                  ",\"tid\":", st, ",\"ts\":", s_ts - t0, "}"));
    events.push_back(absl::StrCat("{\"ph\":\"f\",\"bp\":\"e\",\"name\":", name,
                                  ",\"cat\":\"transfer\",\"id\":", flow_id, ",\"pid\":", rp,
                                  ",\"tid\":", rt, ",\"ts\":", f_ts - t0, "}"));
  }
  return absl::StrCat("{\"traceEvents\":[\n", absl::StrJoin(events, ",\n"),
                      "\n],\"displayTimeUnit\":\"ms\"}\n");
}

}  // namespace shardflow

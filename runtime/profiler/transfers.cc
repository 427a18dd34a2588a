#include "runtime/profiler/transfers.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "core/framework/op_names.h"

namespace shardflow {

bool TransferKey::operator<(const TransferKey& o) const {
  return std::tie(tensor_name, send_device, recv_device) <
         std::tie(o.tensor_name, o.send_device, o.recv_device);
}

bool TransferKey::operator==(const TransferKey& o) const {
  return tensor_name == o.tensor_name && send_device == o.send_device &&
         recv_device == o.recv_device;
}

namespace {

bool StringAttr(const NodeDef& node, const std::string& name, std::string* out) {
  auto it = node.attr().find(name);
  if (it == node.attr().end() || it->second.value_case() != AttrValue::kS) return false;
  *out = it->second.s();
  return true;
}

bool IsTransferOp(absl::string_view op) { return op == "_Send" || op == "_Recv"; }

// The _Send/_Recv NodeDefs of the partition graphs, by (device, name) and by name.
class TransferNodeIndex {
 public:
  explicit TransferNodeIndex(const RunMetadata& md) {
    for (const GraphDef& g : md.partition_graphs()) {
      for (const NodeDef& n : g.node()) {
        if (!IsTransferOp(n.op())) continue;
        std::string device = n.assigned_device();
        if (device.empty()) {
          auto it = md.placement().find(n.name());
          if (it != md.placement().end()) device = it->second;
        }
        by_device_name_[{device, n.name()}] = &n;
        auto [it, inserted] = by_name_.emplace(n.name(), &n);
        if (!inserted && it->second != nullptr && it->second->assigned_device() != device) {
          it->second = nullptr;  // ambiguous: the same name on two devices
        }
      }
    }
  }

  const NodeDef* Find(const std::string& device, const std::string& name) const {
    auto it = by_device_name_.find({device, name});
    if (it != by_device_name_.end()) return it->second;
    auto by_name = by_name_.find(name);
    return by_name == by_name_.end() ? nullptr : by_name->second;
  }

 private:
  absl::flat_hash_map<std::pair<std::string, std::string>, const NodeDef*> by_device_name_;
  absl::flat_hash_map<std::string, const NodeDef*> by_name_;  // null when ambiguous
};

struct Side {
  const NodeExecStats* stats;
  std::string node;
};

bool EarlierStart(const Side& a, const Side& b) {
  return a.stats->start_micros() < b.stats->start_micros();
}

}  // namespace

bool TransferKeyOf(const NodeDef& node, TransferKey* key) {
  return StringAttr(node, "tensor_name", &key->tensor_name) &&
         StringAttr(node, "send_device", &key->send_device) &&
         StringAttr(node, "recv_device", &key->recv_device);
}

int64_t OutputBytes(const NodeExecStats& stats) {
  for (const NodeOutputStats& out : stats.output()) {
    if (out.slot() == 0) return out.bytes();
  }
  return stats.output_size() > 0 ? stats.output(0).bytes() : -1;
}

std::vector<Transfer> MatchTransfers(const RunMetadata& md) {
  TransferNodeIndex index(md);
  std::map<TransferKey, std::pair<std::vector<Side>, std::vector<Side>>> sides;  // sends, recvs
  for (const DeviceStepStats& dev : md.step_stats().dev_stats()) {
    for (const NodeExecStats& ns : dev.node_stats()) {
      if (!IsTransferOp(ns.op())) continue;
      const NodeDef* def = index.Find(dev.device(), ns.node_name());
      TransferKey key;
      if (def == nullptr || def->op() != ns.op() || !TransferKeyOf(*def, &key)) continue;
      auto& [sends, recvs] = sides[key];
      (ns.op() == kSendOp ? sends : recvs).push_back({&ns, ns.node_name()});
    }
  }
  std::vector<Transfer> transfers;
  for (auto& [key, pair] : sides) {
    auto& [sends, recvs] = pair;
    std::stable_sort(sends.begin(), sends.end(), EarlierStart);
    std::stable_sort(recvs.begin(), recvs.end(), EarlierStart);
    for (size_t i = 0; i < std::max(sends.size(), recvs.size()); ++i) {
      Transfer t;
      t.key = key;
      if (i < sends.size()) {
        t.send = sends[i].stats;
        t.send_node = sends[i].node;
      }
      if (i < recvs.size()) {
        t.recv = recvs[i].stats;
        t.recv_node = recvs[i].node;
      }
      if (t.recv != nullptr) t.bytes = OutputBytes(*t.recv);
      if (t.bytes < 0 && t.send != nullptr) t.bytes = OutputBytes(*t.send);
      transfers.push_back(std::move(t));
    }
  }
  return transfers;
}

std::string FormatBytes(int64_t bytes) {
  if (bytes < 0) return "?";
  if (bytes < 1024) return absl::StrFormat("%d B", bytes);
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = bytes / 1024.0;
  int unit = 0;
  while (value >= 1024.0 && unit < 3) {
    value /= 1024.0;
    ++unit;
  }
  return absl::StrFormat("%.1f %s", value, kUnits[unit]);
}

}  // namespace shardflow

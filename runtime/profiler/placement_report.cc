#include "runtime/profiler/placement_report.h"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "runtime/profiler/transfers.h"

namespace shardflow {
namespace {

int64_t Duration(const NodeExecStats& ns) {
  return std::max<int64_t>(0, ns.end_micros() - ns.start_micros());
}

// Length of the union of [start, start + duration) intervals.
int64_t UnionLength(std::vector<std::pair<int64_t, int64_t>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  int64_t total = 0;
  int64_t cur_start = 0, cur_end = 0;
  bool open = false;
  for (const auto& [start, end] : intervals) {
    if (open && start <= cur_end) {
      cur_end = std::max(cur_end, end);
      continue;
    }
    if (open) total += cur_end - cur_start;
    cur_start = start;
    cur_end = end;
    open = true;
  }
  if (open) total += cur_end - cur_start;
  return total;
}

std::string Ms(int64_t micros) { return absl::StrFormat("%.3f", micros / 1000.0); }

}  // namespace

PlacementSummary ComputePlacementSummary(const RunMetadata& md) {
  PlacementSummary summary;
  std::map<std::string, std::vector<const NodeExecStats*>> nodes_by_device;
  int64_t first = std::numeric_limits<int64_t>::max();
  int64_t last = std::numeric_limits<int64_t>::min();
  for (const DeviceStepStats& dev : md.step_stats().dev_stats()) {
    auto& nodes = nodes_by_device[dev.device()];
    for (const NodeExecStats& ns : dev.node_stats()) {
      nodes.push_back(&ns);
      first = std::min(first, ns.start_micros());
      last = std::max(last, ns.start_micros() + Duration(ns));
    }
  }
  if (first <= last) {
    summary.step_start_micros = first;
    summary.step_end_micros = last;
    summary.step_micros = last - first;
  }

  std::map<std::pair<std::string, std::string>, LinkSummary> links;
  std::map<std::string, DeviceSummary> devices;
  for (const Transfer& t : MatchTransfers(md)) {
    const int64_t bytes = std::max<int64_t>(0, t.bytes);
    LinkSummary& link = links[{t.key.send_device, t.key.recv_device}];
    link.send_device = t.key.send_device;
    link.recv_device = t.key.recv_device;
    ++link.transfers;
    link.bytes += bytes;
    DeviceSummary& sender = devices[t.key.send_device];
    ++sender.transfers_out;
    sender.bytes_out += bytes;
    DeviceSummary& receiver = devices[t.key.recv_device];
    ++receiver.transfers_in;
    receiver.bytes_in += bytes;
  }
  for (const auto& [device, nodes] : nodes_by_device) {
    DeviceSummary& d = devices[device];
    d.op_count = nodes.size();
    std::vector<std::pair<int64_t, int64_t>> intervals;
    std::map<std::string, OpTime> by_op;
    for (const NodeExecStats* ns : nodes) {
      intervals.emplace_back(ns->start_micros(), ns->start_micros() + Duration(*ns));
      OpTime& op = by_op[ns->op()];
      op.op = ns->op();
      op.micros += Duration(*ns);
      ++op.count;
    }
    d.busy_micros = UnionLength(std::move(intervals));
    for (auto& [name, op] : by_op) d.top_ops.push_back(op);
    std::stable_sort(d.top_ops.begin(), d.top_ops.end(),
                     [](const OpTime& a, const OpTime& b) { return a.micros > b.micros; });
    if (d.top_ops.size() > 3) d.top_ops.resize(3);
  }
  for (auto& [device, d] : devices) {
    d.device = device;
    d.idle_micros = summary.step_micros - d.busy_micros;
    summary.devices.push_back(std::move(d));
  }
  for (auto& [key, link] : links) summary.links.push_back(std::move(link));
  return summary;
}

std::string FormatPlacementSummary(const PlacementSummary& s) {
  size_t width = std::string("device").size();
  for (const DeviceSummary& d : s.devices) width = std::max(width, d.device.size());
  const int w = static_cast<int>(width);
  std::string out =
      absl::StrFormat("step: %s ms on %d device(s)\n\n", Ms(s.step_micros), s.devices.size());
  absl::StrAppend(
      &out, absl::StrFormat("%-*s %6s %10s %10s %12s %12s  %s\n", w, "device", "ops", "busy ms",
                            "idle ms", "bytes in", "bytes out", "top ops (ms)"));
  for (const DeviceSummary& d : s.devices) {
    std::vector<std::string> top;
    for (const OpTime& op : d.top_ops) {
      top.push_back(absl::StrCat(op.op, " ", Ms(op.micros), " x", op.count));
    }
    absl::StrAppend(&out, absl::StrFormat("%-*s %6d %10s %10s %12d %12d  %s\n", w, d.device,
                                          d.op_count, Ms(d.busy_micros), Ms(d.idle_micros),
                                          d.bytes_in, d.bytes_out, absl::StrJoin(top, ", ")));
  }
  absl::StrAppend(&out, "\n");
  if (s.links.empty()) return absl::StrCat(out, "links: none (no Send/Recv transfers)\n");
  size_t link_width = std::string("link").size();
  std::vector<std::string> names;
  for (const LinkSummary& l : s.links) {
    names.push_back(absl::StrCat(l.send_device, " -> ", l.recv_device));
    link_width = std::max(link_width, names.back().size());
  }
  const int lw = static_cast<int>(link_width);
  absl::StrAppend(
      &out, absl::StrFormat("%-*s %10s %12s  %s\n", lw, "link", "transfers", "bytes", "size"));
  for (size_t i = 0; i < s.links.size(); ++i) {
    const LinkSummary& l = s.links[i];
    absl::StrAppend(&out, absl::StrFormat("%-*s %10d %12d  %s\n", lw, names[i], l.transfers,
                                          l.bytes, FormatBytes(l.bytes)));
  }
  return out;
}

std::string PlacementReport(const RunMetadata& md) {
  return FormatPlacementSummary(ComputePlacementSummary(md));
}

}  // namespace shardflow

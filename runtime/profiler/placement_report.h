// PlacementReport: where the time of one traced step went, per device, and what crossed
// between devices.
//
//   PlacementSummary s = ComputePlacementSummary(md);  // md: RunMetadata with FULL_TRACE
//   for (const DeviceSummary& d : s.devices) use(d.busy_micros, d.bytes_in);
//   std::cout << PlacementReport(md);                  // the same numbers as a text table
//
// Definitions (all times in microseconds, from NodeExecStats start/end):
//   - step span: earliest start to latest end over all devices; the same for every device so
//     that devices compare.
//   - busy: length of the union of the device's node intervals [start, end) (overlapping
//     executions on several threads count once). _Recv nodes count too, and their time
//     includes waiting for the sender.
//   - idle: step span minus busy.
//   - bytes in/out and links: from the matched transfers (transfers.h); transfers whose bytes
//     are unknown count as transfers but add no bytes.
//   - top ops: op types by the sum of their execution durations, at most 3, ties by name.
#ifndef SHARDFLOW_RUNTIME_PROFILER_PLACEMENT_REPORT_H_
#define SHARDFLOW_RUNTIME_PROFILER_PLACEMENT_REPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/protos/config.pb.h"

namespace shardflow {

struct OpTime {
  std::string op;
  int64_t micros = 0;  // sum of durations of this op's executions
  int64_t count = 0;   // executions
};

struct DeviceSummary {
  std::string device;
  int64_t op_count = 0;  // node executions recorded on the device
  int64_t busy_micros = 0;
  int64_t idle_micros = 0;
  int64_t bytes_in = 0;   // received by this device
  int64_t bytes_out = 0;  // sent by this device
  int64_t transfers_in = 0;
  int64_t transfers_out = 0;
  std::vector<OpTime> top_ops;  // at most 3, most time first
};

struct LinkSummary {
  std::string send_device;
  std::string recv_device;
  int64_t transfers = 0;
  int64_t bytes = 0;
};

struct PlacementSummary {
  int64_t step_start_micros = 0;  // since the epoch; 0 when nothing was recorded
  int64_t step_end_micros = 0;
  int64_t step_micros = 0;
  // In device-name order; a device that only appears in a transfer has zero stats.
  std::vector<DeviceSummary> devices;
  // In (send_device, recv_device) order.
  std::vector<LinkSummary> links;
};

PlacementSummary ComputePlacementSummary(const RunMetadata& md);

// The summary as two fixed-width text tables (devices, then links), times in ms.
std::string PlacementReport(const RunMetadata& md);
std::string FormatPlacementSummary(const PlacementSummary& summary);

}  // namespace shardflow

#endif  // SHARDFLOW_RUNTIME_PROFILER_PLACEMENT_REPORT_H_

// ChromeTraceJson: one traced step as Chrome trace-event JSON, for Perfetto (ui.perfetto.dev)
// and chrome://tracing.
//
//   RunOptions opts;
//   opts.set_trace_level(RunOptions::FULL_TRACE);
//   RunMetadata md;
//   SF_RETURN_IF_ERROR(session->Run(opts, feeds, fetches, {}, &outputs, &md));
//   std::ofstream("step.json") << ChromeTraceJson(md);
//
// The output is `{"traceEvents": [...], "displayTimeUnit": "ms"}` with:
//   - one process per device (pid 1, 2, ... in device-name order), named by a "process_name"
//     metadata event; one thread row per recorded thread_id (tid 1, 2, ... in thread_id order,
//     named "thread <thread_id>");
//   - a complete event ("ph":"X") per node execution: name = node name, cat = op, args = op,
//     outputs (slot, dtype, shape, bytes), allocator_bytes_in_use, and for _Send/_Recv the
//     tensor name and the peer device;
//   - a flow ("ph":"s" inside the _Send's slice, "ph":"f","bp":"e" inside the _Recv's, same
//     "id", one id per transfer; see transfers.h) for every transfer with stats on both sides.
//     The "f" is never before the "s": it sits at max(recv start, send start), clamped to the
//     _Recv's slice (clocks of different hosts may disagree; then "s" moves back to the "f");
//   - a counter ("ph":"C", name "allocator_bytes_in_use") per node end on each device that
//     records a non-zero allocator_bytes_in_use anywhere in the step.
// Timestamps ("ts", "dur") are integer microseconds relative to the earliest start in the step.
// The JSON is written by nlohmann-json, one event per line; bytes of names that are not valid
// UTF-8 become U+FFFD.
#ifndef SHARDFLOW_RUNTIME_PROFILER_CHROME_TRACE_H_
#define SHARDFLOW_RUNTIME_PROFILER_CHROME_TRACE_H_

#include <string>

#include "core/protos/config.pb.h"

namespace shardflow {

std::string ChromeTraceJson(const RunMetadata& md);

}  // namespace shardflow

#endif  // SHARDFLOW_RUNTIME_PROFILER_CHROME_TRACE_H_

// Profiler output for one traced step: a Chrome trace, a placement report and a DOT graph.
//
//   RunOptions opts;
//   opts.set_trace_level(RunOptions::FULL_TRACE);
//   RunMetadata md;
//   SF_RETURN_IF_ERROR(session->Run(opts, feeds, fetches, {}, &outputs, &md));
//   std::ofstream("step.json") << ChromeTraceJson(md);   // open in ui.perfetto.dev
//   std::cout << PlacementReport(md);                    // per-device time and bytes moved
//   std::ofstream("placed.dot") << PlacedGraphDot(graph_def, &md);
//
// This header gathers the pieces; each has its contract in its own header:
//   runtime/profiler/transfers.h         Send→Recv matching shared by all outputs
//   runtime/profiler/chrome_trace.h      ChromeTraceJson
//   runtime/profiler/placement_report.h  ComputePlacementSummary, PlacementReport
//   runtime/profiler/graph_dot.h         PlacedGraphDot, DotToSvg
// All functions are pure functions of their arguments and safe to call from any thread.
#ifndef SHARDFLOW_RUNTIME_PROFILER_H_
#define SHARDFLOW_RUNTIME_PROFILER_H_

#include "runtime/profiler/chrome_trace.h"
#include "runtime/profiler/graph_dot.h"
#include "runtime/profiler/placement_report.h"
#include "runtime/profiler/transfers.h"

#endif  // SHARDFLOW_RUNTIME_PROFILER_H_

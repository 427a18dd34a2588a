// PlacedGraphDot: the placed graph as Graphviz DOT, coloured by device; DotToSvg renders it.
//
//   std::string dot = PlacedGraphDot(graph_def, &md);  // md may be null
//   std::ofstream("placed.dot") << dot;                 // dot -Tsvg placed.dot > placed.svg
//   absl::StatusOr<std::string> svg = DotToSvg(dot);    // needs Graphviz installed
//
// Which graph: md->partition_graphs when md is given and has them (the graphs the devices
// executed, with their _Send/_Recv nodes); otherwise `graph`. A node's device is its
// assigned_device, else md->placement[name], else its requested device, else "(unplaced)".
//
// Drawing:
//   - one cluster ("cluster_<i>", labelled with the device name) per device, in device-name
//     order; its nodes are filled with DevicePalette()[i % size] and the cluster border has the
//     same colour, so the clusters are the legend. Unplaced nodes are white, outside clusters.
//   - data edges solid, control edges ("^x" inputs) dashed;
//   - crossing edges drawn bold: every _Send -> _Recv pair with equal (tensor_name, send_device,
//     recv_device) attrs, and every edge whose endpoints are on different devices. They are
//     labelled with FormatBytes(bytes) when md's step stats know the bytes (the transfers'
//     bytes, or the producing node's recorded output bytes for that slot).
#ifndef SHARDFLOW_RUNTIME_PROFILER_GRAPH_DOT_H_
#define SHARDFLOW_RUNTIME_PROFILER_GRAPH_DOT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/protos/config.pb.h"
#include "core/protos/graph.pb.h"

namespace shardflow {

// `md` is borrowed for the call and may be null.
std::string PlacedGraphDot(const GraphDef& graph, const RunMetadata* md);

// The fill colours of devices, "#rrggbb", in the order devices get them.
const std::vector<std::string>& DevicePalette();

// Runs `dot -Tsvg` (found on PATH) on `dot` and returns the SVG. FailedPrecondition with
// "Graphviz 'dot' is not installed: apt-get install graphviz" when there is no `dot`;
// Internal with dot's stderr when it fails. Blocks until dot exits; uses two temp files.
absl::StatusOr<std::string> DotToSvg(const std::string& dot);

}  // namespace shardflow

#endif  // SHARDFLOW_RUNTIME_PROFILER_GRAPH_DOT_H_

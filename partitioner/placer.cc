#include "partitioner/placer.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/framework/kernel_registry.h"
#include "core/platform/status.h"

namespace shardflow {

absl::Status PlaceGraph(Graph* graph, const std::vector<DeviceAttributes>& devices,
                        const PlacerOptions& options) {
  if (devices.empty()) return absl::FailedPreconditionError("no devices to place the graph on");
  std::vector<DeviceName> parsed;
  std::vector<std::string> names;
  for (const auto& d : devices) {
    SF_ASSIGN_OR_RETURN(DeviceName n, DeviceName::Parse(d.name));
    parsed.push_back(n);
    names.push_back(d.name);
  }
  for (Node* node : graph->nodes()) {
    std::vector<std::string> kernel_types =
        KernelRegistry::Global()->SupportedDeviceTypes(node->def());
    auto has_kernel = [&](const DeviceAttributes& d) {
      return std::find(kernel_types.begin(), kernel_types.end(), d.device_type) !=
             kernel_types.end();
    };
    std::string prefix = NodeErrorPrefix(node->def());
    if (kernel_types.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(prefix,
                                                     "no kernel is registered for this op "
                                                     "with these attrs on any device type"));
    }
    SF_ASSIGN_OR_RETURN(DeviceName spec, DeviceName::Parse(node->requested_device()));
    int chosen = -1;
    bool any_match = false;
    for (size_t i = 0; i < devices.size(); ++i) {
      if (!spec.Matches(parsed[i])) continue;
      any_match = true;
      if (has_kernel(devices[i])) {
        chosen = static_cast<int>(i);
        break;
      }
    }
    if (chosen < 0 && options.allow_soft_placement) {
      // Keep the task, drop the device type and index.
      DeviceName relaxed = spec;
      relaxed.has_type = relaxed.has_id = false;
      for (size_t i = 0; i < devices.size() && chosen < 0; ++i) {
        if (relaxed.Matches(parsed[i]) && has_kernel(devices[i])) chosen = static_cast<int>(i);
      }
    }
    if (chosen < 0) {
      std::string why =
          any_match ? absl::StrCat("no matching device has a kernel for it (kernels exist for: ",
                                   absl::StrJoin(kernel_types, ", "), ")")
                    : "no such device";
      return absl::InvalidArgumentError(absl::StrCat(
          "node '", node->name(), "' (", node->op(), ") was explicitly assigned to '",
          node->requested_device(), "' but ", why, "; available devices are [",
          absl::StrJoin(names, ", "), "]. Change the device, or set allow_soft_placement"));
    }
    node->set_assigned_device(devices[chosen].name);
    if (options.log_device_placement) {
      std::fprintf(stderr, "%s (%s) -> %s\n", node->name().c_str(), node->op().c_str(),
                   devices[chosen].name.c_str());
    }
  }
  return absl::OkStatus();
}

}  // namespace shardflow

// DeviceName: parsing, printing and matching of device names.
//
// Full name:  /job:worker/replica:0/task:1/device:GPU:0
// Partial specs name some fields only: "/device:GPU:0", "/job:ps", "/cpu:1", "/device:CPU:*".
//
//   auto spec = DeviceName::Parse("/job:worker/device:CPU:1");
//   auto full = DeviceName::Parse("/job:worker/replica:0/task:3/device:CPU:1");
//   spec->Matches(*full)   // true: every field the spec names agrees
#ifndef SHARDFLOW_CORE_FRAMEWORK_DEVICE_NAME_H_
#define SHARDFLOW_CORE_FRAMEWORK_DEVICE_NAME_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shardflow {

inline constexpr char kDeviceCpu[] = "CPU";
inline constexpr char kDeviceGpu[] = "GPU";

struct DeviceName {
  bool has_job = false;
  std::string job;
  bool has_replica = false;
  int replica = 0;
  bool has_task = false;
  int task = 0;
  bool has_type = false;
  std::string type;  // "CPU", "GPU"; upper case
  bool has_id = false;
  int id = 0;

  // Parses a full or partial name. "" parses to the empty spec (matches every device).
  static absl::StatusOr<DeviceName> Parse(absl::string_view name);
  // A fully specified name.
  static DeviceName Full(absl::string_view job, int replica, int task, absl::string_view type,
                         int id);

  bool IsFullySpecified() const { return has_job && has_replica && has_task && has_type && has_id; }
  // True if every field this spec names equals the same field of `device`.
  bool Matches(const DeviceName& device) const;
  // True if some device could match both specs.
  bool IsCompatibleWith(const DeviceName& other) const;
  // Fills every field `other` names that this one leaves open; error when both name a field
  // with different values.
  absl::Status MergeFrom(const DeviceName& other);
  // "/job:worker/replica:0/task:1/device:GPU:0"; only the specified fields for partial specs.
  std::string ToString() const;
  // "/job:worker/replica:0/task:1" (the task part only).
  std::string TaskName() const;
};

}  // namespace shardflow

#endif  // SHARDFLOW_CORE_FRAMEWORK_DEVICE_NAME_H_

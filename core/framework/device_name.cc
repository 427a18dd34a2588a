#include "core/framework/device_name.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace shardflow {
namespace {

absl::Status BadName(absl::string_view name, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "malformed device name '", name, "': ", why,
      "; expected e.g. /job:worker/replica:0/task:1/device:GPU:0, /device:CPU:1 or /job:ps"));
}

// Parses "N" or "*" (wildcard: field left open).
bool ParseIndex(absl::string_view s, bool* has, int* out) {
  if (s == "*") {
    *has = false;
    return true;
  }
  if (!absl::SimpleAtoi(s, out) || *out < 0) return false;
  *has = true;
  return true;
}

bool ValidJob(absl::string_view s) {
  if (s.empty() || !absl::ascii_isalpha(s[0])) return false;
  for (char c : s) {
    if (!absl::ascii_isalnum(c) && c != '_' && c != '-') return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<DeviceName> DeviceName::Parse(absl::string_view name) {
  DeviceName d;
  if (name.empty()) return d;
  if (name[0] != '/') return BadName(name, "must start with '/'");
  std::vector<absl::string_view> parts = absl::StrSplit(name.substr(1), '/');
  for (size_t i = 0; i < parts.size(); ++i) {
    absl::string_view p = parts[i];
    if (absl::ConsumePrefix(&p, "job:")) {
      if (p != "*") {
        if (!ValidJob(p)) return BadName(name, "job names are letters, digits, '_' and '-'");
        d.has_job = true;
        d.job = std::string(p);
      }
    } else if (absl::ConsumePrefix(&p, "replica:")) {
      if (!ParseIndex(p, &d.has_replica, &d.replica)) return BadName(name, "bad replica index");
    } else if (absl::ConsumePrefix(&p, "task:")) {
      if (!ParseIndex(p, &d.has_task, &d.task)) return BadName(name, "bad task index");
    } else {
      // "device:TYPE:ID", "device:TYPE", or the short forms "cpu:0", "gpu:1".
      absl::ConsumePrefix(&p, "device:");
      std::vector<absl::string_view> f = absl::StrSplit(p, ':');
      if (f.empty() || f.size() > 2 || f[0].empty()) return BadName(name, "bad device part");
      if (f[0] != "*") {
        std::string type = absl::AsciiStrToUpper(f[0]);
        for (char c : type) {
          if (!absl::ascii_isalnum(c) && c != '_') return BadName(name, "bad device type");
        }
        d.has_type = true;
        d.type = type;
      }
      if (f.size() == 2 && !ParseIndex(f[1], &d.has_id, &d.id)) {
        return BadName(name, "bad device index");
      }
    }
  }
  return d;
}

DeviceName DeviceName::Full(absl::string_view job, int replica, int task, absl::string_view type,
                            int id) {
  DeviceName d;
  d.has_job = d.has_replica = d.has_task = d.has_type = d.has_id = true;
  d.job = std::string(job);
  d.replica = replica;
  d.task = task;
  d.type = std::string(type);
  d.id = id;
  return d;
}

bool DeviceName::Matches(const DeviceName& device) const {
  if (has_job && (!device.has_job || job != device.job)) return false;
  if (has_replica && (!device.has_replica || replica != device.replica)) return false;
  if (has_task && (!device.has_task || task != device.task)) return false;
  if (has_type && (!device.has_type || type != device.type)) return false;
  if (has_id && (!device.has_id || id != device.id)) return false;
  return true;
}

bool DeviceName::IsCompatibleWith(const DeviceName& o) const {
  if (has_job && o.has_job && job != o.job) return false;
  if (has_replica && o.has_replica && replica != o.replica) return false;
  if (has_task && o.has_task && task != o.task) return false;
  if (has_type && o.has_type && type != o.type) return false;
  if (has_id && o.has_id && id != o.id) return false;
  return true;
}

absl::Status DeviceName::MergeFrom(const DeviceName& o) {
  if (!IsCompatibleWith(o)) {
    return absl::InvalidArgumentError(absl::StrCat("cannot merge device specs ", ToString(),
                                                   " and ", o.ToString(), ": they conflict"));
  }
  if (o.has_job) has_job = true, job = o.job;
  if (o.has_replica) has_replica = true, replica = o.replica;
  if (o.has_task) has_task = true, task = o.task;
  if (o.has_type) has_type = true, type = o.type;
  if (o.has_id) has_id = true, id = o.id;
  return absl::OkStatus();
}

std::string DeviceName::TaskName() const {
  std::string s;
  if (has_job) absl::StrAppend(&s, "/job:", job);
  if (has_replica) absl::StrAppend(&s, "/replica:", replica);
  if (has_task) absl::StrAppend(&s, "/task:", task);
  return s;
}

std::string DeviceName::ToString() const {
  std::string s = TaskName();
  if (has_type || has_id) {
    absl::StrAppend(&s, "/device:", has_type ? type : "*");
    if (has_id) absl::StrAppend(&s, ":", id);
  }
  return s;
}

}  // namespace shardflow

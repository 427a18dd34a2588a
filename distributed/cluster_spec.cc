#include "distributed/cluster_spec.h"

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/framework/device_name.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace shardflow {
namespace {

constexpr char kExpected[] =
    "expected {\"worker\": [\"host:port\", ...], \"ps\": [\"host:port\", ...]}";

// Letters, digits and '_', starting with a letter: the task and device names built from it
// must parse back (DeviceName), so that every task of an accepted spec is addressable.
bool ValidJobName(const std::string& job) {
  for (char c : job) {
    if (!(isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  auto parsed = DeviceName::Parse(absl::StrCat("/job:", job));
  return parsed.ok() && parsed->has_job && parsed->job == job;
}

// "host:port", "[v6]:port"; port in 0..65535.
bool ValidAddress(const std::string& address) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  int port = 0;
  if (!absl::SimpleAtoi(address.substr(colon + 1), &port)) return false;
  return port >= 0 && port <= 65535;
}

// `s` as a JSON string literal: quotes, backslashes and control characters escaped (addresses
// are only checked for a ":port" suffix, so they may hold any of them).
std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      out += absl::StrFormat("\\u%04x", u);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

std::string TaskId::Name() const { return ClusterSpec::TaskName(job, task); }

std::string ClusterSpec::TaskName(const std::string& job, int task) {
  return absl::StrCat("/job:", job, "/replica:0/task:", task);
}

absl::StatusOr<ClusterSpec> ClusterSpec::FromMap(
    std::map<std::string, std::vector<std::string>> jobs, const std::string& source) {
  if (jobs.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": no job; ", kExpected));
  }
  for (const auto& [job, addresses] : jobs) {
    if (!ValidJobName(job)) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": job name '", job,
                       "' is not valid; use a letter, then letters, digits and '_'"));
    }
    if (addresses.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": job '", job, "' has no task; give at least one \"host:port\""));
    }
    for (size_t i = 0; i < addresses.size(); ++i) {
      if (!ValidAddress(addresses[i])) {
        return absl::InvalidArgumentError(
            absl::StrCat(source, ": ", job, "[", i, "] = '", addresses[i],
                         "' is not an address; expected \"host:port\" with a port in 0..65535"));
      }
    }
  }
  ClusterSpec spec;
  spec.jobs_ = std::move(jobs);
  return spec;
}

absl::StatusOr<ClusterSpec> ClusterSpec::FromJson(const std::string& json,
                                                  const std::string& source) {
  google::protobuf::Struct root;
  auto status = google::protobuf::util::JsonStringToMessage(json, &root);
  if (!status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": not a JSON object (", status.ToString(), "); ", kExpected));
  }
  std::map<std::string, std::vector<std::string>> jobs;
  for (const auto& [job, value] : root.fields()) {
    if (value.kind_case() != google::protobuf::Value::kListValue) {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ": field \"", job, "\" must be a list of \"host:port\" strings; ", kExpected));
    }
    std::vector<std::string>& addresses = jobs[job];
    const auto& list = value.list_value();
    for (int i = 0; i < list.values_size(); ++i) {
      if (list.values(i).kind_case() != google::protobuf::Value::kStringValue) {
        return absl::InvalidArgumentError(
            absl::StrCat(source, ": ", job, "[", i, "] must be a \"host:port\" string"));
      }
      addresses.push_back(list.values(i).string_value());
    }
  }
  return FromMap(std::move(jobs), source);
}

absl::StatusOr<ClusterSpec> ClusterSpec::FromJsonFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot open cluster spec file '", path,
                                            "'; pass a JSON file such as ", kExpected));
  }
  std::stringstream text;
  text << in.rdbuf();
  return FromJson(text.str(), path);
}

absl::StatusOr<std::string> ClusterSpec::TaskAddress(const std::string& job, int task) const {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) {
    return absl::NotFoundError(absl::StrCat("the cluster has no job '", job, "'; jobs are [",
                                            absl::StrJoin(jobs(), ", "), "]"));
  }
  if (task < 0 || task >= static_cast<int>(it->second.size())) {
    return absl::NotFoundError(absl::StrCat("job '", job, "' has ", it->second.size(),
                                            " task(s) (0..", it->second.size() - 1,
                                            "); there is no task ", task));
  }
  return it->second[task];
}

absl::StatusOr<std::string> ClusterSpec::TaskAddress(const std::string& task_or_device) const {
  auto name = DeviceName::Parse(task_or_device);
  if (!name.ok() || !name->has_job || !name->has_task) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", task_or_device, "' does not name a task; expected \"/job:J/replica:0/task:T\""));
  }
  return TaskAddress(name->job, name->task);
}

std::vector<std::string> ClusterSpec::jobs() const {
  std::vector<std::string> out;
  for (const auto& [job, addresses] : jobs_) out.push_back(job);
  return out;
}

int ClusterSpec::num_tasks(const std::string& job) const {
  auto it = jobs_.find(job);
  return it == jobs_.end() ? 0 : static_cast<int>(it->second.size());
}

std::vector<TaskId> ClusterSpec::tasks() const {
  std::vector<TaskId> out;
  for (const auto& [job, addresses] : jobs_) {
    for (size_t i = 0; i < addresses.size(); ++i) out.push_back(TaskId{job, static_cast<int>(i)});
  }
  return out;
}

bool ClusterSpec::HasTask(const std::string& job, int task) const {
  return task >= 0 && task < num_tasks(job);
}

std::map<std::string, std::string> ClusterSpec::TaskAddresses() const {
  std::map<std::string, std::string> out;
  for (const auto& [job, addresses] : jobs_) {
    for (size_t i = 0; i < addresses.size(); ++i) out[TaskName(job, i)] = addresses[i];
  }
  return out;
}

std::string ClusterSpec::DifferenceFrom(const std::map<std::string, std::string>& other) const {
  const std::map<std::string, std::string> mine = TaskAddresses();
  for (const auto& [name, address] : mine) {
    auto it = other.find(name);
    if (it == other.end()) return absl::StrCat("it has no task ", name, " (", address, " here)");
    if (it->second != address) {
      return absl::StrCat("it has ", name, " at ", it->second, " (", address, " here)");
    }
  }
  for (const auto& [name, address] : other) {
    if (mine.count(name) == 0) {
      return absl::StrCat("it has a task ", name, " at ", address, " that this cluster spec lacks");
    }
  }
  return "";
}

std::string ClusterSpec::ToJson() const {
  std::vector<std::string> parts;
  for (const auto& [job, addresses] : jobs_) {
    std::vector<std::string> quoted;
    for (const std::string& address : addresses) quoted.push_back(JsonString(address));
    parts.push_back(absl::StrCat(JsonString(job), ": [", absl::StrJoin(quoted, ", "), "]"));
  }
  return absl::StrCat("{", absl::StrJoin(parts, ", "), "}");
}

}  // namespace shardflow

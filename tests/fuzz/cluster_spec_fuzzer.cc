// Fuzzes ClusterSpec::FromJson (distributed/cluster_spec.h): the input is the JSON text a user
// passes as --cluster or a cluster file.
//
// Checked on every input: FromJson returns a status and never crashes. Checked when it
// accepts: every task has a well-formed name and the address listed for it, TaskAddress finds
// it by name, and ToJson gives JSON that FromJson reads back to the same spec.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "distributed/cluster_spec.h"

namespace shardflow {
namespace {

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "cluster_spec_fuzzer: invariant violated: %s\n", what.c_str());
  std::abort();
}

void CheckAccepted(const ClusterSpec& spec) {
  if (spec.jobs().empty()) Fail("a spec without jobs");
  const auto addresses = spec.TaskAddresses();
  if (addresses.size() != spec.tasks().size()) Fail("TaskAddresses and tasks() disagree");
  for (const TaskId& task : spec.tasks()) {
    if (!spec.HasTask(task.job, task.task)) Fail("HasTask is false for " + task.Name());
    auto by_index = spec.TaskAddress(task.job, task.task);
    auto by_name = spec.TaskAddress(task.Name());
    if (!by_index.ok() || !by_name.ok() || *by_index != *by_name ||
        addresses.at(task.Name()) != *by_index) {
      Fail("the address of " + task.Name() + " is not found the same way everywhere");
    }
  }
  const std::string json = spec.ToJson();
  auto again = ClusterSpec::FromJson(json);
  if (!again.ok()) Fail("FromJson rejects ToJson's " + json + ": " + again.status().ToString());
  if (again->job_addresses() != spec.job_addresses()) Fail("ToJson round trip differs: " + json);
}

}  // namespace
}  // namespace shardflow

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto spec = shardflow::ClusterSpec::FromJson(
      std::string(reinterpret_cast<const char*>(data), size), "fuzz input");
  if (spec.ok()) shardflow::CheckAccepted(*spec);
  return 0;
}

#include "runtime/collectives/group_resolution.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/framework/attr_value.h"
#include "core/framework/device_name.h"
#include "core/platform/status.h"

namespace shardflow {
namespace {

constexpr char kReduce[] = "CollectiveReduce";
constexpr char kBcastSend[] = "CollectiveBcastSend";
constexpr char kBcastRecv[] = "CollectiveBcastRecv";
constexpr char kGather[] = "CollectiveGather";

// Broadcast senders and receivers are one kind of instance.
std::string InstanceKind(const std::string& op) {
  return op == kBcastRecv ? std::string(kBcastSend) : op;
}

// Orders device names as their parts: job, replica, task, type, index (numbers as numbers).
bool DeviceLess(const std::string& a, const std::string& b) {
  auto pa = DeviceName::Parse(a), pb = DeviceName::Parse(b);
  if (!pa.ok() || !pb.ok()) return a < b;
  return std::tie(pa->job, pa->replica, pa->task, pa->type, pa->id) <
         std::tie(pb->job, pb->replica, pb->task, pb->type, pb->id);
}

struct Member {
  Node* node;
  int64_t group_size;
  int64_t instance_key;
};

std::string Names(const std::vector<Member>& members) {
  std::vector<std::string> names;
  for (const Member& m : members) names.push_back(absl::StrCat("'", m.node->name(), "'"));
  return absl::StrJoin(names, ", ");
}

// Note [Between-graph groups]: the members of a group whose ops in this graph are on `local`
// (sorted, fewer than `size`) are those devices on every task of their job that `known` lists.
// TF's multi-worker clusters may name their first worker "chief" (TF_CONFIG's "chief" job,
// Kubernetes' TFJob): when the tasks of the job alone do not make the group, a task of "chief"
// or "worker" counts the tasks of both jobs (the chief sorts first, so it is rank 0).
absl::StatusOr<std::vector<std::string>> BetweenGraphMembers(
    const std::string& where, int64_t size, const std::vector<Member>& members,
    const std::vector<std::string>& local, const std::vector<std::string>& known) {
  std::vector<DeviceName> parsed;
  for (const std::string& d : local) {
    SF_ASSIGN_OR_RETURN(DeviceName n, DeviceName::Parse(d));
    parsed.push_back(n);
  }
  const std::string task = parsed[0].TaskName();
  for (const DeviceName& n : parsed) {
    if (n.TaskName() != task) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, " has group_size ", size, " but its ops in this run (", Names(members),
          ") are on ", local.size(), " device(s) of several tasks: ", absl::StrJoin(local, ", "),
          ". Either every member is in the graph that runs (in-graph replication), or each task "
          "runs its own graph with its own members (between-graph: this graph's members all on "
          "one task)"));
    }
  }
  std::set<std::string> known_set(known.begin(), known.end());
  // The tasks that are up of the jobs in `jobs`.
  auto tasks_of = [&](const std::set<std::string>& jobs) {
    std::set<std::pair<std::string, int>> out;
    for (const std::string& k : known) {
      auto n = DeviceName::Parse(k);
      if (n.ok() && jobs.count(n->job) > 0 && n->replica == parsed[0].replica) {
        out.insert({n->job, n->task});
      }
    }
    return out;
  };
  std::set<std::pair<std::string, int>> tasks = tasks_of({parsed[0].job});
  if (static_cast<int64_t>(tasks.size() * local.size()) != size &&
      (parsed[0].job == "chief" || parsed[0].job == "worker")) {
    auto both = tasks_of({"chief", "worker"});
    if (static_cast<int64_t>(both.size() * local.size()) == size) tasks = std::move(both);
  }
  if (static_cast<int64_t>(tasks.size() * local.size()) != size) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, " has group_size ", size, " but this graph holds ", local.size(),
        " of its members (", Names(members), ", on ", task, ") and job ", parsed[0].job, " has ",
        tasks.size(),
        " task(s) up. A between-graph group is this task's members on every task of the job "
        "(group_size = members per task x tasks; a \"chief\" job counts with \"worker\"); "
        "in-graph, every member must be in the graph that runs (fetch or run every replica's "
        "op in one step), each on its own device"));
  }
  std::vector<std::string> out;
  for (const auto& [job, t] : tasks) {
    for (DeviceName n : parsed) {
      n.job = job;
      n.task = t;
      std::string name = n.ToString();
      if (!known_set.count(name)) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, " is a between-graph group, but task ", n.TaskName(), " has no device ", name,
            " for its member: give every task of job ", n.job, " the same devices"));
      }
      out.push_back(std::move(name));
    }
  }
  std::sort(out.begin(), out.end(), DeviceLess);
  return out;
}

}  // namespace

bool IsCollectiveOp(const std::string& op) {
  return op == kReduce || op == kBcastSend || op == kBcastRecv || op == kGather;
}

absl::Status ResolveCollectiveGroups(
    Graph* graph, const std::function<uint64_t(const std::string& device)>& incarnation,
    const std::vector<std::string>& known_devices, std::string* between_graph_signature) {
  if (between_graph_signature != nullptr) between_graph_signature->clear();
  std::map<int64_t, std::vector<Member>> groups;  // group_key -> its ops
  for (Node* n : graph->nodes()) {
    if (!IsCollectiveOp(n->op())) continue;
    Member m{n, 0, 0};
    int64_t group_key = 0;
    SF_RETURN_IF_ERROR(GetAttr(n->attrs(), "group_key", &group_key));
    SF_RETURN_IF_ERROR(GetAttr(n->attrs(), "group_size", &m.group_size));
    SF_RETURN_IF_ERROR(GetAttr(n->attrs(), "instance_key", &m.instance_key));
    if (n->assigned_device().empty()) {
      return absl::InternalError(
          absl::StrCat("collective op '", n->name(), "' is not placed before group resolution"));
    }
    groups[group_key].push_back(m);
  }
  for (auto& [group_key, members] : groups) {
    const std::string where = absl::StrCat("collective group ", group_key);
    const int64_t size = members[0].group_size;
    std::set<std::string> device_set;
    for (const Member& m : members) {
      if (m.group_size != size) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": '", members[0].node->name(), "' says group_size ", size,
                         " but '", m.node->name(), "' says ", m.group_size,
                         ": every op of a group must give the same group_size"));
      }
      device_set.insert(m.node->assigned_device());
    }
    std::vector<std::string> local(device_set.begin(), device_set.end());
    std::sort(local.begin(), local.end(), DeviceLess);
    std::vector<std::string> devices = local;
    const bool between = static_cast<int64_t>(local.size()) < size && !known_devices.empty();
    if (between) {
      SF_ASSIGN_OR_RETURN(devices, BetweenGraphMembers(where, size, members, local, known_devices));
    } else if (static_cast<int64_t>(devices.size()) != size) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, " has group_size ", size, " but its ops in this run (", Names(members),
          ") are on ", devices.size(), " device(s): ", absl::StrJoin(devices, ", "),
          ". A group has one member per device, and every member must be in the graph that "
          "runs (fetch or run every replica's op in one step), each on its own device"));
    }
    // Each instance: one op per device of the group, of one kind and dtype.
    std::map<int64_t, std::vector<Member>> instances;
    for (const Member& m : members) instances[m.instance_key].push_back(m);
    for (const auto& [instance_key, ops] : instances) {
      const std::string inst = absl::StrCat(where, " instance ", instance_key);
      std::set<std::string> seen;
      int senders = 0;
      for (const Member& m : ops) {
        if (!seen.insert(m.node->assigned_device()).second) {
          return absl::InvalidArgumentError(absl::StrCat(
              inst, ": two of its ops (", Names(ops), ") are on ", m.node->assigned_device(),
              "; each member of a group is on its own device"));
        }
        if (InstanceKind(m.node->op()) != InstanceKind(ops[0].node->op())) {
          return absl::InvalidArgumentError(
              absl::StrCat(inst, ": '", ops[0].node->name(), "' is ", ops[0].node->op(), " but '",
                           m.node->name(), "' is ", m.node->op(),
                           ": the ops of one instance must be one collective (give each its own "
                           "instance_key)"));
        }
        DataType a = DT_INVALID, b = DT_INVALID;
        SF_RETURN_IF_ERROR(GetAttr(ops[0].node->attrs(), "T", &a));
        SF_RETURN_IF_ERROR(GetAttr(m.node->attrs(), "T", &b));
        if (a != b) {
          return absl::InvalidArgumentError(absl::StrCat(
              inst, ": '", ops[0].node->name(), "' is ", DataTypeString(a), " but '",
              m.node->name(), "' is ", DataTypeString(b), ": the members must agree on T"));
        }
        if (m.node->op() == kReduce) {
          // Members reducing with different operations would each combine their chunks of
          // the ring their own way: a result half max, half min.
          for (const char* attr : {"merge_op", "final_op"}) {
            std::string first, mine;
            SF_RETURN_IF_ERROR(GetAttr(ops[0].node->attrs(), attr, &first));
            SF_RETURN_IF_ERROR(GetAttr(m.node->attrs(), attr, &mine));
            if (first != mine) {
              return absl::InvalidArgumentError(absl::StrCat(
                  inst, ": '", ops[0].node->name(), "' has ", attr, " ", first, " but '",
                  m.node->name(), "' has ", mine, ": the members must agree on ", attr));
            }
          }
        }
        if (m.node->op() == kBcastSend) ++senders;
      }
      if (ops.size() != local.size()) {
        std::vector<std::string> missing;
        for (const std::string& d : local) {
          if (!seen.count(d)) missing.push_back(d);
        }
        return absl::InvalidArgumentError(absl::StrCat(
            inst, " has ", ops.size(), " of its ", local.size(), " members in this graph (",
            Names(ops), "); none on ", absl::StrJoin(missing, ", "),
            ": every device of the group needs its op of each instance"));
      }
      // Between-graph, the source may be in another task's graph.
      if (InstanceKind(ops[0].node->op()) == kBcastSend && (between ? senders > 1 : senders != 1)) {
        return absl::InvalidArgumentError(
            absl::StrCat(inst, " is a broadcast with ", senders,
                         " CollectiveBcastSend ops; it needs exactly one source (the others "
                         "CollectiveBcastRecv)"));
      }
    }
    std::vector<int64_t> incarnations;
    for (const std::string& d : devices) {
      incarnations.push_back(incarnation ? static_cast<int64_t>(incarnation(d)) : 1);
    }
    const std::string joined = absl::StrJoin(devices, ",");
    if (between && between_graph_signature != nullptr) {
      std::vector<int64_t> keys;
      for (const auto& [instance_key, ops] : instances) keys.push_back(instance_key);
      absl::StrAppend(between_graph_signature, "group ", group_key, " instances ",
                      absl::StrJoin(keys, ","), " on ", joined, " incarnations ",
                      absl::StrJoin(incarnations, ","), ";");
    }
    for (const Member& m : members) {
      m.node->SetAttr("_group_devices", MakeAttr(joined));
      m.node->SetAttr("_group_incarnations", MakeAttr(incarnations));
    }
    // A broadcast's members learn the source's rank.
    for (const auto& [instance_key, ops] : instances) {
      if (InstanceKind(ops[0].node->op()) != kBcastSend) continue;
      // Between-graph, a task without the sender cannot know where it is: the first member.
      int64_t source = between ? 0 : -1;
      for (const Member& m : ops) {
        if (m.node->op() != kBcastSend) continue;
        source =
            std::find(devices.begin(), devices.end(), m.node->assigned_device()) - devices.begin();
        if (between && source != 0) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, " instance ", instance_key, ": the broadcast's source '",
                           m.node->name(), "' is on ", m.node->assigned_device(),
                           ", but in a between-graph group it must be "
                           "the first member (",
                           devices[0], "), where every task expects it"));
        }
      }
      for (const Member& m : ops) m.node->SetAttr("_source_rank", MakeAttr(source));
    }
  }
  return absl::OkStatus();
}

}  // namespace shardflow
